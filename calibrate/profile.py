"""Profile check-1: question kinds, thresholds, defaults and the decision rule.

This is the one module that knows the rules of check-1 (``spec/check-1.md``
§2-3). Ingest, the threshold search and the report all call it, so the rule is
written once.

Results are coded as small integers ordered by severity so that the verdict,
"the worst question", is a plain maximum: ``PASS < FAIL < UNSURE``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import numpy as np

from calibrate.errors import ProcessFileError

PASS, FAIL, UNSURE = 0, 1, 2
RESULT_NAMES = ("pass", "fail", "unsure")
RESULT_CODES = {name: code for code, name in enumerate(RESULT_NAMES)}
VERDICTS = ("pass", "fail", "unsure", "error")


class Kind(StrEnum):
    """The three question kinds of check-1."""

    YES_NO = "yes_no"
    CHOICE = "choice"
    RUBRIC = "rubric"


#: Decisions a person can record, and whether each means "acceptable".
DECISION_LABELS: dict[str, bool] = {
    "approved": True,
    "completed": True,
    "rejected": False,
    "returned": False,
    "replaced": False,
    "failed": False,
}


@dataclass(frozen=True)
class Limits:
    """Server defaults from ``describe.limits`` (check-1 §5).

    Parameters
    ----------
    check_pass : float, default=0.9
        Default yes/no pass threshold.
    check_fail : float or None, default=None
        Default yes/no fail threshold; ``None`` means below ``pass`` fails.
    check_confidence : float, default=0.8
        Default confidence below which a choice or rubric answer is unsure.
    """

    check_pass: float = 0.9
    check_fail: float | None = None
    check_confidence: float = 0.8

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Limits:
        """Read ``{"limits": {...}}`` or a bare limits object."""
        body = doc.get("limits", doc) if isinstance(doc, Mapping) else None
        if not isinstance(body, Mapping):
            raise ProcessFileError("limits file must be a JSON object with a 'limits' object")
        out = cls()
        for key, attr in (
            ("checkPass", "check_pass"),
            ("checkFail", "check_fail"),
            ("checkConfidence", "check_confidence"),
        ):
            if key in body:
                value = body[key]
                if value is None and attr == "check_fail":
                    out = replace(out, check_fail=None)
                    continue
                out = replace(out, **{attr: _unit_number(value, key)})
        # As for a question's own thresholds (check-1 §2): fail may not be above pass.
        if out.check_fail is not None and out.check_fail > out.check_pass:
            raise ProcessFileError(
                f"checkFail {out.check_fail} is above checkPass {out.check_pass}"
            )
        return out


def _unit_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ProcessFileError(f"{what} must be a number in [0, 1], got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ProcessFileError(f"{what} {value!r} is outside [0, 1]")
    return float(value)


#: An unsure band of a yes/no question narrower than this is remarked on (:meth:`Question.remarks`).
NARROW_UNSURE = 0.01


@dataclass(frozen=True)
class Question:
    """One question of a check with the thresholds in force.

    Parameters
    ----------
    ask : str
        The question text; with the process and step it identifies the question.
    kind : Kind
        ``yes_no``, ``choice`` or ``rubric``.
    pass_p, fail_p : float or None
        yes/no thresholds (``fail_p`` may be ``None``).
    pass_names, unsure_names : tuple of str
        choice answer lists.
    pass_level : int or None
        rubric level at or above which the answer passes.
    confidence : float or None
        choice/rubric confidence below which the answer is unsure.
    one_of : dict
        choice answer names and descriptions, as in the process file.
    levels : tuple of str
        rubric level descriptions, worst first.
    """

    ask: str
    kind: Kind
    pass_p: float | None = None
    fail_p: float | None = None
    pass_names: tuple[str, ...] = ()
    unsure_names: tuple[str, ...] = ()
    pass_level: int | None = None
    confidence: float | None = None
    one_of: dict[str, str] = field(default_factory=dict)
    levels: tuple[str, ...] = ()

    @classmethod
    def from_check_item(cls, item: Any, limits: Limits | None = None) -> Question:
        """Build a question from one item of a process file's ``check:`` list.

        Absent thresholds take the server defaults from ``limits``.
        """
        limits = limits or Limits()
        if isinstance(item, str):
            item = {"ask": item}
        if not isinstance(item, Mapping):
            raise ProcessFileError(f"a check question must be a mapping, got {type(item).__name__}")
        ask = item.get("ask")
        if not isinstance(ask, str) or not ask.strip():
            raise ProcessFileError("a check question has no 'ask' text")
        if "one_of" in item and "levels" in item:
            raise ProcessFileError(f"question {ask!r} has both 'one_of' and 'levels'")
        if "unsure" in item and "one_of" not in item:
            raise ProcessFileError(
                f"question {ask!r} has an 'unsure' list, which only a choice question ('one_of') takes"
            )
        if "one_of" in item:
            one_of = item["one_of"]
            if not isinstance(one_of, Mapping) or len(one_of) < 2:
                raise ProcessFileError(f"'one_of' of {ask!r} must map two or more answer names")
            names = {str(k): str(v) for k, v in one_of.items()}
            pass_names = _name_list(item.get("pass"), ask, "pass", names)
            if not pass_names:
                raise ProcessFileError(f"choice question {ask!r} needs a 'pass' list")
            unsure = _name_list(item.get("unsure"), ask, "unsure", names)
            return cls(
                ask=ask,
                kind=Kind.CHOICE,
                pass_names=pass_names,
                unsure_names=unsure,
                confidence=_confidence(item, ask, limits),
                one_of=names,
            )
        if "levels" in item:
            levels = item["levels"]
            if (
                not isinstance(levels, Sequence)
                or isinstance(levels, str)
                or not 2 <= len(levels) <= 10
            ):
                raise ProcessFileError(f"'levels' of {ask!r} must list 2 to 10 descriptions")
            level = item.get("pass")
            if (
                isinstance(level, bool)
                or not isinstance(level, int)
                or not 0 <= level < len(levels)
            ):
                raise ProcessFileError(
                    f"rubric question {ask!r} needs 'pass' as a level in 0..{len(levels) - 1}"
                )
            return cls(
                ask=ask,
                kind=Kind.RUBRIC,
                pass_level=level,
                confidence=_confidence(item, ask, limits),
                levels=tuple(str(x) for x in levels),
            )
        pass_p = (
            _unit_number(item["pass"], f"'pass' of {ask!r}")
            if "pass" in item
            else limits.check_pass
        )
        if "fail" in item and item["fail"] is not None:
            fail_p = _unit_number(item["fail"], f"'fail' of {ask!r}")
        else:
            fail_p = limits.check_fail
        if fail_p is not None and fail_p > pass_p:
            raise ProcessFileError(f"question {ask!r} has 'fail' {fail_p} above 'pass' {pass_p}")
        return cls(ask=ask, kind=Kind.YES_NO, pass_p=pass_p, fail_p=fail_p)

    def to_check_item(self) -> dict[str, Any]:
        """The question in check-1's own keys, ready to write into a process file."""
        out: dict[str, Any] = {"ask": self.ask}
        if self.kind is Kind.YES_NO:
            out["pass"] = self.pass_p
            if self.fail_p is not None:
                out["fail"] = self.fail_p
        elif self.kind is Kind.CHOICE:
            if self.one_of:
                out["one_of"] = dict(self.one_of)
            out["pass"] = list(self.pass_names)
            if self.unsure_names:
                out["unsure"] = list(self.unsure_names)
            if self.confidence is not None:
                out["confidence"] = self.confidence
        else:
            if self.levels:
                out["levels"] = list(self.levels)
            out["pass"] = self.pass_level
            if self.confidence is not None:
                out["confidence"] = self.confidence
        return out

    def remarks(self) -> list[str]:
        """What a person pasting these thresholds should know: a question that decides
        nothing, a question that is never unsure, or an unsure band too narrow to matter.

        Examples
        --------
        >>> Question("How complete?", Kind.RUBRIC, pass_level=0, confidence=0.0).remarks()
        ['passes every answer: it no longer affects the verdict (keep it to record the answers, or drop it)']
        """
        out = []
        never_unsure = not self.confidence  # None or 0: no confidence makes it unsure
        if self.kind is Kind.RUBRIC and self.pass_level == 0 and never_unsure:
            out.append(
                "passes every answer: it no longer affects the verdict (keep it to record the "
                "answers, or drop it)"
            )
        elif self.kind is Kind.CHOICE and not self.unsure_names and never_unsure and self.one_of:
            if set(self.pass_names) >= set(self.one_of):
                out.append("passes every answer: it no longer affects the verdict")
        elif self.kind is Kind.YES_NO and self.pass_p is not None:
            if self.pass_p <= 0:
                out.append("passes every answer: it no longer affects the verdict")
            elif self.fail_p is not None and 0 < self.pass_p - self.fail_p < NARROW_UNSURE:
                out.append(
                    f"unsure only for yes-probabilities in [{self.fail_p:g}, {self.pass_p:g}): "
                    "almost every answer is decided"
                )
        return out

    def decide(self, answer: Any, confidence: Any = None) -> np.ndarray:
        """Apply this question's rule to arrays of answers; see :func:`decide`."""
        return decide(self, answer, confidence)


def _name_list(value: Any, ask: str, key: str, names: Mapping[str, str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, Sequence):
        raise ProcessFileError(f"'{key}' of {ask!r} must be a list of answer names")
    unknown = [str(v) for v in value if str(v) not in names]
    if unknown:
        raise ProcessFileError(f"'{key}' of {ask!r} names answers not in 'one_of': {unknown}")
    return tuple(str(v) for v in value)


def _confidence(item: Mapping[str, Any], ask: str, limits: Limits) -> float:
    if item.get("confidence") is None:
        return limits.check_confidence
    return _unit_number(item["confidence"], f"'confidence' of {ask!r}")


def decide_yes_no(p: Any, *, pass_p: float, fail_p: float | None = None) -> np.ndarray:
    """Results of yes/no answers: ``p >= pass`` passes; ``p < fail`` fails; between is unsure.

    Without ``fail_p`` everything below ``pass_p`` fails.
    """
    p = np.asarray(p, dtype=float)
    out = np.where(p >= pass_p, PASS, FAIL).astype(np.int8)
    if fail_p is not None:
        out[(p >= fail_p) & (p < pass_p)] = UNSURE
    return out


def decide_choice(
    names: Any,
    confidence: Any = None,
    *,
    pass_names: Sequence[str],
    unsure_names: Sequence[str] = (),
    min_confidence: float | None = None,
) -> np.ndarray:
    """Results of choice answers: in ``pass`` passes, in ``unsure`` is unsure, else fails.

    A confidence strictly below ``min_confidence`` makes the answer unsure.
    """
    names = np.asarray(names, dtype=object)
    out = np.full(names.shape, FAIL, dtype=np.int8)
    out[np.isin(names, list(pass_names))] = PASS
    out[np.isin(names, list(unsure_names))] = UNSURE
    return _low_confidence_unsure(out, confidence, min_confidence)


def decide_rubric(
    level: Any, confidence: Any = None, *, pass_level: int, min_confidence: float | None = None
) -> np.ndarray:
    """Results of rubric answers: level ``>= pass`` passes, below fails; low confidence is unsure."""
    level = np.asarray(level, dtype=float)
    out = np.where(level >= pass_level, PASS, FAIL).astype(np.int8)
    return _low_confidence_unsure(out, confidence, min_confidence)


def _low_confidence_unsure(
    out: np.ndarray, confidence: Any, min_confidence: float | None
) -> np.ndarray:
    if min_confidence is not None and confidence is not None:
        conf = np.asarray(confidence, dtype=float)
        # A missing confidence cannot vouch for the answer: treat it as below any threshold.
        out[np.isnan(conf) | (conf < min_confidence)] = UNSURE
    return out


def decide(question: Question, answer: Any, confidence: Any = None) -> np.ndarray:
    """Result codes (``PASS``, ``FAIL``, ``UNSURE``) of ``question`` for arrays of answers.

    Parameters
    ----------
    question : Question
        The question with its thresholds.
    answer : array-like
        yes-probabilities, answer names or levels, by kind.
    confidence : array-like, optional
        The evaluator's confidence (choice and rubric).

    Examples
    --------
    >>> q = Question("ok?", Kind.YES_NO, pass_p=0.9, fail_p=0.5)
    >>> decide(q, [0.95, 0.9, 0.7, 0.2]).tolist()
    [0, 0, 2, 1]
    """
    if question.kind is Kind.YES_NO:
        return decide_yes_no(answer, pass_p=question.pass_p, fail_p=question.fail_p)
    if question.kind is Kind.CHOICE:
        return decide_choice(
            answer,
            confidence,
            pass_names=question.pass_names,
            unsure_names=question.unsure_names,
            min_confidence=question.confidence,
        )
    return decide_rubric(
        answer, confidence, pass_level=question.pass_level, min_confidence=question.confidence
    )


def worst(results: Any) -> np.ndarray:
    """The verdict of each submission: the worst result along the last axis.

    ``results`` has shape ``(n_submissions, n_questions)`` of result codes.

    Examples
    --------
    >>> worst([[PASS, FAIL], [PASS, PASS], [FAIL, UNSURE]]).tolist()
    [1, 0, 2]
    """
    return np.asarray(results, dtype=np.int8).max(axis=-1)


def result_names(codes: Any) -> np.ndarray:
    """Map result codes to their names (``"pass"``, ``"fail"``, ``"unsure"``)."""
    return np.asarray(RESULT_NAMES, dtype=object)[np.asarray(codes, dtype=int)]


def parse_check(check: Any, limits: Limits | None = None) -> list[Question]:
    """Parse a step's ``check:`` value (short or full form) into questions."""
    if isinstance(check, str):
        return [Question.from_check_item(check, limits)]
    if isinstance(check, Mapping):
        check = [check]
    if not isinstance(check, Sequence) or not check:
        raise ProcessFileError("'check' must be a question string or a non-empty list of questions")
    questions = [Question.from_check_item(item, limits) for item in check]
    asks = [q.ask for q in questions]
    if len(set(asks)) != len(asks):
        raise ProcessFileError("a check asks the same question twice")
    return questions
