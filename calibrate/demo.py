"""The main job on the bundled sample: ingest, then summarise (and report, once available)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from calibrate.errors import UsageError
from calibrate.ingest import ingest
from calibrate.status import store_status
from calibrate.store import connect

#: The committed sample export (``calibrate simulate --runs 2000 --seed 7``).
SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"


def run_demo(
    *, db: Path | None = None, sample: Path | None = None, out: Path = Path("reports"),
    log: Callable[[str], None] = lambda _msg: None,
) -> list[str]:  # fmt: skip
    """Ingest ``sample`` into the store at ``db`` and produce the main output.

    Returns the lines to show the user.
    """
    sample = sample or SAMPLE_DIR
    if not sample.exists():
        raise UsageError(f"sample folder {sample} not found")
    con = connect(db)
    try:
        report = ingest(con, [sample])
        t = report.totals
        log(f"ingested {sample}: read {t['read']}, loaded {t['loaded']}, quarantined {t['quarantined']}")
        info = store_status(con)
    finally:
        con.close()
    return [
        f"store holds {info['checks']} checks ({info['labeled_checks']} labeled) "
        f"over {len(info['processes'])} process/step/model groups",
    ]
