"""The trade-off over alpha: the share decided without a person at each certified bound.

:func:`tradeoff` reruns :func:`~calibrate.analysis.threshold_search.find_thresholds`
at each ``alpha`` of a ladder; :class:`TradeoffDisplay` draws the frame it returns.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.step_data import StepData
from calibrate.analysis.threshold_search import find_thresholds
from calibrate.defaults import DEFAULT_BETA, DEFAULT_DELTA, TRADEOFF_ALPHAS

__all__ = ["TradeoffDisplay", "tradeoff"]


def tradeoff(
    data: StepData,
    *,
    alphas: Sequence[float] = TRADEOFF_ALPHAS,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """For each ``alpha``: status, certified bound and the shares decided without a person.

    Returns
    -------
    pandas.DataFrame
        Columns ``alpha``, ``status``, ``certified_false_pass`` (``alpha``
        when certified, else ``nan``), ``observed_false_pass`` (the replayed
        rate, with ``n_pass``), ``auto_pass``, ``auto_fail``, ``coverage`` (shares of
        ``n``, the labeled checks, measured on the labels that chose the thresholds; 0 where
        nothing is certified: every submission goes to a person).
    """
    rows = []
    for a in alphas:
        r = find_thresholds(data, alpha=float(a), delta=delta, beta=beta, relearn_lists=relearn_lists,
                            search_fraction=search_fraction, seed=seed)  # fmt: skip
        ok = r.status == "ok"
        exp = r.expected if ok else None
        shares = exp.shares() if exp is not None else {"auto_pass": 0.0, "auto_fail": 0.0}
        rows.append(
            {
                "alpha": float(a),
                "status": r.status,
                "certified_false_pass": float(a) if ok else math.nan,
                "observed_false_pass": (
                    exp.false_pass_rate if exp and exp.false_pass_rate is not None else math.nan
                ),
                "n_pass": exp.n_pass if exp else 0,
                "n": data.n,
                "auto_pass": shares["auto_pass"] or 0.0,
                "auto_fail": shares["auto_fail"] or 0.0,
                "coverage": (shares["auto_pass"] or 0.0) + (shares["auto_fail"] or 0.0),
            }
        )
    return pd.DataFrame(rows)


class TradeoffDisplay:
    """Certified false-pass bound against the share decided without a person.

    Parameters
    ----------
    frame : pandas.DataFrame
        From :func:`tradeoff`.
    alpha : float
        The suggested point (marked).
    delta : float
    title : str
    current : tuple of float, optional
        ``(false-pass rate, coverage)`` of today's thresholds, marked as a cross.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"alpha": [0.05, 0.1], "status": ["ok", "ok"],
    ...     "certified_false_pass": [0.05, 0.1], "observed_false_pass": [0.02, 0.06],
    ...     "n_pass": [300, 400], "auto_pass": [0.5, 0.6], "auto_fail": [0.1, 0.1],
    ...     "coverage": [0.6, 0.7]})
    >>> disp = TradeoffDisplay(frame, alpha=0.05).plot()
    >>> disp.ax_.get_xlabel()
    'certified false-pass bound (alpha)'
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        *,
        alpha: float,
        delta: float = DEFAULT_DELTA,
        title: str = "",
        current: tuple[float, float] | None = None,
    ) -> None:
        self.frame = frame
        self.alpha = alpha
        self.delta = delta
        self.title = title
        self.current = current

    def plot(self, ax: Any = None) -> TradeoffDisplay:
        """Draw on ``ax`` (a new figure when ``None``); returns ``self`` with ``ax_`` and ``figure_``."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
        f = self.frame
        ok = f["status"] == "ok"
        ax.plot(f["alpha"], f["coverage"].where(ok, 0.0), "o-", color="C0",
                label="decided without a person")  # fmt: skip
        ax.plot(f["alpha"], f["auto_pass"].where(ok, 0.0), "s--", color="C2", alpha=0.7,
                label="auto pass")  # fmt: skip
        if (~ok).any():
            ax.plot(f.loc[~ok, "alpha"], np.zeros(int((~ok).sum())), "x", color="C3",
                    label="nothing certified")  # fmt: skip
        here = f[np.isclose(f["alpha"], self.alpha)]
        if not here.empty:
            ax.axvline(self.alpha, color="0.5", lw=0.8, ls=":")
            # A suggestion exists only where something was certified; otherwise the line marks
            # the alpha asked for, said as such.
            if (here["status"] == "ok").any():
                ax.plot(here["alpha"], here["coverage"], "*", ms=16, color="C1",
                        label=f"suggested (alpha = {self.alpha:g})")  # fmt: skip
            else:
                ax.plot([], [], ls=":", color="0.5",
                        label=f"alpha = {self.alpha:g}: nothing certified")  # fmt: skip
        if self.current is not None:
            ax.plot([self.current[0]], [self.current[1]], "P", ms=10, color="C4",
                    label="today (observed false-pass rate)")  # fmt: skip
        ax.set_xlabel("certified false-pass bound (alpha)")
        ax.set_ylabel("share decided without a person")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(self.title or f"Trade-off at {1 - self.delta:.0%} confidence")
        # The legend sits outside the axes, so it never hides a point.
        ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
        self.ax_ = ax
        self.figure_ = ax.figure
        return self
