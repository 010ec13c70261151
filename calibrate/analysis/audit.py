"""Audit planning that fits the sequential test the monitor runs.

The question an owner asks before the switch: what share of the passes must a
person review so that, if the false-pass rate doubles, ``calibrate monitor``
raises its alarm within ``weeks`` weeks with probability ``power``? The answer
is found by simulating the monitor's own e-process
(:mod:`calibrate.analysis.sequential`) on uniform Poisson audits at the
step's weekly pass volume, with common random numbers across rates so the
power rises with the rate, and taking (by bisection) the smallest rate on a
grid that reaches ``power``. The simulation has a fixed seed: the plan is reproducible.

When the rate needed is above :data:`PAYS_LIMIT` of the passes, an audit
costs most of what the switch saves; the plan says so and suggests keeping
the approval as pre-screening or accepting a longer detection window.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from calibrate.analysis.sequential import first_crossing, log_wealth, memory_for

#: Above this share of the passes an audit is said not to pay.
PAYS_LIMIT = 0.5
#: The longest window a plan that does not pay looks for.
MAX_WEEKS = 52
#: Rates tried, smallest first.
RATE_GRID = np.r_[0.001, 0.002, 0.005, np.arange(0.01, 0.1, 0.01), np.arange(0.1, 1.0001, 0.05)]
#: Streams simulated per plan, and the most eligible checks simulated per stream.
PLAN_STREAMS = 300
PLAN_MAX_ITEMS = 5_000


@dataclass(frozen=True)
class SequentialAuditPlan:
    """The audit rate the sequential monitor needs, and whether it pays.

    Attributes
    ----------
    rate : float or None
        Share of the passes to audit; ``None`` when even auditing every pass
        does not reach ``power`` within ``weeks``.
    per_week : float or None
        Expected audits a week at that rate.
    passes_per_week : float
    weeks : int
    factor : float
        The rise to catch: the false-pass rate becomes ``factor * alpha``.
    power : float
        The probability of an alarm within ``weeks`` at that rise (target).
    achieved : float
        The simulated probability at ``rate`` (or at a rate of 1).
    alpha, delta : float
    pays : bool
        False when the rate needed is above :data:`PAYS_LIMIT` or none suffices.
    longer_weeks : int or None
        When the audit does not pay: the shortest window (up to
        :data:`MAX_WEEKS`) within which auditing :data:`PAYS_LIMIT` of the
        passes catches the rise with probability ``power``.
    """

    rate: float | None
    per_week: float | None
    passes_per_week: float
    weeks: int
    factor: float
    power: float
    achieved: float
    alpha: float
    delta: float
    pays: bool
    longer_weeks: int | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    def _longer(self) -> str:
        if self.longer_weeks is None:
            return f"or accept a longer window (auditing {PAYS_LIMIT:.0%} of the passes does not reach it within {MAX_WEEKS} weeks)"
        return (
            f"or accept a longer window: auditing {PAYS_LIMIT:.0%} of the passes catches it within "
            f"{self.longer_weeks} weeks"
        )

    @property
    def enforced_rate(self) -> float:
        """The share of the passes to audit on a step already enforced: one advice, never two.

        The plan's rate when it pays; else :data:`PAYS_LIMIT` over the longer window
        (``longer_weeks``) when there is one; else every pass (no audit that pays catches
        the rise within :data:`MAX_WEEKS`, so a person reviews every pass, as before the
        switch).
        """
        if self.pays and self.rate is not None:
            return self.rate
        return PAYS_LIMIT if self.longer_weeks is not None else 1.0

    def text(self, *, enforced: bool = False) -> str:
        """One paragraph for a person.

        Parameters
        ----------
        enforced : bool, default=False
            The step is enforced already (``calibrate monitor``): the paragraph gives
            :attr:`enforced_rate` alone, where a plan that does not pay would otherwise offer
            to keep the approval as pre-screening or to accept a longer window.
        """
        rise = (
            f"a rise of the false-pass rate to {self.factor:g}×α = {self.factor * self.alpha:.3g}"
        )
        if enforced and not (self.pays and self.rate is not None):
            return _enforced_paragraph(self, rise)
        if self.rate is None:
            return (
                f"At {self.passes_per_week:.0f} passes a week, even reviewing every pass does not "
                f"catch {rise} within {self.weeks} weeks with probability {self.power:.0%} "
                f"(reached: {self.achieved:.0%}). An audit does not pay at this volume: keep the "
                f"approval as pre-screening, {self._longer()}."
            )
        body = (
            f"Audit {self.rate:.0%} of the passes (about {self.per_week:.1f} a week of "
            f"{self.passes_per_week:.0f}): `calibrate monitor` then catches {rise} within "
            f"{self.weeks} weeks with probability {self.achieved:.0%} (target {self.power:.0%}), "
            f"and raises a false alarm with probability at most δ = {self.delta:g} however often "
            f"it is run."
        )
        if not self.pays:
            body += (
                f" That is more than {PAYS_LIMIT:.0%} of the passes: the audit eats most of what "
                f"the switch saves. Keep the approval as pre-screening, {self._longer()}."
            )
        return body


def _unpaid(plan: SequentialAuditPlan, rise: str) -> str:
    """Why the plan's audit does not pay, in words."""
    if plan.rate is None:
        return (
            f"at {plan.passes_per_week:.0f} passes a week even reviewing every pass does not "
            f"catch {rise} within {plan.weeks} weeks with probability {plan.power:.0%} "
            f"(reached: {plan.achieved:.0%})"
        )
    return (
        f"at {plan.passes_per_week:.0f} passes a week catching {rise} within {plan.weeks} weeks "
        f"with probability {plan.power:.0%} takes auditing {plan.rate:.0%} of the passes, more "
        f"than {PAYS_LIMIT:.0%}: most of what the switch saves"
    )


def _enforced_paragraph(plan: SequentialAuditPlan, rise: str) -> str:
    if plan.longer_weeks is not None:
        return (
            f"Audit {PAYS_LIMIT:.0%} of the passes (about {PAYS_LIMIT * plan.passes_per_week:.1f} "
            f"a week) and accept a longer window: {_unpaid(plan, rise)}, while at "
            f"{PAYS_LIMIT:.0%} `calibrate monitor` catches it within {plan.longer_weeks} weeks, "
            f"and raises a false alarm with probability at most δ = {plan.delta:g} however "
            "often it is run."
        )
    return (
        f"Audit every pass: {_unpaid(plan, rise)}, and auditing {PAYS_LIMIT:.0%} of them does not "
        f"catch it within {MAX_WEEKS} weeks either, so no audit pays at this volume: a person "
        "reviews every pass, as before the switch, and the monitor reads each review."
    )


def detection_probability(
    rate: float | np.ndarray,
    *,
    passes_per_week: float,
    weeks: int,
    alpha: float,
    delta: float,
    true_rate: float,
    streams: int = PLAN_STREAMS,
    seed: int = 0,
) -> np.ndarray:
    """Simulated probability that the monitor alarms within ``weeks`` weeks.

    Uniform Poisson audits at ``rate`` of ``passes_per_week`` passes a week,
    each not acceptable with probability ``true_rate``; the monitor's
    e-process against ``alpha`` alarms at ``1/delta``. Above
    :data:`PLAN_MAX_ITEMS` passes per stream the volume is scaled down with
    the rate scaled up so the expected number of audits is kept (an
    approximation: the process sees fewer unaudited passes).

    Returns
    -------
    ndarray
        One probability per rate given.
    """
    rates = np.atleast_1d(np.asarray(rate, dtype=float))
    n = int(round(passes_per_week * weeks))
    scale = max(1.0, n / PLAN_MAX_ITEMS)
    n = max(1, int(round(n / scale)))
    rng = np.random.default_rng(seed)
    u_audit = rng.random((streams, n))
    bad = rng.random((streams, n)) < true_rate
    out = np.empty(rates.size)
    for i, r in enumerate(rates):
        r_eff = min(1.0, r * scale)
        z = np.where((u_audit < r_eff) & bad, 1.0 / r_eff, 0.0)
        log_k = log_wealth(z, alpha, memory=memory_for(alpha, r_eff))
        out[i] = float((first_crossing(log_k, delta) >= 0).mean())
    return out


def plan_audit(
    *,
    passes_per_week: float,
    alpha: float,
    delta: float,
    weeks: int = 8,
    factor: float = 2.0,
    power: float = 0.8,
    seed: int = 0,
) -> SequentialAuditPlan:
    """The smallest audit rate on :data:`RATE_GRID` that catches the rise in time.

    Parameters
    ----------
    passes_per_week : float
        The step's passes a week (at the thresholds in force).
    alpha, delta : float
        The monitor's levels.
    weeks : int, default=8
    factor : float, default=2.0
    power : float, default=0.8
    seed : int, default=0

    Returns
    -------
    SequentialAuditPlan

    Examples
    --------
    >>> plan = plan_audit(passes_per_week=400, alpha=0.05, delta=0.1)
    >>> plan.rate is not None and plan.achieved >= 0.8
    True
    """
    true_rate = min(1.0, factor * alpha)
    grid = RATE_GRID
    probs = np.full(grid.size, np.nan)

    def prob(i: int) -> float:
        if np.isnan(probs[i]):
            probs[i] = (
                detection_probability(
                    grid[i], passes_per_week=passes_per_week, weeks=weeks, alpha=alpha,
                    delta=delta, true_rate=true_rate, seed=seed,
                )[0]
                if passes_per_week > 0
                else 0.0
            )  # fmt: skip
        return float(probs[i])

    # Bisection on the grid: the power rises with the rate (common random numbers).
    lo, hi = -1, grid.size - 1
    if prob(hi) >= power:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if prob(mid) >= power:
                hi = mid
            else:
                lo = mid
    ok = np.flatnonzero(probs >= power)
    if ok.size == 0 or grid[int(ok[0])] > PAYS_LIMIT:
        longer = _longer_weeks(passes_per_week, alpha=alpha, delta=delta, true_rate=true_rate,
                               power=power, seed=seed)  # fmt: skip
    if ok.size == 0:
        return SequentialAuditPlan(
            rate=None, per_week=None, passes_per_week=float(passes_per_week), weeks=weeks,
            factor=factor, power=power, achieved=prob(grid.size - 1), alpha=alpha, delta=delta,
            pays=False, longer_weeks=longer,
        )  # fmt: skip
    i = int(ok[0])
    rate = float(round(grid[i], 4))
    return SequentialAuditPlan(
        rate=rate, per_week=rate * float(passes_per_week), passes_per_week=float(passes_per_week),
        weeks=weeks, factor=factor, power=power, achieved=float(probs[i]), alpha=alpha,
        delta=delta, pays=rate <= PAYS_LIMIT, longer_weeks=None if rate <= PAYS_LIMIT else longer,
    )  # fmt: skip


def _longer_weeks(
    passes_per_week: float, *, alpha: float, delta: float, true_rate: float, power: float,
    seed: int,
) -> int | None:  # fmt: skip
    """The shortest window (weeks, bisection up to MAX_WEEKS) at which auditing PAYS_LIMIT suffices."""
    if passes_per_week <= 0:
        return None

    def enough(w: int) -> bool:
        p = detection_probability(PAYS_LIMIT, passes_per_week=passes_per_week, weeks=w,
                                  alpha=alpha, delta=delta, true_rate=true_rate, seed=seed)  # fmt: skip
        return bool(p[0] >= power)

    if not enough(MAX_WEEKS):
        return None
    lo, hi = 0, MAX_WEEKS
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if enough(mid):
            hi = mid
        else:
            lo = mid
    return hi
