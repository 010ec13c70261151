"""Shared fixtures: the bundled sample, the hand-written examples, stores built from them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parent.parent
SAMPLE_DIR = ROOT / "data" / "sample"
# A copy of ../shared/examples is kept in tests/data/examples so the suite runs without ../shared.
EXAMPLES_DIR = Path(os.environ.get("CALIBRATE_EXAMPLES", ROOT / "tests" / "data" / "examples"))


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    """The committed sample export (with its ground truth in .truth/)."""
    return SAMPLE_DIR


@pytest.fixture(scope="session")
def examples_dir(tmp_path_factory) -> Path:
    """A copy of the hand-written examples; a small stand-in if ../shared is absent."""
    target = tmp_path_factory.mktemp("examples")
    if EXAMPLES_DIR.exists():
        for f in EXAMPLES_DIR.iterdir():
            if f.is_file():
                shutil.copy(f, target / f.name)
    else:  # pragma: no cover - CI always has ../shared
        pytest.skip("../shared/examples is not present")
    return target


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory) -> Path:
    """A DuckDB store with the bundled sample ingested; open it read-only in tests."""
    from calibrate.ingest import ingest
    from calibrate.store import connect

    path = tmp_path_factory.mktemp("store") / "sample.duckdb"
    con = connect(path)
    ingest(con, [SAMPLE_DIR])
    con.close()
    return path


@pytest.fixture(autouse=True)
def _fresh_estimates_when_patched(request):
    """A test that patches module constants gets no labels-needed estimate made without them.

    ``needed.estimate_needed`` keeps its estimates in the process by data and settings;
    constants a test patches (the cap, the refinement) are not in that key.
    """
    if "monkeypatch" not in request.fixturenames:
        yield
        return
    from calibrate.analysis import needed

    needed._ESTIMATES.clear()
    yield
    needed._ESTIMATES.clear()
