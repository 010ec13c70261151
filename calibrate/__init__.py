"""calibrate: tell when an automatic check has earned enough trust to act without a person.

The public API, short and explicit::

    import calibrate
    con = calibrate.connect("calibrate.duckdb", read_only=True)
    subs = calibrate.submissions(con, calibrate.Filters(process="vendor-onboarding"))
    table = calibrate.agreement(subs, by=["step", "model"])
    report = calibrate.assess_store(con, alpha=0.05)
    calibrate.write_report(report, "reports/")

After the switch (``advisory: false``)::

    con = calibrate.connect("calibrate.duckdb")            # a draw is stored: open for writing
    drawn = calibrate.draw_audit(con, process="invoice-matching", step="match_invoice", rate=0.1)
    calibrate.write_audit_csv(drawn, "audit.csv")          # for the reviewer
    watch = calibrate.monitor_store(con)                   # the anytime-valid alarm, per step

Every module loads on first use (pandas, scikit-learn, matplotlib and Jinja2
take seconds), so ``import calibrate`` and ``calibrate ingest`` stay quick.
"""

from __future__ import annotations

import importlib
from typing import Any

from calibrate.errors import CalibrateError, StoreBusyError, StoreError, UsageError

#: Public names and the modules they live in (``module:name`` where the module names it
#: otherwise), imported when first touched.
_LAZY = {
    "Filters": "calibrate.dataset",
    "answers": "calibrate.dataset",
    "limits": "calibrate.dataset",
    "process_questions": "calibrate.dataset",
    "submissions": "calibrate.dataset",
    "Kind": "calibrate.profile",
    "Limits": "calibrate.profile",
    "Question": "calibrate.profile",
    "decide": "calibrate.profile",
    "worst": "calibrate.profile",
    "connect": "calibrate.store",
    "agreement": "calibrate.analysis.agreement",
    "approvers": "calibrate.analysis.approvers",
    "corrected_pass_rate": "calibrate.analysis.corrected",
    "calibrate_answers": "calibrate.analysis.calibration",
    "fit_recalibrator": "calibrate.analysis.calibration",
    "reliability_curve": "calibrate.analysis.reliability",
    "suggest_thresholds": "calibrate.analysis.thresholds",
    "suggest_from_store": "calibrate.analysis.thresholds",
    "assess_store": "calibrate.analysis.readiness",
    "ReadinessOptions": "calibrate.analysis.readiness",
    "write_report": "calibrate.report.render",
    "draw_audit": "calibrate.audit:draw",
    "write_audit_csv": "calibrate.audit:write_csv",
    "audit_draws": "calibrate.audit:draws",
    "monitor_store": "calibrate.analysis.monitor",
}

#: The errors the public functions name in their docstrings: ``UsageError`` (a ``ValueError``:
#: a bad argument, a name the store lacks), ``StoreError`` (the store cannot be read or
#: written) and its ``StoreBusyError`` (another process holds it), all ``CalibrateError``.
__all__ = ["CalibrateError", "StoreBusyError", "StoreError", "UsageError", *_LAZY]

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, _, attr = _LAZY[name].partition(":")
        value = getattr(importlib.import_module(module), attr or name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'calibrate' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
