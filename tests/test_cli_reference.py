"""docs/cli.md is generated from the commands; it must not drift from the code."""

from __future__ import annotations

from pathlib import Path

from calibrate.cli.reference import cli_reference

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def test_cli_reference_is_current():
    assert DOC.read_text(encoding="utf-8") == cli_reference(), (
        "docs/cli.md is stale: run `python -m calibrate.cli.reference > docs/cli.md`"
    )


def test_every_command_documented():
    text = cli_reference()
    for name in (
        "ingest",
        "status",
        "agreement",
        "curves",
        "thresholds",
        "report",
        "simulate",
        "demo",
    ):
        assert f"## `calibrate {name}`" in text
