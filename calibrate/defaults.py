"""Defaults shared by the library and the command line, in a module that imports nothing heavy.

The command line shows these as its options' defaults at start-up, before any
analysis module (pandas, SciPy, scikit-learn) is loaded; the analysis modules
import them from here, so the two cannot disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from calibrate.arguments import argument_name
from calibrate.errors import UsageError

#: Below this many observations a rate is shown as "too few" rather than as a number.
MIN_N = 20

#: The default guarantee: false passes <= alpha and false fails <= beta, with probability >= 1 - delta.
DEFAULT_ALPHA, DEFAULT_DELTA, DEFAULT_BETA = 0.05, 0.1, 0.2

#: A useful check decides at least this share of submissions alone: readiness' ``min_coverage``,
#: the share the threshold search prefers among certified candidates, and labels-needed's share.
MIN_DECIDED = 0.5

#: Labels needed: a useful check decides this share alone, and the advised total certifies one in
#: this share of resampled cases (see calibrate.analysis.needed).
NEEDED_SHARE, NEEDED_PROBABILITY = MIN_DECIDED, 0.8

#: Labels needed is not estimated from fewer labeled checks than this: resamples of a handful of
#: rows only repeat them (two labels read "no total up to 200 labels certifies"; black-box run).
NEEDED_MIN_LABELS = 30

#: The alphas of the default trade-off table.
TRADEOFF_ALPHAS = (0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3)

#: The monitor: a step's enforced checks begin a new enforcement period (a test of their own) when
#: checks recorded with advisory: true came between two enforced pass or unsure verdicts at least
#: this many days apart (a return to advisory and a second switch; docs/method.md).
NEW_PERIOD_GAP_DAYS = 7
#: The monitor is stale when a drawn check has waited this many days for its audit decision (up to
#: the step's latest enforced check): the monitor reads each stream up to its first pending audit,
#: so it has seen nothing new since, and "no alarm" no longer speaks for the check.
STALE_AFTER_DAYS = 14
#: An earlier enforcement period's alarm stands over a later period until at least this many
#: checks recorded with advisory: true after the alarm are labeled: a return to advisory alone,
#: without new evidence to certify the check on, does not clear it.
RECERTIFY_MIN_LABELS = 100

#: Reliability diagrams: number of bins.
DEFAULT_BINS = 10

#: Bootstrap resamples (and their seed) of the calibration error's interval, in `curves`, the
#: report and the API alike, so that one question's ECE interval is the same wherever it is shown.
DEFAULT_N_BOOT, DEFAULT_SEED = 1000, 0


@dataclass(frozen=True)
class ReadinessOptions:
    """Limits of the READY / NOT YET / NO decision, each with its default (see :mod:`calibrate.analysis.readiness`).

    Parameters
    ----------
    alpha : float, default=0.05
        Largest acceptable false-pass rate, P(not acceptable | pass).
    delta : float, default=0.1
        The certified bounds hold with probability at least ``1 - delta``.
    beta : float, default=0.2
        Largest acceptable false-fail rate, P(acceptable | fail).
    min_coverage : float, default=0.5
        Least share of submissions the check must decide without a person
        (pass + fail); below it the check saves little.
    min_labels : int, default=100
        Least labeled checks on the current model and wording before a
        step can be READY (and before a poor result is called NO rather than
        NOT_YET). The drift test needs some data in each half too.
    drift_level : float, default=0.01
        Family-wise level of the drift test (split over the two rates tested).
        Strict on purpose: a drift verdict says NO, and every step is tested,
        so at 0.05 one step in twenty would be refused for noise; the audit
        after the switch watches for smaller drifts.
    max_error_rate : float, default=0.02
        Largest share of ``error`` verdicts (the evaluator did not answer).
    max_truncation_rate : float, default=0.05
        Largest share of checks whose run data was truncated (check-1 §5).
    minutes_per_review : float, default=5.0
        A person's time per reviewed submission, for the hours saved.
    audit_weeks : int, default=4
        After the switch, a rise of the false-pass rate to ``audit_factor x
        alpha`` should be detected within this many weeks.
    audit_factor : float, default=2.0
        The rise the audit is sized to detect, as a multiple of ``alpha``.
    audit_power : float, default=0.8
        Probability that the audit detects that rise within ``audit_weeks``.
    audit_level : float, default=0.05
        False-alarm level of the audit's test.
    recent_days : int, default=28
        The step's recent volume is measured over its last this many days.
    """

    alpha: float = DEFAULT_ALPHA
    delta: float = DEFAULT_DELTA
    beta: float = DEFAULT_BETA
    min_coverage: float = MIN_DECIDED
    min_labels: int = 100
    drift_level: float = 0.01
    max_error_rate: float = 0.02
    max_truncation_rate: float = 0.05
    minutes_per_review: float = 5.0
    audit_weeks: int = 4
    audit_factor: float = 2.0
    audit_power: float = 0.8
    audit_level: float = 0.05
    recent_days: int = 28

    def __post_init__(self) -> None:
        check_readiness_options(asdict(self))

    def to_dict(self) -> dict[str, Any]:
        """The options as a plain dict (for report.json)."""
        return asdict(self)


def alpha_range(factor: float = 2.0) -> str:
    """The range of alpha in words, with why it ends below 1 (``factor``: the audit's).

    Examples
    --------
    >>> alpha_range()
    'must be in (0, 0.5) (the audit after the switch is sized to detect a rise of the false-pass rate to 2 x alpha)'
    """
    return (
        f"must be in (0, {1 / factor:g}) (the audit after the switch is sized to detect a rise "
        f"of the false-pass rate to {factor:g} x alpha)"
    )


def check_readiness_options(values: Mapping[str, Any], *, cli: bool = False) -> None:
    """Refuse settings of :class:`ReadinessOptions` (``values``: its fields, or some of them).

    Each is named as its caller wrote it: the Python keyword (``min_coverage``), or with
    ``cli`` the command-line option (``--min-coverage``), which the CLI checks before it
    builds the options.

    Raises
    ------
    UsageError
        A ``ValueError``, naming the first setting refused and what it must be.
    """
    v = dict(values)

    def name(field: str) -> str:
        return argument_name(field, cli=cli)

    for field in ("delta", "drift_level", "audit_level", "audit_power"):
        if field in v and not 0 < v[field] < 1:
            raise UsageError(f"{name(field)} must be in (0, 1), got {v[field]}")
    # beta = 1: false fails uncontrolled, as for thresholds and monitor.
    if "beta" in v and not 0 < v["beta"] <= 1:
        raise UsageError(
            f"{name('beta')} must be in (0, 1] (1: false fails uncontrolled), got {v['beta']}"
        )
    for field in ("min_coverage", "max_error_rate", "max_truncation_rate"):
        if field in v and not 0 <= v[field] <= 1:
            raise UsageError(f"{name(field)} must be in [0, 1], got {v[field]}")
    factor = v.get("audit_factor", ReadinessOptions.audit_factor)
    alpha = v.get("alpha", ReadinessOptions.alpha)
    if factor <= 1:
        raise UsageError(f"{name('audit_factor')} must be above 1, got {factor}")
    if not 0 < alpha < 1 / factor:
        # One message with the whole range (outside review G10: "must be in (0, 1)" for 1, then
        # "must be below 0.5" for 0.99): the audit is sized to detect a rise to factor x alpha.
        raise UsageError(f"{name('alpha')} {alpha_range(factor)}, got {alpha}")
    for field in ("min_labels", "audit_weeks", "recent_days"):
        if field in v and v[field] < 1:
            raise UsageError(f"{name(field)} must be at least 1, got {v[field]}")
    if v.get("minutes_per_review", 0) < 0:
        raise UsageError(
            f"{name('minutes_per_review')} must be >= 0, got {v['minutes_per_review']}"
        )
