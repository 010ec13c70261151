"""What readiness reads of a threshold search: :class:`ThresholdView`.

The search's result in the JSON shape of ``calibrate thresholds --format
json`` (issue 5), whichever search produced it, and the conversions between
check-1 question dicts and :class:`calibrate.profile.Question` objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from calibrate.analysis.needed import NeededLabels
from calibrate.profile import Question


@dataclass
class ThresholdView:
    """What readiness needs from the threshold search, in the JSON shape of issue 5.

    Attributes
    ----------
    status : {"ok", "unattainable", "insufficient_data", "selected_sample"}
    check : list of dict
        The suggested questions in check-1's keys plus ``kind`` (QUESTION).
    certified : dict or None
        ``false_pass_upper``, ``false_fail_upper``, ``confidence`` when the
        status is ``ok``; ``None`` otherwise (nothing is certified).
    best_bounds : dict
        The lowest bounds a single candidate reached: a diagnostic, not a
        certificate.
    expected : dict
        ``auto_pass``, ``auto_fail``, ``unsure``: shares under the suggestion; empty
        without one (today's shares are in ``current``).
    current : dict
        The labeled history replayed under today's thresholds.
    n_labeled : int
    needed_labels : int or None
        The search's own estimate of the labels still needed (``more``), when it gives one.
    needed : NeededLabels or None
        That estimate whole (total, probability, resamples certified), when
        the search ran it (:mod:`calibrate.analysis.needed`).
    display_factory : callable or None
        Builds the trade-off display (an object with ``plot(ax=None)``), when
        the search offers one; see :meth:`make_display`.
    notes : list of str
        The search's notes, one string a note (a note may itself hold ``"; "``).
    raw : object
        The search's own result, for the faces.
    """

    status: str
    check: list[dict[str, Any]]
    certified: dict[str, Any] | None
    expected: dict[str, Any]
    current: dict[str, Any]
    best_bounds: dict[str, Any] = field(default_factory=dict)
    n_labeled: int = 0
    needed_labels: int | None = None
    needed: NeededLabels | None = None
    display_factory: Callable[[], Any] | None = None
    notes: list[str] = field(default_factory=list)
    raw: Any = None

    @property
    def note(self) -> str:
        """The notes joined by ``"; "``: for reading, not for splitting (see :attr:`notes`)."""
        return "; ".join(self.notes)

    def make_display(self) -> Any:
        """The trade-off display, or ``None`` when the search offers none."""
        return self.display_factory() if self.display_factory is not None else None

    @classmethod
    def from_mapping(
        cls,
        doc: Mapping[str, Any],
        *,
        display_factory: Callable[[], Any] | None = None,
        raw: Any = None,
    ) -> ThresholdView:
        """Build from a step object of ``calibrate thresholds --format json``."""
        needed = doc.get("needed_labels")
        estimate = NeededLabels.from_dict(needed) if isinstance(needed, Mapping) else None
        if isinstance(needed, Mapping):  # {"total": .., "more": .., "probability": ..}
            needed = needed.get("more", needed.get("additional", needed.get("total")))
        return cls(
            status=str(doc.get("status", "insufficient_data")),
            check=[dict(q) for q in (doc.get("check") or [])],
            certified=dict(doc["certified"]) if doc.get("certified") else None,
            best_bounds=dict(doc.get("best_bounds") or {}),
            expected=dict(doc.get("expected") or {}),
            current=dict(doc.get("current") or {}),
            n_labeled=int(doc.get("n_labeled") or 0),
            needed_labels=int(needed)
            if isinstance(needed, int | float) and np.isfinite(needed)
            else None,
            needed=estimate,
            display_factory=display_factory,
            notes=_notes_of(doc),
            raw=raw if raw is not None else doc,
        )


def _notes_of(doc: Mapping[str, Any]) -> list[str]:
    """``notes`` of a step object; from an older one, its joined ``note`` (or ``reason``) whole."""
    notes = doc.get("notes")
    if isinstance(notes, Sequence) and not isinstance(notes, str):
        return [str(n) for n in notes if n]
    one = doc.get("note") or doc.get("reason")
    return [str(one)] if one else []


def suggested_questions(
    check: Sequence[Mapping[str, Any]], current: Sequence[Question]
) -> list[Question]:
    """Turn QUESTION dicts back into :class:`Question` objects, keeping texts from ``current``.

    A choice keeps its ``one_of`` descriptions and a rubric its ``levels``
    texts from the current question of the same ``ask`` when the suggestion
    leaves them out.
    """
    by_ask = {q.ask: q for q in current}
    out = []
    for item in check:
        body = {k: v for k, v in item.items() if k != "kind"}
        cur = by_ask.get(str(item.get("ask")))
        kind = str(item.get("kind") or (cur.kind.value if cur else "yes_no"))
        if kind == "choice" and "one_of" not in body:
            names = dict(cur.one_of) if cur and cur.one_of else {}
            for n in [*_listify(body.get("pass")), *_listify(body.get("unsure"))]:
                names.setdefault(str(n), str(n))
            if len(names) < 2:
                names.setdefault("(other)", "any other answer")
            body["one_of"] = names
        if kind == "rubric" and "levels" not in body:
            levels = list(cur.levels) if cur and cur.levels else [f"level {i}" for i in range(10)]
            body["levels"] = levels
        if kind == "yes_no" and body.get("fail") is None:
            body.pop("fail", None)
        if body.get("confidence") is None:
            body.pop("confidence", None)
        out.append(Question.from_check_item(body))
    return out


def _listify(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    return list(value)


def check_items(questions: Sequence[Question]) -> list[dict[str, Any]]:
    """Questions as QUESTION dicts: check-1's keys plus ``kind`` (the JSON shape of issue 5)."""
    out = []
    for q in questions:
        item = q.to_check_item()
        body: dict[str, Any] = {"ask": item.pop("ask"), "kind": q.kind.value}
        body.update(item)
        out.append(body)
    return out
