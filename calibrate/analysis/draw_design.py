"""Which labels of audit draws stand for which verdicts, and which rates they leave standing.

After the switch only audit draws sample the check. An unweighted rate over their labels is the
population's only when the draws offered every check it conditions on alike (docs/method.md,
"After the switch"); :func:`draw_flags` says, per group of
:func:`calibrate.analysis.agreement.agreement`, which rates the draws beside it leave without a
meaning, and :func:`draw_note` says so in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.grouping import group_sums, text_values

#: The values of the ``labels`` key: where a check's label can come from. Before the switch every
#: verdict is reviewed; after it only audit draws sample the check (escalations are left out).
LABEL_SOURCES = {
    "review": "advisory review",
    "audit": "audit draw",
    "enforced": "advisory: false, not drawn",
}
#: What an unweighted rate needs of the audit draws beside it (docs/method.md, "After the switch"):
#: each verdict it conditions on offered alike, at one inclusion probability. A rate's flag
#: column, the rates it withholds, and the verdicts it conditions on in words.
DRAW_FLAGS = (
    ("unequal_draws_pass", ("false_pass",), "every pass alike"),
    ("unequal_draws_fail", ("false_fail",), "every fail alike"),
    ("unequal_draws", ("agree",), "every pass and fail at one probability"),
    (
        "unequal_draws_verdicts",
        ("tpr", "tnr"),
        "every verdict at one probability (a draw offers no unsure or error verdict)",
    ),
)
#: The rates in words, in the order a note lists them.
RATE_WORDS = {
    "agree": "agreement and kappa",
    "false_pass": "the false-pass rate",
    "false_fail": "the false-fail rate",
    "tpr": "TPR",
    "tnr": "TNR",
}
#: Where the rates a draw withholds can be read instead.
UNEQUAL_DRAWS_POINTER = "weighted: calibrate monitor; reviews alone: --advisory-only or --by labels"
#: Rates over labels the enforced check selected (escalations, decisions on checks no draw
#: drew; kept by --with-escalations): every rate conditioned on a verdict or a label.
SELECTED_WITHHELD = ("agree", "false_pass", "false_fail", "tpr", "tnr")
#: Said of a group whose false-pass (false-fail) rate leaves out the passes (fails) recorded after
#: the last one a draw considered: the rate is over the earlier ones.
LATER_NOTE = "{n} {checks} after the last a draw considered (not yet offered by a draw) left out of the {rate}"
#: Said of a group with drawn checks no decision has reached yet (``calibrate monitor`` stops its
#: stream at the first of them): the group's rates are over the decided ones alone.
PENDING_NOTE = "{n} drawn check{s} still await{v} a decision (the rates are over the decided ones)"
#: Said of a group holding such labels.
SELECTED_NOTE = (
    "{n} labels the enforced check selected (escalations, or decisions on checks no draw "
    "drew; kept by --with-escalations) are no sample: agreement, kappa, false passes, false "
    "fails, TPR and TNR withheld"
)
#: Shares over a group's checks that a draw chose (or left), which ``--by labels`` splits off.
CHOSEN_WITHHELD = ("unsure", "error")
#: Said of such a group (the report says "set by the draw").
CHOSEN_BY_DRAW_NOTE = (
    "unsure and error shares withheld: a draw chose these checks by verdict (the check's own: "
    "--by without labels)"
)


def is_audited(df: pd.DataFrame) -> np.ndarray:
    """Checks an audit draw drew (``audited``; missing counts as not drawn)."""
    return df["audited"].astype("boolean").fillna(False).to_numpy(dtype=bool)


def is_enforced(df: pd.DataFrame) -> np.ndarray:
    """Checks recorded with ``advisory: false``; without that column, those an audit considered."""
    if "advisory" in df.columns:
        return (df["advisory"].astype("boolean") == False).fillna(False).to_numpy(bool)  # noqa: E712
    return is_audited(df) | pd.to_numeric(df["inclusion_p"], errors="coerce").notna().to_numpy()


def _outside_design(
    data: pd.DataFrame, enforced: np.ndarray, raw: np.ndarray, verdict: np.ndarray
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Enforced checks no draw could have considered: outside the draws' design.

    One recorded before its step's switch (its first pass or unsure verdict recorded with
    ``advisory: false``, as the monitor and ``audit draw`` read it: a blocking fail alone may
    predate it) belongs to no enforcement period a draw offers. One recorded after the last
    check a draw of its step considered had not arrived when the draws were made. Neither was
    offered at probability 0, or every step with checks after its latest draw, or a fail
    before its switch, would read as unequal. Without ``at``, or without a considered check,
    nothing is outside.

    Returns the checks outside the design of every draw (for the rates over several verdicts,
    whose labels span every draw: after the last check any draw of the step considered), and
    per verdict ``"pass"`` and ``"fail"`` the checks of that verdict recorded after the switch
    and after the last one of that verdict a draw of the step considered (every one, in a step
    whose draws considered none): outside the design of the draws that offered it, for the rate
    over that verdict alone. Per verdict, so that a later fail draw does not turn passes that
    had not arrived at the last pass draw into passes offered with probability 0.
    """
    none = np.zeros(len(data), dtype=bool)
    considered = enforced & ~np.isnan(raw)
    if "at" not in data.columns or not considered.any():
        return none, {"pass": none, "fail": none}
    at = pd.to_datetime(data["at"], utc=True).reset_index(drop=True)
    cols = [c for c in ("process", "step") if c in data.columns]
    step = (
        pd.DataFrame({c: data[c].astype("string").fillna("") for c in cols}).reset_index(drop=True)
        if cols
        else pd.DataFrame({"__all": np.zeros(len(data), dtype=np.int64)})
    )
    keys = list(step.columns)
    switching = enforced & np.isin(text_values(data["verdict"]), ("pass", "unsure"))
    lasts = {f"__last_{v}": at.where(considered & (verdict == v)) for v in ("pass", "fail")}
    frame = step.assign(
        __last=at.where(considered), __switch=at.where(switching), __drawn=considered, **lasts
    )
    g = frame.groupby(keys, dropna=False, sort=False)
    last = g["__last"].transform("max")
    switch = g["__switch"].transform("min")
    early = (at < switch).fillna(False).to_numpy(dtype=bool)
    late = (at > last).fillna(False).to_numpy(dtype=bool)
    unconsidered = enforced & np.isnan(raw)
    # A step no draw touched keeps the reading of every draw (its checks are inside).
    drawn_step = g["__drawn"].transform("any").to_numpy(dtype=bool)
    after = {}
    for v in ("pass", "fail"):
        last_v = g[f"__last_{v}"].transform("max")
        beyond = ((at > last_v) | last_v.isna()).fillna(False).to_numpy(dtype=bool)
        after[v] = unconsidered & (verdict == v) & drawn_step & beyond & ~early
    return unconsidered & (early | late), after


def draw_flags(
    data: pd.DataFrame,
    key_df: pd.DataFrame,
    keys: list[str],
    verdict: np.ndarray,
    n_rows: int,
) -> dict[str, np.ndarray]:
    """Per group: which rates the draws beside its audit labels leave without a meaning.

    A group's unweighted rates over audit labels are its population's only when the draws
    offered every check that rate conditions on alike, at one inclusion probability: the
    false-pass rate the passes, the false-fail rate the fails, agreement and kappa every pass
    and fail, TPR and TNR (over every labeled verdict) every verdict. The population is the
    design's, not the sample's: every check recorded with advisory: false (drawn or not; a
    verdict no draw offered has probability 0; :func:`_outside_design` leaves out those no
    draw could consider) beside the group's audit labels, and a reviewed check (advisory)
    counts as drawn with probability 1.

    Returns the flag columns of :data:`DRAW_FLAGS`; ``chosen``, a ``labels`` group a draw
    chose (or left) among the enforced checks when it did not offer every verdict alike (its
    unsure and error shares are the draw's: a draw has no unsure verdict); and
    ``n_selected``, the group's labels on enforced checks no draw drew (escalations,
    decisions on undrawn checks: a sample the enforced check selected).
    """
    names = [flag for flag, _, _ in DRAW_FLAGS] + ["chosen"]
    counts = ("n_selected", "n_later_pass", "n_later_fail", "n_pending")
    out: dict[str, np.ndarray] = {c: np.zeros(n_rows, dtype=bool) for c in names}
    out.update({c: np.zeros(n_rows, dtype=np.int64) for c in counts})
    if "audited" not in data.columns or "inclusion_p" not in data.columns:
        return out
    audited = is_audited(data)
    labeled = data["label"].astype("boolean").notna().to_numpy()
    # Drawn checks no decision has reached: the decided ones need not be a random part of them.
    out["n_pending"] = _group_counts(key_df, keys, audited & ~labeled, n_rows)
    enforced = is_enforced(data)
    selected = enforced & labeled & ~audited
    if not (audited & labeled).any() and not selected.any():
        return out
    raw = pd.to_numeric(data["inclusion_p"], errors="coerce").to_numpy(dtype=float)
    pi = np.where(enforced, np.nan_to_num(raw, nan=0.0), 1.0)
    outside, after = _outside_design(data, enforced, raw, verdict)
    inside = ~outside
    is_pass, is_fail = verdict == "pass", verdict == "fail"
    # Population keys: audit draws and undrawn enforced checks are one population (a constant
    # key stands in when the grouping has none).
    pop = key_df.assign(__all=0)
    if "labels" in pop.columns:
        pop["labels"] = np.where(pop["labels"] == LABEL_SOURCES["review"], "review", "enforced")
    frame = pop.assign(
        __pass=np.where(is_pass & inside & ~after["pass"], pi, np.nan),
        __fail=np.where(is_fail & inside & ~after["fail"], pi, np.nan),
        __dec=np.where((is_pass | is_fail) & inside, pi, np.nan),
        __any=np.where(inside, pi, np.nan),
        __later_pass=after["pass"].astype(np.int64),
        __later_fail=after["fail"].astype(np.int64),
    )
    g = frame.groupby(list(pop.columns), dropna=False, sort=False)

    def spread(column: str) -> np.ndarray:
        width = g[column].transform("max") - g[column].transform("min")
        return width.fillna(0).to_numpy() > 1e-12

    drawn = audited & labeled

    def later(verdict_: str) -> np.ndarray:
        # Counted over the population (the late checks sit in another ``labels`` row than the
        # draw's), said where the group has audit labels (whose rate leaves them out).
        n = g[f"__later_{verdict_}"].transform("sum").to_numpy(dtype=np.int64)
        return np.where(drawn, n, 0)

    split = (
        (key_df["labels"] != LABEL_SOURCES["review"]).to_numpy(dtype=bool)
        if "labels" in key_df.columns
        else np.zeros(len(data), dtype=bool)
    )
    rows = pd.DataFrame({
        "unequal_draws_pass": spread("__pass") & drawn,
        "unequal_draws_fail": spread("__fail") & drawn,
        "unequal_draws": spread("__dec") & drawn,
        "unequal_draws_verdicts": spread("__any") & drawn,
        "chosen": spread("__any") & split,
        "n_selected": selected.astype(np.int64),
        "n_later_pass": later("pass"),
        "n_later_fail": later("fail"),
    }, index=data.index)  # fmt: skip
    how = {**dict.fromkeys(names, "any"), "n_selected": "sum", "n_later_pass": "max",
           "n_later_fail": "max"}  # fmt: skip
    if not keys:
        agg = rows.agg(how).to_frame().T
    else:
        agg = pd.concat([key_df, rows], axis=1).groupby(keys, dropna=False, sort=True).agg(how)
    out.update({c: agg[c].to_numpy(dtype=bool if c in names else np.int64) for c in agg})
    return out


def _group_counts(
    key_df: pd.DataFrame, keys: Sequence[str], mask: np.ndarray, n_rows: int
) -> np.ndarray:
    """How many rows of ``mask`` each group of :func:`group_sums` holds, in its row order."""
    if not n_rows:
        return np.zeros(0, dtype=np.int64)
    counts = pd.Series(mask.astype(np.int64), index=key_df.index, name="__n")
    return group_sums(key_df[list(keys)], counts.to_frame())["__n"].to_numpy(dtype=np.int64)


def draw_note(row: dict[str, Any]) -> str:
    """What the draws beside a group's audit labels did not offer alike, what that withholds and
    what holds (empty when every rate holds)."""
    unequal = [(names, words) for flag, names, words in DRAW_FLAGS if row[flag]]
    if not unequal:
        return ""
    withheld = {n for names, _ in unequal for n in names}
    # The narrowest condition missed names it: every pass (or fail), else one probability.
    verdicts = [w.removesuffix(" alike") for flag, _, w in DRAW_FLAGS[:2] if row[flag]]
    what = f"{' or '.join(verdicts)} alike" if verdicts else unequal[0][1]
    held = [
        RATE_WORDS[n] for n, denominator in (
            ("agree", "n_decided"), ("false_pass", "n_pass"), ("false_fail", "n_fail"),
            ("tpr", "n_acceptable"), ("tnr", "n_not_acceptable"),
        )
        if n not in withheld and row[denominator]
    ]  # fmt: skip
    gone = [RATE_WORDS[n] for n in RATE_WORDS if n in withheld]
    text = f"audit draws did not offer {what}: {_join(gone)} withheld"
    if held:
        text += f"; {_join(held)} hold{'s' if len(held) == 1 else ''}"
    return f"{text} ({UNEQUAL_DRAWS_POINTER})"


def _join(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"
