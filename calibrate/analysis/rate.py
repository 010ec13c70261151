"""A count out of a total with its interval, and plain JSON values: shared by the analyses."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.stats import MIN_N, wilson_interval


@dataclass(frozen=True)
class Rate:
    """A count out of a total with its 95% Wilson interval."""

    k: int
    n: int

    @property
    def rate(self) -> float:
        return self.k / self.n if self.n else float("nan")

    @property
    def ci(self) -> tuple[float, float]:
        low, high = wilson_interval(self.k, self.n)
        return float(low), float(high)

    @property
    def too_few(self) -> bool:
        return self.n < MIN_N

    def text(self) -> str:
        """``"4.1% (9 of 219; 95% CI 2.2–7.6%)"``, or ``"too few (n=12)"`` below ``MIN_N``."""
        if self.n == 0:
            return "no data (n=0)"
        if self.too_few:
            return f"too few to say ({self.k} of {self.n}, n<{MIN_N})"
        low, high = self.ci
        return f"{self.rate:.1%} ({self.k} of {self.n}; 95% CI {low:.1%}–{high:.1%})"

    def text_against(self, limit: float, op: str) -> str:
        """:meth:`text` for a sentence comparing the rate with ``limit`` (see :func:`pct_against`).

        The rate gets the decimals that keep the stated comparison true in print,
        and is given even below ``MIN_N`` (marked), since the sentence compares it.
        """
        figure, _ = pct_against(self.rate, limit, op)
        if self.too_few:
            return f"{figure} ({self.k} of {self.n}, n<{MIN_N})"
        low, high = self.ci
        return f"{figure} ({self.k} of {self.n}; 95% CI {low:.1%}–{high:.1%})"

    def to_dict(self) -> dict[str, Any]:
        low, high = self.ci
        return {
            "k": self.k,
            "n": self.n,
            "rate": plain(self.rate),
            "ci": [plain(low), plain(high)],
        }


def weighted_text(rate: float, k: int, n: int, what: str, fmt: str, detail: str) -> str:
    """A share weighted by ``1/inclusion_p`` beside its unweighted counts, named weighted.

    ``"weighted rate 7.1% (17 of 131 audited, weighted by 1/inclusion_p; <detail>)"``: the
    counts alone would read as the rate ``k / n``, which it is not (outside review).
    """
    return f"weighted rate {rate:{fmt}} ({k} of {n} {what}, weighted by 1/inclusion_p; {detail})"


def plain(value: Any) -> Any:
    """A JSON-ready scalar: NaN/NA become None, NumPy scalars become Python ones."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def limit_pct(limit: float) -> str:
    """A limit as a percentage with the digits it has: ``0.05`` -> ``"5%"``, ``0.075`` -> ``"7.5%"``.

    A limit is a setting, not an estimate: rounding it (``0.075`` as ``"8%"``)
    would misstate what a figure is compared with.
    """
    for digits in range(4):
        text = f"{limit:.{digits}%}"
        if math.isclose(float(text[:-1]) / 100, limit, rel_tol=0, abs_tol=1e-12):
            return text
    return f"{limit:.4%}"


_COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def pct_against(value: float, limit: float, op: str, *, digits: int = 1) -> tuple[str, str]:
    """``value`` and ``limit`` as percentages whose printed figures compare as the numbers do.

    A reason such as "decides 29.96% alone (< 30%)" must not print as "30%
    (< 30%)": ``value`` gets ``digits`` decimals, more where rounding would
    make the printed figures contradict ``value op limit`` (up to four).

    Parameters
    ----------
    value, limit : float
        Shares in [0, 1].
    op : {"<", "<=", ">", ">="}
        The comparison the sentence states; the caller states it only where it holds.
    digits : int, default=1
        Decimals of ``value`` when they suffice.

    Returns
    -------
    tuple of str
        The value's text and the limit's text (:func:`limit_pct`).

    Examples
    --------
    >>> pct_against(0.2996, 0.3, "<", digits=0)
    ('29.96%', '30%')
    """
    compare = _COMPARE[op]
    lim = limit_pct(limit)
    lim_value = float(lim[:-1])
    for more in range(digits, 5):
        text = f"{value:.{more}%}"
        if compare(float(text[:-1]), lim_value):
            return text, lim
    return f"{value:.{digits}%}", lim  # the comparison does not hold: say the figure plainly
