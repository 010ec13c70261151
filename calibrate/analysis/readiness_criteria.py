"""The criteria of one step's decision, each a value against its limit.

:func:`step_criteria` measures them (labels, the certified bounds, coverage,
drift, the evaluator models, errors and truncations);
:mod:`calibrate.analysis.readiness_decision` turns them into READY, NOT YET or
NO and says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calibrate.analysis.drift import Drift
from calibrate.analysis.rate import Rate
from calibrate.analysis.rate import plain as _plain
from calibrate.analysis.readiness_decision import (
    REPLAYED,
    SOURCE_WORDS,
    Criterion,
    best_text,
    bound_detail,
    share_text,
)
from calibrate.analysis.stats import MIN_N
from calibrate.analysis.step_evidence import ModelChange
from calibrate.analysis.threshold_view import ThresholdView
from calibrate.defaults import ReadinessOptions

#: The false-fail criterion of a certified check that never fails.
NEVER_FAILS_DETAIL = (
    "the suggested check never fails (what it does not pass goes to a person): "
    "there is no false-fail rate to bound"
)


def step_criteria(
    *, opts: ReadinessOptions, n_labeled: int, tv: ThresholdView, fp_upper: float | None,
    ff_upper: float | None, coverage: float | None, drift: Drift, change: ModelChange,
    error: Rate, truncation: Rate, poor: bool, plenty: bool, point: dict[str, Any] | None,
    certified: bool = True, best_cov: float | None = None, cov_n: int = 0, best_n: int = 0,
    over: str = "",
    never_fails: bool = False,
) -> list[Criterion]:  # fmt: skip
    """Every criterion of one step's decision, each value against its limit.

    Parameters
    ----------
    opts : ReadinessOptions
        The limits.
    n_labeled : int
        Labeled checks on the current model and wording, error verdicts excluded.
    tv : ThresholdView
        The threshold search (its status says why a bound is missing).
    fp_upper, ff_upper : float or None
        The false-pass and false-fail upper bounds: certified, or with
        ``certified`` False the best single-candidate bounds, shown in the
        detail and never as a value.
    coverage : float or None
        The share expected to be decided without a person; ``None`` without
        thresholds to measure.
    drift : Drift
        The drift tests: one criterion per rate tested.
    change : ModelChange
        The evaluator models of the window.
    error, truncation : Rate
        Error verdicts and truncated checks over every check of the current model.
    poor : bool
        Plenty of labels, yet the evidence points the wrong way: a bound
        short of its limit forces NO rather than NOT_YET.
    plenty : bool
        At least ``opts.min_labels`` labeled: short coverage on a certified
        search forces NO.
    point : dict or None
        The observed rates the details quote (:mod:`calibrate.analysis.observed_rates`),
        with their ``source``.
    certified : bool, default=True
        Whether the bounds are certified.
    best_cov : float or None
        The best coverage among the searched thresholds with observed error
        rates within the limits, quoted when given.
    cov_n, best_n : int
        The labeled checks ``coverage`` and ``best_cov`` are shares of.
    over : str, default=""
        Which labels the observed rates are over, when some the search read were left out
        of them (``--with-escalations``); said beside each.
    never_fails : bool, default=False
        The certified check never fails: no false-fail rate to bound.

    Returns
    -------
    list of Criterion
        ``labeled_submissions``, ``false_pass_upper``, ``false_fail_upper``,
        ``coverage``, one ``drift_<rate>`` per test, ``evaluator_models``,
        ``error_rate`` and ``truncation_rate``, in that order.
    """
    thin = "NO" if poor else "NOT_YET"
    conf = 1 - opts.delta
    which = SOURCE_WORDS.get(point.get("source") if point else None, "today's")
    out = [
        Criterion(
            "labeled_submissions", n_labeled, opts.min_labels, n_labeled >= opts.min_labels,
            "NOT_YET", "labeled checks on the current model and wording, without error verdicts",
            f"{n_labeled} labeled (error verdicts excluded); at least {opts.min_labels} needed",
        ),
        # A criterion's value is the certified bound or nothing: the lowest bound a candidate
        # reached without a certificate lives in the detail, never where a script reads a value.
        Criterion(
            "false_pass_upper", fp_upper if certified else None, opts.alpha,
            certified and fp_upper is not None and fp_upper <= opts.alpha,
            thin, f"certified false-pass bound ({conf:.0%} confidence)",
            bound_detail(fp_upper, point and point["false_pass"], "false passes", tv.status, which, over),
        ),
        Criterion(
            "false_fail_upper", ff_upper if certified else None, opts.beta,
            certified and (never_fails or (ff_upper is not None and ff_upper <= opts.beta)),
            thin, f"certified false-fail bound ({conf:.0%} confidence)",
            NEVER_FAILS_DETAIL if never_fails else
            bound_detail(ff_upper, point and point["false_fail"], "false fails", tv.status, which, over),
        ),
        Criterion(
            "coverage", coverage, opts.min_coverage,
            coverage is not None and coverage >= opts.min_coverage,
            "NO" if plenty and tv.status == "ok" else thin,
            "share decided without a person (pass + fail)",
            ("no thresholds to measure" if coverage is None else
             f"{share_text(coverage, cov_n)} expected under the "
             f"{'suggested' if certified else 'current'} thresholds")
            + ("" if best_cov is None else
               f"; at best {best_text(f'{best_cov:.1%}', best_n)}, among the searched thresholds "
               "with observed error rates within the limits"),
        ),
    ]  # fmt: skip
    for t in drift.tests:
        name = f"drift_{t.rate}"
        out.append(
            Criterion(
                name,
                _plain(t.p_value),
                t.level,
                t.testable and not t.drifted,
                "NO" if t.testable else "NOT_YET",
                f"no rise in the {t.rate.replace('_', '-')} rate (one-sided p-value)",
                (
                    f"earlier {t.earlier.text()} vs recent {t.recent.text()}; {t.method} test"
                    + REPLAYED.get(drift.verdicts, "")
                    if t.testable
                    else f"not testable: {_untestable_where(drift)}{drift.missing()}"
                ),
            )  # fmt: skip
        )
    models_detail = ", ".join(
        f"{m['model']} ({m['checks']} checks from {m['first_at']})" for m in change.models
    )
    out.append(
        Criterion(
            "evaluator_models",
            len(change.models),
            1,
            len(change.models) <= 1,
            "NO",
            "one evaluator model throughout the window",
            models_detail or "no checks",
        )
    )
    out.append(
        health_criterion(
            "error_rate", error, opts.max_error_rate,
            "share of error verdicts (the evaluator did not answer)",
        )
    )  # fmt: skip
    out.append(
        health_criterion(
            "truncation_rate", truncation, opts.max_truncation_rate,
            "share of checks with truncated run data",
        )
    )  # fmt: skip
    return out


def _untestable_where(drift: Drift) -> str:
    """Under which thresholds a half holds nothing to compare ("" when it holds no label)."""
    if not drift.undecided:
        return ""
    if drift.verdicts == "suggested":
        return "under today's thresholds and the suggested ones replayed, "
    return "under today's thresholds "


def health_criterion(name: str, rate: Rate, limit: float, label: str) -> Criterion:
    """A rate of the evaluator's health over every check (errors, truncations) against its limit.

    Parameters
    ----------
    name : str
        The criterion's name (``"error_rate"``, ``"truncation_rate"``).
    rate : Rate
        The rate over every check of the current model.
    limit : float
        Its limit.
    label : str
        The criterion in words.

    Returns
    -------
    Criterion
        Not ok without a check; blocks NO from :data:`calibrate.analysis.stats.MIN_N`
        checks, NOT_YET below.
    """
    return Criterion(
        name,
        _plain(rate.rate),
        limit,
        rate.n > 0 and rate.rate <= limit,
        # A rate over a handful of checks is noise: wait rather than refuse.
        "NO" if rate.n >= MIN_N else "NOT_YET",
        label,
        # Above its limit, the rate's digits keep "above the limit" true in print.
        rate.text_against(limit, ">") if rate.n and rate.rate > limit else rate.text(),
    )


#: The criteria about the evaluator itself (besides the drift tests, ``drift_<rate>``): when one
#: fails, the check's fails are not trusted to act alone either.
EVALUATOR_CRITERIA = ("evaluator_models", "error_rate", "truncation_rate")


def distrusts_evaluator(criteria: Sequence[Criterion]) -> bool:
    """Whether a criterion about the evaluator itself fails: a drift, a model change, errors or
    truncations beyond their limits.

    Parameters
    ----------
    criteria : sequence of Criterion
        As :func:`step_criteria` gives them.

    Returns
    -------
    bool
    """
    return any(
        not c.ok and (c.name.startswith("drift_") or c.name in EVALUATOR_CRITERIA) for c in criteria
    )
