"""A looser limit never reads worse (issue 18 item 1): the status classification over alpha."""

from __future__ import annotations

import numpy as np
import pytest

from calibrate.analysis import thresholds as th
from calibrate.store import connect

ALPHAS = (0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3)
RANK = {"unattainable": 0, "insufficient_data": 1, "ok": 2}


def _assert_monotone(statuses: list[str]) -> None:
    ranks = [RANK[s] for s in statuses]
    assert ranks == sorted(ranks), list(zip(ALPHAS, statuses, strict=True))


def test_the_samples_weak_step_reads_no_worse_as_alpha_grows(sample_store):
    """On the bundled sample review_expense read insufficient, unattainable, then insufficient."""
    con = connect(sample_store, read_only=True)
    try:
        report = th.suggest_from_store(con, None, alpha=0.05)
        (step,) = [s for s in report.steps if s.step == "review_expense"]
        frame = step.tradeoff(ALPHAS)
    finally:
        con.close()
    _assert_monotone(list(frame["status"]))


@pytest.mark.parametrize("seed", range(6))
def test_status_over_alpha_on_one_question(seed):
    rng = np.random.default_rng(seed)
    n = [40, 120, 400][seed % 3]
    ok = rng.random(n) < 0.7
    informative = seed % 2 == 0
    p = np.where(ok, rng.beta(6, 1.5, n), rng.beta(2, 3, n)) if informative else rng.random(n)
    q = th.Question("ok?", th.Kind.YES_NO, pass_p=0.9)
    data = th.StepData("proc", "step", "m", [q], [True], np.arange(n).astype(str), ok, [p],
                       [np.full(n, np.nan)], np.zeros(n, bool))  # fmt: skip
    statuses = [th.find_thresholds(data, alpha=a, delta=0.1, beta=0.3).status for a in ALPHAS]
    _assert_monotone(statuses)
