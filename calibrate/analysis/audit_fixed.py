"""The fixed-sample audit: one exact binomial test on a random sample of passes.

This was the report's audit plan before the monitor: a uniform random sample
of ``m`` passes, an alarm when at least ``c`` are not acceptable, sized for a
stated power at ``2 x alpha``. It keeps its level for **one** look; looked at
every week it does not (docs/method.md, after the switch), which is why the
report now plans with :mod:`calibrate.analysis.audit` and watches with
``calibrate monitor``. It stays for notebook 03's what-if and for comparison.

References
----------
.. [1] Chow, S.-C., Shao, J. and Wang, H. (2008). Sample Size Calculations
   in Clinical Research, 2nd ed., §4.1 (one-sample binomial, exact).
   Chapman & Hall.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sp_stats

from calibrate.analysis.rate import plain as _plain

AUDIT_METHOD = (
    "exact one-sided binomial test of H0: false-pass rate <= alpha on a uniform random sample "
    "of the check's passes, reviewed by a person; sized for the stated power at 2 x alpha"
)


@dataclass(frozen=True)
class AuditPlan:
    """A random audit of the check's passes after ``advisory`` is dropped.

    Attributes
    ----------
    rate : float or None
        Share of passes a person should keep reviewing (``None`` when the step
        passes nothing, so there is nothing to audit).
    sample_size : int
        Audited passes the test needs (:func:`audit_sample_size`).
    per_week : float
        Audited passes per week at ``rate`` and the step's volume.
    weeks : int
        The detection window the plan is sized for.
    weeks_at_full_review : float or None
        Weeks to collect ``sample_size`` when every pass is reviewed; above
        ``weeks`` the goal cannot be met at this volume.
    alpha, target, level, power : float
        The null rate, the rise detected, the false-alarm level and the power.
    critical : int
        Alarm when at least this many of the ``sample_size`` audited passes
        turn out not acceptable.
    """

    rate: float | None
    sample_size: int
    per_week: float
    weeks: int
    weeks_at_full_review: float | None
    alpha: float
    target: float
    level: float
    power: float
    critical: int
    method: str = AUDIT_METHOD

    @property
    def attainable(self) -> bool:
        return self.weeks_at_full_review is not None and self.weeks_at_full_review <= self.weeks

    def to_dict(self) -> dict[str, Any]:
        return {k: _plain(v) for k, v in asdict(self).items()} | {"attainable": self.attainable}


def audit_sample_size(
    alpha: float, *, factor: float = 2.0, level: float = 0.05, power: float = 0.8,
    max_n: int = 200_000,
) -> tuple[int, int]:  # fmt: skip
    """Audited passes needed to detect a false-pass rate of ``factor x alpha``.

    After ``advisory`` is dropped a person reviews a uniform random sample of
    the check's passes. Of ``m`` audited passes, ``X`` turn out not acceptable,
    ``X ~ Binomial(m, p)`` with ``p`` the false-pass rate. The audit raises an
    alarm when ``X >= c``, with ``c`` the smallest count such that
    ``P(Binomial(m, alpha) >= c) <= level`` (an exact one-sided test of
    ``H0: p <= alpha``, so a check that still meets its promise raises a false
    alarm at most ``level`` of the time). Its power against ``p1 = factor x
    alpha`` is ``P(Binomial(m, p1) >= c)``. The sample size returned is the
    smallest ``m`` whose power reaches ``power``.

    Because ``X`` is discrete the power is not monotone in ``m`` (a saw-tooth);
    the smallest ``m`` reaching the target is returned, as exact binomial
    sample-size tables do. For orientation, the normal approximation is::

        m ≈ ((z_{1-level} sqrt(alpha (1 - alpha)) + z_{power} sqrt(p1 (1 - p1))) / (p1 - alpha))^2

    which gives 149 for ``alpha = 0.05``, ``factor = 2``, ``level = 0.05``,
    ``power = 0.8``; the exact answer is close.

    Parameters
    ----------
    alpha : float
        The false-pass rate promised (the null).
    factor : float, default=2.0
        The rise to detect, as a multiple of ``alpha``.
    level : float, default=0.05
        False-alarm probability of the test.
    power : float, default=0.8
        Probability of an alarm when the rate is ``factor x alpha``.
    max_n : int, default=200000
        Search limit.

    Returns
    -------
    (m, c) : tuple of int
        The sample size and the alarm threshold (alarm when ``X >= c``).

    References
    ----------
    .. [1] Chow, S.-C., Shao, J. and Wang, H. (2008). Sample Size Calculations
       in Clinical Research, 2nd ed., §4.1 (one-sample binomial, exact).
       Chapman & Hall.

    Examples
    --------
    >>> m, c = audit_sample_size(0.05)
    >>> m, c
    (169, 14)
    """
    p1 = factor * alpha
    if not 0 < alpha < p1 < 1:
        raise ValueError(f"need 0 < alpha < factor x alpha < 1, got alpha={alpha}, factor={factor}")
    if not 0 < level < 1 or not 0 < power < 1:
        raise ValueError(f"level and power must be in (0, 1), got {level} and {power}")
    return _audit_sample_size(float(alpha), float(p1), float(level), float(power), int(max_n))


@functools.lru_cache(maxsize=64)
def _audit_sample_size(
    alpha: float, p1: float, level: float, power: float, max_n: int
) -> tuple[int, int]:
    z = sp_stats.norm.ppf
    approx = ((z(1 - level) * math.sqrt(alpha * (1 - alpha)) + z(power) * math.sqrt(p1 * (1 - p1)))
              / (p1 - alpha)) ** 2  # fmt: skip
    # The exact answer lies near the normal approximation: search a window around it,
    # from 1 so that the smallest qualifying size is found, widening if needed.
    hi = min(max_n, int(4 * approx) + 100)
    while True:
        m = np.arange(1, hi + 1)
        # k: the largest count still compatible with H0 at this level; alarm at k + 1.
        k = sp_stats.binom.isf(level, m, alpha)
        k = np.where(sp_stats.binom.sf(k, m, alpha) > level, k + 1, k)
        pw = sp_stats.binom.sf(k, m, p1)
        hit = np.flatnonzero(pw >= power)
        if hit.size:
            i = int(hit[0])
            return int(m[i]), int(k[i]) + 1
        if hi >= max_n:
            raise ValueError(f"no audit of up to {max_n} passes reaches power {power}")
        hi = min(max_n, hi * 4)


def audit_plan(
    *, alpha: float, passes_per_week: float, weeks: int = 4, factor: float = 2.0,
    level: float = 0.05, power: float = 0.8,
) -> AuditPlan:  # fmt: skip
    """The share of passes to audit so a rise to ``factor x alpha`` shows within ``weeks``.

    ``rate = m / (weeks x passes_per_week)``, capped at 1, with ``m`` from
    :func:`audit_sample_size`. When even reviewing every pass collects fewer
    than ``m`` in ``weeks``, the rate is 1 and ``weeks_at_full_review`` says
    how long detection takes.
    """
    m, c = audit_sample_size(alpha, factor=factor, level=level, power=power)
    if not np.isfinite(passes_per_week) or passes_per_week <= 0:
        return AuditPlan(None, m, 0.0, weeks, None, alpha, factor * alpha, level, power, c)
    rate = min(1.0, m / (weeks * passes_per_week))
    return AuditPlan(
        rate=rate,
        sample_size=m,
        per_week=rate * passes_per_week,
        weeks=weeks,
        weeks_at_full_review=m / passes_per_week,
        alpha=alpha,
        target=factor * alpha,
        level=level,
        power=power,
        critical=c,
    )


def planned_audit(step: Any, options: Any = None) -> tuple[Any, str]:
    """The audit of a step's passes after the switch, and which thresholds it assumes.

    The report plans the audit only for a certified suggestion (``step.audit``).
    For a step without one this answers the what-if "and if ``advisory`` were
    dropped with today's thresholds?", with the same sizing
    (:func:`audit_plan`) at the step's recent
    volume and today's pass share.

    Parameters
    ----------
    step : StepReadiness
        From :func:`assess_steps` or :func:`calibrate.analysis.readiness.assess_store`.
    options : ReadinessOptions, optional
        The audit settings (``alpha``, ``audit_weeks``, ``audit_factor``,
        ``audit_level``, ``audit_power``).

    Returns
    -------
    (plan, basis) : (AuditPlan or None, str)
        ``basis`` says which thresholds the pass share comes from; ``plan`` is
        ``None`` when the step has no recent volume or no pass share.
    """
    from calibrate.defaults import ReadinessOptions

    if step.audit is not None:
        return step.audit, "suggested thresholds (certified)"
    opts = options or ReadinessOptions()
    share = step.thresholds.current.get("auto_pass")
    volume = step.volume.checks_per_week
    if share is None or not np.isfinite(volume) or volume <= 0:
        return None, "no recent volume or pass share to plan on"
    plan = audit_plan(
        alpha=opts.alpha, passes_per_week=volume * float(share), weeks=opts.audit_weeks,
        factor=opts.audit_factor, level=opts.audit_level, power=opts.audit_power,
    )  # fmt: skip
    return plan, "today's thresholds (what-if: nothing certified yet)"


def audit_detection(sample_size: int, critical: int, rates: Any) -> pd.DataFrame:
    """Chance that an audit of ``sample_size`` passes raises its alarm, per true false-pass rate.

    The audit of :func:`audit_sample_size`
    raises an alarm when at least ``critical`` of the audited passes turn out
    not acceptable; with a true false-pass rate ``p`` that count is
    ``Binomial(sample_size, p)``, so the chance is its upper tail.

    Returns
    -------
    pandas.DataFrame
        Columns ``false_pass_rate`` and ``p_alarm``.

    References
    ----------
    .. [1] Chow, S.-C., Shao, J. and Wang, H. (2008). Sample Size Calculations
       in Clinical Research, 2nd ed., §4.1. Chapman & Hall.

    Examples
    --------
    >>> audit_detection(169, 14, [0.05, 0.1]).round(3)["p_alarm"].tolist()
    [0.045, 0.806]
    """
    p = np.asarray(rates, dtype=float)
    return pd.DataFrame(
        {"false_pass_rate": p, "p_alarm": sp_stats.binom.sf(critical - 1, sample_size, p)}
    )


def audit_catch(submissions: pd.DataFrame, rate: float | None, *, weeks: int = 4) -> dict[str, Any]:
    """What an audit at ``rate`` would have shown a person over the last ``weeks`` of history.

    Replays the audit on the recorded verdicts: of the labeled passes in the
    window, the false ones (the person found them not acceptable) are the
    ones the audit exists to catch. Each pass is audited with probability
    ``rate``, independently.

    Parameters
    ----------
    submissions : pandas.DataFrame
        One step's checks on one evaluator model, as :func:`calibrate.submissions`.
    rate : float or None
        The share of passes audited (``AuditPlan.rate``).
    weeks : int, default=4

    Returns
    -------
    dict
        ``since``/``until`` (the window), ``passes`` and ``false_passes``
        (labeled), ``audited`` (expected audited passes), ``caught``
        (expected false passes shown to a person) and ``p_any`` (chance that
        at least one is shown).
    """
    at = pd.to_datetime(submissions["at"], utc=True)
    if at.notna().sum() == 0:
        return {"since": None, "until": None, "passes": 0, "false_passes": 0,
                "audited": 0.0, "caught": 0.0, "p_any": float("nan")}  # fmt: skip
    until = at.max()
    since = until - pd.Timedelta(weeks=weeks)
    inside = (at > since).to_numpy(dtype=bool)
    label = submissions["label"].astype("boolean")
    passed = (submissions["verdict"].astype("string") == "pass").fillna(False).to_numpy(dtype=bool)
    labeled = label.notna().to_numpy(dtype=bool)
    bad = ~label.fillna(True).to_numpy(dtype=bool)
    passes = int((inside & passed & labeled).sum())
    false_passes = int((inside & passed & bad).sum())
    r = float(rate) if rate is not None else 0.0
    return {
        "since": since,
        "until": until,
        "passes": passes,
        "false_passes": false_passes,
        "audited": r * passes,
        "caught": r * false_passes,
        "p_any": 1.0 - (1.0 - r) ** false_passes if false_passes else float("nan"),
    }
