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

from calibrate.analysis import fixed_paths
from calibrate.analysis.answer_model import MODEL_C, features, label_model  # re-exported
from calibrate.analysis.logistic import ridge_logistic  # re-exported
from calibrate.analysis.step_data import StepData
from calibrate.analysis.threshold_search import LEARNED_ONLY_FROM
from calibrate.profile import Kind

__all__ = ["MODEL_C", "features", "label_model", "learns_alone", "resample", "ridge_logistic"]


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
