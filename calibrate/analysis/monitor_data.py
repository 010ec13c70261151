"""What ``calibrate monitor`` reads: an enforced step's checks, answers and audit streams, by period.

A step's life after the switch falls into **enforcement periods**, each its own
test (docs/method.md, "Enforcement periods"). A new period begins at an enforced
pass or unsure verdict when

* checks recorded with ``advisory: true`` came between it and the step's
  previous enforced pass or unsure verdict, at least
  :data:`calibrate.defaults.NEW_PERIOD_GAP_DAYS` days before it (a return to
  advisory, then a second switch; an advisory check of a run still in flight
  beside enforced ones is no return), or
* the check's process version holds other questions or thresholds for the step
  than the period's (read from the ingested process files; a version whose file
  was never ingested counts as other than every version).

An enforced pass or unsure verdict belongs to the period of its version's
thresholds since the latest return to advisory; a fail (which may be a blocking
fail recorded in an advisory window) to its own version's period when a pass or
unsure verdict began one, else to that of the latest pass or unsure before it. Two versions
recorded side by side (runs in flight after a new process file) are two periods
at once, each its own stream. The current period of a step is that of its
latest enforced pass or unsure verdict; earlier ones are history.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.step_data import UNKNOWN_MODEL
from calibrate.defaults import NEW_PERIOD_GAP_DAYS

#: What decides a check: every column of a step's questions in a process file but the setting.
_SIGNATURE = """
    SELECT process, process_version AS version, step,
           CAST(list_sort(list_distinct(list(CAST(ROW(position, ask, kind, pass_p, fail_p,
               pass_names, unsure_names, pass_level, confidence, one_of, levels) AS VARCHAR))))
                AS VARCHAR) AS signature
    FROM question_versions GROUP BY ALL
"""


def _scope(
    process: str | None, step: str | None, model: str | None, until: Any
) -> tuple[str, list[Any], str]:
    """The WHERE text selecting checks of ``process``/``step``/``model`` before ``until``, and
    its parameters; and the query of those steps' checks with ``enforced`` (twice the parameters).
    """
    # A check recorded without a model is UNKNOWN_MODEL here, as in step_data: NULL would fall
    # out of the model's group (NULL = NULL is not true) and its audits with it.
    params = [process, process, step, step, model, UNKNOWN_MODEL, model, until, until]
    scope = """(? IS NULL OR c.process = ?) AND (? IS NULL OR c.step = ?)
        AND (? IS NULL OR coalesce(c.model, ?) = ?)
        AND (?::TIMESTAMPTZ IS NULL OR c.checked_at < ?)"""
    # A step is enforced from its first pass or unsure verdict recorded with advisory: false
    # (only an enforced check records those; a blocking fail alone may predate the switch).
    enforced = f"""
        WITH since AS (
            SELECT process, step, min(checked_at) AS since FROM checks c
            WHERE {scope} AND advisory IS NOT DISTINCT FROM false AND verdict IN ('pass', 'unsure')
            GROUP BY ALL
        )
        SELECT c.*, (c.advisory IS NOT DISTINCT FROM false
                     AND c.checked_at >= s.since) AS enforced
        FROM checks c JOIN since s USING (process, step)
        WHERE {scope}
    """  # noqa: S608 - fixed text
    return scope, params, enforced


def read_checks(
    con: Any, process: str | None, step: str | None, *, model: str | None = None,
    until: Any = None,
) -> pd.DataFrame:  # fmt: skip
    """Every check of the enforced steps in time order, with its enforcement ``period``.

    Parameters are those of :func:`read_frames`; the frame is its ``checks``.
    """
    _, params, enforced = _scope(process, step, model, until)
    checks = con.execute(
        f"""
        WITH steps AS ({enforced}), sig AS ({_SIGNATURE})
        SELECT c.check_id, c.process, c.step, c.model, c.version, c.verdict,
               c.checked_at AS "at",
               NOT c.enforced AND coalesce(c.advisory, true) AS advisory,
               c.enforced,
               coalesce(e.drawn, false) AS audited,
               l.decision IN ('approved', 'completed') AS label,
               sig.signature
        FROM steps c
        LEFT JOIN check_labels l USING (check_id)
        LEFT JOIN audit_eligible e USING (check_id)
        LEFT JOIN sig ON sig.process = c.process AND sig.version = c.version AND sig.step = c.step
        ORDER BY c.checked_at NULLS LAST, c.check_id
        """,  # noqa: S608 - fixed text
        params * 2,  # the scope twice: the switch's time and the checks
    ).df()
    checks["model"] = checks["model"].astype(object).where(checks["model"].notna(), UNKNOWN_MODEL)
    checks["advisory"] = checks["advisory"].astype(bool)
    checks["enforced"] = checks["enforced"].astype(bool)
    checks["label"] = checks["label"].astype("boolean")
    # A version whose process file was never ingested says nothing about its thresholds: it keeps
    # the step's last known ones (a version label alone began a new period, and so cleared an
    # alarm; outside review).
    step_key = [checks["process"], checks["step"]]
    checks["signature"] = checks["signature"].groupby(step_key).ffill().fillna("")
    checks["period"], checks["current"] = periods(checks)
    return checks


def read_frames(
    con: Any, process: str | None, step: str | None, *, model: str | None = None,
    until: Any = None,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:  # fmt: skip
    """The monitor's frames: checks (with ``period``), their answers, and the audit streams.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    process, step : str, optional
    model : str, optional
        Only this evaluator model's checks (:data:`UNKNOWN_MODEL` for those recorded
        without one).
    until : datetime, optional
        The monitor as it stood then: checks recorded, draws made and audit decisions made
        before it (a prefix of the stream as it was learned, so the e-process read there keeps
        its level). There is no ``since``: a test started at a later time would be a new test
        at every report.

    Returns
    -------
    checks : DataFrame
        Every check of the enforced steps in time order: ``check_id, process, step, model,
        version, verdict, at, advisory, enforced, audited, label`` and ``period`` (1, 2, ...
        in order of start per step; 0 for a check that is not enforced) and ``current``.
    answers : DataFrame
        Their answers, in check-time order.
    streams : DataFrame
        Every check an audit draw considered, in draw order, with its ``period``.
    """
    # The tests run over the whole stream from the switch, up to `until` (monitor_store).
    scope, params, enforced = _scope(process, step, model, until)
    checks = read_checks(con, process, step, model=model, until=until)
    answers = con.execute(
        f"""
        WITH steps AS ({enforced})
        SELECT a.check_id, a.position, a.ask, a.kind, a.p, a.name, a.level, a.confidence
        FROM answers a JOIN steps c USING (check_id)
        ORDER BY c.checked_at NULLS LAST, c.check_id, a.position
        """,  # noqa: S608
        params * 2,
    ).df()
    streams = con.execute(
        f"""
        SELECT c.check_id, c.run_id, c.attempt, c.process, c.step, c.model, c.verdict,
               c.checked_at AS "at", e.draw_id, e.position,
               e.drawn, e.inclusion_p, e.band, d.rate AS design_rate, d.drawn_at,
               CASE WHEN l.decision IS NULL THEN NULL
                    ELSE l.decision IN ('approved', 'completed') END AS label,
               l.made_at AS decided_at, coalesce(l.n_before, 0) AS n_before,
               coalesce(l.conflict, false) AS conflict
        FROM audit_eligible e
        JOIN audit_draws d USING (draw_id)
        JOIN checks c USING (check_id)
        -- As it stood at `until`: no draw made, and no decision made, at or after it.
        LEFT JOIN audit_labels l
            ON l.check_id = e.check_id AND (?::TIMESTAMPTZ IS NULL OR l.made_at < ?)
        WHERE {scope} AND (?::TIMESTAMPTZ IS NULL OR d.drawn_at < ?)
        ORDER BY e.draw_id, e.position
        """,  # noqa: S608
        [until, until, *params, until, until],
    ).df()
    streams["model"] = (
        streams["model"].astype(object).where(streams["model"].notna(), UNKNOWN_MODEL)
    )
    streams["label"] = streams["label"].astype(object).where(streams["label"].notna(), None)
    period = checks.set_index("check_id")["period"]
    streams["period"] = streams["check_id"].map(period).fillna(0).astype(np.int64)
    return checks, answers, streams


def periods(checks: pd.DataFrame, *, gap_days: float = NEW_PERIOD_GAP_DAYS):
    """Each check's enforcement period and whether it is its step's current one.

    Parameters
    ----------
    checks : DataFrame
        In time order, with ``process, step, at, verdict, advisory, enforced, signature``.
    gap_days : float
        Least time between two enforced pass or unsure verdicts with advisory checks between
        them for the second to begin a new period.

    Returns
    -------
    period : ndarray of int
        1, 2, ... per step in order of start; 0 for a check that is not enforced.
    current : ndarray of bool
        The check is in its step's latest period (that of its latest enforced pass or unsure).
    """
    n = len(checks)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    key = checks["process"].astype(str) + "\x00" + checks["step"].astype(str)
    enforced = checks["enforced"].to_numpy(dtype=bool)
    marker = enforced & checks["verdict"].isin(["pass", "unsure"]).to_numpy()
    advisory_seen = checks["advisory"].astype(np.int64).groupby(key).cumsum()
    at = pd.to_datetime(checks["at"], utc=True)
    m_key = key[marker]
    m_seen, m_at = advisory_seen[marker], at[marker]
    back = (m_seen - m_seen.groupby(m_key).shift()) > 0
    far = (m_at - m_at.groupby(m_key).shift()) >= pd.Timedelta(days=gap_days)
    # Returns to advisory so far, carried from each enforced pass or unsure to the checks after it.
    returns = pd.Series(np.nan, index=checks.index)
    returns[marker] = (back & far).astype(np.int64).groupby(m_key).cumsum()
    returns = returns.groupby(key).ffill().fillna(0).astype(np.int64)
    own = (returns.astype(str) + "\x00" + checks["signature"].astype(str)).where(enforced, None)
    # A fail takes its own version's period if one of the step's passes or unsures began it, else
    # the latest one's (a blocking fail recorded in an advisory window begins no period).
    by_marker = own.where(marker)
    began = pd.MultiIndex.from_arrays([key[marker], own[marker]])
    known = pd.MultiIndex.from_arrays([key, own]).isin(began)
    latest = by_marker.groupby(key).ffill().fillna(by_marker.groupby(key).bfill())
    label = own.where(marker | known, latest).where(enforced, None)
    # Periods numbered per step in order of their first check (the frame is in time order).
    number = label.groupby(key).transform(lambda x: pd.Series(pd.factorize(x)[0], index=x.index))
    period = np.where(enforced, number.to_numpy(dtype=np.int64) + 1, 0)
    # groupby's "last" skips missing values: the period of the step's latest marker.
    last_marker = pd.Series(np.where(marker, period, np.nan), index=checks.index)
    last = last_marker.groupby(key).transform("last").fillna(0).to_numpy(dtype=np.int64)
    current = enforced & (period == last)
    return period, current


def short_returns(
    checks: pd.DataFrame, *, gap_days: float = NEW_PERIOD_GAP_DAYS
) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Per step, the returns to advisory that began no new period: too short.

    Checks recorded with ``advisory: true`` between two enforced pass or
    unsure verdicts less than ``gap_days`` apart (:func:`periods` reads them
    as runs still in flight, not a return): the monitor says so, so that a
    period that runs on past them is explained (outside review G13).

    Parameters
    ----------
    checks : DataFrame
        As :func:`periods` reads them (``read_checks``' frame).
    gap_days : float
        As for :func:`periods`.

    Returns
    -------
    dict
        ``(process, step)`` to a list, in time order, of ``{advisory, first_at, last_at,
        before, resumed_at}``: how many advisory checks, the first and last of them, and the
        enforced verdicts around them.
    """
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    if checks.empty:
        return out
    at = pd.to_datetime(checks["at"], utc=True)
    marker = (checks["enforced"] & checks["verdict"].isin(["pass", "unsure"])).to_numpy(bool)
    for (proc, stp), idx in checks.groupby(["process", "step"], sort=True).groups.items():
        rows = checks.loc[idx]
        m = marker[checks.index.get_indexer(idx)]
        advisory = rows["advisory"].to_numpy(bool)
        times = at.loc[idx].to_numpy()
        where = np.flatnonzero(m)
        for prev, nxt in zip(where[:-1], where[1:], strict=True):
            between = np.flatnonzero(advisory[prev + 1 : nxt]) + prev + 1
            gap = pd.Timestamp(times[nxt]) - pd.Timestamp(times[prev])
            if between.size and gap < pd.Timedelta(days=gap_days):
                out.setdefault((str(proc), str(stp)), []).append(
                    {
                        "advisory": int(between.size),
                        "first_at": pd.Timestamp(times[between[0]]).to_pydatetime(),
                        "last_at": pd.Timestamp(times[between[-1]]).to_pydatetime(),
                        "before": pd.Timestamp(times[prev]).to_pydatetime(),
                        "resumed_at": pd.Timestamp(times[nxt]).to_pydatetime(),
                    }
                )
    return out


def short_return_text(
    returns: list[dict[str, Any]], *, gap_days: float = NEW_PERIOD_GAP_DAYS
) -> str:
    """Short returns to advisory (:func:`short_returns`' entries) in one sentence, with the rule.

    One sentence for all of them: advisory checks of runs in flight may sit between many
    enforced verdicts.

    Examples
    --------
    >>> from datetime import datetime, timezone
    >>> t = lambda d, h: datetime(2026, 12, d, h, tzinfo=timezone.utc)
    >>> print(short_return_text([{"advisory": 150, "first_at": t(1, 9), "last_at": t(2, 8),
    ...                           "before": t(1, 8), "resumed_at": t(2, 10)}]))
    ... # doctest: +NORMALIZE_WHITESPACE
    150 checks recorded with advisory: true (2026-12-01 to 2026-12-02) began no new enforcement
    period: enforced verdicts resumed 1.1 days after the last before them, and a return to
    advisory starts a new test only when at least 7 days pass between the enforced verdicts
    around it (docs/method.md, "Enforcement periods"); this period's test runs on through them
    """
    n = sum(r["advisory"] for r in returns)
    first = min(r["first_at"] for r in returns)
    last = max(r["last_at"] for r in returns)
    days = max((r["resumed_at"] - r["before"]).total_seconds() for r in returns) / 86400
    within = "" if len(returns) == 1 else "at most "
    return (
        f"{n} check{'s' if n != 1 else ''} recorded with advisory: true "
        f"({first:%Y-%m-%d} to {last:%Y-%m-%d}) began no new enforcement period: enforced "
        f"verdicts resumed {within}{days:.1f} days after the last before them, and a return to "
        f"advisory starts a new test only when at least {gap_days:g} days pass between the "
        'enforced verdicts around it (docs/method.md, "Enforcement periods"); this period\'s '
        "test runs on through them"
    )
