"""Per approver: approval rate, agreement with the check, review time, and a bias hint."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from calibrate.analysis.agreement import (
    check_rate_options,
    expand_question,
    key_frame,
    models_per_group,
    pools_note,
    rate_columns,
    require_columns,
    validate_by,
)
from calibrate.analysis.draw_design import is_audited
from calibrate.analysis.grouping import group_sums
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.stats import MIN_N

#: Columns of :func:`approvers` after the group keys.
APPROVER_COLUMNS = [
    "n", "approvals", "approval_rate", "approval_low", "approval_high",
    "n_decided", "agree", "agree_low", "agree_high",
    "n_timed", "n_before_check", "median_review_s", "n_models", "flag", "flag_reason", "note",
]  # fmt: skip


def approvers(
    submissions: pd.DataFrame,
    *,
    by: str | Sequence[str] | None = None,
    agree_above: float = 0.95,
    review_below_s: float = 30.0,
    confidence: float = 0.95,
    min_n: int = MIN_N,
) -> pd.DataFrame:
    """Per approver: approval rate, agreement with the check, review time, and a bias hint.

    People see the check's verdict before deciding (check-1 §3), so a person
    who follows it without reading inflates the measured agreement
    (automation bias [1]_). An approver is flagged when, over at least
    ``min_n`` labeled pass/fail verdicts, they agree with the check on at
    least ``agree_above`` of them **and** their median time from the check's
    ``at`` to their decision is at most ``review_below_s`` seconds. The flag is
    a hint, with its reason in ``flag_reason``, not an accusation: a fast
    approver may simply face easy cases.

    Parameters
    ----------
    submissions : pandas.DataFrame
        As returned by :func:`calibrate.dataset.submissions`; only labeled rows
        are used, and not the decisions on audit-drawn checks (``audited``):
        the reviewer saw only what the draw offered.
    by : str or sequence of str, optional
        Extra group keys crossed with the approver (e.g. ``["step"]``);
        default none.
    agree_above : float, default=0.95
        Agreement (point estimate) at or above which agreement counts as
        "very high".
    review_below_s : float, default=30.0
        Median review time, in seconds, at or below which it counts as "very short".
    confidence : float, default=0.95
        Level of the Wilson intervals.
    min_n : int, default=:data:`calibrate.analysis.stats.MIN_N`
        No flag and a "too few" note below this many labeled decisions.

    Returns
    -------
    pandas.DataFrame
        One row per approver (``approver`` = ``decided_by``; missing when the
        decision names nobody) and extra key, then :data:`APPROVER_COLUMNS`:
        ``n`` labeled decisions, ``approval_rate`` (share acceptable) with
        Wilson interval, ``agree`` with the check over labeled pass/fail
        verdicts (``n_decided``), ``median_review_s`` over ``n_timed``
        decisions with both times, the decision at or after the check (a decision dated by
        its day alone, stored as midnight UTC, has none);
        ``n_before_check`` decisions timed before their check (clock skew, or
        recorded ahead of the verdict: no review time, and no hint of automation
        bias, which needs the verdict seen first), ``n_models`` (evaluator models whose
        checks the row's decisions were made on; ``note`` says "pools 2 models"
        unless ``by`` has ``model``), ``flag`` and ``flag_reason``.

    Raises
    ------
    ValueError
        An unknown group key or ``question``, ``agree_above`` outside (0, 1], a
        ``confidence`` outside (0, 1) or a ``min_n`` below 1, or ``submissions``
        lacking a column it reads.

    References
    ----------
    .. [1] Goddard, K., Roudsari, A. and Wyatt, J. C. (2012). Automation bias:
       a systematic review of frequency, effect mediators, and mitigators.
       JAMIA 19(1), 121-127.
    .. [2] Wilson, E. B. (1927). Probable inference, the law of succession, and
       statistical inference. JASA 22(158), 209-212.
    """
    extra = validate_by(by, default=())
    keys = ["approver", *[k for k in expand_question(extra) if k != "approver"]]
    if "question" in keys:
        raise ValueError("the approver view is per submission; 'question' is not a key here")
    if not 0 < agree_above <= 1:
        raise ValueError(f"agree_above must be in (0, 1], got {agree_above}")
    check_rate_options(confidence, min_n)
    require_columns(submissions, by, analysis="approvers")
    label = submissions["label"].astype("boolean")
    # Decisions on audit-drawn checks are left out: the reviewer saw only what the draw offered
    # (a pass-only draw's "agreement" is one minus its false-pass rate), which says nothing of
    # following the check.
    drawn = (
        is_audited(submissions)
        if "audited" in submissions.columns
        else np.zeros(len(submissions), bool)
    )
    data = submissions[label.notna().to_numpy() & ~drawn]
    acc = data["label"].astype("boolean").to_numpy(dtype=bool)
    v = data["verdict"].astype("string").fillna("").to_numpy(dtype=object)
    decided = (v == "pass") | (v == "fail")
    agree = decided & ((v == "pass") == acc)
    decided_at = pd.to_datetime(data["decided_at"], utc=True)
    checked_at = pd.to_datetime(data["at"], utc=True)
    review = (decided_at - checked_at).dt.total_seconds()
    # A date alone is stored as midnight UTC (docs/formats.md): it has no time of day, so no
    # review time, and it is before its check only when its day is.
    date_only = (decided_at == decided_at.dt.floor("D")).to_numpy()
    day_before = (decided_at < checked_at.dt.floor("D")).to_numpy()
    # A decision timed before its check was not made after seeing the verdict: no review time.
    before = np.where(date_only, day_before, (review < 0).to_numpy())
    review = review.mask(date_only | before)
    values = pd.DataFrame(
        {
            "n": np.ones(len(data), dtype=np.int64),
            "approvals": acc.astype(np.int64),
            "n_decided": decided.astype(np.int64),
            "n_agree": agree.astype(np.int64),
            "n_timed": review.notna().to_numpy().astype(np.int64),
            "n_before_check": before.astype(np.int64),
        },
        index=data.index,
    )
    key_df = key_frame(data, keys)
    out = group_sums(key_df, values)
    medians = (
        pd.concat([key_df, review.rename("__review")], axis=1)
        .groupby(keys, dropna=False, sort=True)["__review"]
        .median()
        .reset_index(drop=True)
    )
    out["median_review_s"] = medians.to_numpy(dtype=float) if len(out) else np.zeros(0)
    # An approver's decisions span models (and steps and processes, unless ``by`` splits
    # them): a row pooling models says so, as agreement's rows do.
    out["n_models"] = models_per_group(data, key_df, keys, len(out))
    pools = "model" not in keys
    rate_columns(out, "approval", "approvals", "n", confidence)
    rate_columns(out, "agree", "n_agree", "n_decided", confidence)

    flags, reasons, notes = [], [], []
    for n, n_dec, n_agree, rate, median, n_models, n_before in out[
        ["n", "n_decided", "n_agree", "agree", "median_review_s", "n_models", "n_before_check"]
    ].itertuples(index=False):
        fast = bool(np.isfinite(median) and median <= review_below_s)
        close = bool(n_dec >= min_n and np.isfinite(rate) and rate >= agree_above)
        flag = fast and close
        flags.append(flag)
        reasons.append(
            f"agrees with the check on {n_agree} of {n_dec} decided verdicts ({rate:.0%}) "
            f"and decides a median {median:.0f} s after it; people see the verdict before "
            "deciding, so this may be automation bias (a hint, not proof)"
            if flag
            else ""
        )
        parts = [f"too few labels (n<{min_n})" if n < min_n else ""]
        parts.append(pools_note(n_models) if pools else "")
        parts.append(
            f"{n_before} decision{'s' if n_before != 1 else ''} timed before the check "
            "(clock skew?): no review time"
            if n_before
            else ""
        )
        notes.append("; ".join(p for p in parts if p))
    out["flag"] = np.asarray(flags, dtype=bool)
    out["flag_reason"] = pd.Series(reasons, index=out.index, dtype="string")
    out["note"] = pd.Series(notes, index=out.index, dtype="string")
    out = out[[*keys, *APPROVER_COLUMNS]]
    out.attrs["interval_method"] = "Wilson score 95%"
    out.attrs["thresholds"] = {"agree_above": agree_above, "review_below_s": review_below_s}
    return out


def approver_records(df: pd.DataFrame) -> list[dict]:
    """The rows of :func:`approvers` as JSON-ready dicts.

    Each has the keys, ``n``, ``approvals``, ``approval_rate`` and
    ``approval_ci``, ``n_decided``, ``agree`` and ``agree_ci``, ``n_timed``,
    ``n_before_check``, ``median_review_s``, ``n_models``, ``flag``, ``flag_reason`` (``None`` when not
    flagged), ``note``, the flag ``thresholds`` and ``interval_method``.
    """
    keys = [c for c in df.columns if c not in APPROVER_COLUMNS]
    records = []
    for row in df.to_dict("records"):
        rec: dict = {k: _plain(row[k]) for k in keys}
        rec["n"] = int(row["n"])
        rec["approvals"] = int(row["approvals"])
        rec["approval_rate"] = _plain(row["approval_rate"])
        rec["approval_ci"] = [_plain(row["approval_low"]), _plain(row["approval_high"])]
        rec["n_decided"] = int(row["n_decided"])
        rec["agree"] = _plain(row["agree"])
        rec["agree_ci"] = [_plain(row["agree_low"]), _plain(row["agree_high"])]
        rec["n_timed"] = int(row["n_timed"])
        rec["n_before_check"] = int(row["n_before_check"])
        rec["median_review_s"] = _plain(row["median_review_s"])
        rec["n_models"] = int(row["n_models"])
        rec["flag"] = bool(row["flag"])
        rec["flag_reason"] = _plain(row["flag_reason"]) or None
        rec["note"] = _plain(row["note"]) or ""
        rec["thresholds"] = dict(df.attrs.get("thresholds", {}))
        rec["interval_method"] = df.attrs.get("interval_method", "Wilson score 95%")
        records.append(rec)
    return records
