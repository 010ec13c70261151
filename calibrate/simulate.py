"""A generative model of check-1 exports, for the sample data and the tests' ground truth.

The model, per submission of a checked step:

1. Truth. The submission is acceptable with probability ``base_rate(t)``,
   which may drift linearly over the window.
2. Evaluator. It sees a noisy signal ``z = separation * (2A - 1) + N(0, 1)``
   of the truth ``A``. The calibrated yes-probability is ``P(A | z)``; the
   evaluator reports ``sigmoid(overconfidence * logit(P(A | z)))``, so with
   ``overconfidence > 1`` it is over-confident by construction. Choice and
   rubric answers are drawn from per-truth answer distributions, with a
   confidence that is high whether or not the answer is right. A model change
   part-way swaps in another evaluator; a drift lowers the separation over time.
3. Verdict. The recorded results come from :func:`calibrate.profile.decide`
   with the thresholds in the process file, and the verdict is the worst.
   A small share of checks are ``error`` verdicts or carry a truncation record.
4. People. Each approver records the truth, but flips it with a personal
   error rate; one approver rubber-stamps the check's verdict within seconds
   (automation bias). A rejected first attempt is sometimes reworked: the
   first attempt then sits in ``history``.

The ground truth (true acceptability and the calibrated probability of every
submission) is written to ``.truth/truth.csv``, inside a hidden folder that
``calibrate ingest`` never reads, with counts in ``.truth/manifest.json``.
"""

from __future__ import annotations

import csv
import functools
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from calibrate import simulate_enforced
from calibrate.profile import RESULT_NAMES, Kind, Limits, Question, decide, parse_check, worst

START = datetime(2026, 8, 3, tzinfo=UTC)
WINDOW_DAYS = 84


@dataclass
class Evaluator:
    """How one evaluator model answers; see the module docstring."""

    name: str
    separation: float
    overconfidence: float
    drift: float = 0.0  # separation lost by the end of the window
    choice_probs: dict[bool, list[float]] = field(default_factory=dict)
    rubric_probs: dict[bool, list[float]] = field(default_factory=dict)


@dataclass
class StepModel:
    """One checked step of one simulated process."""

    process: str
    version: int
    step: str
    agent: str
    check: Any  # the check: value as written in the process file
    share: float  # share of runs
    base_rate: tuple[float, float]  # acceptable share at start and end of the window
    evaluators: list[tuple[float, Evaluator]]  # (from fraction of the window, evaluator)
    approve_step: str | None  # None: decisions go to the decision table
    escalation_share: float = 0.0  # share of unsure verdicts escalated to a person
    advisory: bool = True


def _models() -> list[StepModel]:
    vendor_check = [
        {
            "ask": "The cleared verdict matches what the attached report says.",
            "pass": 0.9,
            "fail": 0.5,
        },
        {
            "ask": "What does the summary do?",
            "one_of": {
                "states": "States the verdict and the lists checked.",
                "hedges": "Avoids a verdict or qualifies it heavily.",
                "unclear": "Cannot tell.",
            },
            "pass": ["states"],
            "unsure": ["unclear"],
        },
        {
            "ask": "How complete is the screening?",
            "levels": [
                "Neither list is clearly covered.",
                "One list is covered.",
                "Both lists are covered with the search terms stated.",
            ],
            "pass": 2,
            "confidence": 0.8,
        },
    ]
    good = Evaluator(
        "evaluator-a-2026-06", separation=1.3, overconfidence=2.0,
        choice_probs={True: [0.88, 0.08, 0.04], False: [0.15, 0.65, 0.20]},
        rubric_probs={True: [0.03, 0.12, 0.85], False: [0.45, 0.40, 0.15]},
    )  # fmt: skip
    better = Evaluator(
        "evaluator-b-2026-09", separation=1.6, overconfidence=1.6,
        choice_probs={True: [0.92, 0.05, 0.03], False: [0.10, 0.70, 0.20]},
        rubric_probs={True: [0.02, 0.08, 0.90], False: [0.50, 0.40, 0.10]},
    )  # fmt: skip
    plain = Evaluator("evaluator-a-2026-06", separation=1.9, overconfidence=1.8)
    weak = Evaluator(
        "evaluator-a-2026-06", separation=0.7, overconfidence=2.5, drift=0.4,
        choice_probs={True: [0.6, 0.3, 0.1], False: [0.45, 0.4, 0.15]},
    )  # fmt: skip
    expense_check = [
        {"ask": "The expense category matches the receipt.", "pass": 0.85},
        {
            "ask": "Is the business purpose stated?",
            "one_of": {"stated": "A business purpose is stated.", "missing": "No purpose is given.", "vague": "A purpose is hinted at."},
            "pass": ["stated"],
            "unsure": ["vague"],
            "confidence": 0.7,
        },
    ]  # fmt: skip
    return [
        StepModel(
            "vendor-onboarding", 3, "check_vendor",
            "Check the vendor against the OFAC and EU lists. Attach the report.",
            vendor_check, share=0.45, base_rate=(0.78, 0.74),
            evaluators=[(0.0, good), (0.55, better)], approve_step="approve_vendor",
        ),
        StepModel(
            "invoice-matching", 1, "match_invoice",
            "Match the invoice to its purchase order and list any lines that do not match.",
            "The matched purchase order covers every line of the invoice.",
            share=0.30, base_rate=(0.85, 0.85), evaluators=[(0.0, plain)], approve_step=None,
        ),
        StepModel(
            "expense-review", 2, "review_expense",
            "Review the expense claim against the policy and the receipt.",
            expense_check, share=0.25, base_rate=(0.70, 0.60),
            evaluators=[(0.0, weak)], approve_step="approve_expense", escalation_share=0.2,
        ),
    ]  # fmt: skip


APPROVERS = ["ana", "ben", "carla", "dev", "eli"]
APPROVER_ERROR = {"ana": 0.02, "ben": 0.06, "carla": 0.03, "dev": 0.04, "eli": 0.0}
RUBBER_STAMP = "eli"  # follows the check's verdict, decides in seconds
NOT_ACCEPTABLE_DECISIONS = ["rejected", "returned", "failed"]
#: What an approver writes when sending work back, per process (a note is about that process's work).
NOTES = {
    "vendor-onboarding": [
        "Report covers the OFAC list only.",
        'Summary says "cleared" but the EU list search is missing.',
    ],
    "expense-review": [
        "Receipt total does not match the claim, see line 3.",
        "Purpose is missing; ask the employee.",
    ],
    "invoice-matching": [
        "Invoice line 4 is not on the purchase order.",
        "Quantities differ from the goods receipt.",
    ],
}


def _note(process: str, u: float) -> str:
    """The note for a draw ``u`` in [0, 0.5): one of the process's notes."""
    notes = NOTES.get(process) or [note for texts in NOTES.values() for note in texts]
    return notes[int(u * 8) % len(notes)]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return np.log(p) - np.log1p(-p)


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class _Sim:
    def __init__(self, runs: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.n_runs = runs
        self.limits = Limits()
        # What the manifest reports; every check written is labeled (a decision on it) or not.
        self.counts = {"runs": 0, "checks": 0, "answers": 0, "decisions": 0,
                       "labeled_checks": 0, "unlabeled_checks": 0}  # fmt: skip
        self.truth_rows: list[tuple[Any, ...]] = []
        self.decision_rows: list[dict[str, Any]] = []

    def answers_for(
        self, sm: StepModel, questions: list[Question], acceptable: np.ndarray, frac: np.ndarray
    ) -> tuple[list[list[dict[str, Any]]], np.ndarray, list[str], np.ndarray]:
        """Answers, verdict codes, model names and calibrated probabilities for a batch."""
        rng = self.rng
        n = len(acceptable)
        models = np.empty(n, dtype=object)
        sep = np.empty(n)
        over = np.empty(n)
        for start, ev in sm.evaluators:
            sel = frac >= start
            models[sel] = ev.name
            sep[sel] = ev.separation - ev.drift * frac[sel]
            over[sel] = ev.overconfidence
        evaluator_of = {ev.name: ev for _, ev in sm.evaluators}
        sign = np.where(acceptable, 1.0, -1.0)
        z = sep * sign + rng.standard_normal(n)
        # Posterior of acceptability given z under a 50/50 prior, then the over-confident report.
        p_cal = _sigmoid(2 * sep * z)
        columns: list[tuple[Question, np.ndarray, np.ndarray | None]] = []
        for q in questions:
            if q.kind is Kind.YES_NO:
                p = np.round(_sigmoid(over * _logit(p_cal)), 3)
                columns.append((q, p, None))
                continue
            if q.kind is Kind.CHOICE:
                names = list(q.one_of)
                ans = np.empty(n, dtype=object)
                for truth in (True, False):
                    for name in sorted(set(models.tolist())):
                        sel = (acceptable == truth) & (models == name)
                        probs = evaluator_of[name].choice_probs.get(truth) or _default_probs(
                            len(names), truth
                        )
                        ans[sel] = rng.choice(names, size=int(sel.sum()), p=probs)
                columns.append((q, ans, _confidence(rng, np.isin(ans, q.pass_names) == acceptable)))
            else:
                ans = np.empty(n, dtype=int)
                for truth in (True, False):
                    for name in sorted(set(models.tolist())):
                        sel = (acceptable == truth) & (models == name)
                        probs = evaluator_of[name].rubric_probs.get(truth) or _default_probs(
                            len(q.levels), truth
                        )
                        ans[sel] = rng.choice(len(q.levels), size=int(sel.sum()), p=probs)
                columns.append((q, ans, _confidence(rng, (ans >= q.pass_level) == acceptable)))
        results = np.column_stack([decide(q, a, c) for q, a, c in columns])
        verdict = worst(results)
        records: list[list[dict[str, Any]]] = []
        for i in range(n):
            row = []
            for j, (q, a, c) in enumerate(columns):
                item: dict[str, Any] = {"ask": q.ask, "kind": q.kind.value}
                item["answer"] = (
                    float(a[i])
                    if q.kind is Kind.YES_NO
                    else (str(a[i]) if q.kind is Kind.CHOICE else int(a[i]))
                )
                if c is not None:
                    item["confidence"] = float(c[i])
                item["result"] = RESULT_NAMES[results[i, j]]
                row.append(item)
            records.append(row)
        return records, verdict, list(models), p_cal


def _confidence(rng: np.random.Generator, correct: np.ndarray) -> np.ndarray:
    """Confidence that is higher, but not perfectly so, when the answer is right."""
    n = len(correct)
    conf = np.where(correct, rng.beta(14, 2, n), rng.beta(6, 3, n))
    return np.round(np.clip(conf, 0.3, 0.999), 2)


def _default_probs(k: int, truth: bool) -> list[float]:
    w = np.arange(1, k + 1, dtype=float)
    w = w**2 if truth else w[::-1] ** 2
    return list(w / w.sum())


def _verdict_obj(ans, verdict, model, at, *, advisory, u, err=False, trunc=False) -> dict[str, Any]:
    """A check-1 verdict object (spec §3)."""
    v: dict[str, Any] = {
        "verdict": "error" if err else RESULT_NAMES[verdict],
        "advisory": advisory,
        "model": model,
        "questions": [] if err else ans,
        "at": _iso(at),
    }
    if trunc:
        total = 65536 + int(1000 + 90000 * u[4])
        v["truncated"] = {"bytes_shown": 65536, "bytes_total": total, "steps_dropped": ["intake"]}
    return v


def _person_decides(acceptable, verdict_code, who, *, rng, u) -> tuple[bool, timedelta]:
    """The approver's call and how long it took; the rubber-stamper follows the check."""
    if who == RUBBER_STAMP:
        ok = verdict_code == 0 if verdict_code != 2 else bool(acceptable)
        return bool(ok), timedelta(seconds=int(5 + 40 * u[5]))
    flip = rng.random() < APPROVER_ERROR[who]
    return bool(acceptable) != flip, timedelta(minutes=int(3 + 180 * u[5]))


def simulate(
    out_dir: str | Path,
    *,
    runs: int = 2000,
    seed: int = 0,
    enforce_weeks: int = 0,
    shift_week: float | None = None,
    shift: float = 0.0,
    enforce_process: str = "invoice-matching",
    start: datetime | None = None,
) -> dict[str, Any]:
    """Write a synthetic export of ``runs`` runs into ``out_dir``.

    Parameters
    ----------
    out_dir : path-like
        Folder to write into (created if needed): ``runs.jsonl``,
        ``decisions.csv``, one ``process-*.yaml`` per process, ``limits.json``,
        and the ground truth in ``.truth/``.
    runs : int, default=2000
        Number of runs across all processes.
    seed : int, default=0
        Seed; the output is identical for the same arguments.
    enforce_weeks : int, default=0
        Continue ``enforce_process`` this many weeks past the window with
        ``advisory: false`` (:mod:`calibrate.simulate_enforced`); the advisory
        window is the same as without.
    shift_week : float, optional
        Weeks after the switch from which the evaluator misses a share
        ``shift`` of the not-acceptable submissions.
    shift : float, default=0.0
        That share, in [0, 1].
    enforce_process : str, default="invoice-matching"
    start : datetime, optional
        When the advisory window of :data:`WINDOW_DAYS` days begins (UTC when
        naive). Default :data:`START`, fixed so that the same arguments give
        the same files on any day.

    Returns
    -------
    dict
        The manifest: counts of runs, checks, answers and decisions written, labeled
        and unlabeled checks, the files, and ``period`` (``from``/``to``: the
        span the records' times cover).
    """
    if runs < 1:
        raise ValueError("runs must be at least 1")
    if not 0.0 <= shift <= 1.0:
        raise ValueError("shift must be in [0, 1]")
    if enforce_weeks < 0:
        raise ValueError("enforce_weeks must not be negative")
    begin = START if start is None else start
    if begin.tzinfo is None:
        begin = begin.replace(tzinfo=UTC)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / ".truth").mkdir(exist_ok=True)
    sim = _Sim(runs, seed)
    rng = sim.rng
    models = _models()
    shares = np.array([m.share for m in models])
    which = rng.choice(len(models), size=runs, p=shares / shares.sum())
    frac_all = np.sort(rng.random(runs))
    run_ids = [f"r-{seed:03d}-{i:07d}" for i in range(runs)]
    docs: list[dict[str, Any]] = [None] * runs  # type: ignore[list-item]
    for mi, sm in enumerate(models):
        idx = np.flatnonzero(which == mi)
        if idx.size == 0:
            continue
        questions = parse_check(sm.check, sim.limits)
        n = idx.size
        frac = frac_all[idx]
        base = sm.base_rate[0] + (sm.base_rate[1] - sm.base_rate[0]) * frac
        acc1 = rng.random(n) < base
        # A rejected first attempt is reworked half of the time; the rework is acceptable more often.
        acc2 = rng.random(n) < np.minimum(base + 0.1, 0.98)
        ans1, verdict1, model1, pcal1 = sim.answers_for(sm, questions, acc1, frac)
        ans2, verdict2, model2, pcal2 = sim.answers_for(
            sm, questions, acc2, np.minimum(frac + 0.002, 1)
        )
        u = rng.random((n, 8))
        approver = rng.choice(APPROVERS, size=(n, 2), p=[0.3, 0.25, 0.2, 0.15, 0.1])
        # Still in progress at export: a blocking fail in handoff.check, no decision yet.
        running = (u[:, 0] < 0.08) & (verdict1 == 1)
        error = u[:, 1] < 0.01
        truncated = u[:, 2] < 0.03
        # Only an unsure verdict is escalated to a person (check-1 §3).
        escalated = (u[:, 3] < sm.escalation_share) & (verdict1 == 2) & ~error
        # Near the end of the window some approvals are still waiting when the export is taken.
        pending = (frac > 0.95) & (u[:, 7] > 0.3) & ~running & ~escalated
        for k, i in enumerate(idx):
            t0 = begin + timedelta(days=WINDOW_DAYS * float(frac[k]))
            run: dict[str, Any] = {
                "run": run_ids[i],
                "process": sm.process,
                "version": str(sm.version),
            }
            steps: dict[str, Any] = {}
            step_doc: dict[str, Any] = {"status": "completed"}

            u_k = u[k]
            verdict_obj = functools.partial(_verdict_obj, advisory=sm.advisory, u=u_k)
            person_decides = functools.partial(_person_decides, rng=rng, u=u_k)
            sim.counts["runs"] += 1
            if running[k]:
                check = verdict_obj(ans1[k], verdict1[k], model1[k], t0)
                check["advisory"] = False
                steps[sm.step] = {"status": "running"}
                run["steps"] = steps
                run["handoff"] = {"step": sm.step, "check": check}
                sim.counts["checks"] += 1
                sim.counts["answers"] += len(ans1[k])
                sim.counts["unlabeled_checks"] += 1
                sim.truth_rows.append(
                    (run_ids[i], sm.process, sm.step, 1, int(acc1[k]), round(float(pcal1[k]), 6))
                )
                docs[i] = run
                continue
            attempt = 1
            history = []
            first_ok, delay1 = person_decides(acc1[k], verdict1[k], approver[k, 0])
            is_err = bool(error[k])
            if not first_ok and u_k[6] < 0.5 and not escalated[k] and not pending[k]:
                # First attempt rejected and reworked: it lives in history with its decision.
                chk = verdict_obj(ans1[k], verdict1[k], model1[k], t0, err=is_err)
                h = {
                    "attempt": 1,
                    "check": chk,
                    "decision": "rejected",
                    "by": str(approver[k, 0]),
                    "at": _iso(t0 + delay1),
                }
                if u_k[7] < 0.5:
                    h["note"] = _note(sm.process, u_k[7])
                history.append(h)
                sim.counts["checks"] += 1
                sim.counts["answers"] += 0 if is_err else len(ans1[k])
                sim.counts["decisions"] += 1
                sim.counts["labeled_checks"] += 1
                sim.truth_rows.append(
                    (run_ids[i], sm.process, sm.step, 1, int(acc1[k]), round(float(pcal1[k]), 6))
                )
                attempt = 2
                t = t0 + delay1 + timedelta(hours=2)
                ans, verd, model, acc, pcal = ans2[k], verdict2[k], model2[k], acc2[k], pcal2[k]
                ok, delay = person_decides(acc, verd, approver[k, 1])
                who = str(approver[k, 1])
                is_err = False
            else:
                t = t0
                ans, verd, model, acc, pcal = ans1[k], verdict1[k], model1[k], acc1[k], pcal1[k]
                ok, delay, who = first_ok, delay1, str(approver[k, 0])
            check = verdict_obj(ans, verd, model, t, err=is_err, trunc=bool(truncated[k]))
            sim.counts["checks"] += 1
            sim.counts["answers"] += 0 if is_err else len(ans)
            sim.counts["unlabeled_checks" if pending[k] else "labeled_checks"] += 1
            sim.truth_rows.append(
                (run_ids[i], sm.process, sm.step, attempt, int(acc), round(float(pcal), 6))
            )
            step_doc["check"] = check
            if history:
                step_doc["history"] = history
            decided_at = _iso(t + delay)
            note = _note(sm.process, u_k[7]) if (not ok and u_k[7] < 0.5) else None
            if pending[k]:
                # Exported before the person decided: checked, not yet labeled.
                steps[sm.step] = step_doc
                if sm.approve_step:
                    steps[sm.approve_step] = {"status": "waiting", "reviews": sm.step}
            elif escalated[k] and not is_err:
                # Escalated to a person: the same check shows in escalation.check and steps.<id>.check.
                resolution = "completed" if ok else ("returned" if u_k[6] < 0.5 else "failed")
                esc = {"check": check, "resolution": resolution, "by": who, "at": decided_at}
                if resolution == "completed":
                    esc["output"] = "candidate" if u_k[6] < 0.8 else "own"
                if note:
                    esc["note"] = note
                step_doc["escalation"] = esc
                sim.counts["decisions"] += 1
                steps[sm.step] = step_doc
            elif sm.approve_step:
                steps[sm.step] = step_doc
                appr: dict[str, Any] = {
                    "status": "completed",
                    "reviews": sm.step,
                    "decision": "approved" if ok else "rejected",
                    "by": who,
                    "at": decided_at,
                }
                if note:
                    appr["note"] = note
                steps[sm.approve_step] = appr
                sim.counts["decisions"] += 1
            else:
                steps[sm.step] = step_doc
                decision = "approved" if ok else NOT_ACCEPTABLE_DECISIONS[int(u_k[6] * 3) % 3]
                sim.decision_rows.append(
                    {"run": run_ids[i], "process": sm.process, "step": sm.step, "attempt": attempt,
                     "decision": decision, "by": who, "at": decided_at, "note": note or ""}
                )  # fmt: skip
                sim.counts["decisions"] += 1
            run["steps"] = steps
            docs[i] = run
    enforced = [sm for sm in models if sm.process == enforce_process] if enforce_weeks else []
    if enforce_weeks and not enforced:
        raise ValueError(f"no simulated process {enforce_process!r}")
    for sm in enforced:
        per_week = float((which == models.index(sm)).sum()) / (WINDOW_DAYS / 7)
        more, info = simulate_enforced.continue_enforced(
            sim, sm, runs_per_week=per_week, weeks=enforce_weeks,
            start=begin + timedelta(days=WINDOW_DAYS), shift_week=shift_week, shift=shift, seed=seed,
        )  # fmt: skip
        docs.extend(more)
        simulate_enforced.write_enforced_process(out, sm)
        simulate_enforced.write_info(out, info)
    with open(out / "runs.jsonl", "w", encoding="utf-8") as fh:
        for doc in docs:
            fh.write(json.dumps(doc, separators=(",", ":")) + "\n")
    with open(out / "decisions.csv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(
            fh, fieldnames=["run", "process", "step", "attempt", "decision", "by", "at", "note"]
        )
        writer.writeheader()
        writer.writerows(sim.decision_rows)
    for sm in models:
        path = out / f"process-{sm.process}.yaml"
        body = {"process": sm.process, "version": sm.version, "steps": []}
        body["steps"].append(
            {"id": sm.step, "agent": sm.agent, "advisory": sm.advisory, "check": sm.check}
        )
        if sm.approve_step:
            body["steps"].append({"id": sm.approve_step, "approve": f"Review {sm.step}."})
        path.write_text(yaml.safe_dump(body, sort_keys=False, allow_unicode=True), encoding="utf-8")
    (out / "limits.json").write_text(
        json.dumps(
            {
                "limits": {
                    "checkPass": 0.9,
                    "checkFail": None,
                    "checkConfidence": 0.8,
                    "checkStateBytes": 65536,
                }
            }
        )
        + "\n",
        encoding="utf-8",
    )
    with open(out / ".truth" / "truth.csv", "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["run", "process", "step", "attempt", "acceptable", "p_calibrated"])
        writer.writerows(sim.truth_rows)
    manifest = {
        **sim.counts,
        "seed": seed,
        "files": sorted(p.name for p in out.iterdir() if p.is_file()),
        "period": {
            "from": _iso(begin),
            "to": _iso(begin + timedelta(days=WINDOW_DAYS + 7 * enforce_weeks)),
        },
    }
    (out / ".truth" / "manifest.json").write_text(
        json.dumps(manifest, indent=2) + "\n", encoding="utf-8"
    )
    return manifest
