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


def _module_level_imports(path: Path) -> set[str]:
    """Modules (and ``module.name``) imported at module level, TYPE_CHECKING blocks left out."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_analysis_modules_import_one_way():
    """No cycle among calibrate.analysis' module-level imports, and no part of the threshold
    search imports calibrate.analysis.thresholds, which gathers their names (a cycle)."""
    graph = {}
    for path in (PACKAGE / "analysis").glob("*.py"):
        if path.stem != "__init__":
            graph[f"calibrate.analysis.{path.stem}"] = _module_level_imports(path)
    graph = {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}
    facade = "calibrate.analysis.thresholds"
    users = {
        path.stem
        for path in (PACKAGE / "analysis").glob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))  # lazy imports too
        if isinstance(node, ast.ImportFrom)
        and (node.module == facade or any(f"{node.module}.{a.name}" == facade for a in node.names))
    }
    assert not users, f"{sorted(users)} import {facade}"
    done: set[str] = set()

    def visit(m: str, stack: tuple[str, ...]) -> None:
        assert m not in stack, f"import cycle: {' -> '.join((*stack[stack.index(m) :], m))}"
        if m not in done:
            for d in graph[m]:
                visit(d, (*stack, m))
            done.add(m)

    for m in sorted(graph):
        visit(m, ())
