"""Suggest check-1 thresholds with a certified bound on false passes and false fails.

The public names of the threshold search, gathered from its parts, one job
each (data moves down this list, never up):

* :mod:`calibrate.analysis.step_data`: the labeled data of one step
  (:class:`StepData`, :func:`step_data`) and the replay of a configuration;
* :mod:`calibrate.analysis.paths`, :mod:`calibrate.analysis.fixed_paths`,
  :mod:`calibrate.analysis.learned_options`,
  :mod:`calibrate.analysis.learned_path`, :mod:`calibrate.analysis.answers_path`:
  the candidate paths;
* :mod:`calibrate.analysis.score_paths`: counts at every threshold of one score;
* :mod:`calibrate.analysis.certify`: the exact tests and bounds along a path;
* :mod:`calibrate.analysis.fallback_walk`: the fallback walk and its checkpoints;
* :mod:`calibrate.analysis.threshold_result`: the result of one step's search
  (:class:`StepThresholds`) and its JSON;
* :mod:`calibrate.analysis.unattainable`: when nothing is certified, whether
  more labels would help;
* :mod:`calibrate.analysis.threshold_search`: the search itself
  (:func:`find_thresholds`), the method and its settings;
* :mod:`calibrate.analysis.tradeoff`: the search over a ladder of ``alpha``
  (:func:`tradeoff`, :class:`TradeoffDisplay`);
* :mod:`calibrate.analysis.threshold_steps`: the search over many steps, from
  DataFrames or a store (:func:`search_step`, :func:`suggest_thresholds`,
  :func:`suggest_from_store`, :class:`ThresholdsReport`), with the labels
  needed (:func:`with_needed`).

The decision rule is :mod:`calibrate.profile`'s alone. The search's settings
(``PASS_SHARE``, ``ANSWERS_PATH_BELOW``, ...) are not re-exported: read or
change them in :mod:`calibrate.analysis.threshold_search` (and
``REFERENCE_ALPHAS`` in :mod:`calibrate.analysis.unattainable`), where the
search reads them.
"""

from __future__ import annotations

from calibrate.analysis.paths import Path
from calibrate.analysis.step_data import (
    SEARCH_ANSWER_COLUMNS,
    SEARCH_CHECK_COLUMNS,
    UNKNOWN_MODEL,
    Rates,
    StepData,
    can_fail,
    isin,
    latest_model,
    read_columns,
    replay,
    replay_cached,  # noqa: F401 - re-exported
    share_check_codes,
    step_data,
    store_step_answers,
    verdict_codes,
)
from calibrate.analysis.threshold_result import STATUSES, StepThresholds
from calibrate.analysis.threshold_search import find_thresholds, search_share
from calibrate.analysis.threshold_steps import (
    ThresholdsReport,
    search_step,
    suggest_from_store,
    suggest_thresholds,
    with_needed,
)
from calibrate.analysis.tradeoff import TradeoffDisplay, tradeoff
from calibrate.profile import Kind, Question  # noqa: F401 - re-exported (docs, doctests)

__all__ = [
    "SEARCH_ANSWER_COLUMNS", "SEARCH_CHECK_COLUMNS", "STATUSES", "UNKNOWN_MODEL", "Path", "Rates",
    "StepData", "StepThresholds", "ThresholdsReport", "TradeoffDisplay", "can_fail",
    "find_thresholds", "isin", "latest_model", "read_columns", "replay", "search_share",
    "search_step", "share_check_codes", "step_data", "store_step_answers", "suggest_from_store",
    "suggest_thresholds", "tradeoff", "verdict_codes", "with_needed",
]  # fmt: skip
