"""Datasets of a larger total resampled from a step's labeled rows, for the labels-needed estimate.

:func:`resample` draws one dataset of ``m`` rows from one plausible world
made of today's labeled rows (the Bayesian bootstrap [1]_: Dirichlet
weights on the rows). How its labels are drawn depends on the search that
will read it:

* A search that reads every label on paths fixed before the labels (one
  yes/no question; one rubric question, or one choice question with its
  lists kept, with or without a learned path beside the fixed paths) gets
  today's rows as they are, labels included.
* A search whose only path is *learned* on a split of the labels
  (:func:`learns_alone`: several questions, or relearned choice lists from
  ``LEARNED_ONLY_FROM`` labels) gets today's answers, but a new label for
  every drawn row, from a logistic model of the label given the answers
  fitted on the world (:func:`label_model`). With copied labels, a resample
  of a few hundred rows to a larger total holds copies of each labeled row,
  and the path learned on some copies is certified on the others: the
  resampled searches certified far more often than fresh datasets of the
  same total did (issue 17). Drawn afresh, the labels of copies of one row
  agree only as much as the model says rows answered alike do, so the
  certification part tells the learned path nothing it has not learned.
  Where fixed paths run beside a learned path, new labels were measured to
  advise far too many labels (the additive model blurs what the fixed
  paths' confidence thresholds read), and copied labels' advice held.

References
----------
.. [1] Rubin, D. B. (1981). The Bayesian bootstrap. The Annals of Statistics
   9(1), 130-134.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from calibrate.analysis import fixed_paths
from calibrate.analysis.logistic import ridge_logistic  # re-exported
from calibrate.analysis.step_data import StepData
from calibrate.analysis.threshold_search import LEARNED_ONLY_FROM
from calibrate.profile import Kind

__all__ = ["features", "label_model", "learns_alone", "resample", "ridge_logistic"]

#: Inverse strength of the label model's ridge penalty (scikit-learn's ``C``, standardised answers).
MODEL_C = 1.0
#: A yes-probability is read on the logit scale, clipped this far from 0 and 1.
_CLIP = 1e-3


def learns_alone(data: StepData, m: int, *, relearn_lists: bool = False) -> bool:
    """Whether the search on ``m`` labels of this step learns a path and runs no fixed path.

    As :func:`calibrate.analysis.threshold_search.find_thresholds` decides it (its
    method ``learned_path``, or ``answers_and_learned_paths``: the answers
    path beside the learned one reads no label, so a new label serves it as
    well as today's): several questions; one choice question without
    known lists; one choice question whose lists are relearned, from
    ``LEARNED_ONLY_FROM`` labels. Not one yes/no question, nor one rubric or
    choice question whose fixed paths read every label (alone, or with a
    learned path beside them).
    """
    qs = data.questions
    if len(qs) == 1 and qs[0].kind is Kind.YES_NO:
        return False
    relearn = relearn_lists and len(qs) == 1 and qs[0].kind is Kind.CHOICE
    return not (fixed_paths.applies(data) and not (relearn and m >= LEARNED_ONLY_FROM))


def features(data: StepData) -> np.ndarray:
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
    labels). Constant columns are dropped.
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
    sd = x.std(axis=0)
    keep = sd > 1e-12
    return (x[:, keep] - x[:, keep].mean(axis=0)) / sd[keep]


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


def resample(rng: np.random.Generator, data: StepData, m: int, *,
             relearn_lists: bool = False, x: np.ndarray | None = None) -> StepData:  # fmt: skip
    """One dataset of ``m`` rows from one plausible world of today's rows (see the module's notes).

    Parameters
    ----------
    rng : numpy.random.Generator
    data : StepData
        Today's labeled rows.
    m : int
        Rows to draw.
    relearn_lists : bool, default=False
        As the search will be run (it decides whether a one-choice search learns a path).
    x : ndarray, optional
        :func:`features` of ``data``, when already computed.
    """
    weights = rng.dirichlet(np.ones(data.n))
    cum = np.cumsum(weights)
    idx = np.minimum(np.searchsorted(cum, rng.random(m) * cum[-1]), data.n - 1)
    out = data.subset(idx)
    if not learns_alone(data, m, relearn_lists=relearn_lists):
        return out
    prob = label_model(data, weights, x)
    return replace(out, acceptable=rng.random(m) < prob[idx])
