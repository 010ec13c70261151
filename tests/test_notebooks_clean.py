"""Committed notebooks carry no outputs, so their diffs stay readable.

Clear them before committing: in JupyterLab "Edit > Clear Outputs of All Cells"
then save, or ``jupyter nbconvert --clear-output --inplace notebooks/*.ipynb``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
EXPECTED = (
    "01_agreement.ipynb",
    "02_calibration_and_thresholds.ipynb",
    "03_trust_over_time.ipynb",
)
ALL = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


def test_the_three_notebooks_are_there():
    assert set(EXPECTED) <= set(ALL)


@pytest.mark.parametrize("name", ALL)
def test_notebook_has_no_outputs(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    nbformat.validate(nb)
    dirty = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not dirty, (
        f"{name}: cells {dirty} have outputs or execution counts; clear them with "
        f"`jupyter nbconvert --clear-output --inplace notebooks/{name}`"
    )
    # Per-cell execution timings and widget state are outputs too.
    assert not any("execution" in cell.metadata for cell in nb.cells), f"{name}: timings kept"
    assert "widgets" not in nb.metadata, f"{name}: widget state kept"


@pytest.mark.parametrize("name", ALL)
def test_notebook_opens_with_its_question_and_a_parameters_cell(name):
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    first = nb.cells[0]
    assert first.cell_type == "markdown"
    assert "db_path" in first.source and "parameters" in first.source
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    assert nb.cells.index(tagged[0]) == 1, "the parameters cell comes right after the question"
    assert "db_path = None" in tagged[0].source
    # The kernel named in the file is the one pip installs with ipykernel.
    assert nb.metadata["kernelspec"]["name"] == "python3"
