"""Values as JSON has them: ISO times, finite floats or None, plain trees and records."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from calibrate.analysis.rate import plain as _plain


def iso(value: Any) -> str | None:
    if value is None or value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
        return None
    try:
        if pd.isna(value):
            return None
    except (TypeError, ValueError):
        pass
    return pd.Timestamp(value).isoformat()


def num(value: Any) -> float | None:
    """A finite float, or None (None, NA, NaN, infinities and what float() refuses)."""
    if value is None or value is pd.NA:
        return None
    try:
        v = float(value)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def pct(value: Any) -> str:
    v = num(value)
    return "–" if v is None else f"{v:.1%}"


def plain_tree(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): plain_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain_tree(v) for v in value]
    return _plain(value)


def records(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    if df is None or df.empty:
        return []
    return json.loads(df.to_json(orient="records"))
