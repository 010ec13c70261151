"""Notebook 04 runs top to bottom on a simulated enforced export (the loop without the shift,
ending OK, is tests/test_cli_monitor.py)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime

import pytest
from test_notebooks import kernel_dir, n_images, plain, run_notebook, stdout  # noqa: F401

NAME = "04_after_the_switch.ipynb"


@pytest.mark.slow  # a kernel and a whole notebook
def test_04_alarms_after_the_shift(kernel_dir):  # noqa: F811
    nb = run_notebook(NAME, kernel_dir)
    out = stdout(nb)
    assert "match_invoice · evaluator-a-2026-06: alarm" in out
    assert "advisory: true" in out
    # The repeated binomial test is shown beside the e-process, and exceeds delta.
    naive = float(out.split("binomial test every week: ")[1].split("%")[0])
    assert naive > 10
    # Both Monte-Carlo shares with their n and simulation error (95% Wilson).
    assert re.search(
        r"binomial test every week: [\d.]+% \(\d+ of 500; 95% CI [\d.]+%–[\d.]+%\)", out
    )
    assert re.search(r"the monitor's e-process: +[\d.]+% \(\d+ of 500; 95% CI", out)
    # The simulated store ends by today: the audit is drawn from checks that exist.
    last = re.search(r"checks recorded from \S+ to (\d{4}-\d{2}-\d{2})", out).group(1)
    assert date.fromisoformat(last) <= datetime.now(UTC).date()
    # The step in alarm gets a plan line that says why there is no plan.
    assert "match_invoice: no audit to plan: the monitor alarms" in out
    assert "escalations (unsure or error verdicts)" in out and "no audit drew" in out
    assert "alarm" in plain(nb)
    assert n_images(nb) >= 2
