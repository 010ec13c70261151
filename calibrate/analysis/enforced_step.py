"""A step already enforced (``advisory: false``): keep it so, or return it to advisory.

The question for such a step is no longer whether to drop ``advisory`` but
whether the **check in force** may stay enforced. :func:`judge_enforced`
answers it from the monitor (its audited false passes since the switch) and
the labeled evidence (reviews of every verdict before the switch, as
:func:`calibrate.analysis.readiness_decision.decide_readiness` reads them).
Thresholds the search suggests on those labels are a separate change, never
the basis of the verdict: pasting them starts a new enforcement period
(docs/method.md, "The report on an enforced step").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from calibrate.analysis.monitor import StepMonitor, restore_advisory_yaml
from calibrate.analysis.rate import Rate
from calibrate.analysis.readiness_decision import share_text
from calibrate.analysis.stats import measurably_above
from calibrate.defaults import RECERTIFY_MIN_LABELS


@dataclass(frozen=True)
class Enforcement:
    """A step already enforced: the question is no longer whether to drop ``advisory``.

    Parameters
    ----------
    monitor : StepMonitor
        ``calibrate monitor`` on the step's checks recorded with ``advisory:
        false`` in the report's window.
    in_process_file : bool or None, default=None
        Whether the current process version says ``advisory: false`` (``None``:
        no process file names the step).
    """

    monitor: StepMonitor
    in_process_file: bool | None = None

    @property
    def alarm(self) -> bool:
        """Whether the monitor alarms (its alarm says: return the step to advisory)."""
        return self.monitor.status == "alarm"

    @property
    def since(self) -> str:
        """The day of the first enforced check in the window, ``YYYY-MM-DD``."""
        at = self.monitor.enforced_since
        return f"{at:%Y-%m-%d}" if at is not None else "an unknown day"


#: The two things to do with an enforced step (:func:`enforced_pattern`).
KEEP_ENFORCED, RETURN_TO_ADVISORY = "keep enforced", "return to advisory"
#: What each monitor status says, in a sentence's middle.
_MONITOR_WORDS = {
    "ok": "the monitor has no alarm",
    "warning": "the monitor has no alarm, only label-free warnings",
    "no_audits": "the monitor has no audited passes yet",
    "stale": "the monitor is stale (an audit decision is overdue, so it has read nothing new)",
    "alarm": "the monitor alarms",
}
#: What a certified suggestion is on an enforced step (``enforced.suggestion`` of report.json).
OPTIONAL, NOT_YET_TO_PASTE = "optional", "not_yet"


def audited_text(monitor: StepMonitor, *, delta: float) -> str:
    """The monitor's audited false passes in words, and what they show against alpha.

    The confidence sequence's upper end at or below alpha bounds the false-pass
    rate of the check in force (anytime-valid); otherwise no alarm certifies
    nothing, and the text says so. Empty when nothing is audited.
    """
    fp = monitor.false_pass
    if not fp.audited or fp.rate is None or fp.lower is None or fp.upper is None:
        return ""
    detail = f"{1 - delta:.0%} confidence sequence {fp.lower:.3f}–{fp.upper:.3f}, " + (
        f"within α = {fp.limit:g}"
        if fp.upper <= fp.limit
        else f"reaching above α = {fp.limit:g}: no alarm does not show the rate within it"
    )
    return fp.rate_text("audited passes not acceptable", ".3f", detail)


def enforced_pattern(
    decision: str, enforcement: Enforcement, *, delta: float = 0.1
) -> tuple[str, dict[str, Any]]:
    """What to do with a step already enforced, and the sentence that leads its reasons.

    Keep it enforced only when the evidence would drop ``advisory`` today
    (READY) and the monitor does not alarm and is not stale; otherwise put
    ``advisory: true`` back: an alarm says the check got worse since the switch,
    a stale monitor (an overdue audit decision) has read nothing new, NO says it
    cannot meet the limits, NOT YET that nothing certifies its thresholds.

    Parameters
    ----------
    decision : {"READY", "NOT_YET", "NO"}
        The labeled evidence's decision.
    enforcement : Enforcement
    delta : float, default=0.1
        The monitor's level (its confidence sequence is at ``1 - delta``).

    Returns
    -------
    (str, dict)
        The leading reason, and the pattern ``{"recommended", "why",
        "enforced"}`` (``recommended`` is :data:`KEEP_ENFORCED` or
        :data:`RETURN_TO_ADVISORY`).
    """
    m = enforcement.monitor
    since = f"Enforced since {enforcement.since} (advisory: false)"
    monitor = _MONITOR_WORDS.get(m.status, f"the monitor says {m.status}")
    back = (
        "put advisory: true back on this step, so that a person decides every submission "
        "again, and drop it again once the step is READY"
    )
    if enforcement.alarm:
        alarm = m.warnings[0] if m.warnings else "see Since the switch"
        lead = f"{since}; the monitor alarms ({alarm}): return it to advisory."
        why = f"The monitor alarms on the enforced check: {back}."
    elif decision == "READY" and m.status == "stale":
        lead = (
            f"{since}; the labeled evidence qualifies the step, but {monitor}: record the "
            "overdue audit decisions, and until then return it to advisory."
        )
        why = (
            "The monitor reads each stream up to its first pending audit, so it has seen nothing "
            "new since that draw and its silence vouches for nothing: record the pending "
            f"decisions (see Since the switch); meanwhile {back}."
        )
    elif decision == "READY":
        audited = audited_text(m, delta=delta)
        lead = (
            f"{since}; {monitor}{f': {audited}' if audited else ''}; the labeled evidence "
            "still qualifies the step: keep the check in force enforced as it stands."
        )
        why = (
            "Keep advisory: false and keep auditing passes as planned, so that the monitor "
            "catches a rise of the false-pass rate. The plan is for the thresholds in force: "
            "other thresholds pasted start a new enforcement period, which `calibrate monitor` "
            "tests and plans afresh."
        )
        if m.status == "no_audits":
            why += " Draw the first audit now (see Since the switch)."
    elif decision == "NO":
        lead = (
            f"{since}, but the evidence says the check cannot meet the limits (see below), "
            f"although {monitor}: return it to advisory."
        )
        why = f"The labeled evidence does not support the enforced check: {back}."
    else:
        lead = (
            f"{since}, but nothing certifies its thresholds yet and {monitor}, which certifies "
            "nothing: return it to advisory until the step is READY."
        )
        why = f"Nothing certifies the enforced thresholds yet: {back}."
    watching = not enforcement.alarm and m.status != "stale"
    rec = KEEP_ENFORCED if decision == "READY" and watching else RETURN_TO_ADVISORY
    return lead, {"recommended": rec, "why": why, "enforced": True}


@dataclass(frozen=True)
class EnforcedVerdict:
    """The verdict on an enforced step (:func:`judge_enforced`).

    Attributes
    ----------
    decision : {"READY", "NOT_YET", "NO"}
        The decision on the check in force: READY only when it stays enforced;
        NOT_YET when the labeled evidence is READY but the monitor alarms or
        is stale; else the evidence's own decision.
    reasons : list of str
        The reasons, led by what to do with the step.
    pattern : dict
        As :func:`enforced_pattern`.
    suggestion : {"optional", "not_yet"} or None
        What a certified suggestion is: an optional change of its own (kept
        enforced), a candidate not yet to paste (returned to advisory), or
        ``None`` when no suggestion is offered (none certified, or the monitor
        alarms: the labels it would come from predate the rise).
    suggestion_note : str
        The suggestion's certificate in words (empty without one).
    """

    decision: str
    reasons: list[str]
    pattern: dict[str, Any]
    suggestion: str | None
    suggestion_note: str

    def to_dict(self) -> dict[str, Any]:
        """The ``suggestion`` object of report.json's ``enforced``."""
        if self.suggestion is None:
            return {"kind": None, "note": ""}
        return {"kind": self.suggestion, "note": self.suggestion_note}


def return_paste(step: str, current_check: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What to paste to return an enforced step to advisory: ``enforced.paste`` of report.json.

    The step's check as it stands with ``advisory: true`` back where its thresholds are known
    (a process file names every question), else ``advisory: true`` on the step alone, as
    ``calibrate monitor`` gives it (:func:`~calibrate.analysis.monitor.restore_advisory_yaml`):
    its ``check:`` keys stay as the process file has them. Never nothing: a step to return
    always has its ``advisory: true`` to paste.

    Returns
    -------
    dict
        ``step``, ``advisory`` (``True``), ``check`` (the questions as they stand, or
        ``None`` where unknown), ``thresholds_known``, ``yaml`` (the monitor's entry when the
        thresholds are unknown, else ``None``: the report writes the whole check) and
        ``text``, what to do in words.
    """
    known = bool(current_check)
    if known:
        text = (
            f"replace the advisory and check: keys of step {step} with its check as it stands "
            "and advisory: true, so a person decides again"
        )
    else:
        text = (
            f"put advisory: true on step {step}, so a person decides again; its check: keys "
            "stay as the process file has them (today's thresholds are not known to calibrate: "
            "no process file ingested names every question)"
        )
    return {
        "step": step,
        "advisory": True,
        "check": [dict(q) for q in current_check] if known else None,
        "thresholds_known": known,
        "yaml": None if known else restore_advisory_yaml(step),
        "text": text,
    }


def breaks_limits(
    in_force: dict[str, Any] | None, *, alpha: float, beta: float, delta: float
) -> list[str]:
    """The rates of the thresholds in force measurably above their limits, in words.

    Measurably: :func:`calibrate.analysis.stats.measurably_above`, the rule by
    which the threshold search judges a candidate ``unattainable``
    (:mod:`calibrate.analysis.unattainable`).
    """
    out: list[str] = []
    for name, limit, words in (("false_pass", alpha, "false passes"),
                               ("false_fail", beta, "false fails")):  # fmt: skip
        r = (in_force or {}).get(name) or {}
        k, n = int(r.get("k") or 0), int(r.get("n") or 0)
        if measurably_above(k, n, limit, delta=delta):
            out.append(
                f"{words} {Rate(k, n).text()}, above {limit:.0%} at {1 - delta:.0%} confidence"
            )
    return out


def judge_enforced(
    evidence: str, reasons: Sequence[str], enforcement: Enforcement, *, n_labeled: int,
    in_force: dict[str, Any] | None, certified: bool, delta: float, alpha: float = 1.0,
    beta: float = 1.0,
) -> EnforcedVerdict:  # fmt: skip
    """Whether the check in force stays enforced, with the reasons in words.

    Parameters
    ----------
    evidence : {"READY", "NOT_YET", "NO"}
        The labeled evidence's decision (reviews of every verdict).
    reasons : sequence of str
        Its reasons, as :func:`calibrate.analysis.readiness_decision.decide_readiness`
        gives them (for READY: the suggestion's certificate first).
    enforcement : Enforcement
    n_labeled : int
        The labeled checks the evidence reads.
    in_force : dict or None
        The thresholds in force replayed on those labels (``false_pass``,
        ``coverage``, ``n``): observed, not a certificate.
    certified : bool
        Whether the search certified a suggestion on those labels.
    delta : float
        The monitor's level.
    alpha, beta : float, default=1.0
        The limits: thresholds in force whose replayed rates are measurably above
        them (:func:`breaks_limits`) are returned to advisory, whatever the monitor
        says (an outside review found such a check kept enforced on the strength
        of a certified *suggestion*).

    Returns
    -------
    EnforcedVerdict
    """
    lead, pattern = enforced_pattern(evidence, enforcement, delta=delta)
    broken = [] if enforcement.alarm else breaks_limits(in_force, alpha=alpha, beta=beta,
                                                        delta=delta)  # fmt: skip
    if broken:
        since = f"Enforced since {enforcement.since} (advisory: false)"
        lead = (
            f"{since}, but on the labels reviewed before the switch the thresholds in force show "
            f"{'; '.join(broken)}: return it to advisory."
        )
        pattern = {
            "recommended": RETURN_TO_ADVISORY,
            "why": (
                "The check in force breaks the limits on the labels: put advisory: true back on "
                "this step, so that a person decides every submission again, and drop it again "
                "once thresholds that meet the limits are pasted and the step is READY."
            ),
            "enforced": True,
        }
    keep = pattern["recommended"] == KEEP_ENFORCED
    rest = list(reasons)
    note = ""
    if evidence == "READY":
        # decide_readiness's READY reasons: the suggestion's certificate, then the health line.
        # Labels before a rise the audits show no longer speak for the step.
        labels = [] if enforcement.alarm else [_labels_reason(n_labeled, in_force)]
        note, rest = rest[0], [*labels, *rest[2:]]
    if enforcement.alarm:
        decision = "NO" if evidence == "NO" else "NOT_YET"
        suggestion = None
        if certified:
            rest.insert(
                0,
                f"The {n_labeled} labels reviewed before the switch certify thresholds, but they "
                "predate the rise the audits show: no thresholds are suggested from them. "
                "Re-certify on new reviews under advisory: true (the alarm stands until "
                f"{RECERTIFY_MIN_LABELS} of them are labeled) and drop advisory again once the "
                "step is READY.",
            )
    else:
        decision = "READY" if keep else ("NOT_YET" if evidence == "READY" else evidence)
        suggestion = (OPTIONAL if keep else NOT_YET_TO_PASTE) if certified else None
    return EnforcedVerdict(
        decision=decision, reasons=[lead, *rest], pattern=pattern, suggestion=suggestion,
        suggestion_note=note if suggestion else "",
    )  # fmt: skip


def _labels_reason(n_labeled: int, in_force: dict[str, Any] | None) -> str:
    """What the labels before the switch say of the step and of the thresholds in force."""
    text = (
        f"The {n_labeled} labels reviewed before the switch qualify the step: enough of them, "
        "no drift between the earlier and the recent half, one evaluator model, errors and "
        "truncations within limits, and thresholds certified on them (see Criteria)"
    )
    if in_force and in_force["false_pass"]["n"]:
        fp = in_force["false_pass"]
        text += (
            f". Under the thresholds in force they show false passes of "
            f"{Rate(fp['k'], fp['n']).text()} and decide "
            f"{share_text(in_force['coverage'], int(in_force['n']))} of submissions alone "
            "(observed, not a certificate)"
        )
    return text + "."
