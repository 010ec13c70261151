"""Sums of grouped checks, and a column as text: the grouping the agreement analyses share."""

from __future__ import annotations

import numpy as np
import pandas as pd


def text_values(col: pd.Series) -> np.ndarray:
    """``col`` as text in an object array, ``""`` where missing.

    A categorical column is mapped through its few categories: writing a
    million rows out as strings first cost a second per report at a million runs.
    """
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = col.cat.categories.astype("string").to_numpy(dtype=object)
        codes = col.cat.codes.to_numpy()
        return (
            np.where(codes >= 0, cats[np.maximum(codes, 0)], "")
            if cats.size
            else np.full(codes.size, "", dtype=object)
        )
    return col.astype("string").fillna("").to_numpy(dtype=object)


def group_sums(keys_df: pd.DataFrame, values: pd.DataFrame) -> pd.DataFrame:
    """The columns of ``values`` summed per group of ``keys_df`` (one row overall without keys)."""
    frame = pd.concat([keys_df, values], axis=1)
    if not len(keys_df.columns):
        return values.sum().to_frame().T
    return frame.groupby(list(keys_df.columns), dropna=False, sort=True).sum().reset_index()
