"""What the store holds: counts that add up, per process, step and model."""

from __future__ import annotations

from typing import Any

import duckdb

from calibrate.consistency import flag_counts
from calibrate.store import schema_version


def store_status(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Summarise the store.

    Returns
    -------
    dict
        ``runs``, ``checks``, ``answers``, ``decisions``, ``labeled_checks``,
        ``unlabeled_checks``, ``conflicts``, ``quarantined``, ``files`` (files
        ingested, each counted once), ``file_versions`` (their ingested versions:
        a file ingested again after it changed is one more),
        ``withdrawn`` (``{checks, decisions, runs}`` that newer versions of
        files withdrew), ``processes`` (a list of ``{process, step, model,
        checks, labeled, first_at, last_at}``), ``flags`` and ``schema_version``.
    """

    def one(sql: str) -> int:
        return int(con.execute(sql).fetchone()[0] or 0)

    # One pass over the labeled view (its window over every check is the cost); the
    # labeled and unlabeled totals are sums of its rows.
    processes = con.execute(
        """SELECT process, step, model, count(*) AS checks, count(label) AS labeled,
                  min("at") AS first_at, max("at") AS last_at,
                  count(label) FILTER (WHERE advisory IS DISTINCT FROM false) AS reviews,
                  count(label) FILTER (WHERE audited) AS audits,
                  count(label) FILTER (WHERE left_out) AS after_switch
           FROM labeled GROUP BY ALL ORDER BY process, step, first_at, model"""
    ).fetchall()
    labeled = sum(int(row[4]) for row in processes)
    flags = flag_counts(con)
    withdrawn = dict(con.execute("SELECT kind, count(*) FROM withdrawn GROUP BY kind").fetchall())
    return {
        "runs": one("SELECT count(*) FROM runs"),
        "checks": one("SELECT count(*) FROM checks"),
        "answers": one("SELECT count(*) FROM answers"),
        "decisions": one("SELECT count(*) FROM decisions"),
        "labeled_checks": labeled,
        "unlabeled_checks": sum(int(row[3]) for row in processes) - labeled,
        "conflicts": flags["conflicting_decisions"],  # the same count
        "quarantined": one("SELECT count(*) FROM quarantine"),
        "files": one("SELECT count(DISTINCT path) FROM files"),
        "file_versions": one("SELECT count(*) FROM files"),
        "withdrawn": {f"{kind}s": int(withdrawn.get(kind, 0)) for kind in WITHDRAWN_KINDS},
        "processes": [
            {
                "process": p,
                "step": s,
                "model": m,
                "checks": n,
                "labeled": k,
                # Of the labeled: reviews of every verdict (advisory: true, what the threshold
                # search reads), audit decisions on drawn checks (the monitor's) and decisions
                # on enforced checks no draw drew (escalations; left out of every rate).
                "labeled_reviews": r,
                "labeled_audits": u,
                "labeled_after_switch_undrawn": w,
                "first_at": a.isoformat() if a else None,
                "last_at": b.isoformat() if b else None,
            }
            for p, s, m, n, k, a, b, r, u, w in processes
        ],  # fmt: skip
        "flags": flags,
        "schema_version": schema_version(con),
    }


#: What a newer version of a file can withdraw, in the order ``status`` lists it.
WITHDRAWN_KINDS = ("check", "decision", "run")


def withdrawn_rows(con: duckdb.DuckDBPyConnection, limit: int = 50) -> list[dict[str, Any]]:
    """What newer versions of files withdrew, latest first: the row, its file and why.

    Each is ``{path, kind, run_id, step, attempt, what, reason, withdrawn_at}``;
    ``what`` is the check's verdict, the decision, or the run's process.
    """
    rows = con.execute(
        """SELECT path, kind, run_id, step, attempt, what, reason, withdrawn_at FROM withdrawn
           ORDER BY file_id DESC, run_id, step, attempt, kind LIMIT ?""",
        [limit],
    ).fetchall()
    keys = ("path", "kind", "run_id", "step", "attempt", "what", "reason", "withdrawn_at")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def quarantine_rows(con: duckdb.DuckDBPyConnection, limit: int = 50) -> list[dict[str, Any]]:
    """The quarantined records, newest file first, with what to fix."""
    rows = con.execute(
        """SELECT path, line_no, json_path, reason, raw FROM quarantine
           ORDER BY file_id DESC, line_no NULLS LAST LIMIT ?""",
        [limit],
    ).fetchall()
    keys = ("path", "line_no", "json_path", "reason", "raw")
    return [dict(zip(keys, r, strict=True)) for r in rows]
