"""Figures shared by the report, the CLI and the notebooks: where they are drawn and written.

The displays live beside what they draw (scikit-learn's pattern):
:mod:`calibrate.analysis.calibration_display` (reliability and answer rates),
:mod:`calibrate.analysis.displays` (agreement over rows and weeks, audits,
the monitor) and the trade-off display in
:mod:`calibrate.analysis.tradeoff`; the drawing helpers are in
:mod:`calibrate.drawing`. This module writes figures to files for the faces
and keeps the names the faces have always imported from here.

File names are built from a slug plus a hash, never from record text.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibrate.analysis.calibration_display import (  # noqa: F401 - re-exported for the faces
    RatesDisplay,
    ReliabilityDisplay,
    question_figure,
    step_figure,
)
from calibrate.analysis.displays import MonitorDisplay  # noqa: F401 - re-exported
from calibrate.drawing import (  # noqa: F401 - re-exported for the faces
    ACCENT,
    MAP_COLOUR,
    MUTED,
    figure_stem,
    new_figure,
    safe_text,
    short_hash,
    slugify,
)

if TYPE_CHECKING:  # pragma: no cover
    from calibrate.analysis.question_calibration import QuestionCalibration


def save_figure(fig: Any, directory: str | Path, stem: str, *, dpi: int = 100) -> dict[str, Path]:
    """Write ``fig`` as ``stem.png`` and ``stem.svg`` in ``directory``.

    SVG text is written as paths (matplotlib's default), so no question text
    lands in the file as markup. The SVG carries no date, so reruns are
    byte-stable.

    Returns
    -------
    dict
        ``{"png": path, "svg": path}``.
    """
    directory = Path(directory)
    if "/" in stem or "\\" in stem or stem.startswith("."):
        raise ValueError(f"unsafe figure name {stem!r}")
    out = {"png": directory / f"{stem}.png", "svg": directory / f"{stem}.svg"}
    import matplotlib

    with (
        warnings.catch_warnings(),
        matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "calibrate"}),
    ):
        # Untrusted text may hold glyphs the font lacks; a missing glyph is not an error.
        warnings.filterwarnings("ignore", message=".*[Gg]lyph.*missing.*")
        # Lay the figure out once, then freeze it: both formats reuse the positions.
        if fig.get_layout_engine() is not None:
            fig.draw_without_rendering()
            fig.set_layout_engine("none")
        fig.savefig(out["png"], dpi=dpi)
        fig.savefig(out["svg"], metadata={"Date": None})
    return out


def write_figures(
    questions: Iterable[QuestionCalibration], out_dir: str | Path
) -> dict[str, dict[str, Path]]:
    """Write a figure per question and a small-multiples figure per step (and model, week).

    File names are ``<slug of the question>-<hash>.png|svg`` and
    ``step-<slug of process-step>-<hash>.png|svg``; the hash covers the
    question id, model and week, so no two groups share a file.

    Returns
    -------
    dict
        ``{question.key: {"png": path, "svg": path}}`` and, for each step
        figure, ``{"step\\x1f<process>\\x1f<step>\\x1f<model>\\x1f<week>": {...}}``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: dict[str, dict[str, Path]] = {}
    steps: dict[tuple[str, str, str, str], list[QuestionCalibration]] = {}
    for q in questions:
        fig = question_figure(q)
        written[q.key] = save_figure(fig, out_dir, figure_stem(q.ask, q.key))
        fig.clear()
        steps.setdefault((q.process, q.step, q.model, q.week or ""), []).append(q)
    for (process, step, model, week), qs in steps.items():
        key = step_key(process, step, model, week)
        fig = step_figure(qs)
        written[key] = save_figure(fig, out_dir, "step-" + figure_stem(f"{process}-{step}", key))
        fig.clear()
    return written


def step_key(process: str, step: str, model: str, week: str | None = None) -> str:
    """The key :func:`write_figures` files a step figure under."""
    return "\x1f".join(["step", process, step, model, week or ""])
