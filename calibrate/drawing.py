"""Drawing helpers below every display: safe text, file names, a figure outside pyplot.

Question texts come from process files and verdicts, i.e. untrusted input:
they are stripped of control characters, their ``$`` signs are escaped so
matplotlib never parses them as mathtext, and file names are built from a slug
plus a hash, never from the text itself. matplotlib is imported where a figure
is made, so computing needs no display.
"""

from __future__ import annotations

import hashlib
import re
import textwrap
import unicodedata
from typing import Any

from calibrate.textsafe import strip_control

KIND_NAMES = {"yes_no": "yes/no", "choice": "choice", "rubric": "rubric"}
ACCENT = "#1f77b4"
MAP_COLOUR = "#d62728"
MUTED = "#7f7f7f"


def safe_text(text: Any, *, width: int | None = None, max_lines: int = 3) -> str:
    """Untrusted text made safe to draw: no control characters, no mathtext, wrapped.

    Examples
    --------
    >>> safe_text("costs $5 and $6\\x1b[31m")
    'costs \\\\$5 and \\\\$6'
    """
    clean = strip_control(text).strip()
    if width:
        lines = textwrap.wrap(clean, width=width) or [""]
        if len(lines) > max_lines:
            lines = lines[:max_lines]
            lines[-1] = lines[-1][: max(0, width - 1)] + "…"
        clean = "\n".join(lines)
    return clean.replace("$", r"\$")


def slugify(text: Any, *, max_len: int = 40) -> str:
    """Lower-case ASCII words joined by ``-``; ``"question"`` when nothing is left.

    Examples
    --------
    >>> slugify("../../etc/passwd Überprüfung!")
    'etc-passwd-uberprufung'
    """
    ascii_text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return slug[:max_len].rstrip("-") or "question"


def short_hash(key: str, *, length: int = 10) -> str:
    """First ``length`` hex digits of the SHA-256 of ``key``."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:length]


def figure_stem(text: str, key: str) -> str:
    """A file stem safe on every file system: a slug of ``text`` plus a short hash of ``key``.

    The hash keeps two questions with the same slug (or text) apart.

    Examples
    --------
    >>> figure_stem("Is it OK?", "q1")[:9]
    'is-it-ok-'
    """
    return f"{slugify(text)}-{short_hash(key)}"


def new_figure(figsize: tuple[float, float], *, layout: str | None = "constrained") -> Any:
    """A matplotlib ``Figure`` on the Agg canvas, outside pyplot (no global state, no window)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def legend_if_labelled(ax: Any, **kwargs: Any) -> None:
    """``ax.legend(**kwargs)`` when the axes has labelled artists; else nothing (matplotlib
    would warn "No artists with labels found to put in legend" and draw an empty box)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kwargs)
