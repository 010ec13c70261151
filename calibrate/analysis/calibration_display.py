"""The calibration displays, beside the computation they draw (as scikit-learn's CalibrationDisplay).

:class:`ReliabilityDisplay` draws a reliability curve (and a recalibration
map), :class:`RatesDisplay` the acceptance rate per answer name or level;
:func:`question_figure` and :func:`step_figure` lay them out per question and
per step. They hold computed results (never raw records) and draw them with
``plot(ax=None)``, which returns the display with ``ax_`` and ``figure_``
set. Figures are built on the Agg canvas directly (:func:`calibrate.drawing.new_figure`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from calibrate.defaults import MIN_N
from calibrate.drawing import (
    ACCENT,
    KIND_NAMES,
    MAP_COLOUR,
    MUTED,
    legend_if_labelled,
    new_figure,
    safe_text,
)
from calibrate.textsafe import NO_MODEL, shown_name, step_name

if TYPE_CHECKING:  # pragma: no cover
    from calibrate.analysis.question_calibration import QuestionCalibration
    from calibrate.analysis.recalibration import Recalibrator
    from calibrate.analysis.reliability import ReliabilityCurve


def _margins(
    fig: Any, *, top: float, bottom: float = 0.6, left: float = 0.7, right: float = 0.25
) -> dict[str, float]:
    # Fixed margins in inches: the whole-figure layouts are known in advance, and a
    # constrained layout would cost a full extra draw per file written.
    w, h = fig.get_size_inches()
    return {"left": left / w, "right": 1 - right / w, "top": 1 - top / h, "bottom": bottom / h}


def _fmt(x: float, digits: int = 3) -> str:
    return "–" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


class ReliabilityDisplay:
    """Reliability diagram: observed rate per bin against the mean prediction.

    Draws the diagonal (perfect calibration), each non-empty bin as a point
    with its 95% Wilson interval as an error bar, the recalibration map when
    one was fit, the number of labels and the ECE with its binning, and the
    bin counts as a histogram on ``hist_ax`` underneath. With fewer than
    :data:`~calibrate.analysis.stats.MIN_N` labels the panel is marked
    "too few labels".

    Parameters
    ----------
    bins : DataFrame
        Columns ``lo``, ``hi``, ``mean_predicted``, ``observed``, ``n``,
        ``ci_low``, ``ci_high`` (see :func:`calibrate.analysis.calibration.reliability_bins`).
    n : int
        Labels behind the curve.
    ece : float
        Expected calibration error.
    binning : str
        The binning in words, e.g. ``"uniform, 10 bins"``.
    x_label, y_label : str
    title : str, optional
        Untrusted text is fine; it is made safe.
    recalibrator : Recalibrator, optional
        Its map is drawn as a line when fitted.

    Attributes
    ----------
    ax_, hist_ax_, figure_ : matplotlib objects, set by :meth:`plot`.
    """

    def __init__(
        self,
        bins: pd.DataFrame,
        *,
        n: int,
        ece: float,
        binning: str,
        x_label: str = "yes-probability",
        y_label: str = "acceptance rate",
        title: str | None = None,
        recalibrator: Recalibrator | None = None,
        ece_ci: tuple[float, float] | None = None,
    ) -> None:
        self.bins = bins
        self.n = int(n)
        self.ece = ece
        self.ece_ci = ece_ci
        self.binning = binning
        self.x_label = x_label
        self.y_label = y_label
        self.title = title
        self.recalibrator = recalibrator

    @classmethod
    def from_curve(
        cls,
        curve: ReliabilityCurve,
        *,
        recalibrator: Recalibrator | None = None,
        title: str | None = None,
    ) -> ReliabilityDisplay:
        """A display of a :class:`~calibrate.analysis.reliability.ReliabilityCurve`."""
        return cls(
            curve.bins,
            n=curve.n,
            ece=curve.ece,
            ece_ci=curve.ece_ci,
            binning=curve.binning,
            x_label=curve.x_label,
            y_label=curve.y_label,
            title=title,
            recalibrator=recalibrator,
        )

    @property
    def too_few(self) -> bool:
        return self.n < MIN_N

    def plot(
        self, ax: Any = None, *, hist_ax: Any = None, title_width: int = 60, compact: bool = False
    ) -> ReliabilityDisplay:
        """Draw on ``ax`` (and the counts on ``hist_ax``); new figure with both when ``ax`` is None.

        Returns ``self``.
        """
        if ax is None:
            fig = new_figure((5.2, 6.0))
            grid = fig.add_gridspec(2, 1, height_ratios=(3.2, 1))
            ax = fig.add_subplot(grid[0])
            hist_ax = fig.add_subplot(grid[1], sharex=ax)
        b = self.bins
        seen = b[b["n"] > 0]
        ax.plot([0, 1], [0, 1], ls="--", lw=1, color=MUTED, label="perfectly calibrated")
        colour = MUTED if self.too_few else ACCENT
        if len(seen):
            obs = seen["observed"].to_numpy(dtype=float)
            yerr = np.vstack(
                [
                    obs - seen["ci_low"].to_numpy(dtype=float),
                    seen["ci_high"].to_numpy(dtype=float) - obs,
                ]
            )
            ax.errorbar(
                seen["mean_predicted"],
                obs,
                yerr=np.clip(yerr, 0, None),
                fmt="o-",
                ms=4,
                capsize=3,
                lw=1.2,
                color=colour,
                label="observed, 95% Wilson interval",
            )
        rec = self.recalibrator
        # A map fit on too few labels is noise: it is not drawn.
        if rec is not None and rec.fitted and not rec.too_few and not self.too_few:
            grid_x = np.linspace(0, 1, 201)
            ax.plot(
                grid_x,
                rec.predict(grid_x),
                color=MAP_COLOUR,
                lw=1.2,
                alpha=0.8,
                label=f"recalibration map ({rec.method})",
            )
        ax.set_xlim(-0.02, 1.02)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(self.y_label)
        ax.set_aspect("auto")
        ax.grid(True, alpha=0.25)
        ci = ""
        if self.ece_ci is not None and np.all(np.isfinite(self.ece_ci)):
            ci = f" [{self.ece_ci[0]:.3f}, {self.ece_ci[1]:.3f}]"
        info = f"n = {self.n}\nECE {_fmt(self.ece)}{ci}\n({self.binning})"
        if self.too_few:
            info = f"n = {self.n}\n({self.binning})"  # no bare numbers on too few labels
        ax.text(
            0.03,
            0.97,
            info,
            transform=ax.transAxes,
            va="top",
            ha="left",
            fontsize=7 if compact else 8,
            color="black",
        )
        if self.too_few:
            ax.text(
                0.5,
                0.5,
                f"too few labels\n(n = {self.n} < {MIN_N})",
                transform=ax.transAxes,
                ha="center",
                va="center",
                fontsize=11 if compact else 14,
                color=MAP_COLOUR,
                alpha=0.75,
                bbox={"facecolor": "white", "alpha": 0.7, "edgecolor": MAP_COLOUR},
            )
        if not compact:
            legend_if_labelled(ax, loc="lower right", fontsize=7, frameon=False)
        if self.title:
            ax.set_title(safe_text(self.title, width=title_width), fontsize=8 if compact else 10)
        if hist_ax is not None:
            width = np.maximum((b["hi"] - b["lo"]).to_numpy(dtype=float), 0.01)
            hist_ax.bar(
                b["lo"],
                b["n"],
                width=width,
                align="edge",
                color=colour,
                alpha=0.5,
                edgecolor="white",
            )
            hist_ax.set_ylabel("count", fontsize=8)
            hist_ax.set_xlabel(self.x_label)
            hist_ax.set_xlim(-0.02, 1.02)
            hist_ax.grid(True, axis="y", alpha=0.25)
            ax.tick_params(labelbottom=False)
        else:
            ax.set_xlabel(self.x_label)
        self.ax_, self.hist_ax_, self.figure_ = ax, hist_ax, ax.figure
        return self


class RatesDisplay:
    """Acceptance rate per answer name or rubric level, with 95% Wilson intervals.

    Points are coloured by whether the answer passes; each tick shows the
    category and its ``n``; categories never seen are listed without a point.

    Parameters
    ----------
    rates : DataFrame
        Columns ``answer``, ``n``, ``rate``, ``ci_low``, ``ci_high`` and
        optionally ``passes`` (see :func:`calibrate.analysis.calibration.category_rates`).
    x_label : str, default="answer"
    flagged : sequence, optional
        Categories to mark (non-monotone rubric levels).
    """

    def __init__(
        self, rates: pd.DataFrame, *, x_label: str = "answer", flagged: Sequence[Any] = ()
    ) -> None:
        self.rates = rates
        self.x_label = x_label
        self.flagged = list(flagged)

    def plot(self, ax: Any = None) -> RatesDisplay:
        """Draw on ``ax`` (a new figure when None); returns ``self``."""
        if ax is None:
            ax = new_figure((5.0, 3.6)).add_subplot()
        r = self.rates.reset_index(drop=True)
        x = np.arange(len(r))
        passes = r["passes"].to_numpy(dtype=bool) if "passes" in r else np.zeros(len(r), bool)
        seen = r["n"].to_numpy() > 0
        rate = r["rate"].to_numpy(dtype=float)
        for mask, colour, label in ((passes, ACCENT, "passes"), (~passes, MUTED, "does not pass")):
            m = mask & seen
            if m.any():
                yerr = np.vstack(
                    [
                        rate[m] - r["ci_low"].to_numpy(float)[m],
                        r["ci_high"].to_numpy(float)[m] - rate[m],
                    ]
                )
                ax.errorbar(
                    x[m],
                    rate[m],
                    yerr=np.clip(yerr, 0, None),
                    fmt="o",
                    capsize=3,
                    color=colour,
                    label=label,
                )
        for i, cat in enumerate(r["answer"]):
            if cat in self.flagged:
                ax.annotate(
                    "non-monotone",
                    (i, rate[i]),
                    xytext=(0, -18),
                    textcoords="offset points",
                    ha="center",
                    fontsize=7,
                    color=MAP_COLOUR,
                )
        ax.axhline(0.5, ls=":", lw=1, color=MUTED)
        ticks = [
            f"{safe_text(a, width=14, max_lines=2)}\nn={n}"
            for a, n in zip(r["answer"], r["n"], strict=True)
        ]
        ax.set_xticks(x, ticks, fontsize=7)
        ax.set_xlim(-0.6, len(r) - 0.4)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("acceptance rate")
        ax.set_xlabel(self.x_label)
        ax.grid(True, axis="y", alpha=0.25)
        legend_if_labelled(ax, loc="best", fontsize=7, frameon=False)
        self.ax_, self.figure_ = ax, ax.figure
        return self


# --------------------------------------------------------------------------- whole figures


def _subtitle(q: QuestionCalibration, width: int = 110) -> str:
    week = f" · week of {q.week}" if q.week else ""
    return safe_text(
        f"{step_name(q.process, q.step)} · {KIND_NAMES.get(q.kind, q.kind)} · model {q.model}{week} · n = {q.n}",
        width=width,
        max_lines=2,
    )


def _drawn_map(q: QuestionCalibration) -> Recalibrator | None:
    # For choice and rubric the curve is confidence vs a correct call while the map is
    # confidence vs acceptance of passing answers: different y, so it is not drawn there.
    return q.recalibrator if q.kind == "yes_no" else None


def question_figure(q: QuestionCalibration) -> Any:
    """One question's figure: reliability diagram over bin counts, plus rates for choice/rubric.

    Returns
    -------
    matplotlib.figure.Figure
    """
    has_rates = q.rates is not None
    width = 100 if has_rates else 56
    title = f"{safe_text(q.ask, width=width)}\n{_subtitle(q, width)}"
    n_lines = title.count("\n") + 1
    fig = new_figure(
        (10.0, 6.0 + 0.2 * n_lines) if has_rates else (5.6, 6.2 + 0.2 * n_lines), layout=None
    )
    grid = fig.add_gridspec(
        2,
        2 if has_rates else 1,
        height_ratios=(3.2, 1),
        hspace=0.06,
        wspace=0.22,
        **_margins(fig, top=0.45 + 0.19 * n_lines, bottom=0.85 if has_rates else 0.6),
    )
    ax = fig.add_subplot(grid[0, 0])
    hist_ax = fig.add_subplot(grid[1, 0], sharex=ax)
    ReliabilityDisplay.from_curve(q.curve, recalibrator=_drawn_map(q)).plot(ax=ax, hist_ax=hist_ax)
    ax.set_title(
        "yes-probability vs decision" if q.kind == "yes_no" else "confidence vs correct call",
        fontsize=9,
    )
    if has_rates:
        rax = fig.add_subplot(grid[:, 1])
        x_label = "answer" if q.kind == "choice" else "level"
        rates = q.rates
        if q.kind == "rubric" and q.level_texts:
            texts = dict(enumerate(q.level_texts))
            rates = rates.assign(answer=[f"{a}: {texts.get(int(a), '')}" for a in rates["answer"]])
        flagged = [
            a
            for a, lv in zip(rates["answer"], q.rates["answer"], strict=True)
            if q.kind == "rubric" and int(lv) in q.flagged_levels
        ]
        RatesDisplay(rates, x_label=x_label, flagged=flagged).plot(ax=rax)
        source = (
            "from the process file" if q.pass_source == "process file" else "learnt from labels"
        )
        source = (
            f"pass list {source}" if q.kind == "choice" else f"pass level {q.pass_level} {source}"
        )
        rax.set_title(f"acceptance per {x_label} ({source})", fontsize=9)
    fig.suptitle(title, fontsize=10, y=1 - 0.08 / fig.get_size_inches()[1], va="top")
    return fig


def step_figure(questions: Sequence[QuestionCalibration], *, title: str | None = None) -> Any:
    """Small multiples: one reliability panel (with counts underneath) per question of a step.

    Returns
    -------
    matplotlib.figure.Figure
    """
    k = max(1, len(questions))
    ncols = min(3, k)
    nrows = int(np.ceil(k / ncols))
    # The legend under the panels: up to three entries, in one row when the figure is wide enough.
    legend_cols = 3 if ncols > 1 else 1
    legend_height = 0.22 * int(np.ceil(3 / legend_cols))
    fig = new_figure((4.4 * ncols, 5.0 * nrows + 0.3 + legend_height), layout=None)
    outer = fig.add_gridspec(
        nrows, ncols, hspace=0.32, wspace=0.3, **_margins(fig, top=1.0, bottom=0.6 + legend_height)
    )
    legend: dict[str, Any] = {}
    for i, q in enumerate(questions):
        inner = outer[i // ncols, i % ncols].subgridspec(2, 1, height_ratios=(3.2, 1), hspace=0.06)
        ax = fig.add_subplot(inner[0])
        hist_ax = fig.add_subplot(inner[1], sharex=ax)
        ReliabilityDisplay.from_curve(q.curve, recalibrator=_drawn_map(q), title=q.ask).plot(
            ax=ax, hist_ax=hist_ax, title_width=40, compact=True
        )
        # The panels have no legend of their own: one for the figure says what each line is
        # (the recalibration map among them, when a panel draws one).
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    if legend:
        fig.legend(
            list(legend.values()),
            list(legend),
            loc="lower center",
            ncol=legend_cols,
            fontsize=8,
            frameon=False,
        )
    if title is None and questions:
        q = questions[0]
        week = f" · week of {q.week}" if q.week else ""
        title = f"{step_name(q.process, q.step)} · model {shown_name(q.model, NO_MODEL)}{week}"
    if title:
        fig.suptitle(
            safe_text(title, width=42 * ncols, max_lines=2),
            fontsize=11,
            y=1 - 0.08 / fig.get_size_inches()[1],
            va="top",
        )
    return fig
