"""The named SQL statements of the ingest pipelines (``calibrate/sql/*.sql``)."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> dict[str, str]:
    """The statements of ``calibrate/sql/<name>``, by the name after each ``-- name:`` marker, in file order."""
    text = resources.files("calibrate.sql").joinpath(name).read_text(encoding="utf-8")
    out = {}
    for block in text.split("-- name: ")[1:]:
        title, _, body = block.partition("\n")
        out[title.strip()] = body.strip()
    return out
