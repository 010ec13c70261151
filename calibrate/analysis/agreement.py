"""How often the check and the person agree, and where they disagree.

The unit is the submission: one recorded check of one attempt, compared with
the person's decision on that attempt (``label``: acceptable or not). At the
question level each question's recorded ``result`` is compared with the same
label; the person judged the whole submission, not the question.

Disagreements are not alike, so they are reported separately:

* **false pass** — verdict pass, label not acceptable: bad work would go
  through once ``advisory`` is dropped. ``false_pass_rate = P(not acceptable | pass)``.
* **false fail** — verdict fail, label acceptable: good work sent back.
  ``false_fail_rate = P(acceptable | fail)``.
* **unsure** — a person's time. ``unsure_rate = P(unsure)`` over all checks.

Every rate comes with its denominator and a Wilson score interval; kappa with
the Fleiss-Cohen-Everitt large-sample interval (the corrected pass rate of
the unlabeled submissions is :mod:`calibrate.analysis.corrected`). All functions are pure: they
take the DataFrames of :func:`calibrate.dataset.submissions` /
:func:`calibrate.dataset.answers` and return DataFrames, one row per group.

References
----------
.. [1] Wilson, E. B. (1927). Probable inference, the law of succession, and
   statistical inference. JASA 22(158), 209-212.
.. [2] Fleiss, J. L., Cohen, J. and Everitt, B. S. (1969). Large sample
   standard errors of kappa and weighted kappa. Psychological Bulletin 72(5).
.. [3] Goddard, K., Roudsari, A. and Wyatt, J. C. (2012). Automation bias: a
   systematic review of frequency, effect mediators, and mitigators. JAMIA
   19(1), 121-127.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calibrate.analysis.draw_design import (
    CHOSEN_BY_DRAW_NOTE,
    CHOSEN_WITHHELD,
    DRAW_FLAGS,
    LABEL_SOURCES,
    LATER_NOTE,
    PENDING_NOTE,
    SELECTED_NOTE,
    SELECTED_WITHHELD,
    draw_flags,
    draw_note,
    is_audited,
    is_enforced,
)
from calibrate.analysis.grouping import group_sums, text_values
from calibrate.analysis.kappa import cohen_kappa
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.stats import MIN_N, wilson_interval
from calibrate.arguments import check_at_least, check_unit

#: Group keys accepted by ``by``; ``approver`` is the decision's ``decided_by``,
#: ``week``/``day``/``month`` are UTC buckets of the check's ``at``.
GROUP_KEYS = (
    "process", "version", "step", "question", "model", "approver", "week", "day", "month", "labels",
)  # fmt: skip
#: Default grouping. It includes ``model`` so that evaluator models are never pooled silently.
DEFAULT_BY = ("process", "step", "model")
TIME_KEYS = ("week", "day", "month")

#: How the intervals are computed, for the faces to state next to the numbers.
INTERVAL_METHOD = "Wilson score 95%; kappa: Fleiss-Cohen-Everitt large-sample 95%"
#: Said of every question-level figure.
QUESTION_UNIT = "the person judged the whole submission"

VERDICTS = ("pass", "fail", "unsure", "error")
LABELS = ("acceptable", "not_acceptable")
#: Cell counts of the verdict x label table, in this order.
COUNT_COLUMNS = [f"{v}_{lab}" for v in VERDICTS for lab in LABELS]
#: Rate columns: (name, numerator column, denominator column).
_RATES = (
    ("agree", "n_agree", "n_decided"),
    ("false_pass", "pass_not_acceptable", "n_pass"),
    ("false_fail", "fail_acceptable", "n_fail"),
    ("unsure", "n_unsure", "n_checks"),
    ("tpr", "pass_acceptable", "n_acceptable"),
    ("tnr", "n_true_negative", "n_not_acceptable"),
    ("error", "n_error", "n_checks"),
)
#: Columns of :func:`agreement` after the group keys.
AGREEMENT_COLUMNS = [
    "n_checks", "n", "n_decided", "n_pass", "n_fail", "n_acceptable", "n_not_acceptable",
    "n_unsure", "n_error", "conflicts", "n_models", *COUNT_COLUMNS,
    "agree", "agree_low", "agree_high",
    "kappa", "kappa_low", "kappa_high", "kappa_reason",
    "false_pass_rate", "false_pass_low", "false_pass_high",
    "false_fail_rate", "false_fail_low", "false_fail_high",
    "unsure_rate", "unsure_low", "unsure_high",
    "tpr", "tpr_low", "tpr_high",
    "tnr", "tnr_low", "tnr_high",
    "error_rate", "error_low", "error_high",
    "unequal_draws", "unequal_draws_pass", "unequal_draws_fail", "unequal_draws_verdicts",
    "n_selected", "n_later_pass", "n_later_fail", "n_pending", "note",
]  # fmt: skip

#: The view column behind a group key, where it has another name.
_KEY_SOURCES = {
    "approver": "decided_by",
    "question": "ask",
    "week": "at",
    "day": "at",
    "month": "at",
    "labels": ("audited", "advisory"),
}
#: What agreement reads of a labeled check besides its verdict (or question result): the label,
#: where it comes from (the unequal-draw flags) and when and of which step it was recorded (the
#: span of the draws' design).
_LABEL_COLUMNS = (
    "label", "conflict", "model", "audited", "inclusion_p", "advisory", "at", "process", "step",
)  # fmt: skip
#: Columns each analysis reads besides its group keys.
_ANALYSIS_COLUMNS = {
    "agreement": ("verdict", *_LABEL_COLUMNS),
    "question": ("result", *_LABEL_COLUMNS),
    "approvers": ("verdict", "label", "decided_at", "at", "decided_by", "model"),
    "corrected": ("verdict", "label", "is_latest", "advisory", "audited", "left_out", "model"),
}


def input_columns(by: str | Sequence[str] | None, *, analysis: str = "agreement") -> list[str]:
    """The columns of :func:`calibrate.dataset.submissions` (or ``answers``) an analysis reads.

    For reading only those (:func:`calibrate.dataset.view_columns`): the
    whole view costs gigabytes at a million runs.

    Parameters
    ----------
    by : str or sequence of str, optional
        The grouping, as passed to the analysis (``None`` for its default).
    analysis : {"agreement", "question", "approvers", "corrected"}, default="agreement"
        :func:`agreement` on submissions, :func:`agreement` by question (the
        answers' columns), :func:`approvers`,
        :func:`calibrate.analysis.corrected.corrected_pass_rate`.

    Returns
    -------
    list of str
        Column names, each once.

    Examples
    --------
    >>> input_columns(["approver", "week"], analysis="approvers")
    ['verdict', 'label', 'decided_at', 'at', 'decided_by', 'model']
    """
    if analysis not in _ANALYSIS_COLUMNS:
        raise ValueError(
            f"unknown analysis {analysis!r}; choose from {', '.join(_ANALYSIS_COLUMNS)}"
        )
    default = () if analysis == "approvers" else DEFAULT_BY
    keys = expand_question(validate_by(by, default=default))
    # Only the question level has question text; elsewhere the analysis rejects the key.
    sources = [_KEY_SOURCES.get(k, k) for k in keys if k != "question" or analysis == "question"]
    flat = [c for src in sources for c in ((src,) if isinstance(src, str) else src)]
    return list(dict.fromkeys([*_ANALYSIS_COLUMNS[analysis], *flat]))


#: Columns an analysis reads only where they are present (where a label comes from: the
#: unequal-draw flags, and the labels after the switch the corrected rate leaves out; when and
#: of which step a check was recorded: the span of the draws' design).
_OPTIONAL_COLUMNS = frozenset({"audited", "inclusion_p", "advisory", "left_out", "at", "process",
                               "step"})  # fmt: skip


def require_columns(
    frame: object, by: str | Sequence[str] | None, *, analysis: str, name: str = "submissions"
) -> None:
    """Refuse a ``frame`` that is no DataFrame or lacks a column ``analysis`` reads, naming them.

    Parameters
    ----------
    frame : object
        What the caller passed as ``name``.
    by : str or sequence of str, optional
        The grouping (its keys' columns are needed too).
    analysis : {"agreement", "question", "approvers", "corrected"}
        As for :func:`input_columns`.
    name : str, default="submissions"
        The argument, as the message names it.

    Raises
    ------
    ValueError
        ``frame`` is not a DataFrame, or misses columns (all of them named), rather than a
        ``KeyError`` from deep inside the analysis.
    """
    source = "calibrate.answers(con)" if name == "answers" else "calibrate.submissions(con)"
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{name} must be a DataFrame such as {source}, got {type(frame).__name__}")
    keys = validate_by(by, default=() if analysis == "approvers" else DEFAULT_BY)
    # A column a key groups by is required, whatever else it is optional for.
    grouped = {"audited"} if "labels" in keys else set()
    # ``at``: a time key's, and the approvers' review times.
    grouped |= {"at"} if analysis == "approvers" or any(k in TIME_KEYS for k in keys) else set()
    grouped |= {"process", "step"} & set(expand_question(keys))
    optional = _OPTIONAL_COLUMNS - grouped
    missing = [
        c for c in input_columns(by, analysis=analysis)
        if c not in frame.columns and c not in optional
    ]  # fmt: skip
    if missing:
        raise ValueError(
            f"{name} lacks the column{'s' if len(missing) > 1 else ''} {', '.join(missing)} "
            f"that {analysis} reads (as {source} has them)"
        )


def check_rate_options(confidence: float, min_n: int) -> None:
    """Refuse a ``confidence`` outside (0, 1) or a ``min_n`` below 1, as every analysis here.

    Raises
    ------
    UsageError
        A ``ValueError`` naming the argument and what it accepts (a level of 2 gave NaN
        intervals without a word, a ``min_n`` of -5 no "too few" note).
    """
    check_unit("confidence", confidence)
    check_at_least("min_n", min_n)


def validate_by(by: str | Sequence[str] | None, *, default: Sequence[str]) -> list[str]:
    if by is None:
        return list(default)
    keys = [by] if isinstance(by, str) else list(by)
    unknown = [k for k in keys if k not in GROUP_KEYS]
    if unknown:
        raise ValueError(f"unknown group key(s) {unknown}; allowed: {', '.join(GROUP_KEYS)}")
    if len(set(keys)) != len(keys):
        raise ValueError(f"group keys repeat: {keys}")
    return keys


def key_frame(df: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """The group key columns of ``df``, derived where needed (approver, time buckets)."""
    out = {}
    at = pd.to_datetime(df["at"], utc=True) if any(k in TIME_KEYS for k in keys) else None
    for key in keys:
        if key == "approver":
            out[key] = df["decided_by"]
        elif key == "question":
            out[key] = df["ask"]
        elif key == "day":
            out[key] = at.dt.strftime("%Y-%m-%d")
        elif key == "week":
            # The Monday that starts the ISO week, so that weeks sort as dates.
            monday = at.dt.normalize() - pd.to_timedelta(at.dt.day_of_week, unit="D")
            out[key] = monday.dt.strftime("%Y-%m-%d")
        elif key == "month":
            out[key] = at.dt.strftime("%Y-%m")
        elif key == "labels":
            out[key] = np.where(
                is_audited(df), LABEL_SOURCES["audit"],
                np.where(is_enforced(df), LABEL_SOURCES["enforced"], LABEL_SOURCES["review"]),
            )  # fmt: skip
        else:
            out[key] = df[key]
    return pd.DataFrame(out, index=df.index)


def expand_question(keys: list[str]) -> list[str]:
    """``keys`` with ``process`` and ``step`` put before ``question`` where they are missing."""
    # A question is identified by its process, step and text (check-1 §2), so
    # grouping by question alone would merge same-worded questions of two steps.
    if "question" not in keys:
        return keys
    out = [k for k in ("process", "step") if k not in keys]
    return out + keys


def _rate_column(name: str) -> str:
    """The column of a rate of :data:`_RATES`: ``agree``, ``tpr``, ``tnr``, else ``<name>_rate``."""
    return name if name in ("agree", "tpr", "tnr") else f"{name}_rate"


def rate_columns(out: pd.DataFrame, name: str, k: str, n: str, confidence: float) -> None:
    """Add rate ``name`` of ``out[k] / out[n]`` with its Wilson interval to ``out``, in place."""
    kk = out[k].to_numpy(dtype=float)
    nn = out[n].to_numpy(dtype=float)
    low, high = wilson_interval(kk, nn, confidence=confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(nn > 0, kk / np.where(nn > 0, nn, 1), np.nan)
    out[_rate_column(name)] = rate
    out[f"{name}_low"] = low
    out[f"{name}_high"] = high


def _kappa_row(
    a: int, b: int, c: int, d: int, confidence: float
) -> tuple[float, float, float, str]:
    """Kappa of decided verdicts from the 2x2 counts.

    ``a`` pass/acceptable, ``b`` pass/not, ``c`` fail/acceptable, ``d`` fail/not.
    """
    nan = float("nan")
    n = a + b + c + d
    if n == 0:
        return nan, nan, nan, "no labeled pass or fail verdicts"
    # A constant rater makes kappa 0 by construction (sklearn returns 0 or NaN);
    # that says nothing about agreement, so it is reported as undefined.
    if c + d == 0:
        return nan, nan, nan, "every decided verdict is pass: kappa undefined"
    if a + b == 0:
        return nan, nan, nan, "every decided verdict is fail: kappa undefined"
    if b + d == 0:
        return nan, nan, nan, "every decided submission is acceptable: kappa undefined"
    if a + c == 0:
        return nan, nan, nan, "every decided submission is not acceptable: kappa undefined"
    verdict = np.repeat([1, 1, 0, 0], [a, b, c, d])
    label = np.repeat([1, 0, 1, 0], [a, b, c, d])
    res = cohen_kappa(verdict, label, confidence=confidence)
    return res.kappa, res.low, res.high, ""


def agreement(
    submissions: pd.DataFrame | None,
    *,
    by: str | Sequence[str] | None = None,
    answers: pd.DataFrame | None = None,
    confidence: float = 0.95,
    min_n: int = MIN_N,
) -> pd.DataFrame:
    """Agreement between the check's verdicts and the person's labels, per group.

    Parameters
    ----------
    submissions : pandas.DataFrame or None
        One row per recorded check, as returned by
        :func:`calibrate.dataset.submissions` (columns ``verdict``, ``label``,
        ``conflict``, ``model``, ``at``, ``decided_by`` and the group keys;
        :func:`input_columns` lists those a grouping reads). Not read, and may
        be ``None``, when ``by`` has ``question``.
    by : str or sequence of str, optional
        Group keys from :data:`GROUP_KEYS`, alone or crossed, e.g.
        ``["step", "model"]``. Default :data:`DEFAULT_BY` (process, step,
        model). ``approver`` groups by ``decided_by``; ``week`` (the Monday
        that starts it), ``day`` and ``month`` bucket ``at`` in UTC;
        ``question`` groups by process, step and question text and needs
        ``answers``. An empty list gives one overall row. When ``model`` is
        not a key, ``n_models`` and ``note`` say how many models a row pools.
    answers : pandas.DataFrame, optional
        One row per answered question, as returned by
        :func:`calibrate.dataset.answers`; required when ``by`` has
        ``question``. Each question's recorded ``result`` then stands in for
        the verdict, against the label of its submission (the person judged
        the whole submission). Answers without a recorded result are left out.
    confidence : float, default=0.95
        Level of every interval.
    min_n : int, default=:data:`calibrate.analysis.stats.MIN_N`
        Below this many labels a row's ``note`` says "too few labels".

    Returns
    -------
    pandas.DataFrame
        One row per group, sorted by the keys: the key columns, then
        :data:`AGREEMENT_COLUMNS`:

        ============================  ==============================================
        ``n_checks``                  recorded checks in the group, labeled or not
        ``n``                         checks with a label (the person's decision)
        ``<verdict>_<label>``         the verdict x label table; verdict in pass,
                                      fail, unsure, error; label ``acceptable`` or
                                      ``not_acceptable`` (labeled checks only)
        ``agree``                     ``(pass&acceptable + fail&not) / n_decided``,
                                      over labeled pass/fail verdicts
        ``kappa``                     Cohen's kappa of pass/fail verdict vs label
                                      over the same decided verdicts; NaN with
                                      ``kappa_reason`` where undefined
        ``false_pass_rate``           ``P(not acceptable | pass)``, of ``n_pass``
        ``false_fail_rate``           ``P(acceptable | fail)``, of ``n_fail``
        ``unsure_rate``               ``P(unsure)`` over all ``n_checks``
        ``tpr``                       ``P(pass | acceptable)``, of ``n_acceptable``
        ``tnr``                       ``P(not pass | not acceptable)``, of
                                      ``n_not_acceptable``
        ``error_rate``                ``P(error)`` over all ``n_checks``
        ``conflicts``                 labeled checks whose submission has
                                      conflicting decisions (the latest is used;
                                      a drawn check: the first after its draw)
        ``unequal_draws_pass``        the group has audit labels and the draws did
                                      not offer every pass of its population (the
                                      enforced checks beside it, but those no
                                      draw could consider: recorded after the
                                      last pass a draw of the step considered,
                                      or before the step's switch; a reviewed
                                      check counts as offered with probability
                                      1, a verdict the draws left out with 0)
                                      alike: the false-pass rate is withheld
                                      (False without ``audited``/``inclusion_p``)
        ``unequal_draws_fail``        the same over the fails: the false-fail
                                      rate is withheld (a fail draw beside a
                                      pass draw at the same rate keeps it)
        ``unequal_draws``             the same over every pass and fail at one
                                      probability (up to the last check any draw
                                      of the step considered): agreement and
                                      kappa withheld
        ``unequal_draws_verdicts``    the same over every verdict (a draw offers
                                      no unsure or error verdict): TPR and TNR
                                      withheld
        ``n_selected``                labels on checks recorded with ``advisory:
                                      false`` that no draw drew (escalations,
                                      decisions on undrawn checks; kept by
                                      ``--with-escalations``): a sample the
                                      enforced check selected, so agreement,
                                      kappa, false passes, false fails, TPR and
                                      TNR are withheld where there is one
        ``n_later_pass``,             where the group has audit labels: the
        ``n_later_fail``              passes (fails) recorded after the last one
                                      a draw of their step considered (every one
                                      after the switch where its draws considered
                                      none), left out of the false-pass
                                      (false-fail) rate; the note says so
        ``n_pending``                 drawn checks no decision has reached yet
                                      (the rates are over the decided ones; the
                                      note says so)
        ``unsure_rate``,              withheld (NaN) in a ``labels`` group a draw
        ``error_rate`` withheld       chose or left (``audit draw``; ``advisory:
                                      false, not drawn``) when it did not offer
                                      every verdict alike: the shares are the
                                      draw's (the note says so)
        ``note``                      "no labels", "too few labels (n<20)",
                                      "pools 2 models", conflicts, unequal draws,
                                      and at question
                                      level "the person judged the whole submission"
        ============================  ==============================================

        TPR and TNR take the check's **pass** as the positive call for
        "acceptable" over **all** labeled verdicts: unsure and error count as
        "not pass", because once ``advisory`` is dropped neither lets work
        through. (:func:`calibrate.analysis.corrected.corrected_pass_rate`
        measures its own over pass and fail verdicts only.) Each rate ``x`` has ``x_low``/``x_high``
        (columns ``agree_low``, ``false_pass_low``, ``tpr_low``, ...): Wilson
        score intervals, NaN where the denominator is 0. Kappa has
        ``kappa_low``/``kappa_high`` from the Fleiss-Cohen-Everitt
        large-sample standard error. ``df.attrs`` carries
        ``interval_method`` and, at question level, ``unit``.

    Raises
    ------
    ValueError
        An unknown group key, or ``question`` without ``answers``; a ``confidence``
        outside (0, 1) or a ``min_n`` below 1 (:class:`calibrate.errors.UsageError`).

    References
    ----------
    .. [1] Wilson, E. B. (1927). Probable inference, the law of succession, and
       statistical inference. JASA 22(158), 209-212.
    .. [2] Fleiss, J. L., Cohen, J. and Everitt, B. S. (1969). Large sample
       standard errors of kappa and weighted kappa. Psychological Bulletin 72(5).

    Examples
    --------
    >>> subs = pd.DataFrame({
    ...     "process": "p", "step": "s", "model": "m", "at": pd.Timestamp("2026-10-06", tz="UTC"),
    ...     "verdict": ["pass", "pass", "fail", "unsure"], "label": [True, False, False, pd.NA],
    ...     "conflict": False, "decided_by": "ann"})
    >>> row = agreement(subs).iloc[0]
    >>> int(row["n"]), float(row["false_pass_rate"]), round(float(row["agree"]), 3)
    (3, 0.5, 0.667)
    """
    keys = expand_question(validate_by(by, default=DEFAULT_BY))
    question_level = "question" in keys
    if question_level:
        if answers is None:
            raise ValueError("grouping by question needs the answers DataFrame (answers=...)")
        require_columns(answers, by, analysis="question", name="answers")
        data = answers[answers["result"].notna()]
        verdict = data["result"]
    else:
        require_columns(submissions, by, analysis="agreement")
        data = submissions
        verdict = data["verdict"]
    check_rate_options(confidence, min_n)

    label = data["label"].astype("boolean")
    labeled = label.notna().to_numpy()
    acc = label.fillna(False).to_numpy(dtype=bool)
    v = text_values(verdict)
    ind = {"n_checks": np.ones(len(data), dtype=np.int64), "n": labeled.astype(np.int64)}
    for name in VERDICTS:
        is_v = v == name
        ind[f"{name}_acceptable"] = (is_v & labeled & acc).astype(np.int64)
        ind[f"{name}_not_acceptable"] = (is_v & labeled & ~acc).astype(np.int64)
    ind["n_unsure"] = (v == "unsure").astype(np.int64)
    ind["n_error"] = (v == "error").astype(np.int64)
    conflict = data["conflict"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    ind["conflicts"] = (conflict & labeled).astype(np.int64)
    values = pd.DataFrame(ind, index=data.index)

    key_df = key_frame(data, keys)
    out = group_sums(key_df, values)
    out["n_models"] = models_per_group(data, key_df, keys, len(out))

    out["n_pass"] = out["pass_acceptable"] + out["pass_not_acceptable"]
    out["n_fail"] = out["fail_acceptable"] + out["fail_not_acceptable"]
    out["n_decided"] = out["n_pass"] + out["n_fail"]
    out["n_acceptable"] = out[[f"{x}_acceptable" for x in VERDICTS]].sum(axis=1)
    out["n_not_acceptable"] = out[[f"{x}_not_acceptable" for x in VERDICTS]].sum(axis=1)
    out["n_agree"] = out["pass_acceptable"] + out["fail_not_acceptable"]
    out["n_true_negative"] = out["n_not_acceptable"] - out["pass_not_acceptable"]
    for name, k, n in _RATES:
        rate_columns(out, name, k, n, confidence)

    kap = [
        _kappa_row(int(a), int(b), int(c), int(d), confidence)
        for a, b, c, d in out[
            ["pass_acceptable", "pass_not_acceptable", "fail_acceptable", "fail_not_acceptable"]
        ].itertuples(index=False)
    ]
    kap_cols = list(zip(*kap, strict=True)) if kap else [[], [], [], []]
    out["kappa"] = np.asarray(kap_cols[0], dtype=float)
    out["kappa_low"] = np.asarray(kap_cols[1], dtype=float)
    out["kappa_high"] = np.asarray(kap_cols[2], dtype=float)
    out["kappa_reason"] = pd.Series(kap_cols[3], dtype="string", index=out.index)

    flags = draw_flags(data, key_df, keys, v, len(out))
    chosen = flags.pop("chosen")
    for name, value in flags.items():
        out[name] = value
    for flag, names, _ in DRAW_FLAGS:
        _withhold(out, out[flag].to_numpy(bool), names, reason="unequal audit draws")
    _withhold(out, out["n_selected"].to_numpy() > 0, SELECTED_WITHHELD,
              reason="labels the enforced check selected")  # fmt: skip
    _withhold(out, chosen, CHOSEN_WITHHELD)
    out["note"] = _notes(
        out, min_n=min_n, pools_models="model" not in keys, question_level=question_level,
        chosen=chosen,
    )  # fmt: skip
    out = out[[*keys, *AGREEMENT_COLUMNS]]
    out.attrs["interval_method"] = INTERVAL_METHOD
    out.attrs["by"] = keys
    if question_level:
        out.attrs["unit"] = f"question result vs submission label: {QUESTION_UNIT}"
    return out


#: Below this many labels the large-sample kappa interval covers noticeably less than its level
#: (simulated: about 0.90 for a 95% interval at n = 30-50, 0.93 at 100-200, 0.95 at 1000).
KAPPA_LARGE_SAMPLE = 100


def models_per_group(
    data: pd.DataFrame, key_df: pd.DataFrame, keys: Sequence[str], n_rows: int
) -> np.ndarray:
    """Distinct evaluator models in each group of :func:`group_sums`, in its row order.

    A count, so that a row that pools models says so (:func:`pools_note`); a missing model
    counts as one model of its own.
    """
    if not n_rows:
        return np.zeros(0, dtype=np.int64)
    model = data["model"].astype("string").fillna("(none)")
    if not keys:
        return np.array([model.nunique()], dtype=np.int64)
    return (
        pd.concat([key_df, model.rename("__model")], axis=1)
        .groupby(list(keys), dropna=False, sort=True)["__model"]
        .nunique()
        .to_numpy(dtype=np.int64)
    )


def pools_note(n_models: int) -> str:
    """What a row that pools evaluator models says of it (empty for one model)."""
    return f"pools {n_models} models" if n_models > 1 else ""


def _withhold(
    out: pd.DataFrame, rows: np.ndarray, names: Sequence[str], *, reason: str = ""
) -> None:
    # An unweighted rate over a draw that offered checks unequally (a pass-only draw has no
    # fails to show), or over labels the enforced check selected, is the design's, not the
    # check's: no figure rather than a wrong one. The counts stay, so the row still says what
    # was labeled.
    if not rows.any():
        return
    for name in names:
        out.loc[rows, [_rate_column(name), f"{name}_low", f"{name}_high"]] = np.nan
    if "agree" in names:
        out.loc[rows, ["kappa", "kappa_low", "kappa_high"]] = np.nan
        out.loc[rows, "kappa_reason"] = f"withheld ({reason})"


def _notes(
    out: pd.DataFrame, *, min_n: int, pools_models: bool, question_level: bool,
    chosen: np.ndarray,
) -> pd.Series:  # fmt: skip
    notes = []
    for row, chosen_by_draw in zip(out.to_dict("records"), chosen, strict=True):
        n, kappa = row["n"], row["kappa"]
        parts = []
        if n == 0:
            parts.append("no labels")
        elif n < min_n:
            parts.append(f"too few labels (n<{min_n})")
        elif n < KAPPA_LARGE_SAMPLE and np.isfinite(kappa):
            parts.append(f"kappa interval approximate (n<{KAPPA_LARGE_SAMPLE})")
        if pools_models and row["n_models"] > 1:
            parts.append(pools_note(row["n_models"]))
        if row["conflicts"]:
            parts.append(
                f"{row['conflicts']} with conflicting decisions (latest used; audits: first "
                "after the draw)"
            )
        if row["n_selected"]:
            parts.append(SELECTED_NOTE.format(n=row["n_selected"]))
        else:
            if draws := draw_note(row):
                parts.append(draws)
            parts.extend(
                LATER_NOTE.format(
                    n=row[f"n_later_{v}"],
                    checks=f"{v}es" if v == "pass" else "fails",
                    rate=f"false-{v} rate",
                )
                for v in ("pass", "fail")
                if row[f"n_later_{v}"] and np.isfinite(row[f"false_{v}_rate"])
            )
        if pending := row["n_pending"]:
            one = pending == 1
            parts.append(PENDING_NOTE.format(n=pending, s="" if one else "s", v="s" if one else ""))
        if chosen_by_draw:
            parts.append(CHOSEN_BY_DRAW_NOTE)
        if question_level:
            parts.append(QUESTION_UNIT)
        notes.append("; ".join(parts))
    return pd.Series(notes, index=out.index, dtype="string")


def agreement_records(df: pd.DataFrame) -> list[dict]:
    """The rows of :func:`agreement` as plain dicts in the JSON shape of issue 3.

    Each record has the group keys, ``n``, ``n_checks``, ``agree`` and
    ``agree_ci``, ``kappa``, ``kappa_ci`` and ``kappa_reason``,
    ``false_pass_rate``/``false_pass_ci``, ``false_fail_rate``/``false_fail_ci``,
    ``unsure_rate``/``unsure_ci``, ``tpr``/``tpr_ci``, ``tnr``/``tnr_ci``,
    ``error_rate``/``error_ci``, the counts behind them (``n_decided``,
    ``n_pass``, ``n_fail`` (labeled: the false-pass and false-fail denominators),
    ``n_unsure``, ``n_error`` (of all ``n_checks``: the unsure and error rates' denominators),
    ``n_acceptable``, ``n_not_acceptable``), ``conflicts``,
    ``n_models``, the flags ``unequal_draws``, ``unequal_draws_pass``,
    ``unequal_draws_fail``, ``unequal_draws_verdicts`` and the count ``n_selected``
    (why a rate is ``None`` over a positive n; :func:`agreement`),
    ``counts`` = ``{"pass": {"acceptable": a,
    "not_acceptable": b}, "fail": ..., "unsure": ..., "error": ...}``,
    ``note`` and ``interval_method``. Missing values are ``None``.
    """
    keys = list(df.attrs.get("by", [c for c in df.columns if c not in AGREEMENT_COLUMNS]))
    records = []
    for row in df.to_dict("records"):
        rec: dict = {k: _plain(row[k]) for k in keys}
        for col in ("n", "n_checks", "n_decided", "n_pass", "n_fail", "n_unsure", "n_error",
                    "n_acceptable", "n_not_acceptable", "conflicts", "n_models"):  # fmt: skip
            rec[col] = int(row[col])
        for name, rate in (("agree", "agree"), ("kappa", "kappa"), ("false_pass", "false_pass_rate"),
                           ("false_fail", "false_fail_rate"), ("unsure", "unsure_rate"),
                           ("tpr", "tpr"), ("tnr", "tnr"), ("error", "error_rate")):  # fmt: skip
            rec[rate] = _plain(row[rate])
            rec[f"{name}_ci"] = [_plain(row[f"{name}_low"]), _plain(row[f"{name}_high"])]
        rec["kappa_reason"] = _plain(row["kappa_reason"]) or None
        for flag, _, _ in DRAW_FLAGS:
            rec[flag] = bool(row[flag])
        for col in ("n_selected", "n_later_pass", "n_later_fail", "n_pending"):
            rec[col] = int(row[col])
        rec["counts"] = {v: {lab: int(row[f"{v}_{lab}"]) for lab in LABELS} for v in VERDICTS}
        rec["note"] = _plain(row["note"]) or ""
        rec["interval_method"] = df.attrs.get("interval_method", INTERVAL_METHOD)
        if "unit" in df.attrs:
            rec["unit"] = df.attrs["unit"]
        records.append(rec)
    return records


def flat_records(df: pd.DataFrame) -> list[dict]:
    """Any of this module's frames as flat dicts of plain values (NaN becomes ``None``).

    For CSV output and for table rendering; ``interval_method`` (and, at the
    question level, ``unit``) from ``df.attrs`` are added as columns so that a
    file says how its intervals were computed.
    """
    extra = {k: df.attrs[k] for k in ("interval_method", "unit") if k in df.attrs}
    return [{**{k: _plain(v) for k, v in row.items()}, **extra} for row in df.to_dict("records")]
