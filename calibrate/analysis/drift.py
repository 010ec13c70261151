"""Drift tests: has the check got worse?

Before the switch, on labels: :func:`drift_test` splits a step's labeled
checks at their median time and tests, one-sided, whether the false-pass or
the disagreement rate rose (the report's criterion). After the switch,
without labels: :func:`share_warning` asks whether a share (unsure verdicts,
an answer category) moved away from the certification window's, with a test
that stays valid under repeated looks (``calibrate monitor``'s label-free
warnings, no certificate).

References
----------
.. [1] Agresti, A. (2013). Categorical Data Analysis, 3rd ed., §3.1 (the
   two-proportion z test) and §3.5 (Fisher's exact test). Wiley.
.. [2] Waudby-Smith, I. and Ramdas, A. (2023). Estimating means of bounded
   random variables by betting. JRSS B 86(1), 1-27.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sp_stats

from calibrate.analysis.rate import Rate
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.sequential import first_crossing, log_wealth
from calibrate.analysis.stats import two_proportion_test

#: How the drift test is done, in words, for the faces to print next to it.
DRIFT_METHOD = (
    "one-sided two-proportion z test (pooled variance), recent half worse than earlier half; "
    "Fisher's exact test when an expected cell count is below 5; the halves split the labeled "
    "checks at their median time; Bonferroni over the two rates tested"
)


@dataclass(frozen=True)
class DriftTest:
    """Earlier vs recent half of the window, on one rate.

    Attributes
    ----------
    rate : str
        ``"false_pass"`` (P(not acceptable | pass)) or ``"disagreement"``
        (share of decided verdicts the person contradicted).
    earlier, recent : Rate
    p_value : float
        One-sided: evidence that the recent rate is higher. NaN when a half is empty.
    method : str
        ``"z"`` or ``"fisher"``.
    level : float
        The level this test is judged at (``drift_level`` / number of tests).
    """

    rate: str
    earlier: Rate
    recent: Rate
    p_value: float
    method: str
    level: float

    @property
    def testable(self) -> bool:
        return bool(np.isfinite(self.p_value))

    @property
    def drifted(self) -> bool:
        return self.testable and self.p_value <= self.level

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "earlier": self.earlier.to_dict(),
            "recent": self.recent.to_dict(),
            "p_value": _plain(self.p_value),
            "method": self.method,
            "level": self.level,
            "drifted": self.drifted,
        }


#: What each rate is a share of, in words (a half "holds no ..." of it).
_BASE_WORDS = {"false_pass": "pass", "disagreement": "pass or fail"}


@dataclass(frozen=True)
class Drift:
    """The drift test of a step: where the window was split and the tests.

    Attributes
    ----------
    split_at : str or None
        The median time the labeled checks were split at.
    tests : tuple of DriftTest
    method : str
    halves : (int, int)
        The labeled checks of the earlier and the recent half.
    verdicts : {"recorded", "suggested"}
        Which verdicts were tested: as recorded, or the certified (suggested)
        thresholds replayed on the answers (where today's decide nothing to
        compare in a half; :func:`calibrate.analysis.step_readiness.assess_step`).
    """

    split_at: str | None
    tests: tuple[DriftTest, ...]
    method: str = DRIFT_METHOD
    halves: tuple[int, int] = (0, 0)
    verdicts: str = "recorded"

    @property
    def drifted(self) -> bool:
        return any(t.drifted for t in self.tests)

    @property
    def testable(self) -> bool:
        return bool(self.tests) and all(t.testable for t in self.tests)

    @property
    def undecided(self) -> bool:
        """Untestable although both halves hold labeled checks: a half holds no verdict to
        compare (no pass, or no pass or fail), which more labels under the same thresholds
        do not change."""
        return not self.testable and min(self.halves) > 0

    def missing(self) -> str:
        """What is missing where a test cannot run, in words ("" when every test ran).

        Examples
        --------
        >>> empty, some = Rate(0, 0), Rate(1, 40)
        >>> d = Drift("t", (DriftTest("false_pass", empty, some, float("nan"), "z", 0.005),
        ...                 DriftTest("disagreement", empty, some, float("nan"), "z", 0.005)),
        ...           halves=(111, 112))
        >>> d.missing()
        'the earlier half (111 labeled checks) holds no pass or fail'
        """
        if self.testable:
            return ""
        if not self.undecided:
            return "fewer than 2 labeled checks: a half of the window has none"
        # Per half the widest gap: no pass or fail (nothing decided) implies no pass.
        lacks = []
        for half in (0, 1):
            gone = {t.rate for t in self.tests if (t.earlier, t.recent)[half].n == 0}
            lacks.append(
                next((_BASE_WORDS[r] for r in ("disagreement", "false_pass") if r in gone), "")
            )
        if lacks[0] == lacks[1]:
            return f"neither half holds a {lacks[0]} ({self.halves[0]} and {self.halves[1]} labeled checks)"
        return "; ".join(
            f"the {name} half ({n} labeled checks) holds no {what}"
            for name, n, what in zip(("earlier", "recent"), self.halves, lacks, strict=True)
            if what
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "split_at": self.split_at,
            "drifted": self.drifted,
            "testable": self.testable,
            "tests": [t.to_dict() for t in self.tests],
            "method": self.method,
            "halves": list(self.halves),
            "verdicts": self.verdicts,
            "missing": self.missing() or None,
        }


def one_sided_increase(
    k_early: int, n_early: int, k_recent: int, n_recent: int
) -> tuple[float, str]:
    """One-sided p-value that the recent proportion exceeds the earlier one.

    The pooled two-proportion z test [1]_ (half of the two-sided p-value of
    :func:`calibrate.analysis.stats.two_proportion_test` in the direction of
    the difference), or Fisher's exact test when an expected cell count is
    below 5, where the normal approximation is poor.

    Returns
    -------
    (p_value, method) : tuple
        NaN when a half is empty; ``method`` is ``"z"`` or ``"fisher"``.

    References
    ----------
    .. [1] Agresti, A. (2013). Categorical Data Analysis, 3rd ed., §3.1, §3.5.
    """
    if n_early == 0 or n_recent == 0:
        return float("nan"), "z"
    total = k_early + k_recent
    n = n_early + n_recent
    expected = np.array([n_early, n_recent]) * np.array([[total / n], [(n - total) / n]])
    if expected.min() < 5:
        table = [[k_recent, n_recent - k_recent], [k_early, n_early - k_early]]
        return float(sp_stats.fisher_exact(table, alternative="greater").pvalue), "fisher"
    two = float(two_proportion_test(k_recent, n_recent, k_early, n_early))
    up = k_recent / n_recent > k_early / n_early
    return (two / 2 if up else 1 - two / 2), "z"


def drift_test(at: Any, verdict: Any, label: Any, *, level: float = 0.05) -> Drift:
    """Did the false-pass or the disagreement rate rise from the earlier to the recent half?

    The labeled checks are split at their median time into an earlier and a
    recent half (equal counts, so both halves carry the same weight whatever
    the volume did). Two rates are compared, each with a one-sided test
    (:func:`one_sided_increase`) at ``level / 2`` (Bonferroni): the
    false-pass rate P(not acceptable | pass) and the disagreement rate over
    decided verdicts (pass while not acceptable, or fail while acceptable).
    Only a rise counts: a check that got better does not block, because the
    bound from the whole window is then conservative for the recent part.

    Parameters
    ----------
    at : array-like of datetime
        Time of each labeled check.
    verdict : array-like of str
        The recorded verdicts.
    label : array-like of bool
        True = acceptable.
    level : float, default=0.05
        Family-wise level over the two tests.

    Returns
    -------
    Drift
    """
    at = pd.to_datetime(pd.Series(at), utc=True).reset_index(drop=True)
    v = pd.Series(verdict, dtype=object).reset_index(drop=True).astype(str).to_numpy()
    y = pd.Series(label).reset_index(drop=True).astype(bool).to_numpy()
    ok = at.notna().to_numpy()
    at, v, y = at[ok], v[ok], y[ok]
    tests: list[DriftTest] = []
    per_test = level / 2
    if len(at) < 2:
        empty = Rate(0, 0)
        for name in ("false_pass", "disagreement"):
            tests.append(DriftTest(name, empty, empty, float("nan"), "z", per_test))
        return Drift(None, tuple(tests))
    order = np.argsort(at.array.asi8, kind="stable")  # integer times: no Timestamp objects
    recent = np.zeros(len(at), dtype=bool)
    recent[order[len(order) // 2 :]] = True
    split_at = at.iloc[order[len(order) // 2]].isoformat()
    passed = v == "pass"
    decided = passed | (v == "fail")
    disagree = (passed & ~y) | ((v == "fail") & y)
    for name, event, base in (
        ("false_pass", passed & ~y, passed),
        ("disagreement", disagree, decided),
    ):
        early_r = Rate(int((event & base & ~recent).sum()), int((base & ~recent).sum()))
        recent_r = Rate(int((event & base & recent).sum()), int((base & recent).sum()))
        p, method = one_sided_increase(early_r.k, early_r.n, recent_r.k, recent_r.n)
        tests.append(DriftTest(name, early_r, recent_r, p, method, per_test))
    n_recent = int(recent.sum())
    return Drift(split_at, tuple(tests), halves=(len(recent) - n_recent, n_recent))


def share_warning(
    x: np.ndarray, ref_k: int, ref_n: int, *, delta: float
) -> tuple[bool, float, tuple[float, float]]:
    """Has the share of ``x`` moved away from the reference's, by a test valid under looks?

    The reference share's exact two-sided interval at ``1 - delta/2``
    (Clopper–Pearson) is the null band; two e-processes test "the share now
    is above its upper end" and "below its lower end", each alarming at
    ``4/delta``. A false warning, reference error included, has probability at
    most ``delta``.

    Returns
    -------
    warn : bool
    share : float
        The share now.
    band : (float, float)
        The reference interval.
    """
    x = np.asarray(x, dtype=float)
    lo = float(sp_stats.beta.ppf(delta / 4, ref_k, ref_n - ref_k + 1)) if ref_k > 0 else 0.0
    hi = float(sp_stats.beta.ppf(1 - delta / 4, ref_k + 1, ref_n - ref_k)) if ref_k < ref_n else 1.0
    warn = False
    if hi < 1:
        warn |= bool(first_crossing(log_wealth(x, max(hi, 1e-9)), delta / 4) >= 0)
    if lo > 0:
        warn |= bool(first_crossing(log_wealth(1 - x, max(1 - lo, 1e-9)), delta / 4) >= 0)
    return warn, float(x.mean()) if x.size else float("nan"), (lo, hi)
