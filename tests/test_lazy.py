"""Lazy modules behave like imported ones, and `calibrate ingest` starts without the heavy stack."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_lazy_module_is_found_on_its_package_and_by_a_later_import():
    out = _run(
        "from calibrate.lazy import lazy_module\n"
        "m = lazy_module('calibrate.simulate')\n"
        "import calibrate.simulate\n"
        "import calibrate\n"
        "print(calibrate.simulate is m, callable(m.simulate))"
    )
    assert out == "True True"


def test_the_command_line_starts_without_pandas_scipy_or_matplotlib():
    out = _run(
        "import sys, calibrate.cli\n"
        "heavy = ['pandas', 'scipy', 'sklearn', 'matplotlib', 'jinja2']\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    assert out == "[]"


def test_the_public_api_still_resolves_every_name():
    out = _run(
        "import calibrate\nprint(all(getattr(calibrate, n) is not None for n in calibrate.__all__))"
    )
    assert out == "True"


def test_ingesting_the_examples_imports_neither_pandas_nor_pyarrow(tmp_path):
    # A decision table's cells reach DuckDB as NumPy arrays: pyarrow would pull in pandas (~1 s).
    from conftest import EXAMPLES_DIR

    out = _run(
        "import sys\n"
        "from calibrate.ingest import ingest\n"
        "from calibrate.store import connect\n"
        f"report = ingest(connect({str(tmp_path / 's.duckdb')!r}), [{str(EXAMPLES_DIR)!r}])\n"
        "assert any(f.kind == 'csv' and f.loaded for f in report.files)\n"
        "print([m for m in ('pandas', 'pyarrow') if m in sys.modules])"
    )
    assert out == "[]"
