"""calibrate: tell when an automatic check has earned enough trust to act without a person.

The public API, short and explicit::

    import calibrate
    con = calibrate.connect("calibrate.duckdb", read_only=True)
    subs = calibrate.submissions(con, calibrate.Filters(process="vendor-onboarding"))
    table = calibrate.agreement(subs)
    report = calibrate.assess_store(con)

Heavier modules (scikit-learn, matplotlib, Jinja2) load on first use, so
``import calibrate`` stays quick for scripts that only ingest.
"""

from __future__ import annotations

import importlib
from typing import Any

from calibrate.dataset import Filters, answers, limits, process_questions, submissions
from calibrate.errors import CalibrateError
from calibrate.profile import Kind, Limits, Question, decide, worst
from calibrate.store import connect

#: Public names that live in heavier modules, imported when first touched.
_LAZY = {
    "agreement": "calibrate.analysis.agreement",
    "approvers": "calibrate.analysis.agreement",
    "corrected_pass_rate": "calibrate.analysis.agreement",
    "calibrate_answers": "calibrate.analysis.calibration",
    "fit_recalibrator": "calibrate.analysis.calibration",
    "reliability_curve": "calibrate.analysis.calibration",
    "suggest_thresholds": "calibrate.analysis.thresholds",
    "suggest_from_store": "calibrate.analysis.thresholds",
    "assess_store": "calibrate.analysis.readiness",
    "write_report": "calibrate.report.render",
}

__all__ = [
    "CalibrateError",
    "Filters",
    "Kind",
    "Limits",
    "Question",
    "answers",
    "connect",
    "decide",
    "limits",
    "process_questions",
    "submissions",
    "worst",
    *_LAZY,
]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'calibrate' has no attribute {name!r}")
