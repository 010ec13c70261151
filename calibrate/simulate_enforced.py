"""The generative model continued past the switch: an enforced step, an optional shift, reviews.

:func:`calibrate.simulate.simulate` writes the advisory window. With
``enforce_weeks > 0`` one step (``invoice-matching`` by default, the one the
sample certifies) then runs that many more weeks at the same weekly volume
with ``advisory: false`` and check-1 §3 semantics:

* a **pass** completes the step with no person;
* a **fail** goes back to the agent: attempt 1 sits in ``history`` with its
  check and no decision, and the rework is a fresh attempt, checked again (a
  second fail is a blocking fail in ``handoff.check``, still running);
* an **unsure** verdict is escalated and decided by a person.

The enforced process file is a new version of the process with
``advisory: false`` and an unsure region (``fail: 0.5``). From ``shift_week``
weeks after the switch, the evaluator stops seeing a share ``shift`` of the
not-acceptable submissions: it answers on them as on acceptable work, so its
false-pass rate rises at a known time. The ground truth of every attempt
joins ``.truth/truth.csv``; ``.truth/enforcement.json`` records the switch,
the shift and the true false-pass rate before and after it.

:func:`review_audit` plays the audit reviewer: it fills a drawn audit CSV's
decisions from the ground truth.
"""

from __future__ import annotations

import csv
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from calibrate.errors import UsageError
from calibrate.profile import RESULT_NAMES, parse_check

#: The enforced step's check: the sample's question with an unsure region.
ENFORCED_FAIL = 0.5
#: The audit reviewer's error rate (a careful reviewer who does not see the verdict).
REVIEWER_ERROR = 0.02
REVIEWER = "audit-reviewer"


def enforced_check(sm: Any) -> list[dict[str, Any]]:
    """The ``check:`` block written for the enforced version of a step."""
    ask = sm.check if isinstance(sm.check, str) else sm.check[0]["ask"]
    return [{"ask": ask, "pass": 0.9, "fail": ENFORCED_FAIL}]


def continue_enforced(
    sim: Any,
    sm: Any,
    *,
    runs_per_week: float,
    weeks: int,
    start: Any,
    shift_week: float | None,
    shift: float,
    seed: int,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run documents of ``weeks`` enforced weeks of one step, and the truth about them.

    Parameters
    ----------
    sim : calibrate.simulate._Sim
        The simulation state (its counts and truth rows are extended).
    sm : calibrate.simulate.StepModel
    runs_per_week : float
        The step's weekly volume in the advisory window.
    weeks : int
    start : datetime
        The switch: the end of the advisory window.
    shift_week : float or None
        Weeks after the switch from which the evaluator misses a share
        ``shift`` of the not-acceptable submissions; ``None``: no shift.
    shift : float
        That share, in [0, 1].
    seed : int
        The simulation's seed (the enforced weeks draw from their own stream,
        so the advisory window does not change).

    Returns
    -------
    docs : list of dict
    info : dict
        What ``.truth/enforcement.json`` records.
    """
    rng = np.random.default_rng([seed, 15])
    n = int(round(runs_per_week * weeks))
    questions = parse_check(enforced_check(sm), sim.limits)
    days = np.sort(rng.random(n)) * weeks * 7
    at = [start + timedelta(days=float(d)) for d in days]
    shifted = (
        np.zeros(n, dtype=bool) if shift_week is None or shift <= 0 else days >= shift_week * 7
    )
    # Progress through the window as the evaluator model sees it (past 1: after the window).
    frac = 1.0 + days / 84.0
    base = np.full(n, sm.base_rate[1])
    acc = [rng.random(n) < base, rng.random(n) < np.minimum(base + 0.1, 0.98)]
    docs: list[dict[str, Any]] = []
    seen, verdicts = [], []
    for attempt in (1, 2):
        # A blind spot: the evaluator answers on some bad work as if it were acceptable.
        blind = shifted & ~acc[attempt - 1] & (rng.random(n) < shift)
        ans, verdict, model, pcal = sim.answers_for(sm, questions, acc[attempt - 1] | blind, frac)
        seen.append((ans, model, pcal))
        verdicts.append(verdict)
    u = rng.random((n, 3))
    pass_code, fail_code = RESULT_NAMES.index("pass"), RESULT_NAMES.index("fail")
    for k in range(n):
        run_id = f"r-{seed:03d}-e{k:06d}"
        step: dict[str, Any] = {"status": "completed"}
        run: dict[str, Any] = {"run": run_id, "process": sm.process, "version": str(sm.version + 1)}
        t = at[k]
        attempt = 1
        if verdicts[0][k] == fail_code:
            # Back to the agent: attempt 1 in history (no person saw it), the rework checked anew.
            step["history"] = [{"attempt": 1, "check": _check(seen[0], verdicts[0], k, t)}]
            _truth(sim, run_id, sm, 1, acc[0][k], seen[0][2][k])
            attempt, t = 2, t + timedelta(hours=2 + 20 * float(u[k, 0]))
        ans_i = attempt - 1
        check = _check(seen[ans_i], verdicts[ans_i], k, t)
        code = verdicts[ans_i][k]
        _truth(sim, run_id, sm, attempt, acc[ans_i][k], seen[ans_i][2][k])
        sim.counts["checks"] += attempt
        sim.counts["answers"] += attempt * len(questions)
        # Only an escalation is decided by a person: its check is labeled; a pass, a fail and a
        # first attempt sent back to the agent are not (as `calibrate status` counts them).
        escalated = code not in (pass_code, fail_code)
        sim.counts["labeled_checks"] += int(escalated)
        sim.counts["unlabeled_checks"] += attempt - int(escalated)
        if code == fail_code:  # a second fail: blocking, waiting on the agent
            run["steps"] = {sm.step: {"status": "running", "history": step.get("history", [])}}
            run["handoff"] = {"step": sm.step, "check": check}
        elif code == pass_code:
            step["check"] = check
            run["steps"] = {sm.step: step}
        else:  # unsure: escalated; a person decides
            ok = bool(acc[ans_i][k]) != (u[k, 1] < REVIEWER_ERROR)
            resolution = "completed" if ok else ("returned" if u[k, 2] < 0.5 else "failed")
            when = t + timedelta(minutes=int(10 + 600 * float(u[k, 2])))
            step["check"] = check
            step["escalation"] = {"check": check, "resolution": resolution, "by": "ana",
                                  "at": _iso(when)}  # fmt: skip
            if resolution == "completed":
                step["escalation"]["output"] = "candidate"
            run["steps"] = {sm.step: step}
            sim.counts["decisions"] += 1
        sim.counts["runs"] += 1
        docs.append(run)
    truth = pd.DataFrame(
        {"shifted": shifted, "acceptable": acc[0], "passed": verdicts[0] == pass_code}
    )
    passed = truth[truth.passed]
    info = {
        "process": sm.process,
        "step": sm.step,
        "enforced_from": _iso(start),
        "weeks": weeks,
        "runs": n,
        "shift": shift if shift_week is not None else 0.0,
        "shift_at": _iso(start + timedelta(days=7 * shift_week))
        if shift_week is not None
        else None,
        # Empirical, first attempts: the share of passes that were not acceptable.
        "false_pass_rate_before": _rate(passed[~passed.shifted]),
        "false_pass_rate_after": _rate(passed[passed.shifted]),
    }
    return docs, info


def _rate(passed: pd.DataFrame) -> float | None:
    return float(1 - passed.acceptable.mean()) if len(passed) else None


def _check(seen: tuple, verdict: np.ndarray, k: int, t: Any) -> dict[str, Any]:
    ans, model, _ = seen
    return {"verdict": RESULT_NAMES[verdict[k]], "advisory": False, "model": model[k],
            "questions": ans[k], "at": _iso(t)}  # fmt: skip


def _truth(sim: Any, run_id: str, sm: Any, attempt: int, acceptable: Any, pcal: Any) -> None:
    sim.truth_rows.append(
        (run_id, sm.process, sm.step, attempt, int(acceptable), round(float(pcal), 6))
    )


def _iso(t: Any) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def write_enforced_process(out: Path, sm: Any) -> None:
    """The enforced version of the step's process file (``advisory: false``)."""
    import yaml

    body = {
        "process": sm.process,
        "version": sm.version + 1,
        "steps": [{"id": sm.step, "agent": sm.agent, "advisory": False,
                   "check": enforced_check(sm)}],
    }  # fmt: skip
    path = out / f"process-{sm.process}-v{sm.version + 1}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False, allow_unicode=True), encoding="utf-8")


#: The columns of a drawn audit CSV the simulated reviewer reads.
AUDIT_CSV_COLUMNS = ("run", "step", "attempt", "checked_at")


def review_audit(
    audit_csv: str | Path, truth_dir: str | Path, out: str | Path, *, seed: int = 0
) -> dict[str, Any]:
    """Fill a drawn audit CSV's decisions from the simulation's ground truth.

    The reviewer records the truth and errs with probability
    :data:`REVIEWER_ERROR`; a decision is ``approved`` or ``rejected``, made a
    day after the check, and never before the draw (its ``drawn_at`` column).

    Parameters
    ----------
    audit_csv : path-like
        Written by ``calibrate audit draw``.
    truth_dir : path-like
        The export's ``.truth`` folder.
    out : path-like
        Where to write the filled CSV (same columns).
    seed : int, default=0

    Returns
    -------
    dict
        ``reviewed`` (rows decided), ``not_found`` (rows with no ground truth)
        and ``out``.
    """
    rows = pd.read_csv(audit_csv, dtype=str, keep_default_na=False)
    missing = [c for c in AUDIT_CSV_COLUMNS if c not in rows.columns]
    if missing:
        raise UsageError(
            f"{audit_csv} is not an audit CSV from `calibrate audit draw`: "
            f"it has no {', '.join(missing)} column(s)"
        )
    truth = pd.read_csv(Path(truth_dir) / "truth.csv", dtype={"run": str, "attempt": str})
    key = truth.set_index(["run", "step", "attempt"])["acceptable"]
    idx = pd.MultiIndex.from_frame(rows[["run", "step", "attempt"]])
    acceptable = key.reindex(idx).to_numpy()
    found = ~pd.isna(acceptable)
    rng = np.random.default_rng(seed)
    flip = rng.random(len(rows)) < REVIEWER_ERROR
    ok = (acceptable == 1) != flip
    rows.loc[found, "decision"] = np.where(ok[found], "approved", "rejected")
    rows.loc[found, "by"] = REVIEWER
    checked = pd.to_datetime(rows["checked_at"], utc=True, errors="coerce")
    # A review follows the draw: a decision dated before it would be no audit (the monitor
    # ignores it), so a check recorded long before the draw is decided when the draw was made.
    drawn_at = (
        pd.to_datetime(rows["drawn_at"], utc=True, errors="coerce")
        if "drawn_at" in rows
        else pd.Series(pd.Timestamp.now(tz="UTC"), index=rows.index)
    )
    decided = (checked + pd.Timedelta(days=1)).where(lambda t: t >= drawn_at, drawn_at.dt.ceil("s"))
    rows.loc[found, "at"] = decided[found].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    rows.to_csv(out, index=False, quoting=csv.QUOTE_MINIMAL)
    return {"reviewed": int(found.sum()), "not_found": int((~found).sum()), "out": str(out)}


def write_info(out: Path, info: dict[str, Any]) -> None:
    """``.truth/enforcement.json``."""
    (out / ".truth" / "enforcement.json").write_text(
        json.dumps(info, indent=2) + "\n", encoding="utf-8"
    )
