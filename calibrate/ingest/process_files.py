"""Process files (YAML) and ``describe.limits`` (JSON): the thresholds in force.

These are configuration, not records: small files parsed in Python with a
safe YAML loader, validated with :mod:`calibrate.profile`, and written to the
``questions`` and ``limits`` tables with bound parameters.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import duckdb
import yaml

from calibrate.errors import ProcessFileError
from calibrate.profile import Kind, Limits, parse_check

#: More aliases than this in one process file is treated as an alias bomb.
MAX_YAML_ALIASES = 100
#: A process file whose values, with every alias expanded, number more than this is refused:
#: a few dozen aliases nested nine-fold already expand to billions (billion laughs).
MAX_YAML_NODES = 100_000
#: Collections nested deeper than this are refused (a process file needs about five levels).
MAX_YAML_DEPTH = 64


@dataclass
class Parsed:
    """Rows to load and problems to quarantine, from one configuration file."""

    n_read: int
    rows: list[tuple[Any, ...]]
    bad: list[tuple[str, str, str]]  # (json_path, raw, reason)
    process: str | None = None
    version: str | None = None


def load_yaml(text: str) -> Any:
    """Parse YAML safely: no object construction, a cap on aliases and on their expansion.

    Raises
    ------
    ProcessFileError
        Not valid YAML, nested too deeply, an alias bomb, or a recursive alias.
    """
    try:
        n_alias = _count_aliases(text)
    except yaml.YAMLError as exc:
        raise ProcessFileError(f"not valid YAML: {_yaml_message(exc)}") from None
    except RecursionError:
        raise ProcessFileError("YAML is nested too deeply") from None
    if n_alias > MAX_YAML_ALIASES:
        raise ProcessFileError(
            f"YAML uses {n_alias} aliases (limit {MAX_YAML_ALIASES}); refusing a possible alias bomb"
        )
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ProcessFileError(f"not valid YAML: {_yaml_message(exc)}") from None
    except RecursionError:
        raise ProcessFileError("YAML is nested too deeply") from None
    size = _expanded_size(doc, MAX_YAML_NODES)
    if size > MAX_YAML_NODES:
        raise ProcessFileError(
            f"YAML expands to more than {MAX_YAML_NODES} values through its aliases; refusing a possible alias bomb"
        )
    return doc


def _count_aliases(text: str) -> int:
    """Aliases in ``text``, from the event stream; stops early on deep nesting.

    PyYAML's scanner slows down quadratically with flow nesting depth, so a
    few kilobytes of ``[[[[...`` would take minutes to reject; stopping at
    :data:`MAX_YAML_DEPTH` keeps the cost small.
    """
    depth = 0
    n_alias = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise ProcessFileError(
                    f"YAML is nested too deeply (more than {MAX_YAML_DEPTH} levels)"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        elif isinstance(event, yaml.AliasEvent):
            n_alias += 1
    return n_alias


def _expanded_size(doc: Any, limit: int) -> int:
    """Values in ``doc`` with every alias expanded, counted without expanding (stops past ``limit``).

    An alias is the same Python object as its anchor, so sizes are memoised by
    identity: a billion laughs costs one visit per anchor. A container that
    contains itself (``&a [*a]``) would expand forever and is refused.
    """
    done: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        node, leaving = stack.pop()
        if not isinstance(node, dict | list):
            continue
        key = id(node)
        children = list(node.values()) if isinstance(node, dict) else node
        if leaving:
            total = 1 + sum(
                done.get(id(c), 1) if isinstance(c, dict | list) else 1 for c in children
            )
            done[key] = total
            active.discard(key)
            if total > limit:
                return total
            continue
        if key in done:
            continue
        if key in active:
            raise ProcessFileError("YAML refers to itself through an alias (a recursive structure)")
        active.add(key)
        stack.append((node, True))
        stack.extend(
            (c, False) for c in children if isinstance(c, dict | list) and id(c) not in done
        )
    return done.get(id(doc), 1)


def _yaml_message(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    if mark is not None:
        return f"{problem} at line {mark.line + 1}, column {mark.column + 1}"
    return str(problem)


def parse_process(text: str) -> Parsed:
    """Questions of every checked step of a process file.

    One record per step that has a ``check:``; a step whose check has the wrong
    shape is quarantined alone, the other steps load.
    """
    doc = load_yaml(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise ProcessFileError("a process file needs a mapping with 'process' and a 'steps' list")
    process = doc.get("process")
    if not isinstance(process, str) or not process:
        raise ProcessFileError("a process file needs a 'process' name")
    version = None if doc.get("version") is None else str(doc.get("version"))
    out = Parsed(n_read=0, rows=[], bad=[], process=process, version=version)
    # Where each step id is used (steps are few: a process file is configuration, not records).
    used: dict[object, list[int]] = {}
    for i, step in enumerate(doc["steps"]):
        if isinstance(step, dict) and isinstance(step.get("id"), str):
            used.setdefault(step["id"], []).append(i)
    for i, step in enumerate(doc["steps"]):
        if isinstance(step, dict) and "check" not in step and "advisory" in step:
            # check-1 §2: advisory is allowed only beside a check; the step is read and refused.
            out.n_read += 1
            path = f"steps[{i}].advisory"
            out.bad.append(
                (path, _preview(step), f"{path}: 'advisory' is allowed only beside 'check'")
            )
            continue
        if not isinstance(step, dict) or "check" not in step:
            continue
        out.n_read += 1
        path = f"steps[{i}].check"
        step_id = step.get("id")
        raw = _preview(step)
        try:
            if not isinstance(step_id, str) or not step_id:
                raise ProcessFileError("the step has no 'id'")
            if len(used[step_id]) > 1:
                places = ", ".join(f"steps[{j}]" for j in used[step_id])
                raise ProcessFileError(
                    f"step id {json.dumps(step_id)} is used by {places}: a step id names one "
                    "step of a process; rename the others"
                )
            advisory = step.get("advisory", False)
            if not isinstance(advisory, bool):
                raise ProcessFileError("'advisory' must be true or false")
            # Validate with the profile (defaults filled in), but store what the file says.
            parse_check(step["check"])
            items = [step["check"]] if isinstance(step["check"], str | dict) else step["check"]
            for position, item in enumerate(items):
                out.rows.append(_row(process, version, step_id, position, item, advisory))
        except ProcessFileError as exc:
            out.bad.append((path, raw, f"{path}: {exc}"))
    return out


def _row(
    process: str, version: str | None, step: str, position: int, item: Any, advisory: bool
) -> tuple:
    if isinstance(item, str):
        item = {"ask": item}
    q = parse_check([item])[0]
    given = lambda key: item.get(key)  # noqa: E731 - explicit values only; NULL means server default
    return (
        process, version, step, position, q.ask, q.kind.value,
        given("pass") if q.kind is Kind.YES_NO else None,
        given("fail") if q.kind is Kind.YES_NO else None,
        list(q.pass_names) if q.kind is Kind.CHOICE else None,
        list(q.unsure_names) if q.kind is Kind.CHOICE else None,
        q.pass_level,
        given("confidence") if q.kind is not Kind.YES_NO else None,
        json.dumps(q.one_of) if q.kind is Kind.CHOICE else None,
        list(q.levels) if q.kind is Kind.RUBRIC else None,
        advisory,
    )  # fmt: skip


def _preview(value: Any) -> str:
    try:
        text = json.dumps(value, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text[:2000]


def store_process(con: duckdb.DuckDBPyConnection, parsed: Parsed, file_id: int) -> int:
    """Store the questions of the steps this file defines; returns the rows written.

    Every version's questions are kept in ``question_versions`` (a file of a
    version already stored replaces that version's rows), so that a check
    recorded under an older version is judged against its own thresholds.
    ``questions`` holds each step's newest version, today's check: a file with
    an older ``version`` than the one held there does not replace it.
    """
    steps = sorted({row[2] for row in parsed.rows})
    written = 0
    for step in steps:
        rows = [(*r, file_id) for r in parsed.rows if r[2] == step]
        con.execute(
            """DELETE FROM question_versions WHERE process = ? AND step = ?
               AND process_version IS NOT DISTINCT FROM ?""",
            [parsed.process, step, parsed.version],
        )
        con.executemany(_INSERT_QUESTION.format(table="question_versions"), rows)
        written += len(rows)
        current = con.execute(
            "SELECT max(process_version) FROM questions WHERE process = ? AND step = ?",
            [parsed.process, step],
        ).fetchone()[0]
        if (
            current is not None
            and parsed.version is not None
            and _version_key(parsed.version) < _version_key(current)
        ):
            continue
        con.execute("DELETE FROM questions WHERE process = ? AND step = ?", [parsed.process, step])
        con.executemany(_INSERT_QUESTION.format(table="questions"), rows)
    return written


#: One question row, its id from (process, step, ask); ``table`` is one of two fixed names.
_INSERT_QUESTION = """INSERT INTO {table}
    SELECT md5(concat_ws(chr(31), $1, $3, $5)), $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
           $13, $14, $15, $16"""


_VERSION_PARTS = re.compile(r"[0-9]+|[^0-9]+")


def _version_key(version: str) -> tuple[tuple[int, int, str], ...]:
    """Natural order of versions: runs of digits compare as numbers, the rest as text.

    ``'1.9' < '1.10'``, ``'v9' < 'v10'``, ``'2' < '10'``, and ISO dates in
    date order.
    """
    return tuple(
        (0, int(part), "") if part[0] in "0123456789" else (1, 0, part)
        for part in _VERSION_PARTS.findall(version.strip())
    )


def parse_limits(text: str) -> Limits:
    """Parse a ``describe.limits`` JSON file."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ProcessFileError(f"not valid JSON: {exc}") from None
    return Limits.from_json(doc)


def store_limits(con: duckdb.DuckDBPyConnection, limits: Limits, text: str, file_id: int) -> None:
    """Record the limits; the latest file wins in the ``current_limits`` view."""
    body = json.loads(text)
    body = body.get("limits", body)
    state = body.get("checkStateBytes")
    con.execute(
        "INSERT INTO limits VALUES (?, ?, ?, ?, ?)",
        [file_id, limits.check_pass, limits.check_fail, limits.check_confidence,
         state if isinstance(state, int) and not isinstance(state, bool) else None],
    )  # fmt: skip
