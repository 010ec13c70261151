"""The report's decision over alpha (issue 18 item 1): reasons agree with their figures.

A NO once read "decide at most 81% alone (< 30%)". For every step of the
bundled sample and of small exports built from the hand-written examples, at
every alpha of a grid: each comparison a reason states holds for the figures
it prints, and the decision agrees with the search's status and the criteria
(READY only when certified, NO only with a reason that cannot be waited out).
"""

from __future__ import annotations

import copy
import csv
import json
import re
import shutil
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from calibrate.analysis import readiness as rd
from calibrate.analysis import readiness_decision
from calibrate.analysis.rate import limit_pct, pct_against
from calibrate.defaults import ReadinessOptions
from calibrate.ingest import ingest
from calibrate.store import connect

ALPHAS = (0.01, 0.03, 0.05, 0.075, 0.1, 0.2, 0.3)
BOUNDS = {"false_pass_upper", "false_fail_upper", "coverage"}

_NUM = r"(\d+(?:\.\d+)?)"
#: "7% alone (< 50%)": the figure nearest before a parenthesised comparison.
_PAREN = re.compile(_NUM + r"%[^%]*?\((<=|>=|<|>) " + _NUM + r"%\)")
#: "7.9% (10 of 127; 95% CI 4.3%–13.9%), at or above 5%" and the like.
_WORDS = re.compile(
    _NUM + r"% \([^()]*\),? (at or above|above the limit|above|below) " + _NUM + "%"
)
_WORD_OPS = {"at or above": ">=", "above the limit": ">", "above": ">", "below": "<"}
_PVALUE = re.compile(r"p = ([0-9.e+-]+) <= ([0-9.e+-]+)")
_OPS = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal}


def stated_comparisons(text: str) -> list[tuple[float, str, float]]:
    """Every ``(figure, op, limit)`` a reason states."""
    out = [(float(a), op, float(b)) for a, op, b in _PAREN.findall(text)]
    out += [(float(a), _WORD_OPS[w], float(b)) for a, w, b in _WORDS.findall(text)]
    out += [(float(a), "<=", float(b)) for a, b in _PVALUE.findall(text)]
    return out


def test_the_parser_reads_the_bad_reason_of_the_issue():
    bad = "those whose observed error rates meet the limits decide at most 81% alone (< 30%)"
    assert stated_comparisons(bad) == [(81.0, "<", 30.0)]
    rate = "false passes are 7.9% (10 of 127; 95% CI 4.3%–13.9%), at or above 8% already"
    assert stated_comparisons(rate) == [(7.9, ">=", 8.0)]


def test_figures_keep_the_comparison_in_print():
    assert pct_against(0.2996, 0.3, "<", digits=0) == ("29.96%", "30%")
    assert pct_against(0.0204, 0.02, ">") == ("2.04%", "2%")
    assert limit_pct(0.075) == "7.5%" and limit_pct(0.05) == "5%"


def assert_consistent(s: rd.StepReadiness, opts: ReadinessOptions) -> None:
    where = f"{s.process}/{s.step} at alpha={opts.alpha}: {s.decision}, {s.thresholds.status}"
    for reason in s.reasons:
        for a, op, b in stated_comparisons(reason):
            assert _OPS[op](a, b), f"{where}: '{a} {op} {b}' is false in: {reason}"
    failing = [c for c in s.criteria if not c.ok]
    hard = [c for c in failing if c.blocks == "NO"]
    status = s.thresholds.status
    assert s.decision in rd.DECISIONS
    if s.decision == "READY":
        assert status == "ok" and not failing, where
    elif s.decision == "NOT_YET":
        assert not hard and failing, where
        assert status != "unattainable", where
    else:
        assert hard, where
        if {c.name for c in hard} <= BOUNDS and status != "unattainable":
            # Nothing but the bounds: a NO needs figures saying more labels would not help.
            # The resampling estimate finding no total is such a figure too.
            text = " ".join(s.reasons)
            assert "Even with" in text, where
            assert stated_comparisons(text) or "no total up to" in text, where
            # An observed rate backs a NO only when it is measurably above its limit (black-box
            # run: "1 of 3, n<20, at or above 5% already").
            assert "already" not in text and "n<" not in text.split("Even with", 1)[1], where
    if status == "unattainable":
        assert s.decision == "NO", where
    if status == "insufficient_data":
        assert s.decision != "READY", where


def _decisions(
    store: Path, alphas=ALPHAS, **filters
) -> list[tuple[ReadinessOptions, rd.StepReadiness]]:
    """The report's decision per step and alpha, without the figures' calibration."""
    from calibrate.dataset import Filters

    out = []
    con = connect(store, read_only=True)
    try:
        for inp in rd.read_step_inputs(con, Filters(**filters)):
            for alpha in alphas:
                opts = replace(ReadinessOptions(), alpha=alpha)
                tv = rd.search_thresholds(inp.subs_current, inp.answers_current,
                                          questions=inp.questions, options=opts, limits=inp.limits)  # fmt: skip
                step = rd.assess_step(inp.subs, inp.answers, thresholds=tv, questions=inp.questions,
                                      options=opts, has_approve_step=inp.has_approve_step,
                                      limits=inp.limits)  # fmt: skip
                out.append((opts, step))
    finally:
        con.close()
    return out


DECISION_RANK = {"NO": 0, "NOT_YET": 1, "READY": 2}


@pytest.mark.parametrize("step", ["match_invoice", "review_expense", "check_vendor"])
def test_the_samples_reasons_agree_with_their_figures(sample_store, step):
    decided = _decisions(sample_store, step=step)
    for opts, s in decided:
        assert_consistent(s, opts)
    # A looser limit never reads worse (NO also comes from the labels-needed estimate, which
    # reruns a search that is not exactly monotone in alpha: this guards the sample).
    ranks = [DECISION_RANK[s.decision] for _, s in sorted(decided, key=lambda d: d[0].alpha)]
    assert ranks == sorted(ranks), [(o.alpha, s.decision) for o, s in decided]


# --------------------------------------------------------------------------- small exports


def _write_export(src: Path, out: Path, *, n: int, seed: int, signal: float) -> Path:
    """``n`` runs of each of the examples' two checked steps, answers drawn around a quality.

    The vendor check (three questions, an approve step) follows the examples' r-0001; the
    invoice check (one yes/no question) is labeled through a decision table as in
    decisions.csv. ``signal`` is how much the answers follow the latent quality.
    """
    rng = np.random.default_rng(seed)
    out.mkdir(parents=True, exist_ok=True)
    for name in ("process.yaml", "process-invoice.yaml", "limits.json"):
        shutil.copy(src / name, out / name)
    runs = [json.loads(line) for line in (src / "runs.jsonl").read_text().splitlines() if line]
    vendor, invoice = runs[0], runs[3]
    start = datetime(2026, 8, 3, 9, tzinfo=UTC)
    lines, table = [], []
    for i in range(n):
        at = start + timedelta(hours=float(rng.uniform(0, 24 * 56)))
        stamp = at.isoformat().replace("+00:00", "Z")
        later = (at + timedelta(minutes=30)).isoformat().replace("+00:00", "Z")
        for doc, step in ((vendor, "check_vendor"), (invoice, "match_invoice")):
            z = rng.normal()
            good = rng.random() < 1 / (1 + np.exp(-(1.2 + 1.5 * z)))
            seen = signal * z + rng.normal()
            run = copy.deepcopy(doc)
            run["run"] = f"x-{step}-{i:04d}"
            node = run["steps"][step]
            check = node["check"] if "check" in node else node.pop("escalation")["check"]
            node.clear()
            node.update(status="completed", check=check)
            check.update(at=stamp, advisory=True)
            p = float(1 / (1 + np.exp(-(1.5 + 2 * seen))))
            qs = check["questions"]
            qs[0].update(answer=round(p, 3), result="pass" if p >= 0.9 else "fail")
            if step == "check_vendor":
                choice = "states" if seen > -0.5 else ("unclear" if seen > -1.2 else "hedges")
                qs[1].update(answer=choice, confidence=round(float(rng.uniform(0.6, 1)), 2))
                level = int(np.clip(np.round(1 + seen), 0, 2))
                qs[2].update(answer=level, confidence=round(float(rng.uniform(0.6, 1)), 2))
                qs[1]["result"] = {"states": "pass", "unclear": "unsure"}.get(choice, "fail")
                qs[2]["result"] = "pass" if level == 2 and qs[2]["confidence"] >= 0.8 else "fail"
                results = [q["result"] for q in qs]
                run["steps"]["approve_vendor"].update(
                    decision="approved" if good else "rejected", at=later, by="ana"
                )
                run["steps"]["approve_vendor"].pop("note", None)
            else:
                results = [qs[0]["result"]]
                table.append([run["run"], "invoice-matching", step, 1,
                              "approved" if good else "rejected", "ben", later, ""])  # fmt: skip
            check["verdict"] = (
                "fail" if "fail" in results else "unsure" if "unsure" in results else "pass"
            )
            lines.append(json.dumps(run))
    (out / "runs.jsonl").write_text("\n".join(lines) + "\n")
    with (out / "decisions.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "process", "step", "attempt", "decision", "by", "at", "note"])
        w.writerows(table)
    return out


@pytest.mark.parametrize(("n", "seed", "signal"), [(60, 0, 1.0), (150, 1, 2.5), (300, 2, 0.3)])
def test_small_exports_reasons_agree_with_their_figures(examples_dir, tmp_path, n, seed, signal):
    export = _write_export(examples_dir, tmp_path / "export", n=n, seed=seed, signal=signal)
    store = tmp_path / "small.duckdb"
    con = connect(store)
    ingest(con, [export])
    con.close()
    decided = _decisions(store)
    assert {s.step for _, s in decided} == {"check_vendor", "match_invoice"}
    for opts, s in decided:
        assert_consistent(s, opts)


def test_a_no_on_an_unattainable_search_states_no_coverage_it_contradicts():
    """The issue's reason: unattainable, yet the best observed coverage (81%) above the floor (30%)."""
    tv = rd.ThresholdView("unattainable", [], None, {}, {}, n_labeled=120)
    opts = replace(ReadinessOptions(), alpha=0.3, min_coverage=0.3)
    text = readiness_decision._poor_reason(120, tv=tv, point=None, opts=opts, best_cov=0.81)
    assert "81%" not in text and "measurably outside the limits" in text
    for a, op, b in stated_comparisons(
        readiness_decision._poor_reason(120, tv=tv, point=None, opts=opts, best_cov=0.2996)
    ):
        assert _OPS[op](a, b)


# --------------------------------------------------------------------------- known failures of the search
# Found by the measurements of issue 18 item 1(b) (strict: when fixed these pass, and the marks go).
# The checkpoints of a path are laid out for the alpha tested (fallback_walk.power_start,
# certify.min_count), so a looser alpha can walk the same candidates with less level. Laying them
# out for one alpha makes one yes/no question and one rubric/choice question below 250 labels exactly monotone, but costs some
# cells of the power study a third or more of their certified auto-pass (docs/method.md, "Over
# alpha"; the branch mono-schedule2): not done. Weights averaged over the layouts of a fixed grid of
# limits (branch mono-grid) pass both tests but cost 2.18 summed mean over 144 cells, mostly below
# 1,500 labels.

GRID = (0.01, 0.02, 0.03, 0.05, 0.06, 0.075, 0.1, 0.15, 0.2, 0.3)
RANK = {"unattainable": 0, "insufficient_data": 1, "ok": 2}
_LAYOUT = "the checkpoints of a path move with alpha"


@pytest.mark.xfail(strict=True, reason=_LAYOUT)
def test_fixed_paths_certify_more_as_alpha_grows():
    """rubric/calibrated/800 (seed 800), each path at 0.01: candidates certified at one alpha and
    not at the next. Level>=4, 0.05 -> 0.06: its first checkpoint (98 passes, 0 false; 21 fails,
    0 false: p = 0.8**21 = 0.0092) holds the path's whole level 0.010 at 0.05; at 0.06 a smaller
    power start fits a second checkpoint and the first keeps 0.009 < p. Levels>=1-3, 0.1 -> 0.15:
    the candidate of 160 passes (5 false, p = 0.0038) is left at level 0 when the checkpoints move.
    """
    from benchmarks import regimes
    from calibrate.analysis import fixed_paths

    data = regimes.draw("rubric", "calibrated", 800, 800).step_data()
    paths = fixed_paths.fixed_paths(data, delta=0.05)
    for path in paths:
        before = np.zeros(path.n_pass.size, bool)
        for alpha in GRID:
            _, frame = path.run(alpha=alpha, beta=0.2)
            now = frame["certified"].to_numpy()
            assert (now >= before).all(), f"{path.describe[-1]}: fewer certified at alpha={alpha}"
            before = now


@pytest.mark.xfail(strict=True, reason=_LAYOUT)
def test_one_rubric_question_reads_no_worse_as_alpha_grows():
    """Below 250 labels one rubric question has fixed paths only; on this overconfident dataset
    (150 labels) the share decided falls from alpha 0.2 to 0.3 (94.7% -> 94.0%)."""
    from benchmarks import regimes
    from calibrate.analysis import thresholds as th

    data = regimes.draw("rubric", "overconfident", 150, [18, 150]).step_data()
    last = (0, 0.0)
    for alpha in GRID:
        r = th.find_thresholds(data, alpha=alpha, delta=0.1, beta=0.3)
        shares = r.expected.shares() if r.status == "ok" else {"auto_pass": 0, "auto_fail": 0}
        now = (RANK[r.status], shares["auto_pass"] + shares["auto_fail"])
        assert now[0] >= last[0] and now[1] >= last[1] - 1e-12, (alpha, last, now)
        last = now


# A learned path is learned for the alpha it is tested at; one learned at alpha = 0.05 for every
# alpha cost a fifth of the certified auto-pass of three questions and relearned choice lists in the
# power study (issue 18 note), so it stays.
def test_three_questions_never_read_unattainable_after_insufficient(examples_dir, tmp_path):
    """The small export (300 runs, seed 2, signal 0.3): check_vendor's three-question learned path
    read insufficient_data at alpha 0.01 and unattainable from 0.03 when ``unattainable`` was read
    off the path learned at each alpha. It is now read off fronts learned at a fixed ladder of
    limits (unattainable.REFERENCE_ALPHAS), the same set at every alpha."""
    export = _write_export(examples_dir, tmp_path / "export", n=300, seed=2, signal=0.3)
    store = tmp_path / "small.duckdb"
    con = connect(store)
    ingest(con, [export])
    con.close()
    alphas = (0.01, 0.03, 0.05, 0.1, 0.2, 0.3)
    statuses = [s.thresholds.status for _, s in _decisions(store, alphas, step="check_vendor")]
    # A looser limit never reads worse: once insufficient_data, never unattainable.
    for i, status in enumerate(statuses):
        if status == "insufficient_data":
            assert "unattainable" not in statuses[i:], statuses


def test_unattainable_is_judged_on_the_fixed_paths_too(monkeypatch):
    """Fixed choice paths beside a learned one (300 labels, nothing certified): the candidates
    judged for ``unattainable`` are the fixed paths' (they do not move with alpha) plus the
    reference fronts, not the reference fronts alone (fixed paths are joint paths too)."""
    from benchmarks import regimes
    from calibrate.analysis import thresholds as th
    from calibrate.analysis import unattainable

    seen = []
    real = unattainable.measurably_worse
    monkeypatch.setattr(
        unattainable, "measurably_worse", lambda rows, **kw: seen.append(rows) or real(rows, **kw)
    )
    data = regimes.draw("choice", "near_chance", 300, 3).step_data()
    r = th.find_thresholds(data, alpha=0.05, delta=0.1, beta=0.3, relearn_lists=True)
    assert r.status != "ok" and r.method == "fixed_and_learned_paths" and len(seen) == 1
    fixed = r.candidates[r.candidates["path"] < r.candidates["path"].max()]
    reference = unattainable.reference_candidates(
        data, delta=0.05, beta=0.3, relearn_lists=True,
        search_fraction=r.settings["search_fraction"], seed=0,
    )  # fmt: skip
    assert len(seen[0]) == len(fixed) + len(reference)


def test_a_measured_coverage_below_the_floor_is_not_called_unmeasurable():
    """A black-box run read "Coverage cannot be measured yet (27.8% (111 of 400 ...) expected ...)":
    the reason says it cannot be measured and gives the measurement."""
    from calibrate.analysis.drift import Drift
    from calibrate.analysis.readiness_decision import Criterion, decide_readiness
    from calibrate.analysis.step_evidence import ModelChange

    tv = rd.ThresholdView("insufficient_data", [], None, {}, {}, n_labeled=400)
    detail = "27.8% (111 of 400; 95% CI 23.6%–32.3%) expected under the current thresholds"
    measured = Criterion("coverage", 111 / 400, 0.5, False, "NOT_YET", "share decided", detail)
    unmeasured = replace(measured, value=None, detail="no thresholds to measure")
    kw = dict(change=ModelChange("m", (), None, None, False), drift=Drift(None, ()), tv=tv,
              poor=False, point=None, opts=ReadinessOptions())  # fmt: skip
    bounds = [
        Criterion(n, 0.05, 0.1, True, "NOT_YET", n)
        for n in ("false_pass_upper", "false_fail_upper")
    ] + [Criterion("labeled_submissions", 400, 100, True, "NOT_YET", "labeled")]
    decision, reasons = decide_readiness([*bounds, measured], **kw)
    assert decision == "NOT_YET"
    assert not any("cannot be measured" in r for r in reasons)
    assert any(detail in r and "at least 50%" in r for r in reasons)
    _, reasons = decide_readiness([*bounds, unmeasured], **kw)
    assert any("cannot be measured" in r for r in reasons)
