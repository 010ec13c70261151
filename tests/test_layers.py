"""Data moves one way: analysis never imports a face (CLI, report, notebooks)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "calibrate"
FACES = ("calibrate.cli", "calibrate.report", "calibrate.notebook_support")


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):  # module level and inside functions (lazy imports count too)
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize(
    "path", sorted((PACKAGE / "analysis").glob("*.py")) + [PACKAGE / "drawing.py"], ids=str
)
def test_analysis_imports_no_face(path):
    faces = {m for m in imported_modules(path) if m.startswith(FACES)}
    assert not faces, f"{path.name} imports {sorted(faces)}"


def test_readiness_only_decides():
    # Audit planning, drift tests and monitoring have their own modules; readiness re-exports
    # the names it always had but defines none of them.
    tree = ast.parse((PACKAGE / "analysis" / "readiness.py").read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    moved = {"AuditPlan", "audit_sample_size", "audit_plan", "plan_audit", "Drift", "DriftTest",
             "drift_test", "one_sided_increase", "monitor_store"}  # fmt: skip
    assert not defined & moved


def test_notebook_support_defines_no_display_or_audit():
    tree = ast.parse((PACKAGE / "notebook_support.py").read_text(encoding="utf-8"))
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef)}
    assert not {n for n in defined if n.endswith("Display")}
    assert not defined & {"planned_audit", "audit_detection", "audit_catch"}
