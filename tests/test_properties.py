"""Property tests: whatever is thrown at ingest loads or is quarantined, never a traceback, never a lost line.

One in-memory store is shared by all examples of a test (each example writes a
new file), so the examples also check that earlier bad input never breaks a
later ingest. Decision-rule properties live in tests/test_profile.py.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from calibrate.ingest import ingest
from calibrate.store import connect

#: Examples per property; each example is one ingest (~0.1 s). Set CALIBRATE_PROPERTY_EXAMPLES
#: to hunt longer, e.g. 2000 before a release.
EXAMPLES = int(os.environ.get("CALIBRATE_PROPERTY_EXAMPLES", "30"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Keys the record pipeline looks at, so generated objects reach its deeper steps.
KEYS = [
    "run", "process", "version", "steps", "handoff", "step", "attempt", "check", "decision", "by",
    "at", "note", "verdict", "advisory", "model", "questions", "truncated", "ask", "kind", "answer",
    "confidence", "result", "history", "escalation", "resolution", "output", "reviews",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([0, -1, 2**31, 2**40, 2**63, 2**64 - 1, 2**70, -(2**63) - 1])  # overflow edges
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["pass", "fail", "unsure", "error", "yes_no", "choice", "rubric", "approved",
                       "completed", "2026-10-01T10:00:00Z", "infinity", "", " "])
)  # fmt: skip
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=16,
)

QUESTION = {"ask": "Is it right?", "kind": "yes_no", "answer": 0.95, "result": "pass"}
CHECK = {
    "verdict": "pass", "advisory": True, "model": "m1", "at": "2026-10-01T10:00:00Z",
    "questions": [
        QUESTION,
        {"ask": "Which?", "kind": "choice", "answer": "a", "confidence": 0.9, "result": "pass"},
        {"ask": "How good?", "kind": "rubric", "answer": 2, "confidence": 0.9, "result": "pass"},
    ],
}  # fmt: skip
TEMPLATES = [
    {"run": "r-v", "process": "p", "version": "1", "step": "s", "attempt": 1, "check": CHECK},
    {
        "run": "r-d", "process": "p", "version": "1",
        "steps": {
            "s": {"attempt": 2, "check": CHECK, "history": [{"attempt": 1, "check": CHECK, "decision": "returned"}],
                  "escalation": {"check": CHECK, "resolution": "completed", "output": "own", "by": "ana"}},
            "a": {"reviews": "s", "decision": "approved", "by": "ana", "at": "2026-10-02T10:00:00Z", "note": "ok"},
        },
        "handoff": {"step": "s", "check": CHECK},
    },
    {"run": "r-c", "process": "p", "step": "s", "attempt": 1, "decision": "rejected", "by": "ben",
     "at": "2026-10-02T10:00:00Z", "note": "no"},
]  # fmt: skip


def _paths(value, prefix=()):
    """Every path into a JSON value, the root included."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _replace(value, path, new):
    if not path:
        return new
    out = dict(value) if isinstance(value, dict) else list(value)
    out[path[0]] = _replace(value[path[0]], path[1:], new)
    return out


@st.composite
def mutated_records(draw):
    """A valid record with one value anywhere in it replaced by any JSON value."""
    template = draw(st.sampled_from(TEMPLATES))
    path = draw(st.sampled_from(list(_paths(template))))
    return _replace(template, path, draw(json_values))


def count_nonblank(data: bytes) -> int:
    """Records a JSON-lines file holds: lines that are not only JSON whitespace."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return sum(1 for line in data.split(b"\n") if line.strip(b" \t\r"))


class Thrower:
    """Write each example to a new file and ingest it into one shared store."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="calibrate-props-"))
        self.con = connect(":memory:")
        self.n = itertools.count()

    def ingest_bytes(self, data: bytes, suffix: str):
        path = self.dir / f"example-{next(self.n)}{suffix}"
        path.write_bytes(data)
        report = ingest(self.con, [path])
        (f,) = report.files
        # A blank decision is pending (read = loaded + quarantined + pending), as ingest counts.
        assert f.read == f.loaded + f.quarantined + f.pending, f
        if f.status == "loaded":
            stored = self.con.execute(
                "SELECT count(*) FROM quarantine WHERE path = ?", [str(path)]
            ).fetchone()[0]
            assert stored == f.quarantined, (stored, f)
            blank = self.con.execute(
                "SELECT count(*) FROM quarantine WHERE path = ? AND coalesce(reason, '') = ''",
                [str(path)],
            ).fetchone()[0]
            assert blank == 0
        return f


@pytest.fixture(scope="module")
def thrower() -> Thrower:
    return Thrower()


def _line(value) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


@SETTINGS
@given(values=st.lists(json_values, min_size=1, max_size=6))
def test_any_json_value_loads_or_quarantines(thrower, values):
    data = b"\n".join(_line(v) for v in values) + b"\n"
    f = thrower.ingest_bytes(data, ".jsonl")
    assert f.read == len(values)
    # A value that is not an object is never loaded.
    assert f.quarantined >= sum(not isinstance(v, dict) for v in values)


@SETTINGS
@given(records=st.lists(mutated_records(), min_size=1, max_size=5))
def test_any_value_anywhere_in_a_record(thrower, records):
    data = b"\n".join(_line(r) for r in records)
    f = thrower.ingest_bytes(data, ".jsonl")
    assert f.read == len(records)


text_lines = st.lists(
    st.text(max_size=40)
    | st.sampled_from(["", " ", "\t", "\r", "{", "}", "[]", "{}", "null", "\ufeff"]),
    max_size=6,
).map(lambda lines: "\n".join(lines).encode("utf-8", "surrogatepass"))


@SETTINGS
@given(data=text_lines | st.binary(max_size=200))
def test_any_text_or_bytes(thrower, data):
    """Lines of any text (lone surrogates become invalid UTF-8) or any bytes: every non-blank line read."""
    f = thrower.ingest_bytes(data, ".jsonl")
    assert f.read == count_nonblank(data)


@settings(SETTINGS, max_examples=max(1, EXAMPLES // 2))
@given(value=json_values)
def test_any_json_document(thrower, value):
    f = thrower.ingest_bytes(json.dumps(value, indent=1).encode(), ".json")
    if f.kind == "limits":
        assert f.read == 1
    elif isinstance(value, list):
        assert f.read == len(value)
    else:
        assert f.read == 1


cells = st.text(max_size=10) | st.sampled_from(
    ["", "1", "approved", "r1", "s", "\n", '"', "2026-10-02T10:00:00Z"]
)


@SETTINGS
@given(
    header=st.lists(st.sampled_from(["run", "process", "step", "attempt", "decision", "by", "at", "note"]) | cells,
                    min_size=1, max_size=8),
    rows=st.lists(st.lists(cells, max_size=9), max_size=5),
)  # fmt: skip
@example(header=["\x00"], rows=[])  # fresh-clone CI, stop 31: a NUL byte in the header
def test_any_csv(thrower, header, rows):
    """Every row after the header is a record (loaded or quarantined); a bad header, one record."""
    buf = io.StringIO()
    csv.writer(buf).writerows([header, *rows])
    data = buf.getvalue().encode("utf-8", "surrogatepass")
    f = thrower.ingest_bytes(data, ".csv")
    nonblank = [r for r in [header, *rows] if any(cell.strip() for cell in r)]
    if not nonblank:
        assert f.read == 0
        return
    names = [(h.strip() or f"column{i + 1}").lower() for i, h in enumerate(nonblank[0])]
    if len(set(names)) < len(names) or any("\x00" in n for n in names):
        # A header naming a column twice, or holding a NUL byte (since stop 29: names that
        # would seem right on screen and be wrong): the file is one quarantined record.
        assert (f.read, f.quarantined) == (1, 1)
    else:
        assert f.read == len(nonblank) - 1


yaml_checks = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["ask", "pass", "fail", "one_of", "levels", "unsure", "confidence"]), inner,
                      max_size=4),
    max_leaves=10,
)  # fmt: skip


@SETTINGS
@given(
    check=yaml_checks,
    extra=st.dictionaries(st.sampled_from(["id", "advisory", "process", "version"]), scalars),
)
def test_any_process_file(thrower, check, extra):
    doc = {"process": "p", "version": 1, "steps": [{"id": "s", "check": check, **extra}]}
    text = yaml.safe_dump(doc, allow_unicode=True)
    f = thrower.ingest_bytes(text.encode("utf-8", "surrogatepass"), ".yaml")
    assert f.read == 1


@SETTINGS
@given(text=st.text(max_size=120))
def test_any_yaml_text(thrower, text):
    f = thrower.ingest_bytes(text.encode("utf-8", "surrogatepass"), ".yaml")
    assert f.read <= max(1, text.count("check"))
