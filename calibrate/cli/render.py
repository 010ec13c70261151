"""Output helpers shared by the commands: JSON to stdout, safe terminal text."""

from __future__ import annotations

import csv
import json
import math
import sys
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

import numpy as np
import typer

from calibrate.textsafe import csv_row, strip_control


def terminal_safe(text: Any) -> str:
    """Text from records, safe for one terminal line (see :func:`calibrate.textsafe.strip_control`)."""
    return strip_control(text)


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, with an ellipsis where it was cut (so it reads as cut)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    try:
        import pandas as pd

        if value is pd.NA or value is pd.NaT:
            return None
    except ImportError:  # pragma: no cover
        pass
    return str(value)


def to_json(value: Any) -> str:
    """Strict JSON (NaN and infinities become null) for machine-readable output.

    Non-ASCII and control characters are written as ``\\u`` escapes, so record
    text can never reach a terminal raw through ``--format json``.
    """
    return json.dumps(_plain(value), indent=2, allow_nan=False, ensure_ascii=True)


def echo_json(value: Any) -> None:
    """Print ``value`` as JSON on stdout."""
    typer.echo(to_json(value))


def write_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> None:
    """CSV on stdout; text cells that a spreadsheet would run as formulas are neutralised."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(csv_row(columns))
    for row in rows:
        cells = (_plain(row.get(c)) for c in columns)  # NaN and NA are empty cells
        writer.writerow(csv_row("" if v is None else v for v in cells))
