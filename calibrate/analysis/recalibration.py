"""Recalibration maps: from the evaluator's number to the observed acceptance probability.

Isotonic regression or Platt scaling (``sigmoid``), chosen by cross-validated
log loss with ``auto`` (scikit-learn's calibration module, [4]_ to [6]_ of
:mod:`calibrate.analysis.calibration`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibrate.analysis.calibration_scores import (
    Distinct,
    bin_edges,
    brier_score,
    check_binning,
    check_xy,
    ece_mce,
    log_loss,
)
from calibrate.analysis.logistic import ridge_logistic
from calibrate.analysis.plain import num as _num
from calibrate.analysis.stats import MIN_N
from calibrate.defaults import DEFAULT_BINS, DEFAULT_SEED
from calibrate.errors import UsageError

#: Recalibration methods; ``auto`` picks by cross-validated log loss.
METHODS = ("auto", "isotonic", "sigmoid")
#: Clip before the logit so that 0 and 1 stay finite features for Platt scaling.
LOGIT_EPS = 1e-6

# --------------------------------------------------------------------------- recalibration


@dataclass(frozen=True)
class RecalibrationCV:
    """Held-out evaluation of a recalibration map.

    ``*_before`` score the evaluator's raw numbers, ``*_after`` the chosen
    map's out-of-fold predictions (each point predicted by a map fit without
    it), both over the same points and the same binning. The method is chosen
    on the same folds, so ``*_after`` is slightly optimistic (a choice between
    two).
    """

    n_splits: int
    n_bins: int
    strategy: str
    log_loss: dict[str, float]
    ece_before: float
    ece_after: float
    brier_before: float
    brier_after: float


@dataclass(eq=False)
class Recalibrator:
    """A monotone map from the evaluator's number to the observed acceptance probability.

    Build it with :func:`fit_recalibrator`. ``predict(0.9)`` answers "the
    evaluator said 0.9: how often is that accepted?".

    Attributes
    ----------
    method : {"isotonic", "sigmoid", "none"}
        ``none`` when no map could be fit (see ``reason``); ``predict`` then
        returns its input unchanged, i.e. the evaluator's number at face value.
    n, n_positive : int
        Points the map was fit on, and how many were acceptable.
    cv : RecalibrationCV or None
        Held-out before/after scores; ``None`` when no map was fit.
    reason : str or None
        Why no map was fit.
    """

    method: str
    n: int
    n_positive: int
    cv: RecalibrationCV | None = None
    reason: str | None = None
    model: Any = field(default=None, repr=False)

    @property
    def fitted(self) -> bool:
        """Whether a map was fit (``method`` is not ``"none"``)."""
        return self.method != "none"

    @property
    def too_few(self) -> bool:
        """Fit on fewer than :data:`~calibrate.analysis.stats.MIN_N` points."""
        return self.n < MIN_N

    def predict(self, p: Any) -> np.ndarray:
        """Acceptance probability for each evaluator number in ``p`` (clipped into [0, 1])."""
        x = np.clip(np.asarray(p, dtype=float), 0.0, 1.0)
        if self.method == "none":
            return x
        flat = x.ravel()
        out = np.full(flat.shape, np.nan)
        ok = np.isfinite(flat)  # a missing number stays missing
        out[ok] = _predict(self.method, self.model, flat[ok])
        return out.reshape(x.shape)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready summary: method, before/after scores, reason (NaN -> None)."""
        cv = self.cv
        return {
            "method": self.method,
            "n": self.n,
            "reason": self.reason,
            "n_splits": cv.n_splits if cv else None,
            "cv_log_loss": {k: _num(v) for k, v in cv.log_loss.items()} if cv else None,
            "ece_before": _num(cv.ece_before) if cv else None,
            "ece_after": _num(cv.ece_after) if cv else None,
            "brier_before": _num(cv.brier_before) if cv else None,
            "brier_after": _num(cv.brier_after) if cv else None,
        }


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, LOGIT_EPS, 1 - LOGIT_EPS)
    return np.log(p) - np.log1p(-p)


def _fit(method: str, x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> Any:
    """Fit one map; ``weight`` counts how often each point occurs (the same fit as repeating it)."""
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        return IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True, out_of_bounds="clip").fit(
            x, y, sample_weight=weight
        )
    # Platt scaling on the log-odds, with scikit-learn's default L2 penalty (C = 1), which keeps
    # it finite when the classes are separable, common with few labels; solved exactly by Newton
    # steps (a few per fit, where lbfgs took ~20 and stopped at its tolerance).
    w = np.ones(x.size) if weight is None else np.asarray(weight, float)
    (intercept, slope), _ = ridge_logistic(_logit(x)[:, None], y.astype(float), w, 1.0)
    slope, intercept = float(slope), float(intercept)
    if slope < 0:
        # The map must not fall as the evaluator's number rises: a number that points the
        # wrong way carries no usable information, so the map is the base rate.
        rate = np.clip(np.average(y, weights=weight), LOGIT_EPS, 1 - LOGIT_EPS)
        slope, intercept = 0.0, float(np.log(rate) - np.log1p(-rate))
    return slope, intercept


def _predict(method: str, model: Any, x: np.ndarray) -> np.ndarray:
    if method == "isotonic":
        return np.clip(model.predict(x), 0.0, 1.0)
    slope, intercept = model
    return 1.0 / (1.0 + np.exp(-(slope * _logit(x) + intercept)))


def fit_recalibrator(
    y_prob: Any,
    y_true: Any,
    *,
    method: str = "auto",
    n_splits: int = 5,
    n_bins: int = DEFAULT_BINS,
    strategy: str = "uniform",
    random_state: int | None = DEFAULT_SEED,
) -> Recalibrator:
    """Fit a monotone map from the evaluator's number to P(acceptable), checked on held-out folds.

    Two maps are compared: isotonic regression (a free monotone step function)
    and Platt/sigmoid scaling (a logistic regression on ``logit(p)``, with
    scikit-learn's default L2 penalty, C = 1: it keeps the fit finite when the
    outcomes are separable, and shrinks the slope on few labels, e.g. 1.7
    against an unpenalised 4.2 at n = 30; the two agree from about n = 1000). With
    ``method="auto"`` the one with the lower cross-validated log loss is kept.
    Folds are stratified; ``k`` is ``n_splits`` or fewer when either outcome has
    fewer than ``n_splits`` points. The kept map is then refit on all points.
    When the distinct ``(p, y)`` pairs are few (at most :data:`calibrate.analysis.calibration_scores.COMPACT_SHARE`
    of the points) each map is fit on the pairs weighted by their counts in
    the training folds: the same objective (the isotonic fit is identical to
    the last bit, the logistic one up to the order of its sums).

    Parameters
    ----------
    y_prob : array-like of shape (n,)
        The evaluator's numbers in [0, 1].
    y_true : array-like of shape (n,)
        1/True = acceptable.
    method : {"auto", "isotonic", "sigmoid"}, default="auto"
        The map, or ``auto`` to choose by cross-validated log loss.
    n_splits : int, default=5
        Largest number of folds.
    n_bins, strategy : int, str
        Binning of the before/after ECE.
    random_state : int or None, default=0
        Seed of the fold assignment.

    Returns
    -------
    Recalibrator
        ``method == "none"`` (and ``predict`` the identity) when either outcome
        has fewer than two points: nothing can be learnt or checked.

    References
    ----------
    .. [1] Platt, J. (1999). Probabilistic outputs for support vector machines.
    .. [2] Zadrozny, B. and Elkan, C. (2002). Transforming classifier scores
       into accurate multiclass probability estimates. KDD.
    .. [3] Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good
       probabilities with supervised learning. ICML.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(size=400)
    >>> y = rng.uniform(size=400) < 0.2 + 0.6 * p
    >>> r = fit_recalibrator(p, y)
    >>> r.method in ("isotonic", "sigmoid"), bool(0.6 < r.predict(0.9) < 0.85)
    (True, True)
    """
    if method not in METHODS:
        raise UsageError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    check_binning(n_bins, strategy)
    p, y = check_xy(y_prob, y_true)
    n, n1 = int(p.size), int(y.sum())
    minority = min(n1, n - n1)
    if minority < 2:
        reason = (
            "no labels"
            if n == 0
            else f"{minority} {'acceptable' if n1 <= n - n1 else 'not-acceptable'} "
            "point(s): a map needs at least two of each outcome"
        )
        return Recalibrator(method="none", n=n, n_positive=n1, reason=reason)

    from sklearn.model_selection import StratifiedKFold

    k = min(n_splits, minority)
    candidates = ("isotonic", "sigmoid") if method == "auto" else (method,)
    oof = {m: np.empty(n) for m in candidates}
    folds = StratifiedKFold(n_splits=k, shuffle=True, random_state=random_state)
    distinct = Distinct.of(p, y)
    for train, test in folds.split(p, y):
        for m in candidates:
            oof[m][test] = _fit_predict(m, p, y, train, test, distinct)
    scores = {m: log_loss(oof[m], y) for m in candidates}
    chosen = min(candidates, key=lambda m: (scores[m], m != "sigmoid"))  # ties: the smoother map
    edges = bin_edges(p, n_bins=n_bins, strategy=strategy)
    edges_after = bin_edges(oof[chosen], n_bins=n_bins, strategy=strategy)
    cv = RecalibrationCV(
        n_splits=k,
        n_bins=int(n_bins),
        strategy=strategy,
        log_loss=scores,
        ece_before=ece_mce(p, y, edges)[0],
        ece_after=ece_mce(oof[chosen], y, edges_after)[0],
        brier_before=brier_score(p, y),
        brier_after=brier_score(oof[chosen], y),
    )
    model = (
        _fit(chosen, distinct.p, distinct.y, distinct.counts)
        if distinct.compact
        else _fit(chosen, p, y)
    )
    return Recalibrator(method=chosen, n=n, n_positive=n1, cv=cv, model=model)


def _fit_predict(
    method: str,
    p: np.ndarray,
    y: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    distinct: Distinct,
) -> np.ndarray:
    """Out-of-fold predictions for ``test`` from a map fit on ``train``.

    With few distinct ``(p, y)`` pairs the map is fit on the pairs weighted by
    how often each occurs in ``train`` (the same objective as the rows; the
    isotonic fit is identical to the last bit) and predicted once per pair.
    """
    if not distinct.compact:
        return _predict(method, _fit(method, p[train], y[train]), p[test])
    weight = np.bincount(distinct.row[train], minlength=distinct.size)
    used = weight > 0
    model = _fit(method, distinct.p[used], distinct.y[used], weight[used].astype(float))
    return _predict(method, model, distinct.p)[distinct.row[test]]
