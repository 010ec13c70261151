"""Small helpers for the analyst notebooks in ``notebooks/``.

The notebooks use the package's public API; this module holds the few pieces
they need that are about *exploring* rather than deciding: loading the bundled
sample into a throw-away store, listing the individual disagreements as a
table an analyst can filter, the report's wording of a rate next to the
numbers, a compact interval plot of any agreement table, the trade-off of the
threshold search with its n and intervals, the monitor's detection curve under
a step's audit plan with its simulation error, and the ``check:`` blocks with
the comment lines of ``calibrate thresholds --format yaml``.

Nothing here computes a statistic of its own: rates and intervals come from
:mod:`calibrate.analysis` (agreement, readiness, the audit plan's simulation,
the Wilson and Clopper-Pearson intervals of :mod:`calibrate.analysis.stats`),
the wording from :mod:`calibrate.report.render` and the YAML comments from
:mod:`calibrate.cli.thresholds`.

Record text (notes, question texts, names) is untrusted. The tables built here
strip control characters from it and keep it as plain DataFrame cells, which
Jupyter renders escaped; never pass it to ``IPython.display.HTML`` or
``Markdown``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import textwrap
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.audit_fixed import (  # noqa: F401 - re-exported for the notebooks
    audit_catch,
    audit_detection,
    planned_audit,
)
from calibrate.analysis.displays import (  # noqa: F401 - re-exported for the notebooks
    RATES,
    AuditDisplay,
    IntervalDisplay,
)
from calibrate.analysis.displays import RESULT_COLUMNS as _RESULT_COLUMNS
from calibrate.textsafe import strip_control

#: The committed sample export (the same folder ``calibrate demo`` ingests).
SAMPLE_DIR = Path(__file__).resolve().parent.parent / "data" / "sample"

#: The columns of :func:`disagreements`.
DISAGREEMENT_COLUMNS = [
    "kind", "process", "step", "run_id", "attempt", "model", "week", "at", "verdict",
    "answers", "decision", "decided_by", "note", "check_id",
]  # fmt: skip
#: Kinds of disagreement :func:`disagreements` can list.
DISAGREEMENT_KINDS = ("false pass", "false fail", "unsure, acceptable", "unsure, not acceptable")

_TEMP_DIRS: list[str] = []


def _remove_temp_dirs() -> None:
    for d in _TEMP_DIRS:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_remove_temp_dirs)


# --------------------------------------------------------------------------- stores


def sample_store(
    path: str | os.PathLike[str] | None = None, *, sample: str | os.PathLike[str] | None = None
) -> Path:
    """Ingest the bundled sample into a DuckDB store and return the store's path.

    Parameters
    ----------
    path : path-like, optional
        Where to write the store. By default a new file in a temporary folder
        that is removed when the Python process exits. Ingesting into an
        existing store is harmless: files already ingested are skipped.
    sample : path-like, optional
        The export folder to load (default :data:`SAMPLE_DIR`).

    Returns
    -------
    pathlib.Path
        The store, closed, ready for ``calibrate.connect(path, read_only=True)``.

    Raises
    ------
    calibrate.errors.UsageError
        The sample folder is missing (e.g. calibrate was installed without
        its source tree).
    """
    from calibrate.errors import UsageError
    from calibrate.ingest import ingest
    from calibrate.store import connect

    folder = Path(sample) if sample is not None else SAMPLE_DIR
    if not folder.is_dir():
        raise UsageError(
            f"sample folder {folder} not found; pass db_path= a store built with `calibrate ingest`"
        )
    if path is None:
        tmp = tempfile.mkdtemp(prefix="calibrate-sample-")
        _TEMP_DIRS.append(tmp)
        target = Path(tmp) / "sample.duckdb"
    else:
        target = Path(path)
    con = connect(target)
    try:
        ingest(con, [folder])
    finally:
        con.close()
    return target


def enforced_sample_store(
    *,
    runs: int = 3000,
    seed: int = 1,
    enforce_weeks: int = 12,
    shift_week: float | None = 4,
    shift: float = 0.8,
    audit_rate: float = 0.5,
    by_band: bool = False,
    start: datetime | None = None,
) -> Path:
    """A temporary store of a simulated export past the switch, audited once.

    The loop of README's tour, in one call: ``calibrate simulate`` with
    enforcement (and a shift from ``shift_week`` weeks after the switch;
    ``None``: none), ``ingest``, ``audit draw`` of ``invoice-matching`` at
    ``audit_rate``, the simulated reviewer's decisions, ``ingest`` again.

    Parameters
    ----------
    start : datetime, optional
        When the simulated advisory window begins (``calibrate simulate --start``).
        By default the Monday that makes the records end by today
        (:func:`start_ending_today`): the draw is made now, so it must find no
        check dated after it, as the README's tour passes ``--start``.

    Returns
    -------
    pathlib.Path
        The store, closed; the export with its ``.truth/`` is beside it in
        ``export/``.
    """
    from calibrate import audit, simulate_enforced
    from calibrate.ingest import ingest
    from calibrate.simulate import simulate
    from calibrate.store import connect

    tmp = Path(tempfile.mkdtemp(prefix="calibrate-enforced-"))
    _TEMP_DIRS.append(str(tmp))
    export = tmp / "export"
    if start is None:
        start = start_ending_today(enforce_weeks)
    simulate(export, runs=runs, seed=seed, enforce_weeks=enforce_weeks, shift_week=shift_week,
             shift=shift if shift_week is not None else 0.0, start=start)  # fmt: skip
    target = tmp / "enforced.duckdb"
    con = connect(target)
    try:
        ingest(con, [export])
        drawn = audit.draw(con, process="invoice-matching", step="match_invoice",
                           rate=audit_rate, by_band=by_band, seed=seed)  # fmt: skip
        audit.write_csv(drawn, tmp / "audit.csv")
        simulate_enforced.review_audit(
            tmp / "audit.csv", export / ".truth", export / "reviewed.csv"
        )
        ingest(con, [export / "reviewed.csv"])
    finally:
        con.close()
    return target


def start_ending_today(enforce_weeks: int = 0, *, now: datetime | None = None) -> datetime:
    """The latest Monday (UTC) from which a simulation of ``enforce_weeks`` enforced weeks ends by today.

    The simulated records span :data:`calibrate.simulate.WINDOW_DAYS` days of
    advisory work plus ``enforce_weeks`` weeks; a day is kept spare for the
    reviews made a day after their check. Mondays, so the weeks of the
    agreement tables are the simulation's weeks.

    Examples
    --------
    >>> start_ending_today(12, now=datetime(2026, 12, 5, 10, tzinfo=UTC)).date()
    datetime.date(2026, 6, 15)
    """
    from calibrate.simulate import WINDOW_DAYS

    now = datetime.now(UTC) if now is None else now.astimezone(UTC)
    latest = now - timedelta(days=WINDOW_DAYS + 7 * enforce_weeks + 1)
    monday = latest - timedelta(days=latest.weekday())
    return monday.replace(hour=0, minute=0, second=0, microsecond=0)


def resolve_store(db_path: str | os.PathLike[str] | None = None) -> Path:
    """The store a notebook reads: ``db_path``, or the bundled sample in a temporary store.

    Parameters
    ----------
    db_path : path-like or None
        A store built with ``calibrate ingest``. ``None`` loads the bundled
        sample into a temporary store with :func:`sample_store`.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    calibrate.errors.StoreError
        ``db_path`` does not exist.
    """
    from calibrate.errors import StoreError

    if db_path is None:
        return sample_store()
    path = Path(db_path).expanduser()
    if not path.is_file():
        raise StoreError(f"no store at {path}: run `calibrate ingest --db {path} EXPORTS` first")
    return path


def utc(value: Any) -> pd.Timestamp | None:
    """A date or time given as text (``"2026-09-01"``) as a UTC timestamp, for :class:`calibrate.Filters`."""
    if value is None or value == "":
        return None
    ts = pd.Timestamp(value)
    return ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")


# --------------------------------------------------------------------------- tables


def week_of(at: Any) -> pd.Series:
    """The Monday (ISO date) that starts each time's UTC week: the ``week`` key of the agreement tables."""
    at = pd.to_datetime(pd.Series(at), utc=True)
    monday = at.dt.normalize() - pd.to_timedelta(at.dt.day_of_week, unit="D")
    return monday.dt.strftime("%Y-%m-%d")


def _num(values: Any, index: pd.Index) -> np.ndarray:
    """A column as floats with NaN for anything missing (nullable dtypes included)."""
    if values is None:
        return np.full(len(index), np.nan)
    return pd.to_numeric(pd.Series(values, index=index), errors="coerce").astype(float).to_numpy()


def _fmt2(x: np.ndarray, missing: str) -> np.ndarray:
    """``" (0.62)"`` per finite value, ``missing`` elsewhere (vectorised)."""
    ok = np.isfinite(x)
    out = np.full(x.shape, missing, dtype=object)
    out[ok] = np.char.mod(" (%.2f)", x[ok])
    return out


def _answer_text(answers: pd.DataFrame) -> pd.Series:
    """Each answer as check-1 §3 words it: ``no (0.12)``, ``hedges (0.90)``, ``level 1 (0.85)``.

    Followed by the recorded result in brackets, after the first 60 characters of the question.
    """
    idx = answers.index
    kind = answers["kind"].astype(str).to_numpy()
    p = _num(answers["p"], idx)
    pass_p = _num(answers.get("pass_p"), idx)
    level = _num(answers["level"], idx)
    conf_txt = _fmt2(_num(answers["confidence"], idx), "")
    # Without a known pass threshold the probability alone is shown.
    word = np.where(np.isnan(pass_p), "p", np.where(p < pass_p, "no", "yes"))
    yes_no = word.astype(object) + _fmt2(p, " (no probability)")
    choice = answers["name"].astype(object).fillna("(no answer)").astype(str).to_numpy() + conf_txt
    ok = np.isfinite(level)
    lv = np.full(level.shape, "(no level)", dtype=object)
    lv[ok] = np.char.mod("level %d", level[ok].astype(int))
    rubric = lv + conf_txt
    text = np.where(kind == "yes_no", yes_no, np.where(kind == "choice", choice, rubric))
    result = answers["result"].astype(object).fillna("?").astype(str).to_numpy()
    ask = np.array([strip_control(s)[:60] for s in answers["ask"]], dtype=object)
    return pd.Series(ask + " → " + text + " [" + result + "]", index=idx)


def disagreements(
    submissions: pd.DataFrame,
    answers: pd.DataFrame | None = None,
    *,
    kinds: Sequence[str] = ("false pass", "false fail"),
) -> pd.DataFrame:
    """The individual submissions where the check and the person disagree, one row each.

    Parameters
    ----------
    submissions : pandas.DataFrame
        As returned by :func:`calibrate.submissions`; only labeled rows count.
    answers : pandas.DataFrame, optional
        As returned by :func:`calibrate.answers`; when given, the ``answers``
        column lists each question's answer and recorded result.
    kinds : sequence of str, default=("false pass", "false fail")
        Which rows to list, from :data:`DISAGREEMENT_KINDS`: ``false pass``
        (verdict pass, person: not acceptable), ``false fail`` (verdict fail,
        person: acceptable), and the two outcomes of an ``unsure`` verdict.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`DISAGREEMENT_COLUMNS`, newest first. ``note``,
        ``answers`` and names are record text with control characters
        removed: show them as DataFrame cells (escaped), not as HTML.

    Examples
    --------
    >>> subs = pd.DataFrame({"check_id": ["c1", "c2"], "run_id": ["r1", "r2"],
    ...     "process": "p", "step": "s", "attempt": 1, "model": "m",
    ...     "at": pd.to_datetime(["2026-09-01", "2026-09-02"], utc=True),
    ...     "verdict": ["pass", "pass"], "label": [False, True],
    ...     "decision": ["rejected", "approved"], "decided_by": "ana", "note": [None, None]})
    >>> disagreements(subs)[["run_id", "kind"]].to_dict("records")
    [{'run_id': 'r1', 'kind': 'false pass'}]
    """
    bad = [k for k in kinds if k not in DISAGREEMENT_KINDS]
    if bad:
        raise ValueError(f"unknown kind(s) {bad}; allowed: {', '.join(DISAGREEMENT_KINDS)}")
    label = submissions["label"].astype("boolean")
    verdict = submissions["verdict"].astype("string")
    acc = label.fillna(False).to_numpy(dtype=bool)
    known = label.notna().to_numpy(dtype=bool)
    v = verdict.fillna("").to_numpy(dtype=object)
    kind = np.select(
        [known & (v == "pass") & ~acc, known & (v == "fail") & acc,
         known & (v == "unsure") & acc, known & (v == "unsure") & ~acc],
        list(DISAGREEMENT_KINDS),
        default="",
    )  # fmt: skip
    keep = np.isin(kind, list(kinds))
    rows = submissions[keep].copy()
    rows["kind"] = kind[keep]
    rows["week"] = week_of(rows["at"]).to_numpy() if len(rows) else pd.Series(dtype=str)
    for col in ("note", "decided_by", "decision"):
        rows[col] = rows[col].map(lambda s: None if s is None or pd.isna(s) else strip_control(s))
    if answers is not None and len(rows):
        ans = answers[answers["check_id"].isin(rows["check_id"])].sort_values(
            ["check_id", "position"]
        )
        text = _answer_text(ans).groupby(ans["check_id"].to_numpy()).agg("; ".join)
        rows["answers"] = rows["check_id"].map(text)
    else:
        rows["answers"] = None
    rows = rows.sort_values("at", ascending=False, kind="stable")
    return rows[DISAGREEMENT_COLUMNS].reset_index(drop=True)


def _rate_words(k: float, n: float) -> str:
    from calibrate.report.render import rate_text

    return str(rate_text(k, n))


def rate_table(
    table: pd.DataFrame, rates: Sequence[str] = ("agree", "false_pass", "false_fail", "unsure")
) -> pd.DataFrame:
    """An agreement table in the report's words: each rate with its n and 95% interval.

    Parameters
    ----------
    table : pandas.DataFrame
        A result of :func:`calibrate.analysis.agreement.agreement`.
    rates : sequence of str
        Names from :data:`RATES`.

    Returns
    -------
    pandas.DataFrame
        The group keys, ``n`` (labeled checks), one text column per rate
        (``"4.1% (9 of 219; 95% CI 2.2–7.6%)"``, or "too few to say" below
        :data:`~calibrate.analysis.stats.MIN_N`) and the table's ``note``.
    """
    bad = [r for r in rates if r not in RATES]
    if bad:
        raise ValueError(f"unknown rate(s) {bad}; allowed: {', '.join(RATES)}")
    keys = list(table.attrs.get("by", [c for c in table.columns if c not in _RESULT_COLUMNS]))
    out = table[keys].copy()
    for key in keys:
        if out[key].dtype == object or str(out[key].dtype) == "string":
            out[key] = out[key].map(lambda s: s if s is None or pd.isna(s) else strip_control(s))
    out["n"] = table["n"].astype(int)
    counts = table.assign(n_agree=table["pass_acceptable"] + table["fail_not_acceptable"])
    for name in rates:
        _, _, _, k, n, words = RATES[name]
        out[words] = [
            _rate_words(kk, nn) for kk, nn in zip(counts[k], counts[n], strict=True)
        ]  # a loop per row of a summary table, not per record
    out["note"] = table["note"]
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------- a figure


def _duration(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "–"
    if abs(seconds) < 120:
        return f"{seconds:.0f} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def approver_table(table: pd.DataFrame) -> pd.DataFrame:
    """An approver table in the report's words: approval and agreement with n and 95% interval.

    Parameters
    ----------
    table : pandas.DataFrame
        A result of :func:`calibrate.analysis.approvers.approvers`.

    Returns
    -------
    pandas.DataFrame
        The keys (``approver`` first), ``n``, ``approval rate``, ``agreement
        with the check`` (over decided verdicts), ``median time to decide``,
        ``flag`` and ``why flagged``.
    """
    keys = [c for c in table.columns if c not in _RESULT_COLUMNS]
    out = table[keys].copy()
    for key in keys:
        out[key] = out[key].map(
            lambda s: "(unnamed)" if s is None or pd.isna(s) else strip_control(s)
        )
    out["n"] = table["n"].astype(int)
    out["approval rate"] = [
        _rate_words(k, n) for k, n in zip(table["approvals"], table["n"], strict=True)
    ]
    # The approver table keeps the agreement rate, not its count: the count is rate x n, exactly.
    agree_k = (table["agree"].fillna(0) * table["n_decided"]).round().astype(int)
    out["agreement with the check"] = [
        _rate_words(k, n) for k, n in zip(agree_k, table["n_decided"], strict=True)
    ]
    out["median time to decide"] = table["median_review_s"].map(_duration)
    out["flag"] = table["flag"].astype(bool)
    out["why flagged"] = table["flag_reason"].fillna("")
    return out.reset_index(drop=True)


# --------------------------------------------------------------------------- readiness and audit


def assess_steps(con: Any, filters: Any = None, *, options: Any = None) -> list[Any]:
    """The readiness decision of every checked step, as the report makes it, minus calibration.

    :func:`calibrate.analysis.readiness.assess_store` itself, the calibration
    curves left out (notebook 02 draws them), which makes it several times
    faster: each step's current evaluator model and wording go to the certified
    threshold search, an enforced step is judged by its monitor, and every
    decision is the report's.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        An open store (read-only is enough).
    filters : calibrate.Filters, optional
    options : calibrate.analysis.readiness.ReadinessOptions, optional
        The limits (``alpha``, ``delta``, ``beta``, audit sizing, ...).

    Returns
    -------
    list of StepReadiness
        In (process, step) order. ``step.thresholds.raw`` is the search's own
        result (its candidates and p-values); ``step.thresholds.make_display()``
        draws the trade-off.
    """
    from calibrate.analysis import readiness as rd

    # One assessment, the report's: a copy here once missed the monitor's enforcement, and the
    # notebooks called READY a step the report returned to advisory (black-box run).
    report = rd.assess_store(con, filters, options=options, with_calibration=False)
    return sorted(report.steps, key=lambda r: (str(r.process), str(r.step)))


def detection_curve(plan: Any, true_rates: Any, *, streams: int | None = None) -> pd.DataFrame:
    """How often the monitor catches a rise under a step's audit plan, per true false-pass rate.

    The simulation :func:`calibrate.analysis.audit.plan_audit` sizes the plan
    with (:func:`calibrate.analysis.audit.detection_probability`: the monitor's
    e-process on uniform random audits), at the plan's share of the passes
    (every pass when no share reaches the power: ``plan.rate`` is ``None``),
    its weekly passes, window, ``alpha`` and ``delta``. The same seed, so at
    ``factor x alpha`` it gives ``plan.achieved``.

    Parameters
    ----------
    plan : SequentialAuditPlan
        A step's plan (``step.sequential_audit``, or :func:`~calibrate.analysis.audit.plan_audit`).
    true_rates : array-like of float
        False-pass rates after the switch.
    streams : int, optional
        Simulated streams per rate (default: as many as the plan,
        :data:`calibrate.analysis.audit.PLAN_STREAMS`).

    Returns
    -------
    pandas.DataFrame
        ``false_pass_rate``, ``p_alarm`` (share of the ``streams`` simulated
        streams that alarm within ``plan.weeks``), ``alarms``, ``streams`` and
        ``low``/``high``: the 95% Wilson interval of that share, i.e. the
        simulation's error.
    """
    from calibrate.analysis.audit import PLAN_STREAMS, detection_probability
    from calibrate.analysis.stats import wilson_interval

    n = int(streams or PLAN_STREAMS)
    rate = plan.rate if plan.rate is not None else 1.0
    grid = np.atleast_1d(np.asarray(true_rates, dtype=float))
    p = np.array(
        [
            detection_probability(
                rate, passes_per_week=plan.passes_per_week, weeks=plan.weeks, alpha=plan.alpha,
                delta=plan.delta, true_rate=float(t), streams=n,
            )[0]
            for t in grid
        ]
    )  # fmt: skip
    alarms = np.rint(p * n).astype(int)
    low, high = wilson_interval(alarms, np.full(alarms.shape, n))
    return pd.DataFrame(
        {"false_pass_rate": grid, "p_alarm": p, "alarms": alarms, "streams": n,
         "low": low, "high": high}
    )  # fmt: skip


# --------------------------------------------------------------------------- thresholds


#: The columns of :func:`tradeoff_table`.
TRADEOFF_TABLE_COLUMNS = [
    "alpha", "status", "n", "decided", "decided_share", "decided_low", "decided_high",
    "auto_pass", "auto_pass_share", "auto_pass_low", "auto_pass_high", "auto_fail",
    "n_pass", "false_passes", "false_pass_rate", "false_pass_low", "false_pass_high",
    "decided alone", "observed false passes",
]  # fmt: skip


def tradeoff_table(search: Any, alphas: Sequence[float] | None = None) -> pd.DataFrame:
    """The trade-off of ``calibrate thresholds --tradeoff`` as a table: each share with its n and interval.

    For each ``alpha`` the search is rerun at that bound (``beta`` and
    ``delta`` held at the search's), and the thresholds it certifies are
    replayed on the labeled checks: how many it decides alone (and passes),
    each with its 95% Wilson interval, and the observed false passes among
    its passes with their 95% Clopper-Pearson interval, as the CLI prints
    them. The shares are measured on the labels that chose the thresholds,
    so they are optimistic; only the certified bound accounts for the choice.

    Parameters
    ----------
    search : StepThresholds
        A step's search (``step.thresholds.raw`` of :func:`assess_steps`, or a
        step of :func:`calibrate.suggest_from_store`).
    alphas : sequence of float, optional
        Default :data:`calibrate.defaults.TRADEOFF_ALPHAS`, the CLI's.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`TRADEOFF_TABLE_COLUMNS` (counts of the ``n`` labeled
        checks; zero where nothing is certified: every submission to a
        person). ``attrs`` holds the search's ``alpha``, ``beta``, ``delta``,
        ``n`` and ``today`` (today's thresholds replayed: ``decided``,
        ``n``, ``n_pass``, ``false_passes``, or ``None``).
    """
    from calibrate.analysis.stats import clopper_pearson_interval, wilson_interval
    from calibrate.defaults import TRADEOFF_ALPHAS

    frame = search.tradeoff(TRADEOFF_ALPHAS if alphas is None else alphas)
    n = int(frame["n"].iloc[0]) if len(frame) else int(search.n_labeled)
    ok = (frame["status"] == "ok").to_numpy()
    # The CLI's counts: shares of n, rounded back to the checks they are.
    decided = np.where(ok, np.rint(frame["coverage"].to_numpy(float) * n), 0).astype(int)
    passed = np.where(ok, np.rint(frame["auto_pass"].to_numpy(float) * n), 0).astype(int)
    n_pass = np.where(ok, frame["n_pass"].fillna(0).to_numpy(float), 0).astype(int)
    observed = np.nan_to_num(frame["observed_false_pass"].to_numpy(float))
    false_passes = np.where(ok, np.rint(observed * n_pass), 0).astype(int)
    nn = np.full(len(frame), n)
    d_low, d_high = wilson_interval(decided, nn)
    p_low, p_high = wilson_interval(passed, nn)
    f_low, f_high = clopper_pearson_interval(false_passes, n_pass)
    out = pd.DataFrame(
        {
            "alpha": frame["alpha"].to_numpy(float),
            "status": frame["status"].to_numpy(object),
            "n": nn,
            "decided": decided,
            "decided_share": decided / n if n else np.nan,
            "decided_low": d_low,
            "decided_high": d_high,
            "auto_pass": passed,
            "auto_pass_share": passed / n if n else np.nan,
            "auto_pass_low": p_low,
            "auto_pass_high": p_high,
            "auto_fail": decided - passed,
            "n_pass": n_pass,
            "false_passes": false_passes,
            "false_pass_rate": np.where(n_pass > 0, false_passes / np.maximum(n_pass, 1), np.nan),
            "false_pass_low": f_low,
            "false_pass_high": f_high,
        }
    )
    out["decided alone"] = [
        _rate_words(k, n) if okay else "nothing certified: every submission to a person"
        for k, okay in zip(decided, ok, strict=True)
    ]
    out["observed false passes"] = [
        f"{k} of {m} passes ({100 * lo:.1f}–{100 * hi:.1f}%, 95% Clopper-Pearson)" if m else "–"
        for k, m, lo, hi in zip(false_passes, n_pass, f_low, f_high, strict=True)
    ]
    cur = getattr(search, "current_rates", None)
    out.attrs.update(
        alpha=float(search.alpha), beta=float(search.beta), delta=float(search.delta), n=n,
        today=None if cur is None or not cur.n else {
            "decided": int(cur.n_pass + cur.n_fail), "n": int(cur.n),
            "n_pass": int(cur.n_pass), "false_passes": int(cur.false_pass),
        },
    )  # fmt: skip
    return out[TRADEOFF_TABLE_COLUMNS]


def plot_tradeoff(table: pd.DataFrame, *, title: str = "", ax: Any = None) -> Any:
    """Draw :func:`tradeoff_table`: the share decided alone against the bound asked for, with intervals.

    The x axis is the bound certified at each ``alpha`` (with ``beta`` held);
    the y axis the share of the ``n`` labeled checks decided without a person
    (and passed), with 95% Wilson intervals, measured on the labels that
    chose the thresholds (optimistic). Today's thresholds are certified at no
    bound, so they are not a point on this axis: their share decided alone is
    a horizontal band (95% Wilson), and their observed false passes are in
    its legend with their n.

    Returns
    -------
    matplotlib.axes.Axes
    """
    import matplotlib.pyplot as plt

    from calibrate.analysis.stats import clopper_pearson_interval, wilson_interval
    from calibrate.drawing import safe_text

    if ax is None:
        _, ax = plt.subplots(figsize=(8, 6), layout="constrained")
    t = table
    a = t.attrs
    ok = (t["status"] == "ok").to_numpy()
    x = t["alpha"].to_numpy(float)
    for share, low, high, fmt, colour, label in (
        ("decided_share", "decided_low", "decided_high", "o-", "C0", "decided without a person"),
        ("auto_pass_share", "auto_pass_low", "auto_pass_high", "s--", "C2", "passed without a person"),
    ):  # fmt: skip
        y = t[share].to_numpy(float)
        err = np.vstack([y - t[low].to_numpy(float), t[high].to_numpy(float) - y])
        ax.errorbar(x[ok], y[ok], yerr=np.clip(err[:, ok], 0, None), fmt=fmt, color=colour,
                    capsize=3, label=f"{label} (95% Wilson)")  # fmt: skip
    if (~ok).any():
        ax.plot(x[~ok], np.zeros(int((~ok).sum())), "x", color="C3",
                label="nothing certified: every submission to a person")  # fmt: skip
    here = np.isclose(x, a.get("alpha", np.nan))
    if (here & ok).any():
        ax.plot(x[here & ok], t["decided_share"].to_numpy(float)[here & ok], "*", ms=16,
                color="C1", label=f"suggested (alpha = {a['alpha']:g})")  # fmt: skip
    elif here.any():
        ax.axvline(
            a["alpha"], ls=":", color="0.5", label=f"alpha = {a['alpha']:g}: nothing certified"
        )
    today = a.get("today")
    if today:
        lo, hi = (float(v) for v in wilson_interval(today["decided"], today["n"]))
        share = today["decided"] / today["n"]
        k, m = today["false_passes"], today["n_pass"]
        observed = "no passes"
        if m:
            fp_lo, fp_hi = (100 * float(v) for v in clopper_pearson_interval(k, m))
            observed = f"{k} of {m} passes not acceptable [{fp_lo:.1f}, {fp_hi:.1f}]%"
        ax.axhspan(lo, hi, color="C4", alpha=0.15)
        label = (
            f"today's thresholds (certified at no bound): decided alone {100 * share:.1f}% "
            f"[{100 * lo:.1f}, {100 * hi:.1f}]\n({today['decided']} of {today['n']}); "
            f"observed: {observed} (95% Clopper-Pearson)"
        )
        ax.axhline(share, color="C4", lw=1, ls="-.", label=label)
    ax.set_xlabel(
        f"alpha: the false-pass bound certified at {1 - a.get('delta', np.nan):.0%} confidence\n"
        f"(the false-fail bound held at beta = {a.get('beta', np.nan):g})"
    )
    ax.set_ylabel(f"share of the {a.get('n', 0)} labeled checks\n(in-sample, so optimistic)")
    ax.set_ylim(-0.02, 1.02)
    head = safe_text(title, width=90) if title else "Trade-off"
    ax.set_title(
        f"{head}\nshares measured on the labels that chose the thresholds (optimistic); "
        "only the certified bound accounts for the choice",
        fontsize=9,
    )
    ax.grid(True, alpha=0.25)
    # Below the axes: the legend carries today's figures, too long to sit beside them.
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.22), fontsize="small", frameon=False)
    return ax


def check_blocks(
    con: Any, steps: Sequence[Any], filters: Any = None, *, options: Any = None
) -> str:
    """Each step's ``check:`` block to paste, with the comment lines ``calibrate thresholds --format yaml`` writes.

    Per step: a header with the readiness decision of ``calibrate report``
    (``# process / step · model M: READY``), then the step's document of
    ``calibrate thresholds --format yaml`` at the same limits, written by the
    CLI's own :func:`calibrate.cli.thresholds.yaml_blocks`: its comments say
    what the search certified, the shares it expects (optimistic) and today's,
    the questions' remarks (a question that no longer decides anything, an
    unsure band too narrow to matter) and the search's notes. The CLI's block
    keeps ``advisory: true`` until the report says READY; where it does, a
    comment gives the report's pattern and why, and unless that pattern keeps
    advisory the block is the report's, without ``advisory``.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    steps : sequence of StepReadiness
        From :func:`assess_steps` with the same ``filters`` and ``options``.
    filters : calibrate.Filters, optional
    options : ReadinessOptions, optional
        ``alpha``, ``delta``, ``beta`` and ``min_coverage`` (the CLI's ``--needed-share``).

    Returns
    -------
    str
        Record text in the comments has its control characters removed.
    """
    from calibrate.analysis.enforced_advice import attach_enforced_advice
    from calibrate.analysis.threshold_steps import ThresholdsReport, suggest_from_store
    from calibrate.cli.thresholds import yaml_blocks
    from calibrate.dataset import Filters
    from calibrate.defaults import ReadinessOptions
    from calibrate.report.render import check_yaml

    opts = options or ReadinessOptions()
    filters = filters or Filters()
    limits = {"alpha": opts.alpha, "delta": opts.delta, "beta": opts.beta}
    # What `calibrate thresholds --format yaml` runs, at the same limits.
    report = suggest_from_store(con, filters, needed_share=opts.min_coverage, **limits)
    attach_enforced_advice(con, report, filters, min_coverage=opts.min_coverage)
    searched = {(s.process, s.step): s for s in report.steps}
    out = []
    for st in steps:
        head = strip_control(f"# {st.process} / {st.step} · model {st.model}: {st.decision}")
        s = searched.get((st.process, st.step))
        if s is None:
            out.append(f"{head}\n# (no threshold search on this step: nothing to paste)\n")
            continue
        doc = yaml_blocks(ThresholdsReport(steps=[s], **limits))
        if s.enforced is not None:
            # Enforced: the block is the report's own advice (keep, or return to advisory), as
            # the CLI prints it; the header says that advice, not a decision to drop advisory.
            advice = strip_control(str(s.enforced.get("recommended", ""))).upper()
            head = strip_control(f"# {st.process} / {st.step} · model {st.model}: ")
            head += f"enforced; `calibrate report` says {advice}"
        elif st.enforcement is None and st.decision == "READY":
            # The report's READY and its pattern: whether its block drops advisory, and why.
            recommended = str(st.pattern.get("recommended", ""))
            drops = (
                recommended != "keep advisory"
                and bool(st.suggested_check)
                and _same_check(st.suggested_check, s.suggested)
            )
            said = f"`calibrate report` says READY (pattern: {recommended}): {st.pattern.get('why', '')}"
            said += (
                " Its block, below, drops advisory: true."
                if drops
                else " Its block keeps advisory: true."
            )
            lines = doc.splitlines()
            n_comments = next(
                (i for i, line in enumerate(lines) if not line.startswith("#")), len(lines)
            )
            wrapped = [
                f"# {line}"
                for line in textwrap.wrap(strip_control(said), 78, break_on_hyphens=False)
            ]
            body = (
                check_yaml(st.suggested_check, advisory=False)
                if drops
                else "\n".join(lines[n_comments:]) + "\n"
            )
            doc = "\n".join([*lines[:n_comments], *wrapped, ""]) + body
        out.append(f"{head}\n{doc}")
    return "\n".join(out)


def _same_check(items: Sequence[dict[str, Any]], questions: Any) -> bool:
    """Whether the report's suggested check (items) is the search's (questions), ``kind`` aside."""
    if not questions:
        return False
    strip = [{k: v for k, v in item.items() if k != "kind"} for item in items]
    return strip == [q.to_check_item() for q in questions]
