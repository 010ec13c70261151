"""The corrected pass rate: how many of the submissions the check decided alone are acceptable.

Once approvals stop, the check's verdicts are all that is seen of the
submissions it decides alone. The Rogan-Gladen estimator corrects their
apparent pass rate with the check's sensitivity and specificity measured on
the reviews of every verdict of the same group (labels after the switch are
left out and counted); a percentile bootstrap of both sets gives its interval
(references in :func:`corrected_pass_rate`). Takes the
DataFrame of :func:`calibrate.dataset.submissions` and returns one row per
group, as the functions of :mod:`calibrate.analysis.agreement` do.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calibrate.analysis.agreement import (
    DEFAULT_BY,
    group_sums,
    key_frame,
    require_columns,
    validate_by,
)
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.stats import MIN_N, rogan_gladen
from calibrate.analysis.step_data import after_switch_labels

__all__ = ["CORRECTED_COLUMNS", "LEFT_OUT_KINDS", "corrected_pass_rate", "corrected_records"]

#: Columns of :func:`corrected_pass_rate` after the group keys.
CORRECTED_COLUMNS = [
    "n_labeled", "left_out_audits", "left_out_escalations", "left_out_undrawn",
    "n_unlabeled", "n_unlabeled_decided", "labeled_acceptable_rate", "apparent_pass_rate",
    "tpr", "tnr", "estimate", "low", "high", "n_boot", "note",
]  # fmt: skip
#: The kinds of labels after the switch left out of TPR/TNR (``left_out_<kind>`` columns).
LEFT_OUT_KINDS = ("audits", "escalations", "undrawn")


def corrected_pass_rate(
    submissions: pd.DataFrame,
    *,
    by: str | Sequence[str] | None = None,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    min_n: int = MIN_N,
) -> pd.DataFrame:
    """Estimated true acceptable rate of the **unlabeled** submissions the check decided, per group.

    Once approvals stop, the check's own verdicts are all that is observed for
    the submissions it decides alone (pass or fail); an unsure one still goes
    to a person. So the estimate is for the unlabeled submissions with a pass
    or fail verdict, and unsure (and error) verdicts are a class of their own,
    counted and left out on both sides: lumping them with fails would read an
    unlabeled set of unsure verdicts as 0% acceptable. With the check's
    sensitivity ``tpr = P(pass | acceptable, decided)`` and specificity
    ``tnr = P(fail | not acceptable, decided)`` measured on the labeled
    submissions of the same group, the Rogan-Gladen estimator [1]_ corrects
    the apparent pass rate ``q`` of the decided unlabeled ones::

        estimate = (q + tnr - 1) / (tpr + tnr - 1), clipped to [0, 1]

    The interval is a percentile bootstrap [2]_ that resamples both sets:
    the labeled 2x2 table (pass / fail x acceptable / not) from a
    multinomial and the unlabeled pass count from a binomial, so the
    uncertainty of ``tpr``, ``tnr`` and ``q`` all count. An interval of zero
    width (every resample at one value, as when the estimate is clipped at a
    bound every time) is not reported: it would claim a certainty the
    resampling cannot give.

    ``tpr`` and ``tnr`` are measured on the reviews of every verdict (checks
    recorded with ``advisory: true``) and never on labels of checks recorded
    with ``advisory: false``. Those are a sample the enforced check selected
    (its escalations: the unsure region alone) or drew among its own verdicts
    (audit draws: only passes by default, and ``--by-band`` draws over-sample
    the verdicts near the thresholds at unequal inclusion probabilities), so
    counted beside the reviews they bias ``tpr`` and ``tnr``. Weighting audit
    labels by ``1 / inclusion_p`` would not mend it: a draw covers only the
    verdicts it was taken from (the others had probability 0), so pooled with
    the reviews the weighted table mixes two populations. Such labels are left
    out and counted by kind (``left_out_audits``, ``left_out_escalations``,
    ``left_out_undrawn``); only the label is left out: the check stays, unlabeled,
    among the submissions estimated (an audited pass was decided by the check
    alone like any other, and dropping the drawn ones would bias the apparent
    pass rate as the draw chose them). Until 2026-12 audit labels counted
    unweighted beside the reviews, and the drawn checks left the set estimated.

    Assumes the labeled submissions are representative of the unlabeled ones
    (same step, model, thresholds and kind of work); a drift breaks the
    correction (after the switch, :mod:`calibrate.analysis.monitor` tests the
    check on its audits, weighted).

    Parameters
    ----------
    submissions : pandas.DataFrame
        As returned by :func:`calibrate.dataset.submissions`. Labeled rows are
        those with a ``label`` on a check not recorded ``advisory: false``;
        unlabeled submissions are the latest check of each attempt
        (``is_latest``) without such a label. ``advisory``, ``audited`` and
        ``left_out`` are read where present (without ``advisory`` every label
        counts).
    by : str or sequence of str, optional
        Group keys (not ``question``, ``approver`` or ``labels``); default
        :data:`DEFAULT_BY`.
    confidence : float, default=0.95
        Level of the bootstrap interval.
    n_boot : int, default=2000
        Bootstrap resamples.
    seed : int, default=0
        Seed of the resampling.
    min_n : int, default=:data:`calibrate.analysis.stats.MIN_N`
        Fewer labeled acceptable or not-acceptable submissions than this get a
        "too few" note.

    Returns
    -------
    pandas.DataFrame
        The key columns, then :data:`CORRECTED_COLUMNS`: ``n_labeled`` (the
        labels ``tpr`` and ``tnr`` are measured on), the labels after the
        switch left out of them (``left_out_audits``: audit-draw labels;
        ``left_out_escalations``: decided unsure or error verdicts;
        ``left_out_undrawn``: decisions on enforced pass or fail checks no
        draw drew; the last two also when the frame reads their decisions as
        none, by its ``left_out`` column), ``n_unlabeled`` (all
        unlabeled latest checks) and ``n_unlabeled_decided`` (those with a pass
        or fail verdict, the ones estimated), ``apparent_pass_rate`` of the
        decided unlabeled set, ``tpr``/``tnr`` from the labeled set,
        ``labeled_acceptable_rate`` for comparison, the clipped
        ``estimate`` with its interval ``low``/``high``, and a ``note`` saying
        why a value is missing. NaN where there is nothing to correct (no
        unlabeled submissions), where ``tpr`` or ``tnr`` cannot be measured, or
        where ``tpr + tnr <= 1`` (the check does not tell the two apart). The
        interval is NaN when fewer than half of the resamples give an
        estimate.

    References
    ----------
    .. [1] Rogan, W. J. and Gladen, B. (1978). Estimating prevalence from the
       results of a screening test. American Journal of Epidemiology 107(1),
       71-76.
    .. [2] Lang, Z. and Reiczigel, J. (2014). Confidence limits for prevalence
       of disease adjusted for estimated sensitivity and specificity.
       Preventive Veterinary Medicine 113(1), 13-22.
    """
    keys = validate_by(by, default=DEFAULT_BY)
    bad = [k for k in keys if k in ("question", "approver", "labels")]
    if bad:
        # ``labels`` would put the labels the correction is measured on and the
        # submissions it corrects in different groups.
        raise ValueError(
            f"{bad} cannot group unlabeled submissions; use process, step, model or time keys"
        )
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    require_columns(submissions, by, analysis="corrected")
    label = submissions["label"].astype("boolean")
    # A label after the switch is set aside, its check kept unlabeled (see above).
    after = after_switch_labels(submissions)
    labeled = label.notna().to_numpy() & ~after
    acc = label.fillna(False).to_numpy(dtype=bool)
    latest = submissions["is_latest"].astype("boolean").fillna(True).to_numpy(dtype=bool)
    unlabeled = ~labeled & latest
    verdict = submissions["verdict"].astype("string")
    passed = (verdict == "pass").fillna(False).to_numpy(dtype=bool)
    failed = (verdict == "fail").fillna(False).to_numpy(dtype=bool)
    decided = passed | failed
    audits, other = _after_switch_kinds(submissions, after)
    values = pd.DataFrame(
        {
            "left_out_audits": audits.astype(np.int64),
            "left_out_escalations": (other & ~decided).astype(np.int64),
            "left_out_undrawn": (other & decided).astype(np.int64),
            "tp": (labeled & acc & passed).astype(np.int64),
            "fn": (labeled & acc & failed).astype(np.int64),
            "fp": (labeled & ~acc & passed).astype(np.int64),
            "tn": (labeled & ~acc & failed).astype(np.int64),
            "n_lab_all": labeled.astype(np.int64),
            "n_acc_all": (labeled & acc).astype(np.int64),
            "n_unlabeled": unlabeled.astype(np.int64),
            "n_unlabeled_decided": (unlabeled & decided).astype(np.int64),
            "u_pass": (unlabeled & passed).astype(np.int64),
        },
        index=submissions.index,
    )
    out = group_sums(key_frame(submissions, keys), values)
    tp, fn, fp, tn = (out[c].to_numpy(dtype=float) for c in ("tp", "fn", "fp", "tn"))
    n_all = out["n_unlabeled"].to_numpy(dtype=float)
    n_unl = out["n_unlabeled_decided"].to_numpy(dtype=float)
    u_pass = out["u_pass"].to_numpy(dtype=float)
    n_lab = out["n_lab_all"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpr = np.where(tp + fn > 0, tp / (tp + fn), np.nan)
        tnr = np.where(fp + tn > 0, tn / (fp + tn), np.nan)
        q = np.where(n_unl > 0, u_pass / n_unl, np.nan)
        out["labeled_acceptable_rate"] = np.where(
            n_lab > 0, out["n_acc_all"].to_numpy(dtype=float) / n_lab, np.nan
        )
    out["n_labeled"] = n_lab.astype(np.int64)
    out["apparent_pass_rate"] = q
    out["tpr"] = tpr
    out["tnr"] = tnr
    out["estimate"] = rogan_gladen(q, tpr, tnr)
    raw = rogan_gladen(q, tpr, tnr, clip=False)
    rng = np.random.default_rng(seed)
    lows, highs, notes = [], [], []
    for i in range(len(out)):
        lo, hi = _rg_bootstrap(
            tp[i], fn[i], fp[i], tn[i], u_pass[i], n_unl[i], rng, n_boot, confidence
        )
        lows.append(lo)
        highs.append(hi)
        note = _rg_note(
            tp[i] + fn[i], fp[i] + tn[i], n_unl[i], n_all[i], tpr[i], tnr[i], raw[i], min_n
        )
        if np.isfinite(lo) and lo == hi:
            lows[-1] = highs[-1] = np.nan
            note = "; ".join(
                filter(None, [note, "no interval: every resample gave the same estimate"])
            )
        notes.append(note)
    out["low"] = np.asarray(lows, dtype=float)
    out["high"] = np.asarray(highs, dtype=float)
    out["n_boot"] = n_boot
    out["note"] = pd.Series(notes, index=out.index, dtype="string")
    out = out[[*keys, *CORRECTED_COLUMNS]]
    out.attrs["interval_method"] = f"percentile bootstrap {confidence:.0%}, {n_boot} resamples"
    return out


def _after_switch_kinds(
    submissions: pd.DataFrame, after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: an audit-draw label set aside, and another decision after the switch left out.

    The second is read from the ``left_out`` column where present, so that it counts the
    decisions the filters already read as none (:meth:`calibrate.dataset.Filters.source`).
    """
    audited = (
        submissions["audited"].astype("boolean").fillna(False).to_numpy(dtype=bool)
        if "audited" in submissions.columns
        else np.zeros(len(submissions), bool)
    )
    if "left_out" in submissions.columns:
        other = submissions["left_out"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    else:
        other = after & ~audited
    return after & audited & ~other, other


def _rg_bootstrap(
    tp: float,
    fn: float,
    fp: float,
    tn: float,
    u_pass: float,
    n_unl: float,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
) -> tuple[float, float]:
    nan = (float("nan"), float("nan"))
    n_lab = tp + fn + fp + tn
    if n_lab == 0 or n_unl == 0 or tp + fn == 0 or fp + tn == 0:
        return nan
    cells = rng.multinomial(int(n_lab), np.array([tp, fn, fp, tn]) / n_lab, size=n_boot)
    b_tp, b_fn, b_fp, b_tn = cells.T.astype(float)
    b_q = rng.binomial(int(n_unl), u_pass / n_unl, size=n_boot) / n_unl
    with np.errstate(invalid="ignore", divide="ignore"):
        b_tpr = b_tp / (b_tp + b_fn)
        b_tnr = b_tn / (b_fp + b_tn)
    est = rogan_gladen(b_q, b_tpr, b_tnr)
    finite = est[np.isfinite(est)]
    if finite.size < n_boot / 2:
        return nan
    a = (1 - confidence) / 2
    low, high = np.quantile(finite, [a, 1 - a])
    return float(low), float(high)


def _rg_note(
    n_acc: float,
    n_not: float,
    n_unl: float,
    n_all: float,
    tpr: float,
    tnr: float,
    raw: float,
    min_n: int,
) -> str:
    if n_all == 0:
        return "no unlabeled submissions"
    if n_unl == 0:
        return (
            f"no estimate: none of the {n_all:.0f} unlabeled submissions has a pass or fail "
            "verdict (unsure ones go to a person)"
        )
    if n_acc == 0 or n_not == 0:
        which = "acceptable" if n_acc == 0 else "not-acceptable"
        return f"no labeled {which} submissions with a pass or fail verdict: TPR/TNR unknown"
    if tpr + tnr <= 1:
        return "TPR + TNR <= 1: the check does not tell acceptable from not; no correction"
    parts = []
    if min(n_acc, n_not) < min_n:
        parts.append(f"too few labels (fewer than {min_n} acceptable or not acceptable)")
    if n_unl < min_n:
        parts.append(f"too few unlabeled pass or fail verdicts (n<{min_n})")
    if not 0 <= raw <= 1:
        # The apparent pass rate lies outside [1 - TNR, TPR]: noise, or unlabeled
        # submissions unlike the labeled ones (e.g. only blocked ones are undecided).
        parts.append(
            f"raw estimate {raw:.2f} clipped to [0, 1]: the unlabeled pass rate is outside what "
            "TPR/TNR allow; are the unlabeled submissions like the labeled ones?"
        )
    return "; ".join(parts)


def corrected_records(df: pd.DataFrame) -> list[dict]:
    """The rows of :func:`corrected_pass_rate` as JSON-ready dicts.

    Each has the keys, the columns of :data:`CORRECTED_COLUMNS` with ``low``
    and ``high`` folded into ``ci`` and the ``left_out_<kind>`` counts into
    ``left_out`` (``{"audits": ..., "escalations": ..., "undrawn": ...}``), and
    ``interval_method``.
    """
    records = []
    folded = ("low", "high", "note", *(f"left_out_{k}" for k in LEFT_OUT_KINDS))
    for row in df.to_dict("records"):
        rec = {k: _plain(v) for k, v in row.items() if k not in folded}
        rec["left_out"] = {k: int(row[f"left_out_{k}"]) for k in LEFT_OUT_KINDS}
        rec["ci"] = [_plain(row["low"]), _plain(row["high"])]
        rec["note"] = _plain(row["note"]) or ""
        rec["interval_method"] = df.attrs.get("interval_method", "percentile bootstrap")
        records.append(rec)
    return records
