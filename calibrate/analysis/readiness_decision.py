"""From criteria to READY / NOT YET / NO, and the reasons in words.

Every criterion is a :class:`Criterion` ``{name, value, limit, ok}``; the
decision reads them with the model change, the drift test and the threshold
search, and says why in sentences whose every comparison holds for the
figures it prints (issue 18).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from calibrate.analysis.drift import (
    Drift,
)
from calibrate.analysis.plain import num as _num
from calibrate.analysis.plain import pct as _pct
from calibrate.analysis.rate import Rate, limit_pct, pct_against
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.stats import measurably_above
from calibrate.analysis.step_evidence import ModelChange
from calibrate.analysis.threshold_view import ThresholdView
from calibrate.defaults import ReadinessOptions

#: The three decisions, best first (the order the report sorts by).
DECISIONS = ("READY", "NOT_YET", "NO")


@dataclass(frozen=True)
class Criterion:
    """One line of the decision: a value against its limit.

    Attributes
    ----------
    name : str
        Stable identifier, e.g. ``"false_pass_upper"``.
    value, limit : float, int, str or None
        The measured value (``None`` when it cannot be measured) and its limit.
    ok : bool
        Whether the value meets the limit; a value that cannot be measured does not,
        except the false-fail bound of a certified check that never fails (no
        false-fail rate exists to bound: the value is ``None`` and ``ok`` holds).
    blocks : {"NOT_YET", "NO"}
        The decision this criterion forces when it is not ok.
    label : str
        The criterion in words, for the faces.
    detail : str
        The evidence in words, with ``n`` and the interval where it is a rate.
    """

    name: str
    value: float | int | str | None
    limit: float | int | str | None
    ok: bool
    blocks: str
    label: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": _plain(self.value),
            "limit": _plain(self.limit),
            "ok": bool(self.ok),
            "blocks": self.blocks,
            "label": self.label,
            "detail": self.detail,
        }


SOURCE_WORDS = {"suggested": "the suggested", "current": "today's", "recorded": "the recorded"}


def bound_detail(
    bound: float | None, observed: dict[str, Any] | None, what: str, status: str, which: str,
    over: str = "",
) -> str:  # fmt: skip
    parts = []
    if bound is None:
        parts.append(f"no bound ({status.replace('_', ' ')})")
    elif status == "ok":
        parts.append(f"certified at most {bound:.1%}")
    else:
        parts.append(
            f"lowest bound the search reached {bound:.1%} ({status.replace('_', ' ')}; "
            "not adjusted for the search: not a certificate)"
        )
    if observed:
        r = Rate(observed["k"], observed["n"])
        where = f", {over}" if over else ""
        parts.append(f"observed {what} under {which} thresholds{where}: {r.text()}")
    return "; ".join(parts)


def decide_readiness(
    criteria: Sequence[Criterion], *, change: ModelChange, drift: Drift, tv: ThresholdView,
    poor: bool, point: dict[str, Any] | None, opts: ReadinessOptions,
    best_cov: float | None = None, right_way: bool = True, cov_n: int = 0, best_n: int = 0,
) -> tuple[str, list[str]]:  # fmt: skip
    failing = [c for c in criteria if not c.ok]
    hard = [c for c in failing if c.blocks == "NO"]
    reasons: list[str] = []
    names = {c.name for c in hard}
    if "evaluator_models" in names:
        word = "interleaved with" if change.interleaved else "replaced"
        reasons.append(
            f"The evaluator model changed mid-window: {change.current} {word} {change.previous} "
            f"on {change.changed_at}. Agreement and thresholds measured on one model say nothing "
            "about another."
        )
    for t in drift.tests:
        if f"drift_{t.rate}" in names:
            what = "false-pass rate" if t.rate == "false_pass" else "disagreement rate"
            reasons.append(
                f"Drift: the {what} rose from {t.earlier.text()} in the earlier half to "
                f"{t.recent.text()} in the recent half{REPLAYED.get(drift.verdicts, '')} "
                f"(one-sided {t.method} test, p = {t.p_value:.2g} <= {t.level:.3g})."
            )
    n_lab = next(c.value for c in criteria if c.name == "labeled_submissions")
    if poor and names & {"false_pass_upper", "false_fail_upper", "coverage"}:
        reasons.append(
            _poor_reason(n_lab, tv=tv, point=point, opts=opts, best_cov=best_cov, best_n=best_n)
        )
    elif "coverage" in names:
        cov = next(c for c in criteria if c.name == "coverage")
        if cov.value is None:
            reasons.append(f"Coverage cannot be measured ({cov.detail}).")
        else:
            reasons.append(
                f"The check would decide {short_of(cov.value, cov_n, opts.min_coverage)}: it "
                "saves little; sharpen the questions so fewer answers are unsure."
            )
    for c in hard:
        if c.name in ("error_rate", "truncation_rate"):
            reasons.append(
                f"{c.label[0].upper()}{c.label[1:]} is {c.detail}, above the limit "
                f"{limit_pct(c.limit)}."
            )
    if hard:
        return "NO", reasons
    soft = [c for c in failing if c.blocks == "NOT_YET"]
    if soft:
        for c in soft:
            if c.name == "labeled_submissions":
                reasons.append(f"Too few labels yet: {c.value} labeled checks, {c.limit} needed.")
            elif c.name in ("false_pass_upper", "false_fail_upper") and tv.status == "ok":
                limit = opts.alpha if c.name == "false_pass_upper" else opts.beta
                what = "false-pass" if c.name == "false_pass_upper" else "false-fail"
                if c.value is None:
                    reasons.append(f"No certified {what} bound.")
                else:
                    v, lim = pct_against(c.value, limit, ">")
                    reasons.append(f"The certified {what} bound is {v}, above {lim}.")
            elif c.name == "coverage" and c.value is None:
                reasons.append(f"Coverage cannot be measured yet ({c.detail}).")
            elif c.name == "coverage":
                reasons.append(
                    f"Decided without a person: {c.detail}; at least {limit_pct(c.limit)} is "
                    "required."
                )
            elif c.name in ("error_rate", "truncation_rate"):
                what = "error verdicts" if c.name == "error_rate" else "truncations"
                reasons.append(f"Too few checks to judge the share of {what} yet: {c.detail}.")
            elif c.name.startswith("drift_"):
                line = drift_untestable(drift, certified=tv.status == "ok")
                if line not in reasons:
                    reasons.append(line)
        bounds = [c for c in soft if c.name in ("false_pass_upper", "false_fail_upper")]
        lowest = [
            (_num(tv.best_bounds.get(c.name)), c)
            for c in bounds
            if _num(tv.best_bounds.get(c.name)) is not None
        ]
        if bounds and tv.status == "selected_sample":
            reasons.append(
                "Nothing can be certified on these labels: they include checks decided after the "
                "switch (kept by --with-escalations), which the enforced check chose for a "
                "person. Run without --with-escalations."
            )
        elif bounds and tv.status != "ok":
            # The real blocker leads (after too few labels): a headline on today's coverage
            # quoted "at best 100.0%" beside "at least 50% is required" (outside review G7).
            first = int(bool(reasons) and reasons[0].startswith("Too few labels yet"))
            line = f"Nothing can be certified yet ({tv.status.replace('_', ' ')})"
            if lowest:
                best = " and ".join(
                    f"{_pct(v)} on false {'passes' if c.name == 'false_pass_upper' else 'fails'} "
                    f"(limit {limit_pct(c.limit)})"
                    for v, c in lowest
                )
                line += (
                    f". For orientation only, the lowest bounds the search reached are {best}: "
                    "each side's from its own candidate and not adjusted for the search, so no "
                    "certificate"
                )
            reasons.insert(first, line + ".")
        evidence = _evidence_reason(
            point, opts=opts, best_cov=best_cov, right_way=right_way, best_n=best_n
        )
        if evidence and tv.status != "selected_sample":  # a selected sample shows no direction
            reasons.append(evidence)
        return "NOT_YET", reasons
    fp = next(c for c in criteria if c.name == "false_pass_upper")
    cov = next(c for c in criteria if c.name == "coverage")
    reasons.append(
        f"With the suggested thresholds, at most {_pct(fp.value)} of what the check passes would "
        f"have been rejected ({1 - opts.delta:.0%} confidence), and it decides "
        f"{share_text(cov.value, cov_n)} of submissions without a person."
    )
    reasons.append(
        f"No drift between the earlier and the recent half{REPLAYED.get(drift.verdicts, '')}; "
        "one evaluator model; errors and truncations within limits."
    )
    return "READY", reasons


#: Said beside a drift test of the certified thresholds replayed (``Drift.verdicts``).
REPLAYED = {
    "suggested": " (the suggested thresholds replayed on the labeled checks: today's decide "
    "nothing to compare across the halves)"
}


def drift_untestable(drift: Drift, *, certified: bool) -> str:
    """Why the drift test cannot run, and whether more labels would change that.

    A half without labeled checks fills with labels. A half whose labeled
    checks hold no verdict to compare does not, while the thresholds stay:
    the test then runs on the certified thresholds replayed
    (``drift.verdicts == "suggested"``), or waits for thresholds to be
    certified (outside review G5: "cannot be tested yet: a half of the window
    has no labeled verdicts" beside 111 labeled checks in each half).

    Parameters
    ----------
    drift : Drift
        The step's drift test, not testable.
    certified : bool
        Whether the step's thresholds are certified.

    Returns
    -------
    str
        One sentence.
    """
    if not drift.undecided:
        return f"Drift cannot be tested yet: {drift.missing()}."
    if drift.verdicts == "suggested":
        return (
            "Drift cannot be tested: today's thresholds decide nothing to compare across the "
            f"halves, nor do the suggested thresholds replayed on the labeled checks "
            f"({drift.missing()}). More labels alone will not change that: compare the halves "
            "(calibrate agreement --by week) and sharpen the questions so the check decides in "
            "both."
        )
    then = (
        ""
        if certified
        else " Once the search certifies thresholds, drift is tested on them, replayed on the "
        "same labeled checks."
    )
    return (
        f"Drift cannot be tested: under today's thresholds {drift.missing()}, so there is no "
        "decided verdict to compare across the halves, and more labels under those thresholds "
        f"will not change that.{then}"
    )


def _poor_reason(
    n_lab: Any, *, tv: ThresholdView, point: dict[str, Any] | None, opts: ReadinessOptions,
    best_cov: float | None, best_n: int = 0,
) -> str:  # fmt: skip
    """Why more labels would not help: each figure with the comparison it meets."""
    problems = []
    if tv.status == "unattainable":
        problems.append(
            "every candidate the threshold search measured is measurably outside the limits"
        )
    if tv.status == "insufficient_data" and tv.needed is not None and tv.needed.more is None:
        problems.append(f"resampling today's labels, {tv.needed.sentence()}")
    if best_cov is not None and best_cov < opts.min_coverage:
        v, lim = pct_against(best_cov, opts.min_coverage, "<", digits=0)
        problems.append(
            f"of all thresholds searched, those whose observed error rates meet the limits "
            f"decide at most {best_text(v, best_n)} alone (< {lim})"
        )
    if point:
        where = SOURCE_WORDS.get(point.get("source"), "today's")
        for key, limit, what in (
            ("false_pass", opts.alpha, "passes"),
            ("false_fail", opts.beta, "fails"),
        ):
            r = point[key]
            # Only a rate measurably above its limit is evidence (black-box run: "1 of 3, n<20,
            # at or above 5% already" backed a NO).
            if r["n"] and measurably_above(r["k"], r["n"], limit, delta=opts.delta):
                problems.append(
                    f"under {where} thresholds false {what} are "
                    f"{Rate(r['k'], r['n']).text_against(limit, '>')}, above "
                    f"{limit_pct(limit)} (measurably: {1 - opts.delta:.0%} confidence)"
                )
        if point["coverage"] < opts.min_coverage:
            problems.append(
                f"under {where} thresholds it would decide "
                f"{short_of(point['coverage'], int(point.get('n') or 0), opts.min_coverage)}"
            )
    return (
        f"Even with {n_lab} labels the check cannot meet the limits with useful coverage"
        + (": " + "; ".join(problems) if problems else "")
        + ". Rewrite the questions that drive the disagreements."
    )


def _evidence_reason(
    point: dict[str, Any] | None, *, opts: ReadinessOptions, best_cov: float | None,
    right_way: bool, best_n: int = 0,
) -> str | None:  # fmt: skip
    """Whether the evidence so far points the right way, with the figure that says so."""
    if best_cov is not None:
        op = ">=" if right_way else "<"
        v, lim = pct_against(best_cov, opts.min_coverage, op, digits=0)
        direction = "points the right way" if right_way else "does not point the right way yet"
        return (
            f"So far the evidence {direction}: thresholds the search tried whose observed error "
            f"rates meet the limits decide up to {best_text(v, best_n)} alone ({op} {lim})."
        )
    if not point or not point["false_pass"]["n"]:
        return None
    fp = point["false_pass"]
    where = SOURCE_WORDS.get(point.get("source"), "today's")
    rate = Rate(fp["k"], fp["n"])
    if right_way:
        # _points_right_way: the observed rate is below alpha (and the rest within its limits).
        return (
            f"So far the evidence points the right way: under {where} thresholds false passes "
            f"are {rate.text_against(opts.alpha, '<')}, below {limit_pct(opts.alpha)}."
        )
    return (
        f"So far the evidence does not point the right way yet: under {where} thresholds false "
        f"passes are {rate.text()}."
    )


def share_text(share: float | None, n: int) -> str:
    """A share of ``n`` labeled checks as its count, n and 95% Wilson interval (bare without n)."""
    if share is None:
        return "–"
    if n <= 0:
        return f"{share:.1%}"
    return Rate(round(share * n), n).text()


def short_of(share: float, n: int, limit: float) -> str:
    """A share decided alone below the share required, in words, with its n and interval.

    "only ... below" where the 95% Wilson interval shown lies below ``limit``; where it
    reaches the limit the share is "about" the figure, short of the limit as observed only
    (black-box run: "only 48.0% ... (< 50%)" hid 95% CI 44.2%–51.8%).
    """
    lim = limit_pct(limit)
    if n <= 0:
        v, lim = pct_against(share, limit, "<")
        return f"only {v} of submissions alone (< {lim}; n unknown)"
    r = Rate(round(share * n), n)
    if r.ci[1] < limit:
        return f"only {r.text_against(limit, '<')} of submissions alone, below the {lim} required"
    return (
        f"about {r.text_against(limit, '<')} of submissions alone, short of the {lim} required "
        "as observed (its interval reaches it)"
    )


def best_text(figure: str, n: int) -> str:
    """The best share over the searched thresholds, with its n and why it has no interval."""
    if n <= 0:
        return figure
    # A maximum over many candidates: a Wilson interval around it would claim too much.
    return (
        f"{figure} (of the {n} labeled checks it was measured on; the largest over the search, "
        "a point estimate: no interval)"
    )


def capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def needed_text(needed: int, days: float | None) -> str:
    if days is None:
        return f"About {needed} more labeled checks are needed (no recent volume to time it)."
    when = f"{days:.0f} days" if days < 14 else f"{days / 7:.1f} weeks"
    return f"About {needed} more labeled checks are needed: {when} at the recent volume."
