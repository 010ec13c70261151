"""What to do with an advisory step's approval: replace it, pre-screen it, or keep approving.

The pattern of check-1 §4 for a step still under ``advisory: true``, from its
decision, its certified false-fail bound and whether the audit pays; an
enforced step's is :func:`calibrate.analysis.enforced_step.enforced_pattern`.
"""

from __future__ import annotations

from typing import Any

from calibrate.analysis.plain import pct as _pct
from calibrate.analysis.readiness_decision import capital
from calibrate.defaults import ReadinessOptions


def approval_pattern(
    *, decision: str, has_approve_step: bool, ff_upper: float | None, opts: ReadinessOptions,
    auto_fail: float | None, prescreen_hours: float, audit_pays: bool = True,
) -> dict[str, Any]:  # fmt: skip
    """Replace the approval, pre-screen it (check-1 §4), or keep approving as today.

    A READY check replaces the approval only when the audit the monitor needs
    pays (``audit_pays``); otherwise it pre-screens (when its fails are
    trustworthy), else the approval stays, so that the pattern never says to
    delete the approve step while the audit says to keep it.

    Pre-screening drops ``advisory`` but keeps the approve step: only the
    check's fails act alone (sent back before a person sees them), so it
    needs a certified false-fail bound and trust in the evaluator (no drift,
    one model, errors and truncations within limits), but no false-pass bound:
    the approver still signs every pass.

    Parameters
    ----------
    decision : {"READY", "NOT_YET", "NO"}
        The step's decision.
    has_approve_step : bool
        Whether people's decisions come from an ``approve`` step.
    ff_upper : float or None
        The certified false-fail bound, ``None`` when there is none or the
        evaluator is not trusted
        (:func:`~calibrate.analysis.readiness_criteria.distrusts_evaluator`).
    opts : ReadinessOptions
        The limits (``beta``).
    auto_fail : float or None
        The share the check fails alone.
    prescreen_hours : float
        The hours a month pre-screening saves.
    audit_pays : bool, default=True
        Whether the audit the monitor needs pays at the step's volume.

    Returns
    -------
    dict
        ``{recommended, why, approve_step}``: ``"replace"``, ``"pre-screen"``
        or ``"keep advisory"``, the advice in words, and ``has_approve_step``.
    """
    # Fails act alone only under a real false-fail bound (beta = 1 leaves them uncontrolled).
    ff_ok = (
        opts.beta < 1 and ff_upper is not None and ff_upper <= opts.beta and (auto_fail or 0) > 0
    )
    if decision == "READY" and not audit_pays:
        audit = (
            "the check qualifies, but at this volume the audit the monitor needs does not pay "
            "(see Audit)"
        )
        if ff_ok:
            rec = "pre-screen"
            why = (
                f"{capital(audit)}: keep the approve step and drop advisory so that fails go back "
                "to the agent before an approver sees them (saves about "
                f"{prescreen_hours:.1f} hours a month); the approver still signs every pass, so "
                "no audit is needed. Replace the approval only if a longer audit window is "
                "acceptable."
            )
        else:
            rec = "keep advisory"
            why = (
                f"{capital(audit)} and no fail of the check would save a review: keep advisory: "
                "true, or replace the approval only if a longer audit window is acceptable."
            )
    elif decision == "READY":
        rec = "replace"
        why = (
            "Drop advisory and, where policy allows, delete the approve step. Where policy "
            "requires a signature, pre-screen instead: keep the approve step; fails go back to "
            "the agent before a person sees them and the approver spends time where the check "
            "was unsure."
        )
    elif ff_ok:
        rec = "pre-screen"
        why = (
            "The check cannot replace the approval yet, but its fails are trustworthy (certified "
            f"false-fail bound {_pct(ff_upper)} <= {opts.beta:.0%}): keep the approve step and "
            "drop advisory so that fails go back to the agent before an approver sees them "
            f"(saves about {prescreen_hours:.1f} hours a month); the approver still signs every pass."
        )
    else:
        rec = "keep advisory"
        why = "Keep advisory: true and keep approving every submission until the check qualifies."
    if not has_approve_step and rec != "keep advisory":
        why += " (Decisions for this step come from a decision table, not an approve step.)"
    return {"recommended": rec, "why": why, "approve_step": has_approve_step}
