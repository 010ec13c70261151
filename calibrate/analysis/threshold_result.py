"""The result of one step's threshold search: :class:`StepThresholds`, its JSON and its trade-off.

What :func:`calibrate.analysis.threshold_search.find_thresholds` returns,
inspectable afterwards: the status, the suggestion and its certificate, every
candidate, the labeled history replayed; ``to_dict()`` is the step object of
``calibrate thresholds --format json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from calibrate.analysis.stats import wilson_interval
from calibrate.analysis.step_data import Rates, StepData
from calibrate.defaults import TRADEOFF_ALPHAS
from calibrate.profile import Kind, Question
from calibrate.textsafe import NO_MODEL, shown_name, step_name

if TYPE_CHECKING:
    from calibrate.analysis.needed import NeededLabels
    from calibrate.analysis.tradeoff import TradeoffDisplay

__all__ = ["STATUSES", "StepThresholds", "lowest_bounds"]

#: Statuses of a step's search.
STATUSES = ("ok", "insufficient_data", "unattainable", "selected_sample")


@dataclass
class StepThresholds:
    """The certified threshold search for one step and model: inspectable afterwards.

    Attributes
    ----------
    process, step, model : str
    status : {"ok", "insufficient_data", "unattainable", "selected_sample"}
        ``"selected_sample"``: the labels include checks decided after the switch (kept by
        ``--with-escalations``), which the enforced check selected: nothing is certified.
    alpha, delta, beta : float
    method : str
        ``"fixed_sequence"`` (one yes/no question, all labels certify),
        ``"fixed_sequence_learned_start"`` (the same from
        :data:`~calibrate.analysis.paths.LEARNED_START_FROM` labels, the pass
        walk's start learned on ``n_search`` of them, the passes certified on
        ``n_certify``, the fails on all),
        ``"fixed_paths"`` (one rubric or choice question under
        :data:`~calibrate.analysis.threshold_search.FIXED_ONLY_BELOW` labels: a path per pass level, all labels
        certify), ``"fixed_and_learned_paths"`` (the same at half of delta,
        with a learned path at the other half; ``n_search`` is 0 when a fixed
        path certified the suggestion), ``"learned_path"`` (search part +
        certification part; with several questions the path is ordered by a
        label model fitted on the search part,
        :func:`~calibrate.analysis.learned_path.joint_path`) or ``"answers_and_learned_paths"`` (several
        questions below :data:`~calibrate.analysis.threshold_search.ANSWERS_PATH_BELOW` labels: a path ordered by
        the answers alone, tested on every label at :data:`~calibrate.analysis.threshold_search.ANSWERS_SHARE` of
        delta, beside the learned path at the rest; ``n_search`` is 0 when
        the answers path certified the suggestion, and the candidates'
        ``path`` says which path each belongs to: 0 the answers path, 1 the
        learned one).
    suggested : list of Question or None
        The certified configuration, or ``None``.
    current : list of Question
        Today's questions and thresholds; where :attr:`today_known` is false, the
        thresholds are the server's defaults as placeholders, not today's.
    certified : dict or None
        Only when the status is ``ok``: ``false_pass_upper``,
        ``false_fail_upper`` (``alpha`` and ``beta``; ``None`` when the
        suggestion never fails: there is no false-fail rate to bound),
        ``never_fails`` and ``confidence``, what holds with probability
        ``confidence``. ``None`` otherwise: nothing is certified.
    best_bounds : dict
        ``false_pass_upper``, ``false_fail_upper``, ``confidence``: the lowest
        one-sided bounds a single candidate reached, each at its path's
        level, each side from its own candidate (not the suggestion's
        bounds). A diagnostic, **not a certificate** (the minimum over many
        candidates is optimistic), and marked so: ``certificate`` is
        ``False``.
    expected, current_rates : Rates or None
        The labeled history replayed under the suggestion / today's thresholds: ``expected``
        is ``None`` without a suggestion, ``current_rates`` where today's thresholds are
        not known (:attr:`today_known`). Where labels
        after the switch were kept (``selected_sample``), today's are replayed on the reviews
        of every verdict alone (``None`` without one), and ``current_note`` says so.
    current_note : str
        Which labels ``current_rates`` is over when some were left out of it (empty
        otherwise).
    candidates : pandas.DataFrame
        Every candidate on every path with counts, exact p-values, bounds, and
        whether it was tested, certified and chosen.
    needed_labels : NeededLabels or None
        When the status is ``insufficient_data`` and :func:`~calibrate.analysis.threshold_steps.search_step` ran
        the estimate: the labels (in total, same model) at which the search
        certifies a check deciding at least a stated share alone, with the
        probability it carries (:mod:`calibrate.analysis.needed`).
    n_labeled, n_search, n_certify : int
    left_out : dict
    notes : list of str
    monitor_alarm : str or None
        On an enforced step whose monitor alarms (:func:`~calibrate.analysis.threshold_steps.suggest_from_store`
        reads it): why. The audits then say the work has moved away from the
        labels the search reads, so its certificate, about the work those
        labels came from, is no reason to keep or loosen the check.
    doubtful_passes : dict or None
        When the suggested yes/no pass threshold is below 0.5 (answers the evaluator scores
        more likely no than yes pass): the labeled answers in between (``n_labeled``,
        ``rejected``), and ``stricter_pass``, the loosest threshold at or above 0.5 the same
        walk certified (every certified candidate holds at once), with the labeled checks it
        passes (``stricter_n_pass`` of ``stricter_n``); the note says it in words.
    enforced : dict or None
        On a step the report reads as enforced (``advisory: false`` in force), what it
        advises: :func:`calibrate.analysis.enforced_advice.enforced_advice`'s entry
        (``recommended``, ``paste``, ...), set by the caller; ``None`` otherwise. The block to
        paste is then the report's, not the search's.
    """

    process: str
    step: str
    model: str
    status: str
    alpha: float
    delta: float
    beta: float
    method: str
    suggested: list[Question] | None
    current: list[Question]
    certified: dict[str, float] | None
    best_bounds: dict[str, float | None]
    expected: Rates | None
    current_rates: Rates | None
    current_note: str
    candidates: pd.DataFrame
    needed_labels: NeededLabels | None
    n_labeled: int
    n_search: int
    n_certify: int
    left_out: dict[str, int]
    notes: list[str]
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    data: StepData | None = field(default=None, repr=False)
    monitor_alarm: str | None = None
    enforced: dict[str, Any] | None = None
    doubtful_passes: dict[str, Any] | None = None

    @property
    def today_known(self) -> bool:
        """Whether today's thresholds are known: a process file names every question.

        Otherwise ``current`` holds the server's defaults as placeholders, a guess the
        recorded verdicts may contradict: not replayed, shown or pasted as today's.
        """
        return self.data is None or all(self.data.known)

    @property
    def check(self) -> list[Question]:
        """The questions to paste: the suggestion, else today's when known, else none."""
        if self.suggested is not None:
            return self.suggested
        return self.current if self.today_known else []

    def check_items(self) -> list[dict[str, Any]]:
        """QUESTION objects: check-1's own keys plus ``kind`` (``one_of``/``levels`` left out)."""
        out = []
        for q in self.check:
            item: dict[str, Any] = {"ask": q.ask, "kind": q.kind.value}
            if q.kind is Kind.YES_NO:
                item["pass"] = q.pass_p
                item["fail"] = q.fail_p
            elif q.kind is Kind.CHOICE:
                item["pass"] = list(q.pass_names)
                item["unsure"] = list(q.unsure_names)
                item["confidence"] = q.confidence
            else:
                item["pass"] = q.pass_level
                item["confidence"] = q.confidence
            out.append(item)
        return out

    def to_dict(self) -> dict[str, Any]:
        """The step object of ``calibrate thresholds --format json`` (issue 5's schema).

        Adds ``needed_labels`` (``{"total", "more", "probability", "weeks", ...}``
        of :meth:`NeededLabels.to_dict`, or ``null``) and ``notes``, one string a
        note, which the readiness assessment reads. ``note`` is the same notes
        joined by ``"; "``, kept one release for scripts that read it: the notes
        themselves hold ``"; "``, so it cannot be split back (read ``notes``).
        ``expected`` is measured on the labels that chose the suggestion, so it is
        optimistic, and empty (``{}``) without a suggestion; ``certified`` holds the bounds
        that account for the search. ``check`` is the suggestion, else today's check when
        its thresholds are known, else empty.
        """
        # Every rate with its counts: a share of ``n``, a false-pass rate of ``n_pass``, ...
        # None without a suggestion, as report.json's: today's shares are `current`.
        shares = _counted_shares(self.expected) if self.suggested is not None else {}
        cur = self.current_rates
        # Each observed rate with its interval (95% Clopper-Pearson, as the table prints it).
        ci = cur.intervals() if cur is not None else {}
        current = {
            "false_pass_rate": cur.false_pass_rate if cur is not None else None,
            "false_pass_ci": list(ci["false_pass"]) if ci.get("false_pass") else None,
            "k_false_pass": cur.false_pass if cur is not None else None,
            "false_fail_rate": cur.false_fail_rate if cur is not None else None,
            "false_fail_ci": list(ci["false_fail"]) if ci.get("false_fail") else None,
            "k_false_fail": cur.false_fail if cur is not None else None,
            **_counted_shares(cur),
            # Which labels these are over, where some were left out (null: every label).
            "note": self.current_note or None,
        }
        needed = (
            self.needed_labels.to_dict()
            if self.needed_labels is not None and self.status == "insufficient_data"
            else None
        )
        return {
            "process": self.process,
            "step": self.step,
            "model": self.model,
            "n_labeled": self.n_labeled,
            "left_out": {k: int(v) for k, v in self.left_out.items()},
            "status": self.status,
            "check": self.check_items(),
            # Under a monitor alarm the certificate is about labels the audits contradict:
            # withheld, as in report.json (`monitor_alarm` says why).
            "certified": (
                dict(self.certified)
                if self.certified is not None and not self.monitor_alarm
                else None
            ),
            "best_bounds": dict(self.best_bounds),
            "expected": shares,
            "current": current,
            "needed_labels": needed,
            "monitor_alarm": self.monitor_alarm,
            "doubtful_passes": dict(self.doubtful_passes) if self.doubtful_passes else None,
            "enforced": dict(self.enforced) if self.enforced is not None else None,
            "notes": list(self.notes),
            "note": "; ".join(self.notes),  # deprecated: the join of `notes`, not splittable
        }

    def tradeoff(self, alphas: Sequence[float] = TRADEOFF_ALPHAS) -> pd.DataFrame:
        """For each ``alpha``: the status, the certified bound and the share decided alone."""
        # The trade-off reruns the search, which builds this object: imported when asked for.
        from calibrate.analysis.tradeoff import tradeoff

        if self.data is None:
            raise ValueError("this result holds no data to recompute the trade-off")
        return tradeoff(self.data, alphas=alphas, **self.settings)

    def tradeoff_display(self, alphas: Sequence[float] = TRADEOFF_ALPHAS) -> TradeoffDisplay:
        """The trade-off as a :class:`~calibrate.analysis.tradeoff.TradeoffDisplay`, this search's point marked."""
        from calibrate.analysis.tradeoff import TradeoffDisplay

        cur = self.current_rates
        current_point = None
        if cur is not None and cur.n and cur.false_pass_rate is not None:
            current_point = (cur.false_pass_rate, (cur.n_pass + cur.n_fail) / cur.n)
        return TradeoffDisplay(
            self.tradeoff(alphas),
            alpha=self.alpha,
            delta=self.delta,
            title=f"{step_name(self.process, self.step)} · model {shown_name(self.model, NO_MODEL)}",
            current=current_point,
        )


def _counted_shares(rates: Rates | None) -> dict[str, Any]:
    """Shares of the labeled checks with their 95% Wilson intervals (``*_ci``) and counts.

    The same intervals as the table and the YAML comments print; ``n``, ``n_pass`` and
    ``n_fail`` are the counts behind them.
    """
    keys = ("auto_pass", "auto_pass_ci", "auto_fail", "auto_fail_ci", "unsure", "unsure_ci")
    if rates is None:
        return dict.fromkeys((*keys, "n", "n_pass", "n_fail"))
    shares = rates.shares()
    out: dict[str, Any] = {}
    for name, k in rates.share_counts().items():
        out[name] = shares[name]
        out[f"{name}_ci"] = [float(x) for x in wilson_interval(k, rates.n)] if rates.n else None
    return {**out, "n": rates.n, "n_pass": rates.n_pass, "n_fail": rates.n_fail}


def lowest_bounds(candidates: pd.DataFrame) -> dict[str, float | None]:
    """The lowest single-candidate bounds reached, each side from its own candidate: a
    diagnostic, not a certificate.

    The false-pass bound is the lowest over candidates that pass something, the false-fail
    bound the lowest over candidates that fail something (a candidate that fails nothing has
    no false-fail rate: it read 0 and won every joint comparison). ``None`` where none does.
    """
    out: dict[str, float | None] = {"false_pass_upper": None, "false_fail_upper": None}
    if candidates.empty:
        return out
    # Column arrays, not filtered frames: a mask over every column of 10k rows costs milliseconds.
    side = candidates["side"].to_numpy()
    for name, n_col, c in (
        ("pass", "n_pass", "false_pass_upper"),
        ("fail", "n_fail", "false_fail_upper"),
    ):
        values = candidates[c].to_numpy(float)[
            ((side == name) | (side == "joint")) & (candidates[n_col].to_numpy() > 0)
        ]
        if values.size:
            out[c] = float(pd.Series(values).min())  # NaN skipped, as a frame's min does
    return out
