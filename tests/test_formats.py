"""The JSON Schemas in calibrate/schemas describe the records ingest accepts."""

from __future__ import annotations

import json
from importlib import resources

import jsonschema
import pytest
from referencing import Registry, Resource


def load_schemas() -> tuple[dict, Registry]:
    folder = resources.files("calibrate.schemas")
    schemas = {
        p.name: json.loads(p.read_text(encoding="utf-8"))
        for p in folder.iterdir()
        if p.name.endswith(".schema.json")
    }
    pairs = [(name, Resource.from_contents(s)) for name, s in schemas.items()]
    pairs += [(s["$id"], Resource.from_contents(s)) for s in schemas.values()]
    return schemas, Registry().with_resources(pairs)


SCHEMAS, REGISTRY = load_schemas()


def validate(doc: dict, name: str) -> None:
    jsonschema.validate(doc, SCHEMAS[name], registry=REGISTRY)


def test_examples_validate(examples_dir):
    for line in (examples_dir / "runs.jsonl").read_text().splitlines():
        validate(json.loads(line), "run.schema.json")
    for line in (examples_dir / "verdicts.jsonl").read_text().splitlines():
        validate(json.loads(line), "verdict-line.schema.json")


def test_sample_validates(sample_dir):
    for line in (sample_dir / "runs.jsonl").read_text().splitlines()[:30]:
        validate(json.loads(line), "run.schema.json")


@pytest.mark.parametrize(
    "question",
    [
        {"ask": "a", "kind": "yes_no", "answer": 1.7},
        {"ask": "a", "kind": "scale", "answer": 1},
        {"kind": "yes_no", "answer": 0.5},
        {"ask": "a", "kind": "rubric", "answer": -1},
    ],
)
def test_schema_rejects_what_ingest_quarantines(question):
    line = {"run": "r", "step": "s", "check": {"verdict": "pass", "questions": [question]}}
    with pytest.raises(jsonschema.ValidationError):
        validate(line, "verdict-line.schema.json")


@pytest.mark.parametrize(
    ("doc", "name"),
    [
        ({"run": "r", "step": "", "check": {"verdict": "error"}}, "verdict-line.schema.json"),
        ({"run": "r", "step": " \t", "check": {"verdict": "error"}}, "verdict-line.schema.json"),
        ({"run": "  ", "step": "s", "check": {"verdict": "error"}}, "verdict-line.schema.json"),
        (
            {"run": "r", "process": "", "step": "s", "check": {"verdict": "error"}},
            "verdict-line.schema.json",
        ),
        ({"run": "r", "steps": {" ": {}}}, "run.schema.json"),
        ({"run": "r", "process": " ", "steps": {"s": {}}}, "run.schema.json"),
        ({"run": "r", "steps": {}, "handoff": {"step": ""}}, "run.schema.json"),
        ({"run": "r", "step": "  ", "attempt": 1, "decision": "approved"}, "decision.schema.json"),
    ],
)
def test_schema_rejects_blank_names_as_ingest_does(doc, name):
    """A run, process or step that is empty or only blanks names nothing (black-box F3)."""
    with pytest.raises(jsonschema.ValidationError):
        validate(doc, name)
    named = json.dumps(doc)  # the same record with its names given is valid
    for blank in ('" \\t"', '"  "', '" "', '""'):
        named = named.replace(blank, '"x"')
    validate(json.loads(named), name)
