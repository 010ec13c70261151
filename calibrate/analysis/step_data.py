"""The labeled data of one checked step and model, and replaying configurations on it.

What the threshold search (:mod:`calibrate.analysis.threshold_search`) reads: one
row per labeled submission with its answers (:class:`StepData`, built by
:func:`step_data` from the store's views), and the one way a configuration
is replayed on it (:func:`verdict_codes`, through
:func:`calibrate.profile.decide` and :func:`calibrate.profile.worst`).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.stats import clopper_pearson_interval
from calibrate.profile import FAIL, PASS, UNSURE, Kind, Limits, Question, decide, worst
from calibrate.textsafe import NO_MODEL

UNKNOWN_MODEL = NO_MODEL


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
        else server defaults as placeholders); ``known[i]`` says whether question
        ``i``'s thresholds are known (a question absent from every process file,
        of any kind, has none: today's check is then not replayed).
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
    enforced_labels : int
        Labeled checks recorded with ``advisory: false`` that were kept (only with
        ``keep_after_switch``): the enforced check chose which of them a person saw (an
        escalation, or a draw among its passes), so they are no random sample of the
        submissions and nothing can be certified on them.
    enforced : ndarray of bool
        Per row: a label on a check recorded with ``advisory: false`` (only with
        ``keep_after_switch``; empty when built without it, as no row is one). The rest are
        reviews of every verdict, the labels a rate of the submissions can be read from.
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
    enforced_labels: int = 0
    enforced: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
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
            enforced=self.enforced[idx] if self.enforced.size else self.enforced,
        )

    def fingerprint(self) -> bytes:
        """A digest of the rows and questions the search reads: equal for equal data.

        The derived ``cache`` and the descriptive ``notes`` and ``left_out`` are left out
        (one step's rows read for one model, or picked from all models, are the same data).

        Keys a result computed from the data alone (the labels-needed estimate), so a
        step searched again in one process (the report, then its enforced advice) is
        not resampled twice.
        """
        digest = hashlib.blake2b(digest_size=20)
        for f in fields(self):
            if f.name not in ("cache", "notes", "left_out"):
                _feed(digest, f.name)
                _feed(digest, getattr(self, f.name))
        return digest.digest()

    @property
    def reviewed(self) -> np.ndarray:
        """Per row: a review of every verdict (recorded with ``advisory: true``)."""
        return ~self.enforced if self.enforced.size else np.ones(self.n, bool)


def _feed(digest: Any, value: object) -> None:
    """Feed ``value`` to ``digest`` unambiguously (type, size and content of every part)."""
    if isinstance(value, np.ndarray):
        digest.update(f"<{value.dtype.str}:{value.shape}>".encode())
        if value.dtype == object and pd.api.types.infer_dtype(value, skipna=True) in (
            "string",
            "empty",
        ):
            # Names and missing answers (None and NaN alike: both are no answer), hashed in C.
            digest.update(pd.util.hash_array(value).tobytes())
        elif value.dtype == object:
            for item in value.tolist():
                _feed(digest, item)
        else:
            digest.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, list | tuple):
        digest.update(f"[{type(value).__name__}:{len(value)}]".encode())
        for item in value:
            _feed(digest, item)
    elif isinstance(value, dict):
        digest.update(f"{{{len(value)}}}".encode())
        for key in sorted(value, key=repr):
            _feed(digest, key)
            _feed(digest, value[key])
    else:
        text = repr(value).encode("utf-8", "surrogatepass")
        digest.update(f"({type(value).__name__}:{len(text)})".encode())
        digest.update(text)


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


def latest_questions(ans: pd.DataFrame, limits: Limits) -> tuple[list[Question], list[bool]]:
    """Today's questions without a process file's list: the latest check's, in its order.

    Thresholds from the process file where it names the question, else the server
    defaults (``limits``: check-1's pass 0.9, no fail, confidence 0.8 unless a limits file
    says otherwise) as placeholders. Also returns, per question, whether today's thresholds
    are known: only where a process file names the question (a yes/no question too: the
    defaults are a guess the recorded verdicts may contradict).
    """
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
        # Not known: a black-box run found pass 0.9 replayed as "today" (71% auto-fail) where the
        # recorded verdicts were 64 pass, 3 fail, 156 unsure (the real check had fail 0.5).
        if kind is Kind.YES_NO:
            out.append(Question(str(ask), kind, pass_p=limits.check_pass, fail_p=limits.check_fail))
            known.append(False)
        else:
            out.append(Question(str(ask), kind, confidence=limits.check_confidence))
            known.append(False)
    return out, known


def category_codes(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
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
    return answer_rows(uniques, column) >= 0


def distinct_pairs(a: np.ndarray, b: np.ndarray, n_b: int) -> tuple[np.ndarray, np.ndarray]:
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


def answer_rows(check_ids: pd.Series, answer_ids: pd.Series | None) -> np.ndarray:
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
        per_value = answer_rows(check_ids, pd.Series(answer_ids.cat.categories))
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


def after_switch_labels(labeled: pd.DataFrame, *, keep: bool = False) -> np.ndarray:
    """Labeled checks recorded with ``advisory: false``: the certification leaves them out.

    After the switch a person sees only what an audit draws (among the enforced check's
    own passes, or fails) and the escalations: neither is a random sample of every
    submission, so a threshold certified on them would be certified on a sample the check
    selected. The certification reads reviews of every verdict (``advisory: true``); the
    monitor reads the audits, weighted by their draw.

    Parameters
    ----------
    labeled : pandas.DataFrame
        Checks with ``label`` and ``advisory`` (without ``advisory`` nothing is left out).
    keep : bool, default=False
        Keep every decision after the switch (``--with-escalations``,
        ``Filters(escalations=True)``): nothing is left out.

    Returns
    -------
    numpy.ndarray of bool
        One per row: a label the certification leaves out.
    """
    none = np.zeros(len(labeled), bool)
    if keep or "advisory" not in labeled.columns or labeled.empty:
        return none
    enforced = (labeled["advisory"].astype("boolean") == False).fillna(False)  # noqa: E712
    return (enforced & labeled["label"].notna()).to_numpy(bool)


def step_data(
    subs: pd.DataFrame,
    answers: pd.DataFrame,
    *,
    questions: Sequence[Question] = (),
    model: str | None = None,
    limits: Limits | None = None,
    keep_after_switch: bool = False,
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
    keep_after_switch : bool, default=False
        Keep the labels of checks recorded with ``advisory: false`` (audit draws,
        and escalations where the caller kept them); by default they are left out
        and counted in ``left_out["audits"]`` (:func:`after_switch_labels`).

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
    audits = after_switch_labels(mine, keep=keep_after_switch)
    left_out["audits"] = int(audits.sum())
    mine = mine[~audits]

    # Integer codes instead of text: each answer's row in ``mine`` (-1: not a labeled check of
    # the model), and its question; set operations become counts.
    rows_of = answer_rows(mine["check_id"], answers["check_id"] if not answers.empty else None)
    if questions:
        qs = list(questions)
        known = [
            q.kind is Kind.YES_NO
            or (q.kind is Kind.CHOICE and bool(q.pass_names))
            or (q.kind is Kind.RUBRIC and q.pass_level is not None)
            for q in qs
        ]
    else:
        qs, known = latest_questions(answers[rows_of >= 0], limits)
    asks = [q.ask for q in qs]

    # A check asked exactly today's questions is today's check; one asked another set (a question
    # added, dropped or reworded) was another version of the check and says nothing about this one.
    # An error verdict has no answers and stays: the evaluator failed, a person decides.
    ask_code, ask_names = (
        category_codes(answers["ask"]) if rows_of.size else (np.zeros(0, np.intp), pd.Index([]))
    )
    today = set(asks)
    is_today = np.array([a in today for a in ask_names], bool)  # one per distinct question
    mine_rows = np.flatnonzero((rows_of >= 0) & (ask_code >= 0))
    check, ask = distinct_pairs(rows_of[mine_rows], ask_code[mine_rows], len(ask_names))
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
    # With no labeled check kept (a window holding only audits of the enforced check), no row
    # matches: every answer stays -1.
    rows_of = (
        np.where(rows_of >= 0, renumber[np.maximum(rows_of, 0)], -1)
        if rows_of.size and renumber.size
        else np.full(rows_of.shape, -1, np.intp)
    )

    answer_cols: list[np.ndarray] = []
    conf_cols: list[np.ndarray] = []
    incomplete = np.zeros(n, bool)
    if rows_of.size:
        kind_code, kind_names = category_codes(answers["kind"])
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
    if left_out["audits"]:
        notes.append(
            f"{left_out['audits']} decisions after the switch left out (audit draws): a draw "
            "among the enforced check's own verdicts is not a sample of every submission (the "
            "monitor reads them)"
        )
    if n_incomplete:
        notes.append(f"{n_incomplete} checks have an answer with no value; counted as unsure")
    if int(is_error.sum()):
        n_error = int(is_error.sum())
        verdicts = "1 error verdict" if n_error == 1 else f"{n_error} error verdicts"
        notes.append(f"{verdicts} counted as unsure (human work)")
    if "conflict" in mine and n:
        conflicts = int(mine["conflict"].fillna(False).astype(bool).sum())
        if conflicts:
            checks = "1 check" if conflicts == 1 else f"{conflicts} checks"
            notes.append(
                f"{checks} had conflicting decisions; the latest counts (a drawn check: the first "
                "after its draw)"
            )
    enforced_labels = 0
    is_enforced = np.zeros(n, bool)
    if "advisory" in mine and n:
        is_enforced = ~mine["advisory"].fillna(True).astype(bool).to_numpy()
        drawn = (
            mine["audited"].fillna(False).astype(bool).to_numpy()
            if "audited" in mine
            else np.zeros(len(mine), bool)
        )
        enforced, selected = int(is_enforced.sum()), int((is_enforced & ~drawn).sum())
        enforced_labels = enforced
        if selected:
            # Kept by --with-escalations: the enforced check chose which of these a person saw.
            notes.append(
                f"{selected} of {enforced} labeled enforced checks were not drawn by an audit "
                "(escalations, or decisions on undrawn checks): a sample the check selected, "
                "not a random one"
            )
        elif enforced:
            notes.append(
                f"{enforced} labeled checks were enforced: audit draws (random among the "
                "enforced checks the draw offered, mostly passes), kept by --with-escalations"
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
        enforced_labels=enforced_labels,
        enforced=is_enforced,
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

    def share_counts(self) -> dict[str, int]:
        """The submissions behind each share of :meth:`shares`, of ``n``."""
        return {
            "auto_pass": self.n_pass,
            "auto_fail": self.n_fail,
            "unsure": self.n - self.n_pass - self.n_fail,
        }

    def shares(self) -> dict[str, float | None]:
        return {k: (c / self.n if self.n else None) for k, c in self.share_counts().items()}

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


def rubric_levels(question: Question, level: np.ndarray) -> int:
    """Levels a rubric question's ``pass`` may name: as declared, else as many as were answered.

    A pass level at or past the count would pass nothing and cannot be
    written in a process file (check-1: ``pass`` is a 0-based level), so
    no search offers one.
    """
    if question.levels:
        return len(question.levels)
    lv = np.asarray(level, float)
    top = int(np.nanmax(lv)) + 1 if np.isfinite(lv).any() else 2
    return max(top, 2)


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


def replay_cached(questions: Sequence[Question], data: StepData) -> Rates:
    """:func:`replay`, remembered per configuration on ``data`` (paths at other alphas repeat them)."""
    key = ("replay", repr(list(questions)))
    if key not in data.cache:
        data.cache[key] = replay(questions, data)
    return data.cache[key]


#: Columns the search reads: of the checks, and of the answers (thresholds come per question).
SEARCH_CHECK_COLUMNS = ("check_id", "process", "step", "model", "at", "verdict", "label",
                        "conflict", "advisory", "audited")  # fmt: skip
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
        An unknown view or column; a process, step or model the store lacks, naming those it
        has (:func:`calibrate.dataset.require_known_names`, as the public readers: the search
        and the report read the filters they were given here first).
    """
    from calibrate.dataset import require_known_names, view_columns

    require_known_names(con, filters)
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
