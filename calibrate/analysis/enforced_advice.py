"""The report's advice for each enforced step, for the faces of ``calibrate thresholds``.

A step already enforced (``advisory: false``) is not asked whether to drop
``advisory`` but whether the check in force stays enforced
(:mod:`calibrate.analysis.enforced_step`). ``calibrate thresholds`` prints a
block to paste per step; on an enforced step that block must be the report's
(a black-box run pasted ``advisory: true`` on a step the report kept
enforced, and under a monitor alarm looser thresholds than those in force).
So the verdict is not judged again here: :func:`enforced_advice` runs the
report's assessment (:func:`calibrate.analysis.readiness.assess_store`) on
each enforced step and keeps what it decided.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from calibrate.analysis.enforced_step import KEEP_ENFORCED, RETURN_TO_ADVISORY
from calibrate.defaults import NEEDED_SHARE, ReadinessOptions

__all__ = ["KEEP_ENFORCED", "RETURN_TO_ADVISORY", "attach_enforced_advice", "enforced_advice"]

#: Bootstrap resamples of the calibration the assessment computes: its figures are not read
#: here, and no decision rests on them.
_N_BOOT = 1


def enforced_advice(
    con: Any,
    filters: Any = None,
    *,
    alpha: float,
    delta: float,
    beta: float,
    min_coverage: float = NEEDED_SHARE,
) -> dict[tuple[str, str], dict[str, Any]]:
    """What ``calibrate report`` at these limits advises for each enforced step of ``filters``.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
    filters : calibrate.dataset.Filters, optional
    alpha, delta, beta : float
        The limits, as the report's ``--alpha``, ``--delta``, ``--beta``.
    min_coverage : float, default=:data:`calibrate.defaults.NEEDED_SHARE`
        The report's ``--min-coverage``.

    Returns
    -------
    dict
        ``{(process, step): advice}`` for the steps the report reads as enforced (none for
        a step whose process file put ``advisory: true`` back). ``advice`` holds ``since``
        (``YYYY-MM-DD``), ``monitor_status``, ``alarm``, ``recommended``
        (:data:`KEEP_ENFORCED` or :data:`RETURN_TO_ADVISORY`), ``why``, ``paste`` (report.json's
        ``enforced.paste``: what a return pastes, ``None`` when kept enforced) and
        ``suggestion`` (``"optional"``, ``"not_yet"`` or ``None``: what the report makes of a
        certified suggestion).
    """
    from calibrate.analysis.monitor import monitor_store
    from calibrate.analysis.readiness import assess_store
    from calibrate.dataset import Filters

    filters = filters or Filters()
    monitored = monitor_store(
        con, process=filters.process, step=filters.step, alpha=alpha, beta=beta, delta=delta,
        model=filters.model, until=filters.until,
    ).steps  # fmt: skip
    options = ReadinessOptions(alpha=alpha, delta=delta, beta=beta, min_coverage=min_coverage)
    out: dict[tuple[str, str], dict[str, Any]] = {}
    # Only the steps with enforced checks: the assessment of the others is not needed.
    for process, step in sorted({(m.process, m.step) for m in monitored}):
        report = assess_store(
            con, replace(filters, process=process, step=step), options=options, n_boot=_N_BOOT
        )
        for r in report.steps:
            enforced = r.enforced_dict()
            if enforced is None:
                continue
            out[(r.process, r.step)] = {
                "since": r.enforcement.since,
                "monitor_status": enforced["monitor_status"],
                "alarm": r.enforcement.alarm,
                "recommended": enforced["recommended"],
                "why": str(r.pattern.get("why", "")),
                "paste": enforced["paste"],
                "suggestion": (enforced["suggestion"] or {}).get("kind"),
            }
    return out


def attach_enforced_advice(
    con: Any,
    report: Any,
    filters: Any = None,
    *,
    min_coverage: float = NEEDED_SHARE,
) -> Any:
    """Set each step's ``enforced`` of a threshold search to :func:`enforced_advice` (in place).

    ``report`` is a :class:`~calibrate.analysis.threshold_steps.ThresholdsReport` of the same
    store and ``filters``; the report's limits are read from it. What ``calibrate thresholds``
    and the notebooks' check blocks print for an enforced step is then the report's advice.
    Returns ``report``.
    """
    advice = enforced_advice(con, filters, alpha=report.alpha, delta=report.delta,
                             beta=report.beta, min_coverage=min_coverage)  # fmt: skip
    for s in report.steps:
        s.enforced = advice.get((s.process, s.step))
    return report
