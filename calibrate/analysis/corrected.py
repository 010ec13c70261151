"""The corrected pass rate: how many of the submissions the check decided alone are acceptable.

Once approvals stop, the check's verdicts are all that is seen of the
submissions it decides alone. The Rogan-Gladen estimator corrects their
apparent pass rate with the check's sensitivity and specificity measured on
the reviews of every verdict of the same group (labels after the switch are
left out and counted); the checks an audit draw offered rest instead on its
audits, weighted by ``1 / inclusion_p`` (Hajek). A percentile bootstrap of
every set gives the interval (references in :func:`corrected_pass_rate`). Takes the
DataFrame of :func:`calibrate.dataset.submissions` and returns one row per
group, as the functions of :mod:`calibrate.analysis.agreement` do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.agreement import (
    DEFAULT_BY,
    check_rate_options,
    key_frame,
    models_per_group,
    pools_note,
    require_columns,
    validate_by,
)
from calibrate.analysis.draw_design import is_audited
from calibrate.analysis.grouping import group_sums
from calibrate.analysis.rate import Rate, weighted_text
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.stats import MIN_N, hajek, hajek_interval, rogan_gladen, wilson_interval
from calibrate.analysis.step_data import after_switch_labels

__all__ = [
    "CORRECTED_COLUMNS",
    "LEFT_OUT_KINDS",
    "audit_share_text",
    "corrected_pass_rate",
    "corrected_records",
]

#: Columns of :func:`corrected_pass_rate` after the group keys.
CORRECTED_COLUMNS = [
    "n_labeled", "n_acceptable", "n_not_acceptable", "n_labeled_undecided",
    "left_out_audits", "left_out_escalations", "left_out_undrawn",
    "n_unlabeled", "n_unlabeled_decided", "n_models",
    "labeled_acceptable_rate", "labeled_acceptable_rate_low", "labeled_acceptable_rate_high",
    "apparent_pass_rate", "apparent_pass_rate_low", "apparent_pass_rate_high",
    "tpr", "tpr_low", "tpr_high", "tnr", "tnr_low", "tnr_high",
    *(f"{c}_{v}_{x}" for v in ("pass", "fail") for c, x in (
        ("n", "offered"), ("audit", "n"), ("audit", "acceptable"), ("audit", "rate"),
        ("audit", "rate_low"), ("audit", "rate_high"), ("audit", "n_effective"),
        ("audit", "weighted"), ("audit", "used"))),
    "estimate", "low", "high", "rests_on", "n_boot", "note",
]  # fmt: skip
#: Columns read besides :func:`calibrate.analysis.agreement.input_columns` ``"corrected"``:
#: the probability a draw offered a check with, for the audits that stand for its verdict.
EXTRA_COLUMNS = ("inclusion_p",)
#: The shares with a Wilson interval (``<name>_low``/``<name>_high`` columns, ``<name>_ci`` in JSON).
WILSON_SHARES = ("tpr", "tnr", "apparent_pass_rate", "labeled_acceptable_rate")
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

    The correction assumes TPR and TNR have not changed since the reviews
    (same step, model, thresholds and kind of work); a drift breaks it. So
    the checks of a verdict that stored draws offered (each at its inclusion
    probability ``pi > 0``) are held at that verdict's audit share, the Hajek
    estimate [3]_ over its decided audit labels ``y`` (1 acceptable)::

        audit_share_v = sum(y / pi) / sum(1 / pi)

    (``k / n`` where one probability offered them all), and only the checks
    no draw offered (recorded after the last draw, a verdict no draw took, a
    draw whose audits are all pending) at the share the correction implies
    (``tpr * pi / q`` for a pass, ``(1 - tpr) * pi / (1 - q)`` for a fail)::

        estimate = sum over pass, fail of n_v_offered * audit_share_v
                   + (n_v - n_v_offered) * implied_v, over n_pass + n_fail

    With no audits it is the Rogan-Gladen estimate. The share's interval is
    Wilson's at the labels' effective size
    (:func:`calibrate.analysis.stats.hajek_interval`; Wilson's of ``k`` of
    ``n`` at one probability). ``rests_on`` says which checks rest on which
    labels, and a note names both figures where the implied share lies
    outside the audits' interval (the check changed since the reviews). The
    bootstrap resamples the audits too, each probability's stratum on its own
    as Poisson sampling drew it (its audited count from its offered checks,
    then their labels), so the interval carries the weighted share's
    uncertainty; no estimate, no interval.

    Parameters
    ----------
    submissions : pandas.DataFrame
        As returned by :func:`calibrate.dataset.submissions` (``model`` is read to
        count the models a row pools). Labeled rows are
        those with a ``label`` on a check not recorded ``advisory: false``;
        unlabeled submissions are the latest check of each attempt
        (``is_latest``) without such a label. ``advisory``, ``audited`` and
        ``left_out`` are read where present (without ``advisory`` every label
        counts).
    by : str or sequence of str, optional
        Group keys (not ``question``, ``approver`` or ``labels``); default
        :data:`DEFAULT_BY`. When ``model`` is not a key, ``n_models`` and ``note``
        say how many evaluator models a row pools, as in
        :func:`calibrate.analysis.agreement.agreement`: its TPR and TNR then mix
        the reviews of all of them.
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
        labels ``tpr`` and ``tnr`` are measured on, reviews with a pass or fail
        verdict: ``n_acceptable`` + ``n_not_acceptable``; the reviewed unsure or
        error verdicts are ``n_labeled_undecided``), each share of
        :data:`WILSON_SHARES` with its Wilson ``_low``/``_high``, per verdict the
        checks a draw offered (``n_<v>_offered``, 0 where the estimate does not
        use their audits), their audit labels (``audit_<v>_n``,
        ``audit_<v>_acceptable``), the audit share ``audit_<v>_rate`` with its
        ``_low``/``_high`` and ``audit_<v>_n_effective``, whether that share is
        weighted (``audit_<v>_weighted``: audits at more than one probability,
        so not ``k / n``) and whether the estimate uses them
        (``audit_<v>_used``), ``rests_on`` in words, the labels after the
        switch left out of them (``left_out_audits``: audit-draw labels;
        ``left_out_escalations``: decided unsure or error verdicts;
        ``left_out_undrawn``: decisions on enforced pass or fail checks no
        draw drew; the last two also when the frame reads their decisions as
        none, by its ``left_out`` column), ``n_unlabeled`` (all
        unlabeled latest checks) and ``n_unlabeled_decided`` (those with a pass
        or fail verdict, the ones estimated), ``n_models`` (the evaluator models
        the row's checks come from; the note says "pools 2 models" where ``model``
        is not a key and there are several), ``apparent_pass_rate`` of the
        decided unlabeled set, ``tpr``/``tnr`` from the labeled set,
        ``labeled_acceptable_rate`` for comparison, the clipped
        ``estimate`` with its interval ``low``/``high``, and a ``note`` saying
        why a value is missing. NaN where there is nothing to correct (no
        unlabeled submissions), where ``tpr`` or ``tnr`` cannot be measured, or
        where ``tpr + tnr <= 1`` (the check does not tell the two apart). The
        interval is NaN when fewer than half of the resamples give an
        estimate.

    Raises
    ------
    ValueError
        An unknown group key or one of ``question``, ``approver``, ``labels``, a
        ``confidence`` outside (0, 1) or a ``min_n`` below 1, or ``submissions``
        lacking a column it reads.

    References
    ----------
    .. [1] Rogan, W. J. and Gladen, B. (1978). Estimating prevalence from the
       results of a screening test. American Journal of Epidemiology 107(1),
       71-76.
    .. [2] Lang, Z. and Reiczigel, J. (2014). Confidence limits for prevalence
       of disease adjusted for estimated sensitivity and specificity.
       Preventive Veterinary Medicine 113(1), 13-22.
    .. [3] Sarndal, C.-E., Swensson, B. and Wretman, J. (1992). Model Assisted
       Survey Sampling, sections 5.7 and 3.6 (Poisson sampling). Springer.
    """
    keys = validate_by(by, default=DEFAULT_BY)
    bad = [k for k in keys if k in ("question", "approver", "labels")]
    if bad:
        # ``labels`` would put the labels the correction is measured on and the
        # submissions it corrects in different groups.
        raise ValueError(
            f"{bad} cannot group unlabeled submissions; use process, step, model or time keys"
        )
    check_rate_options(confidence, min_n)
    require_columns(submissions, by, analysis="corrected")
    label = submissions["label"].astype("boolean")
    # A label after the switch is set aside from TPR/TNR, its check kept unlabeled (see above).
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
    # The checks a draw offered (inclusion probability > 0) among those estimated, and
    # the audit labels on them: a Poisson sample of that verdict's offered checks, at pi each.
    pi = _inclusion_p(submissions)
    offered = unlabeled & decided & (pi > 0)
    sampled = offered & audits
    values = pd.DataFrame(
        {
            "left_out_audits": audits.astype(np.int64),
            "left_out_escalations": (other & ~decided).astype(np.int64),
            "left_out_undrawn": (other & decided).astype(np.int64),
            "tp": (labeled & acc & passed).astype(np.int64),
            "fn": (labeled & acc & failed).astype(np.int64),
            "fp": (labeled & ~acc & passed).astype(np.int64),
            "tn": (labeled & ~acc & failed).astype(np.int64),
            "n_labeled_undecided": (labeled & ~decided).astype(np.int64),
            "n_unlabeled": unlabeled.astype(np.int64),
            "n_unlabeled_decided": (unlabeled & decided).astype(np.int64),
            "u_pass": (unlabeled & passed).astype(np.int64),
            **{
                col: (mask & rows).astype(np.int64)
                for v, rows in (("pass", passed), ("fail", failed))
                for col, mask in (
                    (f"n_{v}_offered", offered),
                    (f"audit_{v}_n", sampled),
                    (f"audit_{v}_acceptable", sampled & acc),
                )
            },
        },
        index=submissions.index,
    )
    key_df = key_frame(submissions, keys)
    out = group_sums(key_df, values)
    out["n_models"] = models_per_group(submissions, key_df, keys, len(out))
    tp, fn, fp, tn = (out[c].to_numpy(dtype=float) for c in ("tp", "fn", "fp", "tn"))
    n_all = out["n_unlabeled"].to_numpy(dtype=float)
    n_unl = out["n_unlabeled_decided"].to_numpy(dtype=float)
    u_pass = out["u_pass"].to_numpy(dtype=float)
    out["n_acceptable"] = (tp + fn).astype(np.int64)
    out["n_not_acceptable"] = (fp + tn).astype(np.int64)
    out["n_labeled"] = (tp + fn + fp + tn).astype(np.int64)
    for name, k, n in (
        ("tpr", tp, tp + fn),
        ("tnr", tn, fp + tn),
        ("apparent_pass_rate", u_pass, n_unl),
        ("labeled_acceptable_rate", tp + fn, tp + fn + fp + tn),
    ):
        with np.errstate(invalid="ignore", divide="ignore"):
            out[name] = np.where(n > 0, k / n, np.nan)
        out[f"{name}_low"], out[f"{name}_high"] = wilson_interval(k, n, confidence=confidence)
    tpr, tnr, q = (out[c].to_numpy(dtype=float) for c in ("tpr", "tnr", "apparent_pass_rate"))
    # A verdict's audits stand for its offered checks, each weighted by 1 / its probability.
    strata = _strata(key_df, len(out), pi, offered, sampled, acc, {"pass": passed, "fail": failed})
    audit = {}
    for v in ("pass", "fail"):
        use = out[f"audit_{v}_n"].to_numpy(dtype=float) > 0
        out[f"n_{v}_offered"] = np.where(use, out[f"n_{v}_offered"], 0)
        shares = np.array(
            [(float(hajek(k, m, w)), *hajek_interval(k, m, w, confidence=confidence))
             for _, m, k, w in (t.T for t in strata[v])]
        ).reshape(-1, 4)  # fmt: skip
        for j, col in enumerate(("rate", "rate_low", "rate_high", "n_effective")):
            out[f"audit_{v}_{col}"] = shares[:, j]
        # Named weighted where the share is not k / n: audits at more than one probability.
        out[f"audit_{v}_weighted"] = [_spread(t[t[:, 1] > 0, 3]) for t in strata[v]]
        audit[v] = (shares[:, 0], out[f"n_{v}_offered"].to_numpy(dtype=float))
        out[f"audit_{v}_used"] = use
    n_pass = u_pass
    n_fail = n_unl - u_pass
    point = _combined(q, tpr, tnr, audit, n_pass, n_fail)
    out["estimate"] = point
    raw = rogan_gladen(q, tpr, tnr, clip=False)
    rng = np.random.default_rng(seed)
    lows, highs, notes = [], [], []
    for i in range(len(out)):
        lo, hi = (np.nan, np.nan)
        if np.isfinite(point[i]):
            lo, hi = _bootstrap(
                (tp[i], fn[i], fp[i], tn[i]),
                {v: (strata[v][i], audit[v][1][i]) for v in audit},
                u_pass[i], n_unl[i], rng, n_boot, confidence,
            )  # fmt: skip
        needs_rg = (n_pass[i] > audit["pass"][1][i]) or (n_fail[i] > audit["fail"][1][i])
        note = _rg_note(
            tp[i] + fn[i], fp[i] + tn[i], n_unl[i], n_all[i], tpr[i], tnr[i], raw[i], min_n,
            needs_rg=needs_rg,
        )  # fmt: skip
        note = "; ".join(
            filter(
                None,
                [
                    _pools_models_note(int(out["n_models"].iat[i]), pools="model" not in keys),
                    note,
                    _audit_note(out.iloc[i], q[i], tpr[i], raw[i], confidence),
                ],
            )
        )
        if np.isfinite(lo) and lo == hi:
            lo = hi = np.nan
            note = "; ".join(
                filter(None, [note, "no interval: every resample gave the same estimate"])
            )
        lows.append(lo)
        highs.append(hi)
        notes.append(note)
    out["low"] = np.asarray(lows, dtype=float)
    out["high"] = np.asarray(highs, dtype=float)
    out["rests_on"] = [
        _rests_on(out.iloc[i], {v: len(strata[v][i]) for v in strata}) for i in range(len(out))
    ]
    out["n_boot"] = n_boot
    out["note"] = pd.Series(notes, index=out.index, dtype="string")
    out = out[[*keys, *CORRECTED_COLUMNS]]
    out.attrs["interval_method"] = (
        f"percentile bootstrap {confidence:.0%}, {n_boot} resamples; "
        f"TPR, TNR and shares: Wilson score {confidence:.0%} (weighted audit shares: at "
        "their effective size)"
    )
    return out


def _pools_models_note(n_models: int, *, pools: bool) -> str:
    """What a row that pools evaluator models says: as :func:`agreement`, and what it means here.

    TPR and TNR are then measured on the reviews of every model of the row and applied to the
    unlabeled checks of each, which holds only if the models judge alike.
    """
    if not pools or n_models < 2:
        return ""
    return (
        f"{pools_note(n_models)}: TPR/TNR mix their reviews and correct the checks of each, "
        "which holds only if they judge alike; group by model to keep them apart"
    )


def _inclusion_p(submissions: pd.DataFrame) -> np.ndarray:
    """Per row, the probability a stored draw offered the check (0 where none considered it)."""
    if "inclusion_p" not in submissions.columns:
        return np.zeros(len(submissions))
    pi = pd.to_numeric(submissions["inclusion_p"], errors="coerce").to_numpy(dtype=float)
    if "advisory" in submissions.columns:
        # A reviewed check is no draw's: its label is the reviews'.
        advisory = submissions["advisory"].astype("boolean").fillna(False).to_numpy(dtype=bool)
        pi = np.where(advisory, np.nan, pi)
    return np.nan_to_num(pi, nan=0.0)


def _strata(
    key_df: pd.DataFrame,
    n_groups: int,
    pi: np.ndarray,
    offered: np.ndarray,
    sampled: np.ndarray,
    acc: np.ndarray,
    verdicts: dict[str, np.ndarray],
) -> dict[str, list[np.ndarray]]:
    """Per verdict and group (in :func:`group_sums`' order): its offered checks by probability.

    Each an array with one row a stratum of one inclusion probability: the checks offered,
    audited (decided) and audited acceptable, and the probability. Under Poisson sampling the
    checks of one probability are drawn alike (a band of a ``--by-band`` draw, a uniform draw):
    the bootstrap redraws each stratum on its own, as the design did.
    """
    gid = (
        key_df.groupby(list(key_df.columns), dropna=False, sort=True).ngroup().to_numpy()
        if len(key_df.columns)
        else np.zeros(len(key_df), dtype=np.int64)
    )
    out = {}
    for v, rows in verdicts.items():
        sel = offered & rows
        frame = pd.DataFrame({
            "g": gid[sel], "pi": np.round(pi[sel], 12), "n": np.ones(int(sel.sum())),
            "m": sampled[sel].astype(float), "k": (sampled & acc)[sel].astype(float),
        })  # fmt: skip
        sums = frame.groupby(["g", "pi"], sort=True)[["n", "m", "k"]].sum().reset_index()
        per = [np.zeros((0, 4)) for _ in range(n_groups)]
        for g, part in sums.groupby("g"):
            per[int(g)] = part[["n", "m", "k", "pi"]].to_numpy(dtype=float)
        out[v] = per
    return out


def _spread(pi: np.ndarray) -> bool:
    """More than one probability among ``pi``."""
    return bool(pi.size and np.ptp(pi) > 1e-12)


def _implied_shares(q: Any, tpr: Any, pi: Any) -> dict[str, np.ndarray]:
    """P(acceptable | verdict) the reviews' correction implies: ``tpr * pi / q`` for a pass,
    ``(1 - tpr) * pi / (1 - q)`` for a fail, clipped to [0, 1] (NaN where undefined)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "pass": np.clip(tpr * pi / q, 0, 1),
            "fail": np.clip((1 - tpr) * pi / (1 - q), 0, 1),
        }


def _combined(
    q: np.ndarray,
    tpr: np.ndarray,
    tnr: np.ndarray,
    audit: dict[str, tuple[np.ndarray, np.ndarray]],
    n_pass: np.ndarray,
    n_fail: np.ndarray,
) -> np.ndarray:
    """The acceptable share of the decided set: each verdict's checks at P(acceptable | verdict).

    ``audit[v]`` is the audits' (Hajek) share and the checks a draw offered; those checks are
    held at that share, the others (none offered: after the last draw, or a verdict never
    drawn) at the share the reviews' correction implies, ``tpr * pi / q`` for a pass and
    ``(1 - tpr) * pi / (1 - q)`` for a fail (Rogan-Gladen ``pi``). With no audits it is the
    Rogan-Gladen estimate itself. Vectorised.
    """
    implied = _implied_shares(q, tpr, rogan_gladen(q, tpr, tnr))
    with np.errstate(invalid="ignore", divide="ignore"):
        total = np.zeros_like(np.asarray(q, dtype=float))
        for v, n_v in (("pass", n_pass), ("fail", n_fail)):
            share, n_off = audit[v]
            rest = n_v - n_off
            part = np.where(n_off > 0, n_off * share, 0.0)
            part = part + np.where(rest > 0, rest * implied[v], 0.0)
            total = total + part
        n = n_pass + n_fail
        return np.where(n > 0, total / n, np.nan)


def _bootstrap(
    cells: tuple[float, float, float, float],
    audit: dict[str, tuple[np.ndarray, float]],
    u_pass: float,
    n_unl: float,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
) -> tuple[float, float]:
    """Percentile interval of :func:`_combined`, resampling the reviews, the audits and ``q``.

    ``audit[v]`` holds the verdict's strata (:func:`_strata`) and the checks offered that the
    estimate holds at the audits' share (0: none). Each stratum is redrawn on its own, as the
    draw made it: its audits from its offered checks at its audited share, their labels at its
    acceptable share; the Hajek share of the redrawn strata is the resample's. A resample whose
    correction is undefined (``tpr + tnr <= 1``) where the estimate needs it, or whose audits
    are all redrawn away, gives none; fewer than half giving one leaves no interval.
    """
    nan = (float("nan"), float("nan"))
    tp, fn, fp, tn = cells
    n_lab = tp + fn + fp + tn
    if n_lab > 0:
        b_cells = rng.multinomial(int(n_lab), np.array(cells) / n_lab, size=n_boot)
        b_tp, b_fn, b_fp, b_tn = b_cells.T.astype(float)
    else:
        b_tp = b_fn = b_fp = b_tn = np.zeros(n_boot)
    b_pass = rng.binomial(int(n_unl), u_pass / n_unl, size=n_boot).astype(float)
    b_share = {}
    for v, (strata, n_off) in audit.items():
        b_share[v] = np.zeros(n_boot)
        if n_off > 0:
            n, m, k, pi = strata.T
            b_m = rng.binomial(n.astype(np.int64), m / n, size=(n_boot, len(n)))
            b_k = rng.binomial(b_m, np.divide(k, m, out=np.zeros_like(k), where=m > 0))
            b_share[v] = hajek(b_k, b_m, pi)
    with np.errstate(invalid="ignore", divide="ignore"):
        b_tpr = b_tp / (b_tp + b_fn)
        b_tnr = b_tn / (b_fp + b_tn)
    # The verdict counts resample with q; the offered checks of each stay as the design made
    # them (capped by the resampled count).
    n_pass, n_fail = b_pass, n_unl - b_pass
    b_audit = {
        v: (b_share[v], np.minimum(audit[v][1], n_v))
        for v, n_v in (("pass", n_pass), ("fail", n_fail))
    }
    est = _combined(b_pass / n_unl, b_tpr, b_tnr, b_audit, n_pass, n_fail)
    finite = est[np.isfinite(est)]
    if finite.size < n_boot / 2:
        return nan
    a = (1 - confidence) / 2
    low, high = np.quantile(finite, [a, 1 - a])
    return float(low), float(high)


def _audit_note(row: pd.Series, q: float, tpr: float, raw: float, confidence: float) -> str:
    """Where the audits of a verdict contradict the share the reviews' correction implies.

    The correction assumes TPR and TNR have not changed since the reviews; an audit draw
    tests that for the verdict it offered: the implied share outside the audits' interval
    (Wilson, at the effective size where weighted) says the check changed, and the estimate
    then rests on the audits there.
    """
    parts = []
    pi = min(max(raw, 0.0), 1.0) if np.isfinite(raw) else np.nan
    shares = _implied_shares(q, tpr, pi)
    for v, many in (("pass", "passes"), ("fail", "fails")):
        if not row[f"audit_{v}_used"]:
            continue
        implied = float(shares[v])
        if not np.isfinite(implied):
            continue
        low, high = row[f"audit_{v}_rate_low"], row[f"audit_{v}_rate_high"]
        if not low <= implied <= high:
            parts.append(
                f"the audits of {many} read {audit_share_text(row, v, confidence)}, the reviews' "
                "correction implies "
                f"{implied:.1%}: the check changed since the reviews, so the audited {many} rest "
                "on the audits, not on TPR/TNR"
            )
    return "; ".join(parts)


def audit_share_text(row: Mapping[str, Any], verdict: str, confidence: float = 0.95) -> str:
    """A verdict's audit share in words, from a row of :func:`corrected_pass_rate` (or CSV).

    ``"85.0% (340 of 400; 95% CI 81.2%–88.2%) acceptable"`` at one probability;
    ``"weighted rate 89.3% (340 of 400 acceptable, weighted by 1/inclusion_p; 95% CI
    86.0%–91.9%)"`` where the draws offered the verdict at several (the counts alone would
    read as ``k / n``). ``confidence``: the level the row's interval was computed at.
    """
    k, n = int(row[f"audit_{verdict}_acceptable"]), int(row[f"audit_{verdict}_n"])
    if not row[f"audit_{verdict}_weighted"]:
        return f"{Rate(k, n).text()} acceptable"
    if n < MIN_N:  # as Rate.text says it
        return f"too few to say ({k} of {n} acceptable, weighted by 1/inclusion_p, n<{MIN_N})"
    low, high = row[f"audit_{verdict}_rate_low"], row[f"audit_{verdict}_rate_high"]
    detail = f"{confidence:.0%} CI {low:.1%}–{high:.1%}"
    return weighted_text(row[f"audit_{verdict}_rate"], k, n, "acceptable", ".1%", detail)


def _rests_on(row: pd.Series, n_probabilities: dict[str, int]) -> str:
    """Which labels the estimate rests on, per verdict, in words.

    ``n_probabilities``: per verdict, how many inclusion probabilities offered its checks.
    """
    parts = []
    for v, many in (("pass", "passes"), ("fail", "fails")):
        n_v = row["u_pass"] if v == "pass" else row["n_unlabeled_decided"] - row["u_pass"]
        n_off = int(row[f"n_{v}_offered"]) if row[f"audit_{v}_used"] else 0
        if n_off:
            how = (
                f"weighted by 1/inclusion_p (draws offered them at {n_probabilities[v]} "
                "probabilities)"
                if row[f"audit_{v}_weighted"]
                else "(a draw offered them alike)"
            )
            parts.append(f"{n_off} {many} on {int(row[f'audit_{v}_n'])} audit labels {how}")
        if n_v - n_off > 0 and n_off:
            # Not offered: recorded after the last draw (or unreviewed before the switch).
            parts.append(
                f"{int(n_v - n_off)} {many} no draw offered (after the last draw, or unreviewed "
                "before the switch) on the reviews' TPR/TNR"
            )
        elif n_v - n_off > 0:
            parts.append(f"{int(n_v - n_off)} {many} on the reviews' TPR/TNR")
    return "; ".join(parts)


def _after_switch_kinds(
    submissions: pd.DataFrame, after: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per row: an audit-draw label set aside, and another decision after the switch left out.

    The second is read from the ``left_out`` column where present, so that it counts the
    decisions the filters already read as none (:meth:`calibrate.dataset.Filters.source`).
    """
    audited = (
        is_audited(submissions)
        if "audited" in submissions.columns
        else np.zeros(len(submissions), bool)
    )
    if "left_out" in submissions.columns:
        other = submissions["left_out"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    else:
        other = after & ~audited
    return after & audited & ~other, other


def _rg_note(
    n_acc: float,
    n_not: float,
    n_unl: float,
    n_all: float,
    tpr: float,
    tnr: float,
    raw: float,
    min_n: int,
    *,
    needs_rg: bool = True,
) -> str:
    if n_all == 0:
        return "no unlabeled submissions"
    if n_unl == 0:
        return (
            f"no estimate: none of the {n_all:.0f} unlabeled submissions has a pass or fail "
            "verdict (unsure ones go to a person)"
        )
    if not needs_rg:
        # Every decided check rests on audits of a draw that offered it: no TPR/TNR needed.
        return "" if n_unl >= min_n else f"too few unlabeled pass or fail verdicts (n<{min_n})"
    if n_acc == 0 or n_not == 0:
        which = "acceptable" if n_acc == 0 else "not-acceptable"
        return (
            f"no labeled {which} submissions with a pass or fail verdict: TPR/TNR unknown; "
            "no estimate, so no interval"
        )
    if tpr + tnr <= 1:
        return (
            "TPR + TNR <= 1: the check does not tell acceptable from not; no correction, so "
            "no estimate and no interval"
        )
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
    and ``high`` folded into ``ci``, each share's of :data:`WILSON_SHARES`
    into ``<name>_ci``, the ``left_out_<kind>`` counts into ``left_out``
    (``{"audits": ..., "escalations": ..., "undrawn": ...}``), the audit
    columns into ``audits`` (per verdict: ``used``, ``n_offered``, the audit
    labels' ``k`` acceptable of ``n``, their share ``rate`` (weighted by
    ``1 / inclusion_p``) with its ``ci`` and ``n_effective``, and
    ``weighted``: true where ``rate`` is not ``k / n``), and ``interval_method``.
    """
    records = []
    audit_cols = [c for c in CORRECTED_COLUMNS if c.startswith(("audit_", "n_pass_", "n_fail_"))]
    folded = (
        "low", "high", "note", *(f"left_out_{k}" for k in LEFT_OUT_KINDS),
        *(f"{n}_{b}" for n in WILSON_SHARES for b in ("low", "high")), *audit_cols,
    )  # fmt: skip
    for row in df.to_dict("records"):
        rec = {k: _plain(v) for k, v in row.items() if k not in folded}
        rec["left_out"] = {k: int(row[f"left_out_{k}"]) for k in LEFT_OUT_KINDS}
        for name in WILSON_SHARES:
            rec[f"{name}_ci"] = [_plain(row[f"{name}_low"]), _plain(row[f"{name}_high"])]
        rec["audits"] = {
            v: {
                "used": bool(row[f"audit_{v}_used"]),
                "n_offered": int(row[f"n_{v}_offered"]),
                "k": int(row[f"audit_{v}_acceptable"]),
                "n": int(row[f"audit_{v}_n"]),
                "rate": _plain(row[f"audit_{v}_rate"]),
                "ci": [_plain(row[f"audit_{v}_rate_low"]), _plain(row[f"audit_{v}_rate_high"])],
                "n_effective": _plain(row[f"audit_{v}_n_effective"]),
                "weighted": bool(row[f"audit_{v}_weighted"]),
            }
            for v in ("pass", "fail")
        }
        rec["ci"] = [_plain(row["low"]), _plain(row["high"])]
        rec["note"] = _plain(row["note"]) or ""
        rec["interval_method"] = df.attrs.get("interval_method", "percentile bootstrap")
        records.append(rec)
    return records
