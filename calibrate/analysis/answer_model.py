"""A logistic model of the label given the answers, shared by two readers of a step's labels.

:func:`features` turns each labeled row's answers into standardised numbers
(no label read); :func:`label_model` fits the label on them with row weights
(the labels-needed resampling, :mod:`calibrate.analysis.resample`, draws new
labels from it); :func:`fitted_badness` fits it on some rows' labels only and
predicts every row (the fitted order of a learned path,
:func:`calibrate.analysis.learned_path.joint_path` with ``fitted``). One small exact solver
does both fits (:func:`calibrate.analysis.logistic.ridge_logistic`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import special

from calibrate.analysis.logistic import ridge_logistic
from calibrate.analysis.step_data import StepData
from calibrate.profile import Kind

__all__ = ["MIN_CLASS", "MODEL_C", "features", "fitted_badness", "label_model"]

#: Inverse strength of the label model's ridge penalty (scikit-learn's ``C``, standardised answers).
MODEL_C = 1.0
#: Fewest rows of each label a fit on part of the rows needs (:func:`fitted_badness`).
MIN_CLASS = 5
#: A yes-probability is read on the logit scale, clipped this far from 0 and 1.
_CLIP = 1e-3


def features(data: StepData, rows: np.ndarray | None = None) -> np.ndarray:
    """The answers of each labeled row as standardised numbers, the label model's inputs.

    Whether the check was forced unsure (an error verdict or an incomplete
    answer), then per question: a yes-probability on the logit scale, with
    indicators of 0, 1 and missing (judges answer ties at the ends of the
    scale, and the share of errors there need not follow the logit); a
    rubric level or a choice name as indicators; the confidence, when the
    question has one, as a number with indicators of 1 and missing. The
    model is additive: confidence given with each level or name alike was
    measured to advise closer to what fresh datasets certify than one
    confidence per level or name (fewer parameters on a few hundred
    labels). Each column is standardised over ``rows`` (default: every row),
    and a column constant there is dropped.
    """
    cols: list[np.ndarray] = [data.forced_unsure.astype(float)]
    for i, q in enumerate(data.questions):
        if q.kind is Kind.YES_NO:
            p = data.answer[i].astype(float)
            miss = ~np.isfinite(p)
            lp = np.clip(np.where(miss, 0.5, p), _CLIP, 1.0 - _CLIP)
            cols += [np.log(lp / (1.0 - lp)), miss, p >= 1.0, p <= 0.0]
        else:
            codes = pd.factorize(pd.Series(data.answer[i], dtype=object), use_na_sentinel=True)[0]
            cols += list((codes[:, None] == np.arange(codes.max() + 1)).T)
        conf = data.confidence[i].astype(float)
        has_conf = np.isfinite(conf)
        if has_conf.any():
            cols += [np.where(has_conf, conf, 0.0), ~has_conf, conf >= 1.0]
    x = np.column_stack(cols).astype(float)
    ref = x if rows is None else x[rows]
    sd = ref.std(axis=0)
    keep = sd > 1e-12
    return (x[:, keep] - ref[:, keep].mean(axis=0)) / sd[keep]


def label_model(data: StepData, weights: np.ndarray, x: np.ndarray | None = None) -> np.ndarray:
    """The probability each of today's rows is labeled acceptable, from a weighted logistic fit.

    A ridge-penalised logistic regression of the label on :func:`features`
    (penalty ``||b||^2 / (2 * MODEL_C)`` on the slopes, the intercept free;
    the same fit as scikit-learn's ``LogisticRegression(C=MODEL_C)``), each
    row weighted by its share of the world (``weights``, summing to 1) times
    the rows. With one label class only, or no informative answer, the
    world's share of acceptable rows.
    """
    y = data.acceptable
    base = float(np.average(y, weights=weights))
    if y.all() or not y.any():
        return np.full(data.n, base)
    x = features(data) if x is None else x
    if x.shape[1] == 0:
        return np.full(data.n, base)
    return ridge_logistic(x, y.astype(float), weights * data.n, 1.0 / MODEL_C)[1]


def fitted_badness(data: StepData, rows: np.ndarray) -> np.ndarray | None:
    """Per labeled row, the chance it is labeled not acceptable, fitted on ``rows`` alone.

    The ridge-penalised logistic regression of :func:`label_model`, unweighted,
    on the answers and labels of ``rows`` (a learned path's search part),
    standardised over those rows; every row of ``data`` gets its prediction.

    Parameters
    ----------
    data : StepData
        Every labeled row of the step.
    rows : numpy.ndarray
        Indices of the rows the fit reads.

    Returns
    -------
    numpy.ndarray or None
        One probability per row of ``data``; ``None`` when ``rows`` hold
        fewer than :data:`MIN_CLASS` rows of either label or no answer
        varies among them (nothing to fit).
    """
    y = ~data.acceptable[rows]
    if min(int(y.sum()), int((~y).sum())) < MIN_CLASS:
        return None
    x = features(data, rows)
    if x.shape[1] == 0:
        return None
    coef, _ = ridge_logistic(x[rows], y.astype(float), np.ones(rows.size), 1.0 / MODEL_C)
    return special.expit(coef[0] + x @ coef[1:])
