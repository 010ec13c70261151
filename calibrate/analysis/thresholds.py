"""Suggest check-1 thresholds with a certified bound on false passes and false fails.

The question this module answers for one checked step and one evaluator
model: *which thresholds let the check decide as many submissions as possible
on its own, while, with probability at least 1 - delta over the labeled
sample,*

* the **false-pass rate** P(not acceptable | verdict pass) is at most ``alpha``, and
* the **false-fail rate** P(acceptable | verdict fail) is at most ``beta``?

Both rates are at the submission level, where the person's decision lives,
and the verdict is the worst question (check-1 §3), so every question of the
step is searched jointly. The decision rule is :func:`calibrate.profile.decide`
and :func:`calibrate.profile.worst`; every candidate is replayed through it.

The method (``docs/method.md`` says it in plain words)
-------------------------------------------------------
A *path* of candidate configurations is ordered from strictest to loosest, and
the candidates are tested one by one with exact binomial tests, stopping at
the first that fails (fixed-sequence testing in Learn-then-Test [1]_, as in
Trust-or-Escalate [2]_). The loosest candidate reached is suggested.

* **One yes/no question.** The path is known before looking at any label
  (a fixed grid of thresholds on the yes-probability), so every label
  certifies; counting is one sort and cumulative sums. The pass threshold
  and the fail threshold are tested on two separate paths, each at
  ``delta / 2`` (Bonferroni), so both bounds hold together with probability
  ``1 - delta``.
* **Anything else.** The path must be learned: a stratified random half of
  the labels (seeded) proposes candidates by block coordinate ascent on the
  Lagrangian of "decide the most within alpha and beta" and orders their
  Pareto front by observed risk; the other half certifies. Each candidate is
  a whole configuration, tested for both rates at once by the
  intersection-union test (p-value = the larger of the two, [3]_), so no
  share of ``delta`` is lost to the pairing.

No configuration may qualify: the result then says ``"insufficient_data"``
(the observed error rates are fine but too few labels to certify them; with an
estimate of the labels needed) or ``"unattainable"`` (no candidate's observed
error rate is below the limit; the best bound reached is shown).

Assumptions: past and future submissions of the step are exchangeable (no
drift, the same evaluator model, people who judge without seeing the verdict),
and the error rate does not fall as the path loosens (the path starts at the
first candidate with enough decisions to be testable).

Treatment of incomplete answers: an ``error`` verdict or an answer with no
value is human work under any thresholds and counts as ``unsure``. A check
asked another set of questions than today's (a question added, dropped or
reworded) was another version of the check: it is left out and counted.

References
----------
.. [1] Angelopoulos, A. N., Bates, S., Candès, E. J., Jordan, M. I. and Lei, L.
   (2021). Learn then Test: calibrating predictive algorithms to achieve risk
   control. arXiv:2110.01052.
.. [2] Jung, J., Brahman, F. and Choi, Y. (2024). Trust or Escalate: LLM
   judges with provable guarantees for human agreement. arXiv:2407.18370.
.. [3] Berger, R. L. (1982). Multiparameter hypothesis testing and acceptance
   sampling. Technometrics 24(4), 295-300.
.. [4] Clopper, C. J. and Pearson, E. S. (1934). The use of confidence or
   fiducial limits illustrated in the case of the binomial. Biometrika 26(4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from calibrate.analysis import certify
from calibrate.analysis.stats import MIN_N, clopper_pearson_interval
from calibrate.defaults import DEFAULT_ALPHA, DEFAULT_BETA, DEFAULT_DELTA, TRADEOFF_ALPHAS
from calibrate.profile import FAIL, PASS, UNSURE, Kind, Limits, Question, decide, worst

#: Share of the labels that learns the path when it must be learned (the rest certifies): half
#: of a small sample, but never more labels than SEARCH_LABELS once a quarter is that many.
SEARCH_FRACTION = 0.5
SEARCH_LABELS = 400
SEARCH_FRACTION_MIN = 0.25


def search_share(n: int) -> float:
    """The share of ``n`` labels that learns a path: ``0.5`` up to 800, then down to ``0.25``.

    A path needs a few hundred labels to be ordered well; beyond that, every
    label certifies more where it counts (the bound's margin shrinks as
    ``1 / sqrt(n)`` of the certification part).
    """
    if n <= 0:
        return SEARCH_FRACTION
    return float(min(SEARCH_FRACTION, max(SEARCH_FRACTION_MIN, SEARCH_LABELS / n)))


#: Share of delta the pass path of a single yes/no question gets; its fail path gets the rest.
#: Passes are where a check saves work and where a wrong certificate costs most; a fail
#: threshold far inside beta (the common case: the lowest answers are nearly all rejected)
#: certifies on few decisions even at a small level.
PASS_SHARE = 0.85
#: A labels-needed estimate beyond this many is "unattainable", not "insufficient".
MAX_LABELS = 1_000_000
#: Statuses of a step's search.
STATUSES = ("ok", "insufficient_data", "unattainable")
UNKNOWN_MODEL = "(unknown model)"


# --------------------------------------------------------------------------- validation


def _validate(alpha: float, delta: float, beta: float) -> None:
    for name, value, closed in (
        ("alpha", alpha, False),
        ("delta", delta, False),
        ("beta", beta, True),
    ):
        ok = isinstance(value, int | float) and math.isfinite(value)
        ok = ok and (0.0 < value <= 1.0 if closed else 0.0 < value < 1.0)
        if not ok:
            span = "(0, 1]" if closed else "(0, 1)"
            raise ValueError(f"{name} must be a number in {span}, got {value!r}")


# --------------------------------------------------------------------------- the labeled matrix


@dataclass
class StepData:
    """The labeled submissions of one step and model, one row per submission.

    Attributes
    ----------
    process, step : str
    model : str
        The evaluator model whose verdicts these are.
    questions : list of Question
        The step's questions with the thresholds in force today (process file,
        else server defaults); ``known[i]`` says whether question ``i``'s
        thresholds are known (a choice or rubric question absent from every
        process file has none).
    known : list of bool
    check_id : ndarray of str
    acceptable : ndarray of bool
        The person's label.
    answer : list of ndarray
        Per question: the yes-probability (float), the answer name (object) or
        the level (float), ``nan``/``None`` where missing.
    confidence : list of ndarray of float
    forced_unsure : ndarray of bool
        ``error`` verdict or an incomplete answer: unsure under any thresholds.
    n_error, n_incomplete : int
        How many of ``forced_unsure`` are error verdicts / incomplete answers.
    left_out : dict
        Labeled checks not used: ``other_models``, ``other_wording``.
    notes : list of str
    """

    process: str
    step: str
    model: str
    questions: list[Question]
    known: list[bool]
    check_id: np.ndarray
    acceptable: np.ndarray
    answer: list[np.ndarray]
    confidence: list[np.ndarray]
    forced_unsure: np.ndarray
    n_error: int = 0
    n_incomplete: int = 0
    left_out: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # What the search derives from the data alone (split, layout, replays), shared by the searches
    # of one step at several alphas (the trade-off); a subset starts with an empty one.
    cache: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def n(self) -> int:
        return int(self.acceptable.size)

    def subset(self, idx: np.ndarray) -> StepData:
        """The same step restricted to the rows ``idx``."""
        return replace(
            self,
            check_id=self.check_id[idx],
            acceptable=self.acceptable[idx],
            answer=[a[idx] for a in self.answer],
            confidence=[c[idx] for c in self.confidence],
            forced_unsure=self.forced_unsure[idx],
        )


def latest_model(subs: pd.DataFrame) -> str:
    """The evaluator model of the step's most recent check (missing models are one "unknown")."""
    if subs.empty:
        return UNKNOWN_MODEL
    # The last row in (at, check_id) order with missing times first, as a stable sort would
    # put it, without sorting: the latest time, then the largest id, then the last row.
    n = len(subs)
    at = (
        pd.to_datetime(subs["at"], utc=True)
        if "at" in subs
        else pd.Series(pd.NaT, index=subs.index)
    )
    timed = at.notna().to_numpy()
    cand = (at == at.max()).to_numpy() & timed if timed.any() else np.ones(n, bool)
    if "check_id" in subs:
        ids = subs["check_id"].astype("str").iloc[np.flatnonzero(cand)]
        cand[np.flatnonzero(cand)] = (ids == ids.max()).to_numpy()
    model = subs["model"].iloc[np.flatnonzero(cand)[-1]]
    return UNKNOWN_MODEL if _missing(model) else str(model)


def _questions_from_answers(ans: pd.DataFrame, limits: Limits) -> tuple[list[Question], list[bool]]:
    """The questions of the latest check (today's wording), in its order; thresholds from the process file."""
    from calibrate.dataset import question_from_row

    out: list[Question] = []
    known: list[bool] = []
    if ans.empty:
        return out, known
    timed = ans.sort_values(["at", "check_id"], kind="stable") if "at" in ans else ans
    latest = timed[timed["check_id"] == timed["check_id"].iloc[-1]]
    order = latest.groupby("ask", sort=False)["position"].min().sort_values(kind="stable")
    for ask in order.index:
        rows = ans[ans["ask"] == ask]
        kind = Kind(rows["kind"].mode().iloc[0])
        in_file = (
            rows[rows["in_process_file"].fillna(False).astype(bool)]
            if "in_process_file" in rows
            else rows.iloc[:0]
        )
        if not in_file.empty and in_file["kind"].iloc[0] == kind.value:
            q = question_from_row(in_file.iloc[-1].to_dict())
            out.append(q)
            known.append(kind is Kind.YES_NO or (kind is Kind.CHOICE and bool(q.pass_names))
                         or (kind is Kind.RUBRIC and q.pass_level is not None))  # fmt: skip
            continue
        if kind is Kind.YES_NO:
            out.append(Question(str(ask), kind, pass_p=limits.check_pass, fail_p=limits.check_fail))
            known.append(True)
        else:
            out.append(Question(str(ask), kind, confidence=limits.check_confidence))
            known.append(False)
    return out, known


def _codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Integer codes of a text column and the distinct values they index (-1: missing)."""
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    return np.asarray(codes, np.intp), pd.Index(np.asarray(uniques, dtype=object))


def isin(column: pd.Series, values: pd.Series) -> np.ndarray:
    """``column.isin(values)`` for text columns as a boolean array, in one hash of both.

    Faster than ``Series.isin`` on Arrow-backed or categorical text, which
    goes through Python objects; a categorical is matched by its categories.
    Missing values are never in.
    """
    if not len(column):
        return np.zeros(0, bool)
    shared = _shared_codes(column, values)
    if shared is not None:  # the same categories: compare codes
        member = np.zeros(len(column.cat.categories) + 1, bool)
        member[shared[1]] = True  # a missing value (-1) marks the extra last slot
        member[-1] = False
        return member[shared[0]]
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = pd.Series(values.cat.remove_unused_categories().cat.categories)
    uniques = pd.Series(pd.unique(values.dropna().astype("str")), dtype="str")
    return _answer_rows(uniques, column) >= 0


def _distinct_pairs(a: np.ndarray, b: np.ndarray, n_b: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct pairs ``(a[i], b[i])`` of non-negative codes, ``b < n_b``, sorted."""
    # Sorting, not np.unique: its hash table is ten times slower on a million integers.
    key = np.sort(a.astype(np.int64) * max(n_b, 1) + b)
    key = key[np.r_[True, key[1:] != key[:-1]]] if key.size else key
    return key // max(n_b, 1), key % max(n_b, 1)


def _shared_codes(column: pd.Series, values: pd.Series) -> tuple[np.ndarray, np.ndarray] | None:
    """Both columns' integer codes when they are categoricals over the same categories, else None."""
    if not (
        isinstance(column.dtype, pd.CategoricalDtype)
        and isinstance(values.dtype, pd.CategoricalDtype)
        and (
            column.cat.categories is values.cat.categories
            or column.cat.categories.equals(values.cat.categories)
        )
    ):
        return None
    return column.cat.codes.to_numpy(), values.cat.codes.to_numpy()


def _answer_rows(check_ids: pd.Series, answer_ids: pd.Series | None) -> np.ndarray:
    """For each answer, the row of its check in ``check_ids`` (unique), or -1."""
    if answer_ids is None or not len(answer_ids):
        return np.zeros(0, np.intp)
    shared = _shared_codes(answer_ids, check_ids)
    if shared is not None:  # the same categories: look rows up by code
        row = np.full(len(answer_ids.cat.categories) + 1, -1, np.intp)
        row[shared[1]] = np.arange(len(check_ids))
        row[-1] = -1
        return row[shared[0]]
    if isinstance(answer_ids.dtype, pd.CategoricalDtype):
        # Match the distinct values once, then look each row up by its code.
        per_value = _answer_rows(check_ids, pd.Series(answer_ids.cat.categories))
        codes = answer_ids.cat.codes.to_numpy()
        return np.where(codes >= 0, per_value[np.maximum(codes, 0)] if per_value.size else -1, -1)
    both = pd.concat(
        [check_ids.astype("str"), answer_ids.astype("str")], ignore_index=True
    )  # one text type, so that one hash table encodes both
    codes, uniques = pd.factorize(both, use_na_sentinel=True)
    codes = np.where(codes < 0, len(uniques), codes)  # missing: matches nothing
    row = np.full(len(uniques) + 1, -1, np.intp)
    row[codes[: len(check_ids)]] = np.arange(len(check_ids))
    row[-1] = -1
    return row[codes[len(check_ids) :]]


def step_data(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    questions: Sequence[Question] = (),
    model: str | None = None,
    limits: Limits | None = None,
) -> StepData:
    """Build the labeled matrix of one step: one row per labeled submission, one column per question.

    Parameters
    ----------
    subs : pandas.DataFrame
        The step's checks (any models, labeled or not), as
        :func:`calibrate.dataset.submissions`.
    answers : pandas.DataFrame
        The step's answers, as :func:`calibrate.dataset.answers`.
    questions : sequence of Question, optional
        The step's questions from the process file; default: the questions of
        the model's latest labeled check (today's wording), with the process
        file's thresholds where known and the server defaults (``limits``)
        otherwise.
    model : str, optional
        Use this evaluator model's checks; default the model of the latest check.
    limits : Limits, optional
        Server defaults for questions no process file names.

    Returns
    -------
    StepData
    """
    limits = limits or Limits()
    if subs.empty:
        raise ValueError("step_data needs at least one check of the step")
    process, step = str(subs["process"].iloc[0]), str(subs["step"].iloc[0])
    model = model if model is not None else latest_model(subs)
    models = subs["model"].astype(object).where(subs["model"].notna(), UNKNOWN_MODEL)
    labeled_all = subs[subs["label"].notna()]
    mine = labeled_all[(models.loc[labeled_all.index] == model).to_numpy()]
    notes: list[str] = []
    left_out = {"other_models": int(len(labeled_all) - len(mine)), "other_wording": 0}

    # Integer codes instead of text: each answer's row in ``mine`` (-1: not a labeled check of
    # the model), and its question; set operations become counts.
    rows_of = _answer_rows(mine["check_id"], answers["check_id"] if not answers.empty else None)
    if questions:
        qs = list(questions)
        known = [
            q.kind is Kind.YES_NO
            or (q.kind is Kind.CHOICE and bool(q.pass_names))
            or (q.kind is Kind.RUBRIC and q.pass_level is not None)
            for q in qs
        ]
    else:
        qs, known = _questions_from_answers(answers[rows_of >= 0], limits)
    asks = [q.ask for q in qs]

    # A check asked exactly today's questions is today's check; one asked another set (a question
    # added, dropped or reworded) was another version of the check and says nothing about this one.
    # An error verdict has no answers and stays: the evaluator failed, a person decides.
    ask_code, ask_names = (
        _codes(answers["ask"]) if rows_of.size else (np.zeros(0, np.intp), pd.Index([]))
    )
    today = set(asks)
    is_today = np.array([a in today for a in ask_names], bool)  # one per distinct question
    mine_rows = np.flatnonzero((rows_of >= 0) & (ask_code >= 0))
    check, ask = _distinct_pairs(rows_of[mine_rows], ask_code[mine_rows], len(ask_names))
    n_asked = np.bincount(check, minlength=len(mine))
    n_today = np.bincount(check, weights=is_today[ask], minlength=len(mine))
    has_any = n_asked > 0
    same_set = (n_asked == n_today) & (n_today == len(today))
    is_error = (mine["verdict"].astype(str) == "error").to_numpy()
    other_wording = has_any & ~same_set & ~is_error
    left_out["other_wording"] = int(other_wording.sum())
    mine = mine[~other_wording]
    cid = mine["check_id"].astype(str).to_numpy()
    n = cid.size
    # Rows of the kept checks renumbered; -1 for the left-out ones.
    renumber = np.where(other_wording, -1, np.cumsum(~other_wording) - 1)
    rows_of = (
        np.where(rows_of >= 0, renumber[np.maximum(rows_of, 0)], -1) if rows_of.size else rows_of
    )

    answer_cols: list[np.ndarray] = []
    conf_cols: list[np.ndarray] = []
    incomplete = np.zeros(n, bool)
    if rows_of.size:
        kind_code, kind_names = _codes(answers["kind"])
    for q in qs:
        conf = np.full(n, np.nan)
        sel = np.zeros(0, np.intp)
        if rows_of.size and q.ask in ask_names:
            sel = np.flatnonzero((ask_code == ask_names.get_loc(q.ask)) & (rows_of >= 0))
            # The last answer of a check to the question counts (as drop_duplicates keep="last").
            _, last = np.unique(rows_of[sel][::-1], return_index=True)
            sel = sel[::-1][last]
        at = rows_of[sel]
        kind_ok = (
            kind_code[sel] == kind_names.get_loc(q.kind.value)
            if sel.size and q.kind.value in kind_names
            else np.zeros(sel.size, bool)
        )
        if sel.size:
            conf[at] = pd.to_numeric(answers["confidence"].iloc[sel], errors="coerce").to_numpy(
                float
            )
        if q.kind is Kind.CHOICE:
            vals = np.full(n, None, dtype=object)
            if sel.size:
                got = answers["name"].iloc[sel]
                names = got.astype(object).where(got.notna(), None).to_numpy()
                vals[at] = np.where(kind_ok, names, None)
            missing = pd.isna(vals)
        else:
            col = "p" if q.kind is Kind.YES_NO else "level"
            vals = np.full(n, np.nan)
            if sel.size:
                got = pd.to_numeric(answers[col].iloc[sel], errors="coerce").to_numpy(float)
                vals[at] = np.where(kind_ok, got, np.nan)
            missing = np.isnan(vals)
        incomplete |= missing
        answer_cols.append(vals)
        conf_cols.append(conf)
    is_error = (mine["verdict"].astype(str) == "error").to_numpy()
    forced = is_error | incomplete
    n_incomplete = int((incomplete & ~is_error).sum())
    if left_out["other_models"]:
        notes.append(
            f"{left_out['other_models']} labeled checks of other evaluator models left out"
        )
    if left_out["other_wording"]:
        notes.append(f"{left_out['other_wording']} labeled checks asked other questions; left out")
    if n_incomplete:
        notes.append(f"{n_incomplete} checks have an answer with no value; counted as unsure")
    if int(is_error.sum()):
        notes.append(f"{int(is_error.sum())} error verdicts counted as unsure (human work)")
    if "conflict" in mine and n:
        conflicts = int(mine["conflict"].fillna(False).astype(bool).sum())
        if conflicts:
            notes.append(f"{conflicts} checks had conflicting decisions; the latest counts")
    if "advisory" in mine and n:
        enforced = int((~mine["advisory"].fillna(True).astype(bool)).sum())
        if enforced:
            notes.append(
                f"{enforced} labeled checks were enforced, not advisory: if people saw only "
                "escalations their labels are not a representative sample"
            )
    return StepData(
        process=process,
        step=step,
        model=model,
        questions=qs,
        known=known,
        check_id=cid,
        acceptable=mine["label"].astype(bool).to_numpy(),
        answer=answer_cols,
        confidence=conf_cols,
        forced_unsure=forced,
        n_error=int(is_error.sum()),
        n_incomplete=n_incomplete,
        left_out=left_out,
        notes=notes,
    )


# --------------------------------------------------------------------------- replaying a configuration


def verdict_codes(questions: Sequence[Question], data: StepData) -> np.ndarray:
    """The verdict (``PASS``/``FAIL``/``UNSURE``) of every submission under ``questions``.

    Applies :func:`calibrate.profile.decide` to each question and
    :func:`calibrate.profile.worst` across them; a forced-unsure submission
    is ``UNSURE`` whatever the thresholds.
    """
    if len(questions) != len(data.answer):
        raise ValueError("one question per answer column expected")
    if data.n == 0:
        return np.zeros(0, dtype=np.int8)
    results = np.column_stack([_decided(data, i, q) for i, q in enumerate(questions)])
    out = worst(results)
    out[data.forced_unsure] = UNSURE
    return out


def _decided(data: StepData, i: int, q: Question) -> np.ndarray:
    """:func:`calibrate.profile.decide` of question ``i``, remembered on ``data``.

    Candidates on a path differ from each other in one question or two, so
    each question's thresholds are decided once however many candidates share them.
    """
    key = ("decide", i, repr(q))
    if key not in data.cache:
        data.cache[key] = decide(q, data.answer[i], data.confidence[i])
    return data.cache[key]


@dataclass(frozen=True)
class Rates:
    """Counts and rates of a configuration replayed on labeled submissions."""

    n: int
    n_pass: int
    false_pass: int
    n_fail: int
    false_fail: int

    @classmethod
    def of(cls, codes: np.ndarray, acceptable: np.ndarray) -> Rates:
        p, f = codes == PASS, codes == FAIL
        return cls(
            n=int(codes.size),
            n_pass=int(p.sum()),
            false_pass=int((p & ~acceptable).sum()),
            n_fail=int(f.sum()),
            false_fail=int((f & acceptable).sum()),
        )

    @property
    def false_pass_rate(self) -> float | None:
        return self.false_pass / self.n_pass if self.n_pass else None

    @property
    def false_fail_rate(self) -> float | None:
        return self.false_fail / self.n_fail if self.n_fail else None

    def shares(self) -> dict[str, float | None]:
        if not self.n:
            return {"auto_pass": None, "auto_fail": None, "unsure": None}
        return {
            "auto_pass": self.n_pass / self.n,
            "auto_fail": self.n_fail / self.n,
            "unsure": (self.n - self.n_pass - self.n_fail) / self.n,
        }

    def intervals(self) -> dict[str, tuple[float, float] | None]:
        """Two-sided 95% Clopper-Pearson intervals of both rates (``None`` without decisions)."""
        out: dict[str, tuple[float, float] | None] = {}
        for key, k, n in (
            ("false_pass", self.false_pass, self.n_pass),
            ("false_fail", self.false_fail, self.n_fail),
        ):
            if n:
                lo, hi = clopper_pearson_interval(k, n)
                out[key] = (float(lo), float(hi))
            else:
                out[key] = None
        return out


def replay(questions: Sequence[Question], data: StepData) -> Rates:
    """Replay the labeled history under ``questions``."""
    return Rates.of(verdict_codes(questions, data), data.acceptable)


def can_fail(questions: Sequence[Question]) -> bool:
    """Whether any submission could get the verdict ``fail`` under ``questions``.

    A yes/no question with ``fail: 0`` never fails; a rubric with ``pass: 0``
    never fails; a choice whose every answer name is listed as pass or unsure
    never fails (when its names are known).
    """
    for q in questions:
        if q.kind is Kind.YES_NO:
            fail_at = q.pass_p if q.fail_p is None else min(q.fail_p, q.pass_p)
            if fail_at is not None and fail_at > 0:
                return True
        elif q.kind is Kind.RUBRIC:
            if q.pass_level is None or q.pass_level > 0:
                return True
        else:
            if not q.one_of or set(q.one_of) - set(q.pass_names) - set(q.unsure_names):
                return True
    return False


# --------------------------------------------------------------------------- candidates and the path


@dataclass
class Path:
    """Candidates in fixed-sequence order (strictest first) with their counts on the certification data.

    One ``Path`` is tested as one sequence. ``tests`` says which rates it
    certifies: ``("pass",)``, ``("fail",)`` or ``("pass", "fail")`` (jointly,
    by the intersection-union test).
    """

    side: str
    tests: tuple[str, ...]
    n_pass: np.ndarray
    false_pass: np.ndarray
    n_fail: np.ndarray
    false_fail: np.ndarray
    never_fails: np.ndarray
    describe: list[str]
    delta: float
    configs: list[list[Question]] | None = None
    thresholds: np.ndarray | None = None  # one-score paths: the grid threshold per candidate
    below: np.ndarray | None = None  # one-score paths: the interval deciding alike, (below, above]
    above: np.ndarray | None = None
    n_total: int = 0

    def pvalues(self, *, alpha: float, beta: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Exact p-values: for false passes, for false fails, and the one tested (their max)."""
        pp = certify.binomial_pvalues(self.false_pass, self.n_pass, limit=alpha)
        pf = certify.binomial_pvalues(self.false_fail, self.n_fail, limit=beta)
        pf = np.where(self.never_fails | (beta >= 1.0), 0.0, pf)
        zero = np.zeros_like(pp)
        p = np.maximum(pp if "pass" in self.tests else zero, pf if "fail" in self.tests else zero)
        return pp, pf, p

    def testable(self, *, alpha: float, beta: float) -> np.ndarray:
        """Candidates some outcome could reject at the path's level: the others are stepped over.

        A candidate with fewer than :func:`~calibrate.analysis.certify.min_count`
        decisions on a tested side cannot be rejected whatever its labels;
        which ones these are depends on the counts alone.
        """
        ok = np.ones(self.n_pass.shape, bool)
        if "pass" in self.tests:
            ok &= self.n_pass >= certify.min_count(alpha, self.delta)
        if "fail" in self.tests and beta < 1.0:
            ok &= self.never_fails | (self.n_fail >= certify.min_count(beta, self.delta))
        return ok

    def weights(self, *, alpha: float, beta: float) -> np.ndarray:
        """Fallback weights (summing to the path's level) on the testable candidates.

        Checkpoints are placed by the decisions the path's main test counts
        (passes, or fails on a fail path), see
        :func:`~calibrate.analysis.certify.checkpoint_weights`.
        """
        tested = self.testable(alpha=alpha, beta=beta)
        if self.side == "fail":
            counts, limit = self.n_fail, beta
        else:
            counts, limit = self.n_pass, alpha
        return certify.checkpoint_weights(counts, limit=limit, level=self.delta, testable=tested)

    def run(self, *, alpha: float, beta: float) -> tuple[int | None, pd.DataFrame]:
        """The fallback walk along the path; the chosen index and every candidate's numbers.

        Every rejected candidate is certified (all at once, with probability
        at least ``1 - delta`` of the path); the one chosen decides the most
        submissions on the certification data (the loosest, on ties).
        """
        pp, pf, p = self.pvalues(alpha=alpha, beta=beta)
        tested = self.testable(alpha=alpha, beta=beta)
        weights = self.weights(alpha=alpha, beta=beta)
        order = np.flatnonzero(tested)
        _, lv, rej = certify.fallback(p[order], weights[order])
        levels = np.zeros(p.shape)
        certified = np.zeros(p.shape, bool)
        levels[order], certified[order] = lv, rej
        chosen = None
        if certified.any():
            decided = np.where(certified, self.n_pass + self.n_fail, -1)
            chosen = int(np.flatnonzero(decided == decided.max())[-1])
        frame = pd.DataFrame(
            {
                "side": self.side,
                "position": np.arange(p.size),
                "thresholds": self.describe,
                "n_pass": self.n_pass,
                "false_pass": self.false_pass,
                "n_fail": self.n_fail,
                "false_fail": self.false_fail,
                "false_pass_upper": certify.upper_bound(
                    self.false_pass, self.n_pass, delta=self.delta
                ),
                "false_fail_upper": np.where(
                    self.never_fails,
                    0.0,
                    certify.upper_bound(self.false_fail, self.n_fail, delta=self.delta),
                ),
                "p_false_pass": pp,
                "p_false_fail": pf,
                "p_value": p,
                "weight": weights,
                "level": levels,
                "tested": tested,
                "certified": certified,
                "chosen": np.arange(p.size) == (chosen if chosen is not None else -1),
            }
        )
        return chosen, frame


def _yes_no_paths(data: StepData, *, delta_pass: float, delta_fail: float) -> tuple[Path, Path]:
    """The two one-score paths of a single yes/no question, on a fixed grid, with all labels.

    Each candidate's threshold is then loosened as far as it can go without
    changing a decision on the labeled data, and written as a short decimal.
    """
    if "score_paths" not in data.cache:  # the grid paths do not depend on alpha, beta or delta
        p = np.where(data.forced_unsure, np.nan, data.answer[0].astype(float))
        data.cache["score_paths"] = (
            certify.score_path(p, ~data.acceptable, descending=True),
            certify.score_path(p, data.acceptable, descending=False),
        )
    up, down = data.cache["score_paths"]
    k = up.n.size
    pass_path = Path(
        side="pass",
        tests=("pass",),
        n_pass=up.n,
        false_pass=up.errors,
        n_fail=np.zeros(k, int),
        false_fail=np.zeros(k, int),
        never_fails=np.ones(k, bool),
        describe=[f"pass {x:.4f}" for x in up.threshold],
        delta=delta_pass,
        thresholds=up.threshold,
        below=up.below,
        above=up.above,
        n_total=data.n,
    )
    j = down.n.size
    fail_path = Path(
        side="fail",
        tests=("fail",),
        n_pass=np.zeros(j, int),
        false_pass=np.zeros(j, int),
        n_fail=down.n,
        false_fail=down.errors,
        never_fails=np.zeros(j, bool),
        describe=[f"fail {x:.4f}" for x in down.threshold],
        delta=delta_fail,
        thresholds=down.threshold,
        below=down.below,
        above=down.above,
        n_total=data.n,
    )
    return pass_path, fail_path


def _loosened(path: Path, i: int) -> float:
    """Candidate ``i``'s threshold as a short decimal making the same decisions on the labels.

    Every threshold in ``(below, above]`` decides the labeled submissions as
    the grid point does, so it carries the same test. The one written is the
    shortest decimal on the loose side of the grid point (between it and the
    next observed score), so the suggestion is never stricter than the grid
    point; it needs more than three places only when an observed score lies
    that close to the grid point.
    """
    t, below, above = (float(x[i]) for x in (path.thresholds, path.below, path.above))
    if path.side == "pass":
        low = max(below, -1e-9)
        out = certify.nice_threshold(low, t, prefer="low") if t > low else t
    else:
        high = min(above, 1.0)
        out = certify.nice_threshold(t - 1e-12, high, prefer="high") if high > t else t
    return float(min(max(out, 0.0), 1.0))


# ----- learned paths: block coordinate ascent on a Lagrangian, on the search part

#: Quantiles of the search part tried per continuous threshold.
_N_PASS_VALUES = 40
_N_FAIL_VALUES = 20
_N_CONF_VALUES = 32
#: Multipliers of the Lagrangian tried, loose to strict: an error costs about ``weight`` decisions.
_WEIGHTS = np.geomspace(1.0, 1e4, 16)
#: Options whose result codes are computed at once.
_CHUNK = 16
_FAIL_WEIGHTS = np.r_[0.0, np.geomspace(1.0, 1e4, 9)]


@dataclass
class _Options:
    """Every threshold combination tried for one question, with its result codes on the search part.

    Search rows whose codes agree under every option form one *bucket*, so the
    codes are kept per bucket and a gain is a sum over buckets: one pass over the
    rows per call (``bincount``) instead of one per option.
    """

    q: int
    options: list[dict[str, float]]
    codes: np.ndarray  # (n_options, n_buckets) int8
    bucket: np.ndarray  # (n_search,) the bucket of each search row
    is_pass: np.ndarray = field(init=False)  # float64 indicators per bucket
    is_fail: np.ndarray = field(init=False)
    decided: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.is_pass = (self.codes == PASS).astype(float)
        self.is_fail = (self.codes == FAIL).astype(float)
        self.decided = self.is_pass + self.is_fail

    @classmethod
    def of(cls, q: int, options: list[dict[str, float]], codes: np.ndarray) -> _Options:
        """Distinct options (the first, loosest, of each set deciding alike) over bucketed rows."""
        bucket, columns = _buckets(codes)
        # Options that decide the search part identically are one candidate; keep the first.
        _, first = np.unique(columns, axis=0, return_index=True)
        keep = np.sort(first)
        return cls(q, [options[k] for k in keep], columns[keep], bucket)

    def row_codes(self, k: int) -> np.ndarray:
        """Result codes of option ``k`` on every search row."""
        return self.codes[k][self.bucket]

    def gains(self, rest: np.ndarray, value_pass: np.ndarray, value_fail: np.ndarray) -> np.ndarray:
        """The objective of every option with the other questions' worst result ``rest`` held.

        The verdict is the worst result: where the rest passes, this question decides; where the
        rest fails, the verdict fails unless this question is unsure; where it is unsure, nothing.
        """
        rest_pass, rest_fail = rest == PASS, rest == FAIL
        m = self.codes.shape[1]
        sums = [
            np.bincount(self.bucket, weights=np.where(on, v, 0.0), minlength=m)
            for on, v in ((rest_pass, value_pass), (rest_pass, value_fail), (rest_fail, value_fail))
        ]
        return self.is_pass @ sums[0] + self.is_fail @ sums[1] + self.decided @ sums[2]


def _buckets(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Group the columns (rows of the data) of ``codes`` that are equal: each row's bucket and the codes per bucket."""
    if codes.shape[1] == 0:
        return np.zeros(0, np.intp), codes
    cols = np.ascontiguousarray(codes.T)
    keys = cols.view(np.dtype((np.void, cols.dtype.itemsize * cols.shape[1]))).ravel()
    _, first, bucket = np.unique(keys, return_index=True, return_inverse=True)
    return bucket.ravel(), np.ascontiguousarray(codes[:, first])


@dataclass
class _Layout:
    """How the questions of a step map onto thresholds (learned on the search part)."""

    blocks: list[_Options]
    rank_names: dict[int, list[str]]  # relearned choice: names ordered worst to best
    relearn: set[int]
    levels: dict[int, int]  # rubric: number of levels
    score: dict[int, np.ndarray]  # per question, the score its pass rule reads (all rows)
    fixed: dict[int, np.ndarray]  # kept-list choice: result code by answer name (all rows)
    observed: dict[tuple[int, str], np.ndarray]  # distinct search-part values, for short decimals


def _grid(values: np.ndarray, k: int) -> np.ndarray:
    u = np.unique(values[np.isfinite(values)])
    if u.size > k:
        u = np.unique(np.quantile(u, np.linspace(0, 1, k), method="nearest"))
    return u


def _question_codes(
    layout: _Layout, data: StepData, rows: np.ndarray, q: int, t: Mapping[str, Any]
) -> np.ndarray:
    """Result codes of question ``q`` on ``rows`` for thresholds ``t``; values may be arrays (vectorised).

    The same rule as :func:`calibrate.profile.decide` (tested against it), written over scores so that
    many candidate thresholds are evaluated in one pass.
    """
    kind = data.questions[q].kind
    conf = data.confidence[q][rows]
    if kind is Kind.YES_NO:
        p = layout.score[q][rows]
        a, b = np.asarray(t["pass"], float)[..., None], np.asarray(t["fail"], float)[..., None]
        with np.errstate(invalid="ignore"):
            out = np.where(p >= a, PASS, np.where(p < np.minimum(a, b), FAIL, UNSURE))
        return out.astype(np.int8)
    c = np.asarray(t["confidence"], float)[..., None]
    with np.errstate(invalid="ignore"):
        low = ~(conf >= c)  # a missing confidence is below any threshold
    if kind is Kind.RUBRIC:
        lv = layout.score[q][rows]
        level = np.asarray(t["level"], float)[..., None]
        out = np.where(lv >= level, PASS, FAIL)
    elif q in layout.relearn:
        r = layout.score[q][rows]
        k, kf = (
            np.asarray(t["rank"], float)[..., None],
            np.asarray(t["rank_fail"], float)[..., None],
        )
        with np.errstate(invalid="ignore"):
            out = np.where(r >= k, PASS, np.where(r < np.minimum(k, kf), FAIL, UNSURE))
    else:
        out = np.broadcast_to(layout.fixed[q][rows], low.shape)
    return np.where(low, UNSURE, out).astype(np.int8)


def _layout(data: StepData, search: np.ndarray, *, relearn_lists: bool) -> _Layout:
    rank_names: dict[int, list[str]] = {}
    relearn: set[int] = set()
    levels: dict[int, int] = {}
    score: dict[int, np.ndarray] = {}
    fixed: dict[int, np.ndarray] = {}
    observed: dict[tuple[int, str], np.ndarray] = {}
    option_sets: list[tuple[int, list[dict[str, float]]]] = []
    for i, q in enumerate(data.questions):
        ans, conf = data.answer[i], data.confidence[i].astype(float)
        if q.kind is Kind.YES_NO:
            p = ans.astype(float)
            score[i] = p
            ps = p[search]
            observed[(i, "pass")] = observed[(i, "fail")] = np.unique(ps[np.isfinite(ps)])
            a_vals = np.r_[-np.inf, _grid(ps, _N_PASS_VALUES), np.inf]
            b_vals = np.r_[-np.inf, _grid(ps, _N_FAIL_VALUES)]
            opts = []
            for a in a_vals:
                opts += [{"pass": a, "fail": b} for b in b_vals if b < a]
                opts.append({"pass": a, "fail": np.inf})  # fail below pass: no unsure band
            option_sets.append((i, opts))
            continue
        cs = conf[search]
        observed[(i, "confidence")] = np.unique(cs[np.isfinite(cs)])
        c_vals = np.r_[-np.inf, _grid(cs, _N_CONF_VALUES)]
        if q.kind is Kind.RUBRIC:
            lv = ans.astype(float)
            top = int(np.nanmax(lv)) + 1 if np.isfinite(lv).any() else 2
            levels[i] = max(len(q.levels), top, 2)
            score[i] = lv
            opts = [
                {"level": float(L), "confidence": c} for L in range(levels[i] + 1) for c in c_vals
            ]
        elif relearn_lists or not data.known[i]:
            relearn.add(i)
            s_names, s_ok = ans[search], data.acceptable[search]
            have = np.array([v is not None for v in s_names], bool)
            seen = pd.Series(s_ok[have]).groupby(pd.Series(s_names[have], dtype=object)).mean()
            # Worst first; ties by name so the order is reproducible.
            order = sorted(seen.index, key=lambda n: (seen[n], str(n)))
            rank_names[i] = [str(n) for n in order]
            pos = {n: k for k, n in enumerate(rank_names[i])}
            score[i] = np.array([float(pos[v]) if v in pos else np.nan for v in ans], dtype=float)
            r = len(order)
            opts = [
                {"rank": float(k), "rank_fail": float(kf), "confidence": c}
                for k in range(r + 1)
                for kf in range(k + 1)
                for c in c_vals
            ]
        else:
            code = np.full(ans.shape, FAIL, dtype=np.int8)
            code[np.isin(ans, list(q.pass_names))] = PASS
            code[np.isin(ans, list(q.unsure_names))] = UNSURE
            code[np.array([v is None for v in ans], bool)] = UNSURE
            fixed[i] = code
            opts = [{"confidence": c} for c in c_vals]
        option_sets.append((i, opts))
    layout = _Layout([], rank_names, relearn, levels, score, fixed, observed)
    for i, opts in option_sets:
        keys = opts[0].keys()
        arrays = {k: np.array([o[k] for o in opts], float) for k in keys}
        # A few options at a time: the rule's intermediates are eight bytes per row and option.
        codes = np.concatenate(
            [
                _question_codes(
                    layout, data, search, i, {k: v[j : j + _CHUNK] for k, v in arrays.items()}
                )
                for j in range(0, len(opts), _CHUNK)
            ]
        )
        layout.blocks.append(_Options.of(i, opts, codes))
    return layout


def _ascend(
    blocks: Sequence[_Options], values: tuple[np.ndarray, np.ndarray], forced: np.ndarray,
    choice: list[int], *, rounds: int = 4,
) -> list[int]:  # fmt: skip
    """Block coordinate ascent: each question in turn gets its best combination of thresholds.

    ``values`` holds what a passed and a failed submission are worth (an
    unsure one is worth nothing); see :func:`_joint_path`. Each question's
    thresholds are chosen together (so a pass and a fail threshold move as
    one) with the other questions held; a tie keeps the current option.
    """
    value_pass, value_fail = values
    current = [b.row_codes(k) for b, k in zip(blocks, choice, strict=True)]
    n = forced.size
    for _ in range(rounds):
        changed = False
        for j, block in enumerate(blocks):
            others = current[:j] + current[j + 1 :]
            rest = np.max(np.vstack(others), axis=0) if others else np.zeros(n, np.int8)
            rest = np.where(forced, UNSURE, rest)
            gain = block.gains(rest, value_pass, value_fail)
            best = np.flatnonzero(gain >= gain.max() - 1e-4)
            if choice[j] in best:
                continue  # a tie keeps the current option: moves must pay on the search part
            choice[j] = int(best[0])
            current[j] = block.row_codes(choice[j])
            changed = True
        if not changed:
            break
    return choice


def _short(value: float, observed: np.ndarray, *, prefer: str) -> float:
    """A short decimal making the same decisions on the search part as ``value``."""
    if not math.isfinite(value):
        return value
    below = observed[observed < value]
    low = float(below[-1]) if below.size else value - 1.0
    return certify.nice_threshold(low, value, prefer=prefer) if low < value else value


def _config(data: StepData, layout: _Layout, choice: Sequence[int]) -> list[Question]:
    """The questions of one candidate, with short decimals and check-1's bounds."""
    theta = {b.q: b.options[k] for b, k in zip(layout.blocks, choice, strict=True)}
    out: list[Question] = []

    def unit(i: int, key: str, prefer: str) -> float:
        v = theta[i][key]
        if v == -np.inf:
            return 0.0
        if v == np.inf:
            return 1.0
        return float(min(max(_short(v, layout.observed[(i, key)], prefer=prefer), 0.0), 1.0))

    for i, q in enumerate(data.questions):
        t = theta[i]
        if q.kind is Kind.YES_NO:
            a = unit(i, "pass", "low")
            if t["fail"] == np.inf:
                fail = None
            else:
                b = unit(i, "fail", "high")
                fail = None if b >= a else b
            out.append(replace(q, pass_p=a, fail_p=fail))
        elif q.kind is Kind.RUBRIC:
            n_levels = layout.levels[i]
            texts = q.levels or tuple(f"level {k}" for k in range(n_levels))
            out.append(replace(q, pass_level=int(t["level"]), confidence=unit(i, "confidence", "low"),
                               levels=tuple(texts)))  # fmt: skip
        elif i in layout.relearn:
            order = layout.rank_names[i]
            k, kf = int(t["rank"]), int(min(t["rank_fail"], t["rank"]))
            names = list(q.one_of) if q.one_of else []
            names += [n for n in order if n not in names]
            pass_names = tuple(order[k:])
            fail_names = set(order[:kf])
            unsure = tuple(n for n in names if n not in pass_names and n not in fail_names)
            one_of = dict(q.one_of) if q.one_of else {}
            for n in names:
                one_of.setdefault(n, n)
            out.append(replace(q, pass_names=pass_names, unsure_names=unsure,
                               confidence=unit(i, "confidence", "low"), one_of=one_of))  # fmt: skip
        else:
            out.append(replace(q, confidence=unit(i, "confidence", "low")))
    return out


def _describe(questions: Sequence[Question]) -> str:
    parts = []
    for i, q in enumerate(questions, 1):
        if q.kind is Kind.YES_NO:
            parts.append(
                f"Q{i} pass {q.pass_p:g}" + ("" if q.fail_p is None else f" fail {q.fail_p:g}")
            )
        elif q.kind is Kind.RUBRIC:
            parts.append(f"Q{i} level>={q.pass_level} conf {q.confidence:g}")
        else:
            parts.append(f"Q{i} {'/'.join(q.pass_names) or '-'} conf {q.confidence:g}")
    return "; ".join(parts)


def _neighbourhood(
    blocks: Sequence[_Options], solutions: list[tuple[int, ...]], bad: np.ndarray,
    forced: np.ndarray, count: np.ndarray,
) -> tuple[list[tuple[int, ...]], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:  # fmt: skip
    """The solutions and all their one-question deviations, with counts on the search part.

    ``bad``, ``forced`` and ``count`` describe the cells of search rows (see
    :class:`_Cells`). Returns the distinct option tuples and ``(n_pass,
    false_pass, n_fail, false_fail)``.
    """
    ones = count.astype(float)
    badf = ones * bad
    goodf = ones * ~bad
    zero = np.zeros_like(ones)
    seen: dict[tuple[int, ...], tuple[float, float, float, float]] = {}
    for sol in solutions:
        current = [bl.row_codes(k) for bl, k in zip(blocks, sol, strict=True)]
        for j, block in enumerate(blocks):
            others = current[:j] + current[j + 1 :]
            rest = np.max(np.vstack(others), axis=0) if others else np.zeros(bad.size, np.int8)
            rest = np.where(forced, UNSURE, rest)
            counts = np.column_stack(
                [block.gains(rest, ones, zero), block.gains(rest, badf, zero),
                 block.gains(rest, zero, ones), block.gains(rest, zero, goodf)]
            )  # fmt: skip
            for k in range(len(block.options)):
                key = sol[:j] + (k,) + sol[j + 1 :]
                if key not in seen:
                    seen[key] = tuple(counts[k])
    keys = list(seen)
    arr = np.array([seen[k] for k in keys], dtype=float).reshape(-1, 4)
    return keys, (arr[:, 0], arr[:, 1], arr[:, 2], arr[:, 3])


@dataclass
class _Cells:
    """The search rows grouped into cells that every candidate treats alike.

    Rows with the same bucket in every question, the same label and the same
    forced-unsure flag get the same verdict under every candidate, so the
    search sums over cells weighted by their row counts instead of over rows.
    """

    blocks: list[_Options]  # the layout's blocks with ``bucket`` per cell
    bad: np.ndarray
    forced: np.ndarray
    count: np.ndarray

    @classmethod
    def of(cls, layout: _Layout, bad: np.ndarray, forced: np.ndarray) -> _Cells:
        keys = np.column_stack(
            [b.bucket for b in layout.blocks] + [bad.astype(np.intp), forced.astype(np.intp)]
        )
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        count = np.bincount(inverse.ravel(), minlength=first.size)
        blocks = [replace(b, bucket=b.bucket[first]) for b in layout.blocks]
        return cls(blocks, bad[first], forced[first], count)


def _prepared(
    data: StepData, *, search_fraction: float, seed: int, relearn_lists: bool
) -> tuple[np.ndarray, np.ndarray, _Layout, _Cells]:
    """The split, the layout and the cells of a learned path: they do not depend on alpha or beta."""
    key = ("joint", search_fraction, seed, relearn_lists)
    if key not in data.cache:
        search, cert = certify.stratified_split(
            data.acceptable, search_fraction=search_fraction, seed=seed
        )
        layout = _layout(data, search, relearn_lists=relearn_lists)
        cells = _Cells.of(layout, ~data.acceptable[search], data.forced_unsure[search])
        data.cache[key] = (search, cert, layout, cells)
    return data.cache[key]


def _replay_cached(questions: Sequence[Question], data: StepData) -> Rates:
    """:func:`replay`, remembered per configuration on ``data`` (paths at other alphas repeat them)."""
    key = ("replay", repr(list(questions)))
    if key not in data.cache:
        data.cache[key] = replay(questions, data)
    return data.cache[key]


def _joint_path(
    data: StepData,
    *,
    alpha: float,
    delta: float,
    beta: float,
    relearn_lists: bool,
    search_fraction: float,
    seed: int,
) -> tuple[Path, np.ndarray, np.ndarray]:
    """Learn a joint path on the search part and count it on the certification part.

    Candidates: for a grid of Lagrange multipliers ``(w_pass, w_fail)``, block
    coordinate ascent on the search part maximises
    ``sum_pass (1 + w_pass (alpha - bad)) + sum_fail (1 + w_fail (beta - good))``,
    the Lagrangian of "decide the most with at most ``alpha`` false passes and
    ``beta`` false fails", warm-started along ``w_pass``; every one-question
    deviation from those solutions is a candidate too (the Lagrangian reaches
    only the convex hull). Path: the distinct candidates ordered by their
    observed risk on the search part,
    ``max(false-pass rate / alpha, false-fail rate / beta)``, keeping each only
    if it decides more than every less risky one (a Pareto front, strictest
    first).
    """
    search, cert, layout, cells = _prepared(data, search_fraction=search_fraction, seed=seed,
                                            relearn_lists=relearn_lists)  # fmt: skip
    bad, forced, count = cells.bad, cells.forced, cells.count
    b = min(beta, 1.0)
    found: dict[tuple[int, ...], None] = {}
    # Option 0 of every question passes everything and fails nothing.
    loosest = [0] * len(cells.blocks)
    for w_fail in _FAIL_WEIGHTS if beta < 1.0 else (0.0,):
        choice = list(loosest)
        for w_pass in _WEIGHTS:
            # What a search row is worth, times the rows of its cell.
            values = (
                (1.0 + w_pass * (alpha - bad)).astype(np.float32) * count,
                (1.0 + w_fail * (b - ~bad)).astype(np.float32) * count,
            )
            choice = _ascend(cells.blocks, values, forced, choice)
            found.setdefault(tuple(choice), None)
    # Around each solution, every one-question deviation is a candidate too: the Lagrangian only
    # reaches the convex hull of what is achievable, the deviations fill in between.
    keys, stats_ = _neighbourhood(cells.blocks, list(found), bad, forced, count)
    n_p, e_p, n_f, e_f = stats_
    with np.errstate(invalid="ignore", divide="ignore"):
        risk = np.nan_to_num(e_p / n_p) / alpha
        if beta < 1.0:
            risk = np.maximum(risk, np.nan_to_num(e_f / n_f) / beta)
    coverage = n_p + n_f
    order = np.lexsort((-coverage, risk))
    front, best_cov = [], -1
    for k in order:
        if coverage[k] > best_cov:
            front.append(k)
            best_cov = coverage[k]
    configs = [_config(data, layout, keys[k]) for k in front]
    if ("certify", search_fraction, seed) not in data.cache:
        data.cache[("certify", search_fraction, seed)] = data.subset(cert)
    cert_data = data.cache[("certify", search_fraction, seed)]
    counts = np.array(
        [
            (r.n_pass, r.false_pass, r.n_fail, r.false_fail)
            for r in (_replay_cached(cfg, cert_data) for cfg in configs)
        ],
        dtype=int,
    ).reshape(-1, 4)
    path = Path(
        side="joint",
        tests=("pass", "fail"),
        n_pass=counts[:, 0],
        false_pass=counts[:, 1],
        n_fail=counts[:, 2],
        false_fail=counts[:, 3],
        never_fails=np.array([not can_fail(c) for c in configs], bool),
        describe=[_describe(c) for c in configs],
        delta=delta,
        configs=configs,
        n_total=cert.size,
    )
    return path, search, cert


# --------------------------------------------------------------------------- the result


@dataclass
class StepThresholds:
    """The certified threshold search for one step and model: inspectable afterwards.

    Attributes
    ----------
    process, step, model : str
    status : {"ok", "insufficient_data", "unattainable"}
    alpha, delta, beta : float
    method : str
        ``"fixed_sequence"`` (one yes/no question, all labels certify) or
        ``"learned_path"`` (search part + certification part).
    suggested : list of Question or None
        The certified configuration, or ``None``.
    current : list of Question
        Today's questions and thresholds.
    certified : dict or None
        Only when the status is ``ok``: ``false_pass_upper``,
        ``false_fail_upper`` (``alpha`` and ``beta``; ``0`` when the
        suggestion never fails) and ``confidence``, what holds with
        probability ``confidence``. ``None`` otherwise: nothing is certified.
    best_bounds : dict
        ``false_pass_upper``, ``false_fail_upper``, ``confidence``: the lowest
        one-sided bounds a single candidate reached, each at its path's
        level. A diagnostic, **not a certificate** (the minimum over many
        candidates is optimistic).
    expected, current_rates : Rates or None
        The labeled history replayed under the suggestion / today's thresholds.
    candidates : pandas.DataFrame
        Every candidate on every path with counts, exact p-values, bounds, and
        whether it was tested, certified and chosen.
    needed_labels : int or None
        Labels needed in total (same model) for a certificate at the observed
        error rates, when the status is ``insufficient_data``.
    n_labeled, n_search, n_certify : int
    left_out : dict
    notes : list of str
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
    candidates: pd.DataFrame
    needed_labels: int | None
    n_labeled: int
    n_search: int
    n_certify: int
    left_out: dict[str, int]
    notes: list[str]
    settings: dict[str, Any] = field(default_factory=dict, repr=False)
    data: StepData | None = field(default=None, repr=False)

    @property
    def check(self) -> list[Question]:
        """The questions to paste: the suggestion, or today's when nothing is certified."""
        return self.suggested if self.suggested is not None else self.current

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

        Adds ``needed_labels`` (``{"total", "more"}`` or ``null``) and ``note``,
        which the readiness assessment reads.
        """
        shares = self.expected.shares() if self.expected is not None else _null_shares()
        cur = self.current_rates
        current = (
            {
                "false_pass_rate": cur.false_pass_rate,
                "false_fail_rate": cur.false_fail_rate,
                **cur.shares(),
            }
            if cur is not None
            else {"false_pass_rate": None, "false_fail_rate": None, **_null_shares()}
        )
        needed = (
            {"total": self.needed_labels, "more": max(0, self.needed_labels - self.n_labeled)}
            if self.needed_labels is not None
            else None
        )
        return {
            "process": self.process,
            "step": self.step,
            "model": self.model,
            "n_labeled": self.n_labeled,
            "status": self.status,
            "check": self.check_items(),
            "certified": dict(self.certified) if self.certified is not None else None,
            "best_bounds": dict(self.best_bounds),
            "expected": shares,
            "current": current,
            "needed_labels": needed,
            "note": "; ".join(self.notes),
        }

    def tradeoff(self, alphas: Sequence[float] = TRADEOFF_ALPHAS) -> pd.DataFrame:
        """For each ``alpha``: the status, the certified bound and the share decided alone."""
        if self.data is None:
            raise ValueError("this result holds no data to recompute the trade-off")
        return tradeoff(self.data, alphas=alphas, **self.settings)

    def tradeoff_display(self, alphas: Sequence[float] = TRADEOFF_ALPHAS) -> TradeoffDisplay:
        """The trade-off as a :class:`TradeoffDisplay` with this search's point marked."""
        cur = self.current_rates
        current_point = None
        if cur is not None and cur.n and cur.false_pass_rate is not None:
            current_point = (cur.false_pass_rate, (cur.n_pass + cur.n_fail) / cur.n)
        return TradeoffDisplay(
            self.tradeoff(alphas),
            alpha=self.alpha,
            delta=self.delta,
            title=f"{self.process} / {self.step} · model {self.model}",
            current=current_point,
        )


def _null_shares() -> dict[str, None]:
    return {"auto_pass": None, "auto_fail": None, "unsure": None}


def _needed(
    frame: pd.DataFrame, *, alpha: float, beta: float, delta_pass: float, delta_fail: float,
    n_base: int, scale: float, sides: Sequence[str], max_candidates: int = 60,
) -> float:  # fmt: skip
    """Fewest labels (total) for a certificate at the observed error rates, over the candidates.

    Only candidates with at least ``MIN_N`` decisions on each tested side
    count, at the rate ``(k + 0.5) / (n + 1)``, so that a handful of lucky
    decisions does not look perfect. ``inf`` when no such candidate's rates
    are below the limits; ``nan`` when no candidate has ``MIN_N`` decisions.
    ``scale`` is the share of all labels that certifies.
    """
    if frame.empty or n_base <= 0:
        return math.nan
    need = np.zeros(len(frame))
    enough = np.ones(len(frame), bool)
    for side in sides:
        if side == "fail" and beta >= 1.0:
            continue
        n_col, k_col, limit, d = (
            ("n_pass", "false_pass", alpha, delta_pass)
            if side == "pass"
            else ("n_fail", "false_fail", beta, delta_fail)
        )
        n = frame[n_col].to_numpy(float)
        k = frame[k_col].to_numpy(float)
        vacuous = np.zeros(n.size, bool)
        if side == "fail":
            vacuous = (frame["false_fail_upper"].to_numpy(float) == 0.0) & (n == 0)
        enough &= (n >= MIN_N) | vacuous
        rate = (k + 0.5) / (n + 1)
        side_need = np.full(n.size, np.inf)
        idx = np.flatnonzero((rate < limit) & (n >= MIN_N))
        if idx.size > max_candidates:
            idx = idx[np.linspace(0, idx.size - 1, max_candidates).astype(int)]
        for i in idx:
            decisions = certify.labels_needed(float(rate[i]), limit=limit, delta=d)
            side_need[i] = decisions / (n[i] / n_base) / scale
        side_need[vacuous] = 0.0
        need = np.maximum(need, side_need)
    if not enough.any():
        return math.nan
    return float(need[enough].min())


def find_thresholds(
    data: StepData,
    *,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
) -> StepThresholds:
    """Search the thresholds of one step with a certified bound on false passes and false fails.

    Guarantee: when ``status == "ok"``, with probability at least
    ``1 - delta`` over the labeled sample, the suggested configuration's
    false-pass rate is at most ``alpha`` and its false-fail rate at most
    ``beta`` (both at once), provided future submissions are exchangeable with
    the labeled ones and error rates do not fall as thresholds loosen. Among
    the candidates that qualify, the loosest on the path is chosen (the most
    decided without a person). No candidate may qualify.

    Parameters
    ----------
    data : StepData
        From :func:`step_data`.
    alpha : float, default=0.05
        Limit on the false-pass rate.
    delta : float, default=0.1
        The guarantee may fail with probability at most ``delta``.
    beta : float, default=0.2
        Limit on the false-fail rate; ``1`` leaves false fails uncontrolled.
    relearn_lists : bool, default=False
        Relearn the ``pass``/``unsure`` lists of choice questions instead of
        keeping the process file's.
    search_fraction : float, optional
        Share of the labels that learns the path when it must be learned;
        default :func:`search_share` of the number of labels (0.5 up to 800
        labels, then 400 labels, at least a quarter).
    seed : int, default=0
        Seed of the stratified split.

    Returns
    -------
    StepThresholds

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> ok = rng.random(600) < 0.7
    >>> p = np.where(ok, rng.beta(8, 1.2, 600), rng.beta(2, 3, 600))
    >>> data = StepData("proc", "step", "m", [Question("ok?", Kind.YES_NO, pass_p=0.9)],
    ...                 [True], np.arange(600).astype(str), ok, [p], [np.full(600, np.nan)],
    ...                 np.zeros(600, bool))
    >>> res = find_thresholds(data, alpha=0.05, delta=0.1, beta=0.2)
    >>> res.status, res.certified["false_pass_upper"]
    ('ok', 0.05)
    """
    _validate(alpha, delta, beta)
    if search_fraction is None:
        search_fraction = search_share(data.n)
    settings = dict(delta=delta, beta=beta, relearn_lists=relearn_lists,
                    search_fraction=search_fraction, seed=seed)  # fmt: skip
    notes = list(data.notes)
    current_rates = _replay_cached(data.questions, data) if all(data.known) and data.n else None
    if not all(data.known):
        notes.append(
            "today's thresholds of some questions are unknown (no process file): no replay"
        )
    single = len(data.questions) == 1 and data.questions[0].kind is Kind.YES_NO
    frames: list[pd.DataFrame] = []
    suggested: list[Question] | None = None
    n_search, n_cert = 0, data.n
    method = "fixed_sequence" if single else "learned_path"
    # One yes/no question: two paths, delta split between them (Bonferroni), most of it to the
    # passes. A joint path: one test of both rates at once (intersection-union), the full delta.
    d_pass = PASS_SHARE * delta if single and beta < 1.0 else delta
    d_fail = (1.0 - PASS_SHARE) * delta if single else delta
    if data.n and single:
        pass_path, fail_path = _yes_no_paths(data, delta_pass=d_pass, delta_fail=d_fail)
        i_pass, f_pass = pass_path.run(alpha=alpha, beta=beta)
        frames.append(f_pass)
        i_fail = None
        if beta < 1.0:
            i_fail, f_fail = fail_path.run(alpha=alpha, beta=beta)
            frames.append(f_fail)
        if i_pass is not None:
            a = _loosened(pass_path, i_pass)
            if beta >= 1.0:
                fail = None  # false fails are not controlled: everything below pass fails
            elif i_fail is None:
                fail = 0.0  # no fail threshold is certified: never fail, ask a person
            else:
                b = _loosened(fail_path, i_fail)
                fail = None if b >= a else b
            suggested = [replace(data.questions[0], pass_p=a, fail_p=fail)]
    elif data.n:
        path, search, cert = _joint_path(
            data, alpha=alpha, delta=delta, beta=beta, relearn_lists=relearn_lists,
            search_fraction=search_fraction, seed=seed,
        )  # fmt: skip
        n_search, n_cert = search.size, cert.size
        chosen, frame = path.run(alpha=alpha, beta=beta)
        frames.append(frame)
        if chosen is not None:
            suggested = path.configs[chosen]
    candidates = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    needed_labels: int | None = None
    if suggested is not None:
        status = "ok"
        fail_never = not can_fail(suggested)
        certified = {
            "false_pass_upper": alpha,
            "false_fail_upper": 0.0 if fail_never else (1.0 if beta >= 1.0 else beta),
            "confidence": 1 - delta,
        }
        if fail_never:
            notes.append("the suggested check never fails: what it does not pass goes to a person")
    else:
        # Nothing certified: too few labels, or no candidate good enough however many labels.
        certified = None
        cert_share = n_cert / data.n if data.n else 1.0
        if single:
            rows = candidates[candidates["side"] == "pass"] if not candidates.empty else candidates
            needed = _needed(rows, alpha=alpha, beta=beta, delta_pass=d_pass, delta_fail=d_fail,
                             n_base=data.n, scale=1.0, sides=("pass",))  # fmt: skip
        else:
            needed = _needed(candidates, alpha=alpha, beta=beta, delta_pass=delta, delta_fail=delta,
                             n_base=n_cert, scale=cert_share, sides=("pass", "fail"))  # fmt: skip
        # The classification reads only what grows with alpha (observed rates against the limits,
        # labels needed at the observed rates), so a looser limit never reads worse: ok never
        # becomes anything else for lack of evidence, insufficient_data never unattainable.
        if math.isfinite(needed) and needed <= data.n:
            # The observed rates would do, but the walk certified nothing (a bad draw at every
            # checkpoint, say): more labels steady it.
            notes.append(
                "the observed error rates would suffice, but the walk certified no threshold; "
                "more labels make its tests steadier"
            )
            needed = max(needed, 1.25 * data.n)
        sides = ("pass",) if single else ("pass", "fail")
        rows = (
            candidates[candidates["side"] == "pass"]
            if single and not candidates.empty
            else candidates
        )
        worse = _measurably_worse(rows, alpha=alpha, beta=beta, delta=delta, sides=sides)
        if math.isnan(needed) or (math.isinf(needed) and not worse):
            # Too few decisions to estimate a rate, or rates above the limits that too few labels
            # measured to say they stay there: enough for a zero-error certificate on the
            # candidate that passes the most, at least.
            most = float(candidates["n_pass"].max()) if not candidates.empty else 0.0
            share = most / n_cert if most > 0 and n_cert else 0.25
            needed = certify.min_count(alpha, d_pass) / share / cert_share
        if needed <= MAX_LABELS:
            status = "insufficient_data"
            needed_labels = int(max(math.ceil(needed), data.n + 1))
        else:
            # No candidate measured with enough decisions is within the limits (inf), or the
            # labels it would take are beyond any process's reach.
            status = "unattainable"
    expected = _replay_cached(suggested, data) if suggested is not None else current_rates
    best_bounds = {**_best_bounds(candidates), "confidence": 1 - delta}
    return StepThresholds(
        process=data.process,
        step=data.step,
        model=data.model,
        status=status,
        alpha=alpha,
        delta=delta,
        beta=beta,
        method=method,
        suggested=suggested,
        current=list(data.questions),
        certified=certified,
        best_bounds=best_bounds,
        expected=expected,
        current_rates=current_rates,
        candidates=candidates,
        needed_labels=needed_labels,
        n_labeled=data.n,
        n_search=n_search,
        n_certify=n_cert,
        left_out=dict(data.left_out),
        notes=notes,
        settings=settings,
        data=data,
    )


def _measurably_worse(
    frame: pd.DataFrame, *, alpha: float, beta: float, delta: float, sides: Sequence[str]
) -> bool:
    """Whether every candidate measured on ``MIN_N`` decisions is measurably outside the limits.

    Measurably: the one-sided Clopper-Pearson *lower* bound at ``1 - delta``
    of a tested rate is above its limit. Then more labels would not help,
    and the status is ``unattainable``; a rate merely observed above the
    limit on a few dozen decisions is not evidence enough. A looser limit
    can only make fewer candidates measurably worse.
    """
    if frame.empty:
        return False
    outside = np.zeros(len(frame), bool)
    measured = np.ones(len(frame), bool)
    for side in sides:
        if side == "fail" and beta >= 1.0:
            continue
        n_col, k_col, limit = (
            ("n_pass", "false_pass", alpha) if side == "pass" else ("n_fail", "false_fail", beta)
        )
        n = frame[n_col].to_numpy(float)
        k = frame[k_col].to_numpy(float)
        measured &= (n >= MIN_N) | (n == 0)
        with np.errstate(invalid="ignore"):
            lower = np.where(k > 0, stats.beta.ppf(delta, np.maximum(k, 1), n - k + 1), 0.0)
        outside |= (n >= MIN_N) & (lower > limit)
    measured &= (frame["n_pass"].to_numpy() + frame["n_fail"].to_numpy()) >= MIN_N
    return bool(measured.any() and outside[measured].all())


def _best_bounds(candidates: pd.DataFrame) -> dict[str, float | None]:
    """The lowest single-candidate bounds reached: a diagnostic, not a certificate.

    On a joint path, the candidate whose worse bound is lowest; on two
    one-score paths, the lowest bound of each.
    """
    out: dict[str, float | None] = {"false_pass_upper": None, "false_fail_upper": None}
    if candidates.empty:
        return out
    joint = candidates[(candidates["side"] == "joint") & (candidates["n_pass"] > 0)]
    if (candidates["side"] == "joint").any():
        if not joint.empty:
            worse = np.maximum(joint["false_pass_upper"], joint["false_fail_upper"]).to_numpy()
            row = joint.iloc[int(np.argmin(worse))]
            out = {"false_pass_upper": float(row["false_pass_upper"]),
                   "false_fail_upper": float(row["false_fail_upper"])}  # fmt: skip
        return out
    for side, n_col, col in (
        ("pass", "n_pass", "false_pass_upper"),
        ("fail", "n_fail", "false_fail_upper"),
    ):
        rows = candidates[(candidates["side"] == side) & (candidates[n_col] > 0)]
        if not rows.empty:
            out[col] = float(rows[col].min())
    return out


# --------------------------------------------------------------------------- many steps


def search_step(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    questions: Sequence[Question] = (),
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    model: str | None = None,
    limits: Limits | None = None,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
) -> StepThresholds:
    """:func:`step_data` then :func:`find_thresholds` for one step's checks and answers."""
    data = step_data(subs, answers, questions=questions, model=model, limits=limits)
    return find_thresholds(
        data, alpha=alpha, delta=delta, beta=beta, relearn_lists=relearn_lists,
        search_fraction=search_fraction, seed=seed,
    )  # fmt: skip


@dataclass
class ThresholdsReport:
    """The search over every checked step: ``to_dict()`` is the JSON of ``calibrate thresholds``."""

    alpha: float
    delta: float
    beta: float
    steps: list[StepThresholds]

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "delta": self.delta,
            "beta": self.beta,
            "steps": [s.to_dict() for s in self.steps],
        }


def suggest_thresholds(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    questions: Mapping[tuple[str, str], Sequence[Question]] | None = None,
    alpha: float = DEFAULT_ALPHA,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    model: str | None = None,
    limits: Limits | None = None,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
) -> ThresholdsReport:
    """Run :func:`search_step` for every (process, step) in ``subs``, each on its latest model.

    Parameters
    ----------
    subs, answers : pandas.DataFrame
        As :func:`calibrate.dataset.submissions` / :func:`calibrate.dataset.answers`
        (all checks, labeled or not: the latest model is read from them).
    questions : mapping, optional
        ``{(process, step): [Question, ...]}`` from
        :func:`calibrate.dataset.process_questions`.
    """
    _validate(alpha, delta, beta)

    def step_answers(process: Any, step: Any, _checks: pd.DataFrame) -> pd.DataFrame:
        if answers.empty:
            return answers
        return answers[(answers["process"] == process) & (answers["step"] == step)]

    return _search_steps(
        subs, step_answers, questions=questions or {}, alpha=alpha, delta=delta, beta=beta,
        model=model, limits=limits, relearn_lists=relearn_lists, search_fraction=search_fraction,
        seed=seed,
    )  # fmt: skip


def _search_steps(
    subs: pd.DataFrame,
    step_answers: Any,
    *,
    questions: Mapping[tuple[str, str], Sequence[Question]],
    alpha: float,
    delta: float,
    beta: float,
    **kwargs: Any,
) -> ThresholdsReport:
    """:func:`search_step` per (process, step) of ``subs``; ``step_answers(process, step, checks)`` gives its answers."""
    steps = []
    if not subs.empty:
        for (process, step), s in subs.groupby(
            ["process", "step"], sort=True, dropna=False, observed=True
        ):
            steps.append(
                search_step(
                    s,
                    step_answers(process, step, s),
                    questions=questions.get((process, step), ()),
                    alpha=alpha,
                    delta=delta,
                    beta=beta,
                    **kwargs,
                )  # fmt: skip
            )
    return ThresholdsReport(alpha, delta, beta, steps)


#: Columns the search reads: of the checks, and of the answers (thresholds come per question).
SEARCH_CHECK_COLUMNS = ("check_id", "process", "step", "model", "at", "verdict", "label",
                        "conflict", "advisory")  # fmt: skip
SEARCH_ANSWER_COLUMNS = ("check_id", "at", "position", "ask", "kind", "p", "name", "level",
                         "confidence", "in_process_file")  # fmt: skip


def read_columns(
    con: Any, view: str, columns: Sequence[str], filters: Any, *, labeled_only: bool = False
) -> pd.DataFrame:
    """``columns`` of the ``labeled`` or ``labeled_answers`` view, in the rows and order of
    :func:`calibrate.dataset.submissions` / :func:`calibrate.dataset.answers`.

    Text is categorical (:func:`calibrate.dataset.view_columns`), except
    ``check_id``, which stays text: the search codes it per step
    (:func:`share_check_codes`).

    Raises
    ------
    ValueError
        An unknown view or column.
    """
    from calibrate.dataset import view_columns

    return view_columns(
        con, view, list(columns), filters, labeled_only=labeled_only, text=("check_id",)
    )


def store_step_answers(
    con: Any, filters: Any, process: Any, step: Any, columns: Sequence[str], *,
    labeled_only: bool, model: str | None = None,
) -> pd.DataFrame:  # fmt: skip
    """One step's answers, only ``columns``, in the order of :func:`calibrate.dataset.answers`.

    Reading a step at a time keeps one step's answers in memory, not the store's; ``model``
    keeps only that evaluator model's (a missing model cannot be selected: ``None`` keeps all).
    """
    one = replace(filters, step=step, process=None if _missing(process) else process)
    if model is not None and model != UNKNOWN_MODEL:
        one = replace(one, model=model)
    cols = [*columns, "process"] if _missing(process) and "process" not in columns else columns
    rows = read_columns(con, "labeled_answers", list(cols), one, labeled_only=labeled_only)
    if _missing(process):
        rows = rows[rows["process"].isna().to_numpy()]
    return rows


def share_check_codes(
    answers: pd.DataFrame, checks: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``answers`` and ``checks`` with ``check_id`` categorical over the same categories.

    Then matching answers to checks compares integer codes (see :func:`isin`)
    instead of hashing the ids again at every step: the ids of both are
    hashed once, here.
    """
    if "check_id" not in answers or "check_id" not in checks:
        return answers, checks
    ids = pd.concat([checks["check_id"].astype("str"), answers["check_id"].astype("str")],
                    ignore_index=True)  # fmt: skip
    codes, uniques = pd.factorize(ids, use_na_sentinel=True)
    dtype = pd.CategoricalDtype(pd.Index(uniques, dtype="str"))
    out = []
    for frame, part in ((checks, codes[: len(checks)]), (answers, codes[len(checks) :])):
        frame = frame.copy(deep=False)
        frame["check_id"] = pd.Categorical.from_codes(part, dtype=dtype)
        out.append(frame)
    return out[1], out[0]


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def suggest_from_store(con: Any, filters: Any = None, **kwargs: Any) -> ThresholdsReport:
    """Read a store through :mod:`calibrate.dataset` and run the search of :func:`suggest_thresholds`.

    Reads only the columns the search needs, and the answers one step at a time.
    """
    from calibrate.dataset import Filters, answers, limits, process_questions

    filters = filters or Filters()
    kwargs = {"alpha": DEFAULT_ALPHA, "delta": DEFAULT_DELTA, "beta": DEFAULT_BETA, **kwargs}
    _validate(kwargs["alpha"], kwargs["delta"], kwargs["beta"])
    subs = read_columns(con, "labeled", SEARCH_CHECK_COLUMNS, filters)
    qs = process_questions(con, filters.process, filters.step)

    def step_answers(process: Any, step: Any, checks: pd.DataFrame) -> pd.DataFrame:
        # Only the searched model's answers are read: the search looks at no other.
        model = kwargs.get("model") or latest_model(checks)
        rows = store_step_answers(con, filters, process, step, SEARCH_ANSWER_COLUMNS,
                                  labeled_only=True, model=model)  # fmt: skip
        if not qs.get((process, step)) and rows["in_process_file"].any():
            # Today's questions come from the rows' thresholds: every column is needed.
            rows = answers(con, replace(filters, process=process, step=step), labeled_only=True)
        return rows

    return _search_steps(subs, step_answers, questions=qs, limits=limits(con), **kwargs)


# --------------------------------------------------------------------------- the trade-off


def tradeoff(
    data: StepData,
    *,
    alphas: Sequence[float] = TRADEOFF_ALPHAS,
    delta: float = DEFAULT_DELTA,
    beta: float = DEFAULT_BETA,
    relearn_lists: bool = False,
    search_fraction: float | None = None,
    seed: int = 0,
) -> pd.DataFrame:
    """For each ``alpha``: status, certified bound and the shares decided without a person.

    Returns
    -------
    pandas.DataFrame
        Columns ``alpha``, ``status``, ``certified_false_pass`` (``alpha``
        when certified, else ``nan``), ``observed_false_pass`` (the replayed
        rate, with ``n_pass``), ``auto_pass``, ``auto_fail``, ``coverage``.
    """
    rows = []
    for a in alphas:
        r = find_thresholds(data, alpha=float(a), delta=delta, beta=beta, relearn_lists=relearn_lists,
                            search_fraction=search_fraction, seed=seed)  # fmt: skip
        ok = r.status == "ok"
        exp = r.expected if ok else None
        shares = exp.shares() if exp is not None else {"auto_pass": 0.0, "auto_fail": 0.0}
        rows.append(
            {
                "alpha": float(a),
                "status": r.status,
                "certified_false_pass": float(a) if ok else math.nan,
                "observed_false_pass": (
                    exp.false_pass_rate if exp and exp.false_pass_rate is not None else math.nan
                ),
                "n_pass": exp.n_pass if exp else 0,
                "auto_pass": shares["auto_pass"] or 0.0,
                "auto_fail": shares["auto_fail"] or 0.0,
                "coverage": (shares["auto_pass"] or 0.0) + (shares["auto_fail"] or 0.0),
            }
        )
    return pd.DataFrame(rows)


class TradeoffDisplay:
    """Certified false-pass bound against the share decided without a person.

    Parameters
    ----------
    frame : pandas.DataFrame
        From :func:`tradeoff`.
    alpha : float
        The suggested point (marked).
    delta : float
    title : str
    current : tuple of float, optional
        ``(false-pass rate, coverage)`` of today's thresholds, marked as a cross.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"alpha": [0.05, 0.1], "status": ["ok", "ok"],
    ...     "certified_false_pass": [0.05, 0.1], "observed_false_pass": [0.02, 0.06],
    ...     "n_pass": [300, 400], "auto_pass": [0.5, 0.6], "auto_fail": [0.1, 0.1],
    ...     "coverage": [0.6, 0.7]})
    >>> disp = TradeoffDisplay(frame, alpha=0.05).plot()
    >>> disp.ax_.get_xlabel()
    'certified false-pass bound (alpha)'
    """

    def __init__(
        self,
        frame: pd.DataFrame,
        *,
        alpha: float,
        delta: float = DEFAULT_DELTA,
        title: str = "",
        current: tuple[float, float] | None = None,
    ) -> None:
        self.frame = frame
        self.alpha = alpha
        self.delta = delta
        self.title = title
        self.current = current

    def plot(self, ax: Any = None) -> TradeoffDisplay:
        """Draw on ``ax`` (a new figure when ``None``); returns ``self`` with ``ax_`` and ``figure_``."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(6, 4))
        f = self.frame
        ok = f["status"] == "ok"
        ax.plot(f["alpha"], f["coverage"].where(ok, 0.0), "o-", color="C0",
                label="decided without a person")  # fmt: skip
        ax.plot(f["alpha"], f["auto_pass"].where(ok, 0.0), "s--", color="C2", alpha=0.7,
                label="auto pass")  # fmt: skip
        if (~ok).any():
            ax.plot(f.loc[~ok, "alpha"], np.zeros(int((~ok).sum())), "x", color="C3",
                    label="nothing certified")  # fmt: skip
        here = f[np.isclose(f["alpha"], self.alpha)]
        if not here.empty:
            ax.axvline(self.alpha, color="0.5", lw=0.8, ls=":")
            ax.plot(here["alpha"], here["coverage"].where(here["status"] == "ok", 0.0), "*",
                    ms=16, color="C1", label=f"suggested (alpha = {self.alpha:g})")  # fmt: skip
        if self.current is not None:
            ax.plot([self.current[0]], [self.current[1]], "P", ms=10, color="C4",
                    label="today (observed false-pass rate)")  # fmt: skip
        ax.set_xlabel("certified false-pass bound (alpha)")
        ax.set_ylabel("share decided without a person")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(self.title or f"Trade-off at {1 - self.delta:.0%} confidence")
        ax.legend(loc="lower right", fontsize="small")
        self.ax_ = ax
        self.figure_ = ax.figure
        return self
