"""Displays of agreement, audits and the monitor, beside the analyses they draw.

:class:`IntervalDisplay` (a rate per row of an agreement table),
:class:`WeeklyDisplay` (agreement and the false-pass rate by week),
:class:`AuditDisplay` (the fixed-sample audit's chance of an alarm) and
:class:`MonitorDisplay` (the monitor's e-value path and confidence
sequence). Each holds computed results and draws them with
``plot(ax=None)``, returning itself with ``ax_`` and ``figure_`` set; the
report, the CLI and the notebooks draw through them. Untrusted text is made
safe by :func:`calibrate.drawing.safe_text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibrate import drawing as plots
from calibrate.analysis.agreement import AGREEMENT_COLUMNS
from calibrate.analysis.approvers import APPROVER_COLUMNS
from calibrate.analysis.audit_fixed import audit_detection
from calibrate.analysis.draw_design import LABEL_SOURCES
from calibrate.defaults import MIN_N

#: Rates of :func:`calibrate.analysis.agreement.agreement`, for :func:`rate_table`
#: and :class:`IntervalDisplay`: name -> (column, low, high, numerator, denominator, words).
RATES: dict[str, tuple[str, str, str, str, str, str]] = {
    "agree": ("agree", "agree_low", "agree_high", "n_agree", "n_decided",
              "agreement (decided verdicts)"),
    "false_pass": ("false_pass_rate", "false_pass_low", "false_pass_high",
                   "pass_not_acceptable", "n_pass", "false-pass rate, P(not acceptable | pass)"),
    "false_fail": ("false_fail_rate", "false_fail_low", "false_fail_high",
                   "fail_acceptable", "n_fail", "false-fail rate, P(acceptable | fail)"),
    "unsure": ("unsure_rate", "unsure_low", "unsure_high", "n_unsure", "n_checks",
               "unsure rate (all checks)"),
    "error": ("error_rate", "error_low", "error_high", "n_error", "n_checks",
              "error rate (all checks)"),
}  # fmt: skip
#: Columns that are results, not group keys, in the agreement and approver tables.
RESULT_COLUMNS = {*AGREEMENT_COLUMNS, *APPROVER_COLUMNS}


class IntervalDisplay:
    """One rate per row of an agreement table, as a point with its 95% interval.

    Rows whose denominator is below :data:`~calibrate.analysis.stats.MIN_N`
    are drawn hollow and labelled "too few"; each label carries its n.

    Parameters
    ----------
    table : pandas.DataFrame
        A result of :func:`calibrate.analysis.agreement.agreement` (or of
        :func:`calibrate.analysis.approvers.approvers` for ``rate="agree"`` or
        ``"approval"``).
    rate : str, default="agree"
        A name from :data:`RATES`, or ``"approval"`` for the approver table.
    keys : sequence of str, optional
        Columns that name a row (default: the table's group keys).
    limit : float, optional
        Drawn as a dashed vertical line (e.g. ``alpha`` for the false-pass rate).
    title : str, optional
        Untrusted text is fine; it is made safe.
    """

    def __init__(
        self,
        table: pd.DataFrame,
        *,
        rate: str = "agree",
        keys: Sequence[str] | None = None,
        limit: float | None = None,
        title: str | None = None,
    ) -> None:
        if rate not in RATES and rate != "approval":
            raise ValueError(f"unknown rate {rate!r}; allowed: {', '.join([*RATES, 'approval'])}")
        self.table = table
        self.rate = rate
        self.keys = list(
            keys
            if keys is not None
            else table.attrs.get("by", [c for c in table.columns if c not in RESULT_COLUMNS])
        )
        self.limit = limit
        self.title = title

    def _columns(self) -> tuple[str, str, str, str, str]:
        if self.rate == "approval":
            return "approval_rate", "approval_low", "approval_high", "n", "approval rate"
        col, low, high, _, n, words = RATES[self.rate]
        return col, low, high, n, words

    def plot(self, ax: Any = None) -> IntervalDisplay:
        """Draw on ``ax`` (a new figure when None); returns ``self`` with ``ax_`` and ``figure_``."""
        col, low, high, ncol, words = self._columns()
        t = self.table.reset_index(drop=True)
        if ax is None:
            ax = plots.new_figure((7.5, 0.9 + 0.32 * max(len(t), 1))).add_subplot()
        y = np.arange(len(t))[::-1]
        rate = t[col].to_numpy(dtype=float)
        lo = t[low].to_numpy(dtype=float)
        hi = t[high].to_numpy(dtype=float)
        n = t[ncol].to_numpy(dtype=int)
        few = n < MIN_N
        xerr = np.clip(np.vstack([rate - lo, hi - rate]), 0, None)
        ok = np.isfinite(rate)
        ax.errorbar(
            rate[ok], y[ok], xerr=np.where(np.isfinite(xerr[:, ok]), xerr[:, ok], 0),
            fmt="none", ecolor=plots.ACCENT, capsize=3, lw=1.2,
        )  # fmt: skip
        ax.plot(rate[ok & ~few], y[ok & ~few], "o", color=plots.ACCENT, ms=5)
        ax.plot(rate[ok & few], y[ok & few], "o", mfc="white", color=plots.ACCENT, ms=5)
        # The approver table's automation-bias hint, so the eye finds it.
        flag = (
            t["flag"].fillna(False).to_numpy(dtype=bool) if "flag" in t else np.zeros(len(t), bool)
        )
        if (flag & ok).any():
            ax.plot(rate[flag & ok], y[flag & ok], "o", color=plots.MAP_COLOUR, ms=7,
                    label="flagged: possible automation bias")  # fmt: skip
        labels = []
        for i, row in t.iterrows():  # a loop per row of a summary table
            name = " · ".join(
                plots.safe_text(row[k], width=38, max_lines=1) for k in self.keys if k in t
            )
            tag = f"n={n[i]}" + (" too few" if few[i] else "") + (", flagged" if flag[i] else "")
            labels.append(f"{name}  ({tag})")
        ax.set_yticks(y, labels, fontsize=7)
        if self.limit is not None:
            ax.axvline(
                self.limit, ls="--", lw=1, color=plots.MAP_COLOUR, label=f"limit {self.limit:g}"
            )
        if self.limit is not None or (flag & ok).any():
            plots.legend_if_labelled(ax, loc="best", fontsize=7, frameon=False)
        if self.rate in ("agree", "approval"):
            ax.set_xlim(-0.02, 1.02)
        else:
            # Error rates are small: zoom in, keeping every interval and the limit in view.
            top = np.nanmax(np.r_[hi[np.isfinite(hi)], self.limit or 0.0, 0.05])
            ax.set_xlim(-0.005, min(1.02, top * 1.1))
        ax.set_ylim(-0.7, len(t) - 0.3)
        ax.set_xlabel(f"{words}; 95% Wilson interval; hollow: n < {MIN_N}", fontsize=8)
        ax.grid(True, axis="x", alpha=0.25)
        if self.title:
            ax.set_title(plots.safe_text(self.title, width=90), fontsize=9)
        self.ax_, self.figure_ = ax, ax.figure
        return self


class WeeklyDisplay:
    """Agreement and false-pass rate by week, one line per evaluator model, with 95% intervals.

    Parameters
    ----------
    by_week : pandas.DataFrame
        :func:`calibrate.analysis.agreement.agreement` grouped by
        ``["model", "week"]``, optionally with ``"labels"`` (audit draws
        then get their own dashed line; a rate flagged ``unequal_draws`` /
        ``unequal_draws_pass`` is not drawn, nor labels of undrawn enforced
        checks).
    alpha : float, optional
        Drawn as the false-pass limit.
    title : str, optional
        Untrusted text is fine; it is made safe.

    Weeks with fewer than :data:`~calibrate.analysis.stats.MIN_N` decided
    verdicts are drawn hollow.
    """

    def __init__(
        self, by_week: pd.DataFrame, *, alpha: float | None = None, title: str | None = None
    ) -> None:
        self.by_week = by_week
        self.alpha = alpha
        self.title = title

    def plot(self, ax: Any = None) -> WeeklyDisplay:
        """Draw on ``ax`` (a pair of axes) or a new figure; returns ``self``."""
        if ax is None:
            fig = plots.new_figure((8.0, 4.6))
            axes = fig.subplots(2, 1, sharex=True)
        else:
            axes = ax
        # Checks without a time have no week: they are in the tables, not on the time axis.
        df = self.by_week[self.by_week["week"].notna()].copy()
        weeks = sorted(df["week"].astype(str).unique())
        pos = {w: i for i, w in enumerate(weeks)}
        colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b"]
        # Labels of audit draws (after the switch) are their own line, dashed; a week whose draw
        # offered checks at unequal probabilities has no unweighted rate to draw.
        if "labels" in df.columns:  # escalations kept: a selected sample, not drawn
            df = df[(df["labels"] != LABEL_SOURCES["enforced"]).to_numpy()]
        series = ["model", "labels"] if "labels" in df.columns else ["model"]
        models = sorted({str(m) for m in df["model"].tolist()})
        for keys, g in df.groupby(series, sort=True, dropna=False):
            keys = keys if isinstance(keys, tuple) else (keys,)
            model, source = str(keys[0]), (str(keys[1]) if len(keys) > 1 else "")
            if not g["n"].to_numpy().any():
                continue
            x = np.array([pos[str(w)] for w in g["week"]], dtype=float)
            colour = colours[models.index(model) % len(colours)]
            drawn = source == LABEL_SOURCES["audit"]
            name = plots.safe_text(model, width=40, max_lines=1) + (
                " (audit draws)" if drawn else ""
            )
            for axis, rate, low, high, n, flag in (
                (axes[0], "agree", "agree_low", "agree_high", "n_decided", "unequal_draws"),
                (axes[1], "false_pass_rate", "false_pass_low", "false_pass_high", "n_pass",
                 "unequal_draws_pass"),
            ):  # fmt: skip
                # A rate over draws that did not offer its population alike is not drawn.
                shown = (
                    ~g[flag].astype(bool).to_numpy() if flag in g.columns else np.ones(len(g), bool)
                )
                if not shown.any():
                    continue
                ga, xa = g[shown], x[shown]
                y = ga[rate].to_numpy(dtype=float)
                lo = ga[low].to_numpy(dtype=float)
                hi = ga[high].to_numpy(dtype=float)
                few = ga[n].to_numpy() < MIN_N
                yerr = np.clip(np.vstack([y - lo, hi - y]), 0, None)
                axis.errorbar(xa, y, yerr=yerr, color=colour, lw=1, capsize=2,
                              fmt="--" if drawn else "-", label=name)  # fmt: skip
                axis.plot(xa[~few], y[~few], "o", color=colour, ms=4)
                axis.plot(xa[few], y[few], "o", mfc="white", color=colour, ms=4)
        if self.alpha is not None:
            axes[1].axhline(self.alpha, ls="--", lw=1, color=plots.MAP_COLOUR, label="alpha")
        axes[0].set_ylabel("agreement")
        axes[1].set_ylabel("false-pass rate")
        axes[0].set_ylim(-0.02, 1.02)
        axes[1].set_ylim(bottom=-0.01)
        for axis in axes:
            axis.grid(True, alpha=0.25)
        plots.legend_if_labelled(axes[0], loc="lower left", fontsize=7, frameon=False)
        axes[1].set_xticks(range(len(weeks)), weeks, rotation=45, ha="right", fontsize=7)
        axes[1].set_xlabel(f"week (Monday); hollow: fewer than {MIN_N} in the denominator")
        if self.title:
            axes[0].set_title(plots.safe_text(self.title, width=90), fontsize=9)
        self.ax_, self.figure_ = axes, axes[0].figure
        return self


class AuditDisplay:
    """Chance of an alarm against the true false-pass rate, one line per step's audit plan.

    Parameters
    ----------
    plans : mapping of str to AuditPlan
        A label (e.g. ``"process / step"``) and the plan of
        :func:`calibrate.analysis.readiness.audit_plan`.
    """

    def __init__(self, plans: dict[str, Any]) -> None:
        self.plans = dict(plans)

    def plot(self, ax: Any = None) -> AuditDisplay:
        """Draw on ``ax`` (a new figure when None); returns ``self`` with ``ax_`` and ``figure_``."""
        if ax is None:
            ax = plots.new_figure((7.0, 4.0)).add_subplot()
        # The curve depends only on the sample size and alarm count: steps that share them
        # share one line, with all their names in the legend.
        groups: dict[tuple[int, int, float, float, float], list[str]] = {}
        for name, plan in self.plans.items():
            key = (plan.sample_size, plan.critical, plan.alpha, plan.target, plan.power)
            groups.setdefault(key, []).append(plots.safe_text(name, width=40, max_lines=1))
        top = 0.0
        for i, ((m, c, alpha, target, power), names) in enumerate(groups.items()):
            grid = np.linspace(0, min(1.0, 4 * target), 200)
            curve = audit_detection(m, c, grid)
            shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
            label = f"{shown}: {m} audited passes, alarm at {c}"
            ax.plot(curve["false_pass_rate"], curve["p_alarm"], color=f"C{i % 10}", label=label)
            top = max(top, grid[-1])
            ax.axvline(alpha, ls="--", lw=1, color=plots.MUTED)
            ax.axvline(target, ls=":", lw=1, color=plots.MAP_COLOUR)
            ax.axhline(power, ls=":", lw=0.8, color=plots.MUTED)
        ax.set_xlim(0, top or 1.0)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel(
            "true false-pass rate after the switch (dashed: alpha; dotted: the rise to detect)"
        )
        ax.set_ylabel("chance the audit raises its alarm")
        ax.grid(True, alpha=0.25)
        plots.legend_if_labelled(ax, loc="lower right", fontsize=7, frameon=False)
        self.ax_, self.figure_ = ax, ax.figure
        return self


class MonitorDisplay:
    """The false-pass monitor of one enforced step: e-value path and confidence sequence.

    Parameters
    ----------
    monitor : calibrate.analysis.monitor.RateMonitor
        Its ``path`` (one row per decided audit: ``at``, ``e_value``,
        ``lower``, ``upper``) is drawn.
    delta : float
        The alarm level: the e-value threshold ``1/delta`` is drawn.
    title : str, optional
        Untrusted text is fine; it is made safe.
    """

    def __init__(self, monitor: Any, *, delta: float, title: str | None = None) -> None:
        self.monitor = monitor
        self.delta = delta
        self.title = title

    def plot(self, ax: Any = None) -> MonitorDisplay:
        """Draw on ``ax`` (a pair of axes) or a new figure; returns ``self``."""
        if ax is None:
            fig = plots.new_figure((7.2, 4.6))
            axes = fig.subplots(2, 1, sharex=True)
        else:
            axes = ax
        m, path = self.monitor, self.monitor.path
        x = np.arange(1, len(path) + 1)
        top, bottom = axes
        top.semilogy(x, np.maximum(path["e_value"].to_numpy(dtype=float), 1e-3), color=plots.ACCENT,
                     lw=1.2, label="e-value")  # fmt: skip
        top.axhline(
            1 / self.delta,
            ls="--",
            lw=1,
            color=plots.MAP_COLOUR,
            label=f"alarm at 1/δ = {1 / self.delta:g}",
        )
        top.set_ylabel("e-value")
        top.legend(loc="upper left", fontsize=7, frameon=False)
        bottom.fill_between(x, path["lower"].to_numpy(dtype=float), path["upper"].to_numpy(dtype=float),
                            color=plots.ACCENT, alpha=0.25, step="post",
                            label=f"{1 - self.delta:.0%} confidence sequence")  # fmt: skip
        bottom.axhline(m.limit, ls="--", lw=1, color=plots.MAP_COLOUR, label=f"α = {m.limit:g}")
        bottom.set_ylabel("false-pass rate")
        bottom.set_xlabel(f"audited passes, in order of the stream ({m.audited} decided)")
        bottom.set_ylim(
            0, min(1.0, max(0.2, float(np.nanmax(path["upper"])) if len(path) else 0.2))
        )
        bottom.legend(loc="upper right", fontsize=7, frameon=False)
        for axis in axes:
            axis.grid(True, alpha=0.25)
        if self.title:
            top.set_title(plots.safe_text(self.title, width=90), fontsize=9)
        self.ax_, self.figure_ = axes, top.figure
        return self
