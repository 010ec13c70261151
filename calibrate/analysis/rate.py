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

    def to_dict(self) -> dict[str, Any]:
        low, high = self.ci
        return {
            "k": self.k,
            "n": self.n,
            "rate": plain(self.rate),
            "ci": [plain(low), plain(high)],
        }


def plain(value: Any) -> Any:
    """A JSON-ready scalar: NaN/NA become None, NumPy scalars become Python ones."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
