"""Small helpers for the analyst notebooks in ``notebooks/``.

The notebooks use the package's public API; this module holds the few pieces
they need that are about *exploring* rather than deciding: loading the bundled
sample into a throw-away store, listing the individual disagreements as a
table an analyst can filter, the report's wording of a rate next to the
numbers, and a compact interval plot of any agreement table.

Nothing here computes a statistic of its own: rates and intervals come from
:mod:`calibrate.analysis.agreement` and :mod:`calibrate.analysis.readiness`,
the wording from :mod:`calibrate.report.render`.

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
from collections.abc import Sequence
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
) -> Path:
    """A temporary store of a simulated export past the switch, audited once.

    The loop of README's tour, in one call: ``calibrate simulate`` with
    enforcement (and a shift from ``shift_week`` weeks after the switch;
    ``None``: none), ``ingest``, ``audit draw`` of ``invoice-matching`` at
    ``audit_rate``, the simulated reviewer's decisions, ``ingest`` again.

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
    simulate(export, runs=runs, seed=seed, enforce_weeks=enforce_weeks, shift_week=shift_week,
             shift=shift if shift_week is not None else 0.0)  # fmt: skip
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

    The same inputs as :func:`calibrate.analysis.readiness.assess_store`:
    each step's current evaluator model and wording go to the certified
    threshold search (:func:`calibrate.analysis.readiness.search_thresholds`),
    then :func:`calibrate.analysis.readiness.assess_step` sees all of the
    step's checks. The calibration curves are left out (notebook 02 draws
    them), which makes this several times faster.

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
    from calibrate.dataset import Filters, answers, limits, process_questions, submissions

    opts = options or rd.ReadinessOptions()
    filters = filters or Filters()
    subs = submissions(con, filters)
    ans = answers(con, filters)
    questions = process_questions(con)
    server = limits(con)
    approvals = rd.approve_steps(con)
    out = []
    for (process, step), s in subs.groupby(["process", "step"], sort=True, dropna=False):
        a = ans[(ans["process"] == process) & (ans["step"] == step)]
        qs = questions.get((process, step), [])
        # The search sees the current model and wording only, as in the report.
        current = rd.detect_model_change(s).current
        models = s["model"].astype(object).where(s["model"].notna(), "(unknown model)")
        s_cur = s[(models == current).to_numpy()]
        a_cur = a[a["check_id"].isin(s_cur["check_id"])]
        s_cur = s_cur[rd.current_wording(s_cur, a_cur, qs).to_numpy(dtype=bool)]
        a_cur = a_cur[a_cur["check_id"].isin(s_cur["check_id"])]
        view = rd.search_thresholds(s_cur, a_cur, questions=qs, options=opts, limits=server)
        out.append(
            rd.assess_step(
                s,
                a,
                thresholds=view,
                questions=qs,
                options=opts,
                has_approve_step=(str(process), str(step)) in approvals,
                limits=server,
            )  # fmt: skip
        )
    return out
