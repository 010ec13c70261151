"""The decision for one checked step as an object: :class:`StepReadiness` and its JSON face.

:func:`calibrate.analysis.step_readiness.assess_step` builds it; the report and
``calibrate report --format json`` read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis import agreement as agreement_mod
from calibrate.analysis.audit import SequentialAuditPlan
from calibrate.analysis.audit_fixed import AuditPlan
from calibrate.analysis.drift import Drift
from calibrate.analysis.enforced_step import (
    RETURN_TO_ADVISORY,
    EnforcedVerdict,
    Enforcement,
    return_paste,
)
from calibrate.analysis.needed import NeededLabels
from calibrate.analysis.plain import plain_tree as _plain_tree
from calibrate.analysis.plain import records as _records
from calibrate.analysis.rate import Rate
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.readiness_decision import DECISIONS, Criterion
from calibrate.analysis.step_evidence import ModelChange, Volume
from calibrate.analysis.threshold_view import ThresholdView


@dataclass
class StepReadiness:
    """The decision for one checked step and its current evaluator model, with the evidence.

    The JSON face is :meth:`to_dict`; the DataFrames and result objects
    (agreement tables, calibration, the threshold search) are kept for the
    report's tables and figures.
    """

    process: str
    step: str
    model: str | None
    decision: str
    reasons: list[str]
    criteria: list[Criterion]
    needed_labels: int | None
    needed_days: float | None
    suggested_check: list[dict[str, Any]]
    current_check: list[dict[str, Any]]
    thresholds: ThresholdView
    audit: AuditPlan | None
    hours_saved_per_month: float
    prescreen_hours_per_month: float
    pattern: dict[str, Any]
    drift: Drift
    model_change: ModelChange
    volume: Volume
    #: The labeled checks of the current model and wording without error verdicts (the
    #: ``labeled_submissions`` criterion's count); :attr:`n_labeled_searched` counts them too.
    n_labeled: int
    left_out: dict[str, int]
    observed: dict[str, Any]
    error: Rate
    truncation: Rate
    automation_bias: dict[str, Any]
    has_approve_step: bool
    decision_on_current_model: str | None = None
    # evidence kept for the faces
    agreement: pd.DataFrame | None = None
    by_week: pd.DataFrame | None = None
    by_model: pd.DataFrame | None = None
    approvers: pd.DataFrame | None = None
    drivers: pd.DataFrame | None = None
    calibration: list[Any] = field(default_factory=list)
    #: The audit the monitor's sequential test needs (:func:`calibrate.analysis.audit.plan_audit`).
    sequential_audit: SequentialAuditPlan | None = None
    #: The search's labels-needed estimate, timed at the step's labeling rate, when it is the
    #: number asked for (``needed_labels`` is then its ``more``).
    needed: NeededLabels | None = None
    #: Set when the step is already enforced: the report speaks of keeping it so or not.
    enforcement: Enforcement | None = None
    #: The labeled evidence's own decision; for an enforced step ``decision`` is the check in
    #: force's (:func:`calibrate.analysis.enforced_step.judge_enforced`), else they agree.
    evidence_decision: str | None = None
    #: An enforced step's verdict: what its certified suggestion is, if any.
    enforced_verdict: EnforcedVerdict | None = None

    @property
    def n_labeled_searched(self) -> int:
        """The labeled checks the threshold search read (error verdicts counted unsure).

        ``n_labeled`` is the ``labeled_submissions`` criterion's count, without error
        verdicts; report.json's ``n_labeled`` is this one, as in ``calibrate thresholds``.
        """
        return int(self.thresholds.n_labeled or self.n_labeled)

    @property
    def evidence(self) -> str:
        """The labeled evidence's decision (``decision`` unless the step is enforced)."""
        return self.evidence_decision or self.decision

    def enforced_dict(self) -> dict[str, Any] | None:
        """``enforced`` of report.json: since when, what the monitor says, what to do."""
        e = self.enforcement
        if e is None:
            return None
        return {
            "since": e.monitor.enforced_since.isoformat() if e.monitor.enforced_since else None,
            "in_process_file": e.in_process_file,
            "monitor_status": e.monitor.status,
            "recommended": self.pattern.get("recommended"),
            "suggestion": self.enforced_verdict.to_dict() if self.enforced_verdict else None,
            # What to paste follows the verdict: a step to return always has advisory: true.
            "paste": return_paste(self.step, self.current_check)
            if self.pattern.get("recommended") == RETURN_TO_ADVISORY
            else None,
        }

    def needed_dict(self) -> dict[str, Any] | None:
        """``needed_labels`` of report.json: ``{"total", "more", "probability", "weeks", ...}``.

        The search's estimate when it is the number asked for; otherwise the
        number asked for with ``probability`` ``null`` (the minimum of labeled
        checks, or the bound solved at the observed rates); ``null`` when more
        labels cannot help (NO).
        """
        if self.needed_labels is None:
            return None
        if self.needed is not None:
            return self.needed.to_dict()
        weeks = self.needed_days / 7 if self.needed_days is not None else None
        return {
            "total": self.n_labeled_searched + self.needed_labels,
            "more": self.needed_labels,
            "probability": None,
            "weeks": None if weeks is None else round(weeks, 1),
        }

    @property
    def audit_rate(self) -> float | None:
        """The share of passes reviewed after the switch, the plan the hours count.

        The sequential plan's rate; 1 when none suffices, or when a READY step
        keeps its approval (pre-screening: the approver signs every pass).
        """
        keeps_approval = self.pattern.get("recommended") in ("pre-screen", "keep advisory")
        if self.enforcement is None and self.decision == "READY" and keeps_approval:
            return 1.0
        if self.sequential_audit is not None:
            rate = self.sequential_audit.rate
            return rate if rate is not None else 1.0
        return self.audit.rate if self.audit is not None else None

    @property
    def sort_key(self) -> tuple[int, float]:
        """READY first, then NOT_YET, then NO; within each the most hours saved first."""
        hours = self.hours_saved_per_month if np.isfinite(self.hours_saved_per_month) else -1.0
        return DECISIONS.index(self.decision), -hours

    @property
    def headline(self) -> str:
        """What the report's badge says: the decision, or for an enforced step what to do with it
        (``KEEP_ENFORCED`` or ``RETURN_TO_ADVISORY``; the decision stays beside it as evidence)."""
        if self.enforcement is None:
            return self.decision
        return str(self.pattern.get("recommended", RETURN_TO_ADVISORY)).upper().replace(" ", "_")

    def to_dict(self) -> dict[str, Any]:
        """The step object of report.json (``report.schema.json``)."""
        t = self.thresholds
        return {
            "process": self.process,
            "step": self.step,
            "model": self.model,
            "headline": self.headline,
            "decision": self.decision,
            "evidence_decision": self.evidence,
            "reasons": list(self.reasons),
            "criteria": [c.to_dict() for c in self.criteria],
            "needed_labels": self.needed_dict(),
            "needed_days": _plain(self.needed_days),
            "suggested_check": self.suggested_check,
            "current_check": self.current_check,
            # While the monitor alarms, what the old labels certify is withheld: no certificate.
            "certified": (
                {k: _plain(v) for k, v in t.certified.items()}
                if t.certified is not None
                and not (self.enforcement is not None and self.enforcement.alarm)
                else None
            ),
            "best_bounds": {k: _plain(v) for k, v in t.best_bounds.items()},
            # The shares under the suggestion: none without one (today's are `current`).
            "expected": {k: _plain(v) for k, v in t.expected.items()}
            if self.suggested_check
            else {},
            "current": {k: _plain(v) for k, v in t.current.items()},
            "status": t.status,
            "audit_rate": _plain(self.audit_rate),
            "audit": self.audit.to_dict() if self.audit else None,
            "sequential_audit": self.sequential_audit.to_dict() if self.sequential_audit else None,
            "hours_saved_per_month": _plain(self.hours_saved_per_month),
            "prescreen_hours_per_month": _plain(self.prescreen_hours_per_month),
            "pattern": self.pattern,
            "enforced": self.enforced_dict(),
            # The labeled checks the search read, error verdicts counted unsure: the same count
            # as `calibrate thresholds --format json` and the report's text; the criterion's
            # count, without error verdicts, beside it.
            "n_labeled": self.n_labeled_searched,
            "n_labeled_without_errors": self.n_labeled,
            "left_out": dict(self.left_out),
            "observed": _plain_tree(self.observed),
            "error_rate": self.error.to_dict(),
            "truncation_rate": self.truncation.to_dict(),
            "drift": self.drift.to_dict(),
            "model_change": self.model_change.to_dict(),
            "decision_on_current_model": self.decision_on_current_model,
            "volume": self.volume.to_dict(),
            "automation_bias": _plain_tree(self.automation_bias),
            "agreement": agreement_mod.agreement_records(self.agreement)
            if self.agreement is not None
            else [],
            "drivers": _records(self.drivers),
        }
