"""The main job on the bundled sample: ingest it, then write the readiness report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from calibrate.analysis.readiness import ReadinessOptions, assess_store
from calibrate.errors import UsageError
from calibrate.ingest import ingest
from calibrate.report.render import summary_lines, write_report
from calibrate.store import connect, default_path

#: The committed sample export (``calibrate simulate --runs 2500 --seed 7``).
SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"


def run_demo(
    *, db: Path | None = None, sample: Path | None = None, out: Path = Path("reports"),
    formats: str | None = None, options: ReadinessOptions | None = None,
    log: Callable[[str], None] = lambda _msg: None,
) -> list[str]:  # fmt: skip
    """Ingest ``sample`` into the store at ``db`` and write the report into ``out``.

    Parameters
    ----------
    db : path, optional
        The store (default: ``$CALIBRATE_DB`` or ``./calibrate.duckdb``).
    sample : path, optional
        The export folder (default: the bundled ``data/sample``).
    out : path, default="reports"
        Where ``report.html``, ``report.md`` (with ``figures/``) and ``report.json`` go.
    formats : str, optional
        Comma-separated subset of ``html,md,json`` (all by default).
    options : ReadinessOptions, optional
        The decision's limits.
    log : callable
        Receives progress lines (the CLI sends them to stderr).

    Returns
    -------
    list of str
        The lines to show the user: one per step with its decision, then where the report went.
    """
    sample = sample or SAMPLE_DIR
    if not sample.exists():
        raise UsageError(f"sample folder {sample} not found")
    path = db if db is not None else default_path()
    con = connect(path)
    try:
        result = ingest(con, [sample])
        t = result.totals
        log(
            f"ingested {sample}: read {t['read']}, loaded {t['loaded']}, quarantined {t['quarantined']}"
        )
        log("assessing the checked steps …")
        report = assess_store(con, options=options, store=str(path))
    finally:
        con.close()
    written = write_report(report, out, formats=formats)
    lines = summary_lines(report)
    for fmt, p in written.items():
        lines.append(f"wrote {fmt}: {p}")
    return lines
