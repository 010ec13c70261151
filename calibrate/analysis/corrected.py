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
        ("n", "offered"), ("audit", "n"), ("audit", "acceptable"), ("audit", "n_pending"),
        ("audit", "rate"), ("audit", "rate_min"), ("audit", "rate_max"),
        ("audit", "rate_low"), ("audit", "rate_high"), ("audit", "n_effective"),
        ("audit", "weighted"), ("audit", "used"))),
    "estimate", "estimate_min", "estimate_max", "low", "high", "rests_on", "n_boot", "note",
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
    no draw offered (recorded after the last draw, at a probability whose draw
    yielded no audit, a verdict no draw took, a draw whose audits are all
    pending) at the share the correction implies (``tpr * pi / q`` for a pass,
    ``(1 - tpr) * pi / (1 - q)`` for a fail), while the audits do not refute
    it; where they do, those of a verdict with audits are held at its audit
    share (assumed unchanged since the last draw), and those of a verdict
    without have nothing to rest on: the interval is withheld::

        estimate = sum over pass, fail of n_v_offered * audit_share_v
                   + (n_v - n_v_offered) * implied_v, over n_pass + n_fail

    With no audits it is the Rogan-Gladen estimate. The share's interval is
    Wilson's at the labels' effective size
    (:func:`calibrate.analysis.stats.hajek_interval`; Wilson's of ``k`` of
    ``n`` at one probability). Drawn checks still pending are counted
    (``audit_<v>_n_pending``); the decided ones are then not the draw (the
    reviewers chose which to decide first), so the share is bounded with the
    pending all not acceptable and all acceptable (``audit_<v>_rate_min``,
    ``_max``), the estimate is that range (``estimate_min``, ``estimate_max``;
    ``estimate`` NaN) and the interval covers both. ``rests_on`` says which
    checks rest on which labels, and a note names both figures where the
    implied share lies outside the audits' interval (the check changed since
    the reviews). The bootstrap draws each probability's acceptable share
    from its Jeffreys posterior with the audited count fixed, so the interval
    carries the weighted share's uncertainty; no estimate, no interval.

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
    # Drawn but with no decided audit yet: the decided ones need not be a random part of the draw
    # (the reviewers chose which to decide first), so the share is bounded over them.
    drawn = (
        is_audited(submissions)
        if "audited" in submissions.columns
        else np.zeros(len(submissions), bool)
    )
    pending = offered & drawn & ~sampled
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
                    (f"audit_{v}_n_pending", pending),
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
    all_strata = _strata(
        key_df, len(out), pi, offered, sampled, acc, pending, {"pass": passed, "fail": failed}
    )
    # A probability whose draw yielded no audit, decided or pending, says nothing of its checks:
    # they are not covered, and rest as the checks no draw offered do (outside review D4).
    strata = {v: [t[t[:, 1] + t[:, 4] > 0] for t in ts] for v, ts in all_strata.items()}
    uncovered = {v: [t[t[:, 1] + t[:, 4] == 0] for t in ts] for v, ts in all_strata.items()}
    n_verdict = {"pass": u_pass, "fail": n_unl - u_pass}
    audit, bounds = {}, {}
    for v in ("pass", "fail"):
        use = out[f"audit_{v}_n"].to_numpy(dtype=float) > 0
        covered = np.array([t[:, 0].sum() for t in strata[v]], dtype=float)
        out[f"n_{v}_offered"] = np.where(use, covered, 0).astype(np.int64)
        shares = np.array([_audit_share(t, confidence) for t in strata[v]]).reshape(-1, 6)
        for j, col in enumerate(
            ("rate", "rate_min", "rate_max", "rate_low", "rate_high", "n_effective")
        ):
            out[f"audit_{v}_{col}"] = shares[:, j]
        # Named weighted where the share is not k / n: audits at more than one probability.
        out[f"audit_{v}_weighted"] = [_spread(t[:, 3]) for t in strata[v]]
        bounds[v] = (shares[:, 1], shares[:, 2])
        audit[v] = out[f"n_{v}_offered"].to_numpy(dtype=float)
        out[f"audit_{v}_used"] = use
    n_pass = u_pass
    n_fail = n_unl - u_pass
    raw = rogan_gladen(q, tpr, tnr, clip=False)
    # Where a verdict's audits refute the share the reviews' correction implies, the check
    # changed since the reviews: the checks no draw offered (after the last draw, or at a
    # probability no audit reached) of a verdict with audits are held at its audit share, the
    # more recent reading; those of a verdict with none have nothing to rest on (D2).
    refuted, implied = _refuted(out, q, tpr, raw)
    changed = refuted["pass"] | refuted["fail"]
    held = {}
    for v in ("pass", "fail"):
        used = out[f"audit_{v}_used"].to_numpy(dtype=bool)
        held[v] = np.where(changed & used, n_verdict[v], audit[v])
    unsupported = {
        v: changed & ~out[f"audit_{v}_used"].to_numpy(dtype=bool) & (n_verdict[v] > 0)
        for v in ("pass", "fail")
    }
    ends = [
        _combined(q, tpr, tnr, {v: (bounds[v][j], held[v]) for v in held}, n_pass, n_fail)
        for j in (0, 1)
    ]
    out["estimate_min"], out["estimate_max"] = ends
    n_pend = sum(
        np.where(out[f"audit_{v}_used"], out[f"audit_{v}_n_pending"], 0) for v in ("pass", "fail")
    )
    # With audits pending the share is bounded, not estimated: no single figure.
    point = np.where(n_pend > 0, np.nan, ends[0])
    out["estimate"] = point
    rng = np.random.default_rng(seed)
    lows, highs, notes = [], [], []
    for i in range(len(out)):
        lo, hi = (np.nan, np.nan)
        if np.isfinite(ends[0][i]):
            lo, hi = _bootstrap(
                (tp[i], fn[i], fp[i], tn[i]),
                {v: (strata[v][i], audit[v][i], held[v][i] > audit[v][i]) for v in audit},
                u_pass[i], n_unl[i], rng, n_boot, confidence,
            )  # fmt: skip
        needs_rg = (n_pass[i] > held["pass"][i]) or (n_fail[i] > held["fail"][i])
        note = _rg_note(
            tp[i] + fn[i], fp[i] + tn[i], n_unl[i], n_all[i], tpr[i], tnr[i], raw[i], min_n,
            needs_rg=needs_rg,
        )  # fmt: skip
        row = out.iloc[i]
        note = "; ".join(
            filter(None, [
                _pools_models_note(int(out["n_models"].iat[i]), pools="model" not in keys),
                note, _pending_note(row),
                _audit_note(
                    row, {v: float(implied[v][i]) for v in implied},
                    {v: bool(refuted[v][i]) for v in refuted}, confidence,
                    held={v: int(held[v][i] - audit[v][i]) for v in held},
                ),
            ])
        )  # fmt: skip
        lacking = [many for v, many in (("pass", "passes"), ("fail", "fails")) if unsupported[v][i]]
        if lacking and np.isfinite(lo):
            lo = hi = np.nan
            note = "; ".join(filter(None, [note, (
                f"no interval: the {' and '.join(lacking)} rest on the reviews' TPR/TNR, which "
                "the audits refute, and no audit of theirs stands in; the estimate holds them at "
                "the refuted correction's share"
            )]))  # fmt: skip
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
        _rests_on(
            out.iloc[i],
            {v: len(strata[v][i]) for v in strata},
            {v: uncovered[v][i] for v in uncovered},
            {v: bool(held[v][i] > audit[v][i]) for v in held},
        )
        for i in range(len(out))
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
    pending: np.ndarray,
    verdicts: dict[str, np.ndarray],
) -> dict[str, list[np.ndarray]]:
    """Per verdict and group (in :func:`group_sums`' order): its offered checks by probability.

    Each an array with one row a stratum of one inclusion probability: the checks offered,
    audited (decided), audited acceptable, the probability, and the drawn ones still pending.
    Under Poisson sampling the checks of one probability are drawn alike (a band of a
    ``--by-band`` draw, a uniform draw): the bootstrap draws each stratum's share on its own.
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
            "pend": pending[sel].astype(float),
        })  # fmt: skip
        cols = ["n", "m", "k", "pend"]
        sums = frame.groupby(["g", "pi"], sort=True)[cols].sum().reset_index()
        per = [np.zeros((0, 5)) for _ in range(n_groups)]
        for g, part in sums.groupby("g"):
            per[int(g)] = part[["n", "m", "k", "pi", "pend"]].to_numpy(dtype=float)
        out[v] = per
    return out


def _audit_share(t: np.ndarray, confidence: float) -> tuple[float, ...]:
    """A verdict's audit share from its covered strata (:func:`_strata` rows).

    ``(rate, rate_min, rate_max, low, high, n_effective)``: the Hajek share, and its bounds
    with the pending audits all not acceptable and all acceptable (Manski's worst case: the
    reviewers, not the draw, chose which were decided first). ``rate`` is NaN while any is
    pending; the interval runs from the low end of the first to the high end of the second,
    each Wilson's at its effective size (:func:`calibrate.analysis.stats.hajek_interval`).
    """
    n, m, k, pi, pend = t.T
    lo = float(hajek(k, m + pend, pi))
    hi = float(hajek(k + pend, m + pend, pi))
    low, _, n_eff = hajek_interval(k, m + pend, pi, confidence=confidence)
    _, high, n_eff_hi = hajek_interval(k + pend, m + pend, pi, confidence=confidence)
    rate = lo if not pend.sum() else float("nan")
    return rate, lo, hi, low, high, min(n_eff, n_eff_hi)


def _refuted(
    out: pd.DataFrame, q: np.ndarray, tpr: np.ndarray, raw: np.ndarray
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Per verdict and group: its audits refute the share the reviews' correction implies.

    The implied share lies outside the audits' interval (with pending audits, the interval
    over both worst cases). Returns the flags and the implied shares (the note names them).
    """
    prev = np.where(np.isfinite(raw), np.clip(raw, 0.0, 1.0), np.nan)
    shares = _implied_shares(q, tpr, prev)
    res = {}
    for v in ("pass", "fail"):
        used = out[f"audit_{v}_used"].to_numpy(dtype=bool)
        low, high = (out[f"audit_{v}_rate_{e}"].to_numpy(dtype=float) for e in ("low", "high"))
        implied = np.asarray(shares[v], dtype=float)
        with np.errstate(invalid="ignore"):
            res[v] = used & np.isfinite(implied) & ((implied < low) | (implied > high))
    return res, {v: np.asarray(shares[v], dtype=float) for v in ("pass", "fail")}


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
    audit: dict[str, tuple[np.ndarray, float, bool]],
    u_pass: float,
    n_unl: float,
    rng: np.random.Generator,
    n_boot: int,
    confidence: float,
) -> tuple[float, float]:
    """Percentile interval of :func:`_combined`, resampling the reviews, the audits and ``q``.

    ``audit[v]`` holds the verdict's covered strata (:func:`_strata`), the checks a draw
    offered that the estimate holds at the audits' share (0: none), and whether the verdict's
    other checks are held there too (the audits refuted the correction). Each stratum's
    acceptable share is drawn from its Jeffreys posterior ``Beta(k + 1/2, m - k + 1/2)`` of its
    ``m`` decided labels, its drawn count (its weight in the ratio) redrawn from its offered
    checks as Poisson sampling made it, and the resample's share is the Hajek share of those
    (outside review D1: redrawing the labels at the plug-in ``k / m`` left a stratum whose
    labels all agree without variance, 86-91% coverage at a nominal 95%; holding the counts
    fixed left out the weights' noise, 92% at a 5% ``--by-band`` draw). With audits pending,
    the share is drawn with them all not acceptable and all acceptable; the interval runs from
    the low quantile of the first to the high quantile of the second. A resample whose
    correction is undefined (``tpr + tnr <= 1``) where the estimate needs it gives none; fewer
    than half giving one leaves no interval.
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
    for v, (strata, n_off, _) in audit.items():
        b_share[v] = (np.zeros(n_boot), np.zeros(n_boot))
        if n_off > 0:
            n, m, k, pi, pend = strata.T
            drawn = m + pend
            # The drawn count of each stratum, as Poisson sampling makes it, sets its weight in
            # the Hajek ratio; its acceptable share, from the Jeffreys posterior of its decided
            # labels, carries their noise once.
            b_drawn = rng.binomial(n.astype(np.int64), drawn / n, size=(n_boot, len(n)))
            b_beta = rng.beta(k + 0.5, m - k + 0.5, size=(n_boot, len(n)))
            low_share, high_share = ((m * b_beta + x) / drawn for x in (0, pend))
            b_share[v] = (hajek(b_drawn * low_share, b_drawn, pi),
                          hajek(b_drawn * high_share, b_drawn, pi))  # fmt: skip
    with np.errstate(invalid="ignore", divide="ignore"):
        b_tpr = b_tp / (b_tp + b_fn)
        b_tnr = b_tn / (b_fp + b_tn)
    # The verdict counts resample with q; the offered checks of each stay as the design made
    # them (capped by the resampled count), or are all of them where the audits hold them all.
    n_verdict = {"pass": b_pass, "fail": n_unl - b_pass}
    ends = []
    for j, a in ((0, (1 - confidence) / 2), (1, (1 + confidence) / 2)):
        b_audit = {
            v: (b_share[v][j], n_verdict[v] if hold else np.minimum(n_off, n_verdict[v]))
            for v, (_, n_off, hold) in audit.items()
        }
        est = _combined(b_pass / n_unl, b_tpr, b_tnr, b_audit, n_verdict["pass"], n_verdict["fail"])
        finite = est[np.isfinite(est)]
        if finite.size < n_boot / 2:
            return nan
        ends.append(float(np.quantile(finite, a)))
    return ends[0], ends[1]


def _audit_note(
    row: pd.Series,
    implied: Mapping[str, float],
    refuted: Mapping[str, bool],
    confidence: float,
    held: Mapping[str, int] | None = None,
) -> str:
    """Where the audits of a verdict contradict the share the reviews' correction implies.

    The correction assumes TPR and TNR have not changed since the reviews; an audit draw
    tests that for the verdict it offered: the ``implied`` share outside the audits' interval
    (Wilson, at the effective size where weighted; ``refuted``, from :func:`_refuted`) says
    the check changed, and the estimate then rests on the audits there. ``held``: per verdict,
    its checks no draw offered that the estimate holds at the audit share for that reason
    (named in the note).
    """
    parts = []
    held = held or {}
    for v, many in (("pass", "passes"), ("fail", "fails")):
        if refuted[v]:
            parts.append(
                f"the audits of {many} read {audit_share_text(row, v, confidence)}, the reviews' "
                "correction implies "
                f"{implied[v]:.1%}: the check changed since the reviews, so the audited {many} "
                "rest on the audits, not on TPR/TNR"
            )
    for v, many in (("pass", "passes"), ("fail", "fails")):
        if held.get(v, 0) > 0:
            parts.append(
                f"the {held[v]} {many} no draw offered are held at the {many}' audit share too, "
                "not at the refuted correction (assumed unchanged since the last draw)"
            )
    return "; ".join(parts)


def _pending_note(row: pd.Series) -> str:
    """The drawn checks of a used verdict still awaiting a decision, and what the figure is then."""
    parts = []
    for v, many in (("pass", "passes"), ("fail", "fails")):
        n = int(row[f"audit_{v}_n_pending"])
        if n and row[f"audit_{v}_used"]:
            parts.append(f"{n} drawn {many if n > 1 else many[:-2]}")
    if not parts:
        return ""
    lo, hi = row["estimate_min"], row["estimate_max"]
    span = f" ({lo:.1%} to {hi:.1%})" if np.isfinite(lo) and np.isfinite(hi) else ""
    return (
        f"{' and '.join(parts)} still await an audit decision: the decided ones need not be a "
        "random part of the draw (reviewers choose which to decide first), so the estimate is "
        f"a range{span}, with them all acceptable and all not, and the interval covers both"
    )


def audit_share_text(row: Mapping[str, Any], verdict: str, confidence: float = 0.95) -> str:
    """A verdict's audit share in words, from a row of :func:`corrected_pass_rate` (or CSV).

    ``"85.0% (340 of 400; 95% CI 81.2%–88.2%) acceptable"`` at one probability (a range
    while drawn checks are pending);
    ``"weighted rate 89.3% (340 of 400 acceptable, weighted by 1/inclusion_p; 95% CI
    86.0%–91.9%)"`` where the draws offered the verdict at several (the counts alone would
    read as ``k / n``). ``confidence``: the level the row's interval was computed at.
    """
    k, n = int(row[f"audit_{verdict}_acceptable"]), int(row[f"audit_{verdict}_n"])
    pending = int(row.get(f"audit_{verdict}_n_pending", 0) or 0)
    if pending:
        # Not k / n: the decided audits are not the draw while some are pending.
        low, high = row[f"audit_{verdict}_rate_low"], row[f"audit_{verdict}_rate_high"]
        lo, hi = row[f"audit_{verdict}_rate_min"], row[f"audit_{verdict}_rate_max"]
        weighted = ", weighted by 1/inclusion_p" if row[f"audit_{verdict}_weighted"] else ""
        return (
            f"between {lo:.1%} and {hi:.1%} acceptable ({k} of {n} decided{weighted}, {pending} "
            f"drawn still pending, taken as all not and all acceptable; {confidence:.0%} CI "
            f"{low:.1%}–{high:.1%})"
        )
    if not row[f"audit_{verdict}_weighted"]:
        return f"{Rate(k, n).text()} acceptable"
    if n < MIN_N:  # as Rate.text says it
        return f"too few to say ({k} of {n} acceptable, weighted by 1/inclusion_p, n<{MIN_N})"
    low, high = row[f"audit_{verdict}_rate_low"], row[f"audit_{verdict}_rate_high"]
    detail = f"{confidence:.0%} CI {low:.1%}–{high:.1%}"
    return weighted_text(row[f"audit_{verdict}_rate"], k, n, "acceptable", ".1%", detail)


def _rests_on(
    row: pd.Series,
    n_probabilities: dict[str, int],
    uncovered: Mapping[str, np.ndarray] | None = None,
    held: Mapping[str, bool] | None = None,
) -> str:
    """Which labels the estimate rests on, per verdict, in words.

    ``n_probabilities``: per verdict, how many inclusion probabilities offered its covered
    checks; ``uncovered``: per verdict, the strata (:func:`_strata` rows) a draw offered that
    yielded no audit, decided or pending; ``held``: per verdict, whether its checks no draw
    offered are held at its audit share (the audits refuted the correction).
    """
    uncovered = uncovered or {}
    held = held or {}
    parts = []
    for v, many in (("pass", "passes"), ("fail", "fails")):
        n_v = row["u_pass"] if v == "pass" else row["n_unlabeled_decided"] - row["u_pass"]
        n_off = int(row[f"n_{v}_offered"]) if row[f"audit_{v}_used"] else 0
        n_pend = int(row[f"audit_{v}_n_pending"]) if n_off else 0
        if n_off:
            if row[f"audit_{v}_weighted"]:
                how = (
                    f"weighted by 1/inclusion_p (draws offered them at {n_probabilities[v]} "
                    "probabilities)"
                )
            elif n_pend:
                how = ""
            else:
                how = "(a draw offered them alike)"
            if n_pend:
                # The decided audits are not the draw while some are pending: no "alike".
                how = " ".join(filter(None, [how, (
                    f"and {n_pend} drawn still pending, taken as all acceptable and as all not"
                )]))  # fmt: skip
            parts.append(f"{n_off} {many} on {int(row[f'audit_{v}_n'])} audit labels {how}")
        rest = int(n_v - n_off)
        where = "on the reviews' TPR/TNR"
        if n_off and held.get(v):
            where = (
                f"held at the {many}' audit share (the audits refute the reviews' TPR/TNR; "
                "assumed unchanged since the last draw)"
            )
        strata = uncovered.get(v)
        n_empty = int(strata[:, 0].sum()) if n_off and strata is not None and len(strata) else 0
        if n_empty:
            probs = ", ".join(f"{p:g}" for p in strata[:, 3])
            parts.append(
                f"{n_empty} {many} offered at a probability no audit reached (inclusion_p "
                f"{probs}) {where}"
            )
            rest -= n_empty
        if rest > 0 and n_off:
            # Not offered: recorded after the last draw (or unreviewed before the switch).
            parts.append(
                f"{rest} {many} no draw offered (after the last draw, or unreviewed "
                f"before the switch) {where}"
            )
        elif rest > 0:
            parts.append(f"{rest} {many} on the reviews' TPR/TNR")
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
    labels' ``k`` acceptable of ``n``, the drawn checks still pending
    ``n_pending``, their share ``rate`` (weighted by ``1 / inclusion_p``; null
    while any is pending) with its ``rate_bounds`` (pending all not acceptable,
    all acceptable), ``ci`` and ``n_effective``, and ``weighted``: true where
    ``rate`` is not ``k / n``), ``estimate_bounds`` (the estimate with the
    pending audits all not acceptable and all acceptable; both equal
    ``estimate`` when none is pending) and ``interval_method``.
    """
    records = []
    audit_cols = [c for c in CORRECTED_COLUMNS if c.startswith(("audit_", "n_pass_", "n_fail_"))]
    folded = (
        "low", "high", "note", "estimate_min", "estimate_max", *(f"left_out_{k}" for k in LEFT_OUT_KINDS),
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
                "n_pending": int(row[f"audit_{v}_n_pending"]),
                "rate": _plain(row[f"audit_{v}_rate"]),
                "rate_bounds": [
                    _plain(row[f"audit_{v}_rate_min"]),
                    _plain(row[f"audit_{v}_rate_max"]),
                ],
                "ci": [_plain(row[f"audit_{v}_rate_low"]), _plain(row[f"audit_{v}_rate_high"])],
                "n_effective": _plain(row[f"audit_{v}_n_effective"]),
                "weighted": bool(row[f"audit_{v}_weighted"]),
            }
            for v in ("pass", "fail")
        }
        rec["ci"] = [_plain(row["low"]), _plain(row["high"])]
        rec["estimate_bounds"] = [_plain(row["estimate_min"]), _plain(row["estimate_max"])]
        rec["note"] = _plain(row["note"]) or ""
        rec["interval_method"] = df.attrs.get("interval_method", "percentile bootstrap")
        records.append(rec)
    return records
