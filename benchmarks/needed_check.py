"""Does the labels-needed advice come true? The power study's column for issue 17.

For each cell of the power study (question set x evaluator x labels x alpha)
where calibrate's search said ``insufficient_data``, take up to
``per_cell`` of those datasets, compute the advice
(:func:`calibrate.analysis.needed.estimate_needed`, probability ``0.8``,
share ``0.5``, as ``calibrate thresholds`` gives it), draw ``fresh``
datasets of the advised total from the same regime and run the search on
each. A fresh dataset *comes true* when the search certifies a check whose
true decided share (on the regime's big sample) is at least the share.
The advice holds when the share of fresh datasets that come true is at
least the probability, within Monte-Carlo slack (the 95% Clopper-Pearson
interval, pooled over the cell's datasets, reaches it).

Run alone on a few cells::

    python -m benchmarks.needed_check --cells yes_no,overconfident,150 --per-cell 3 --fresh 20
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks import regimes
from calibrate.analysis.needed import DEFAULT_PROBABILITY, DEFAULT_SHARE, estimate_needed
from calibrate.analysis.thresholds import find_thresholds

#: Insufficient datasets advised per cell, fresh datasets per advice.
PER_CELL, FRESH = 2, 20
#: Advice beyond this total is not checked (fresh datasets that large cost too much here).
CHECK_CAP = 50_000


def check_cell(qset: str, evaluator: str, n: int, alpha: float, reps: Sequence[int], *,
               seed: int, big: int, per_cell: int = PER_CELL, fresh: int = FRESH,
               share: float = DEFAULT_SHARE,
               probability: float = DEFAULT_PROBABILITY) -> list[dict[str, Any]]:  # fmt: skip
    """Advice on up to ``per_cell`` insufficient datasets of one cell, and how often it comes true."""
    from benchmarks import power

    world = power._world(qset, evaluator, seed, big)
    out: list[dict[str, Any]] = []
    for rep in reps:
        if len(out) >= per_cell:
            break
        sample = regimes.draw(qset, evaluator, n, power._data_seed(qset, evaluator, n, rep, seed))
        data = sample.step_data()
        kwargs = {"alpha": alpha, "delta": power.DELTA, "beta": power.BETA, "relearn_lists": True}
        res = find_thresholds(data, **kwargs)
        if res.status != "insufficient_data":
            continue
        est = estimate_needed(data, share=share, probability=probability, result=res, **kwargs)
        row: dict[str, Any] = {
            "qset": qset, "evaluator": evaluator, "n": n, "alpha": alpha, "rep": rep,
            "advised": est.total if est is not None else None,
            "resampled": est.certified if est is not None else 0,
            "fresh": 0, "came_true": 0,
        }  # fmt: skip
        if est is not None and est.total is not None and est.total <= CHECK_CAP:
            for k in range(fresh):
                f = regimes.draw(
                    qset, evaluator, est.total, [seed, 17, n, rep, k, int(1000 * alpha)]
                )
                r = find_thresholds(f.step_data(), **kwargs)
                decided = world.rates_of(list(r.suggested))["decided"] if r.status == "ok" else 0.0
                row["came_true"] += decided >= share - 1e-12
                row["fresh"] += 1
        out.append(row)
    return out


def _run(task: tuple[Any, ...]) -> list[dict[str, Any]]:
    *head, kwargs = task
    return check_cell(*head, **kwargs)


def run(rows: pd.DataFrame, *, seed: int, big: int, workers: int = 2, per_cell: int = PER_CELL,
        fresh: int = FRESH) -> pd.DataFrame:  # fmt: skip
    """The column over the cells of the power study's ``rows`` (calibrate, not certified)."""
    ours = rows[(rows["method"] == "calibrate") & (rows["qset"] != "real") & ~rows["certified"]]
    tasks = [
        (qset, ev, int(n), float(a), tuple(sorted(g["rep"])),
         {"seed": seed, "big": big, "per_cell": per_cell, "fresh": fresh})
        for (qset, ev, n, a), g in ours.groupby(["qset", "evaluator", "n", "alpha"])
    ]  # fmt: skip
    found: list[dict[str, Any]] = []
    if workers > 1 and len(tasks) > 1:
        with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
            for part in pool.map(_run, tasks):
                found.extend(part)
    else:
        for t in tasks:
            found.extend(_run(t))
    return pd.DataFrame(found)


def table(found: pd.DataFrame, probability: float = DEFAULT_PROBABILITY,
          per_cell: int = PER_CELL) -> list[str]:  # fmt: skip
    """The section of ``reports/power.md``: per cell, the advice and how often it came true."""
    from benchmarks.power import clopper_pearson

    lines = [
        "## Labels needed: does the advice come true? (issue 17)",
        "",
        f"Per cell where the search said `insufficient_data`: up to {per_cell} such datasets, the "
        f"advice of `calibrate.analysis.needed` (probability {probability:g}, share "
        f"{DEFAULT_SHARE:g}), and fresh datasets of the advised total from the same regime: the share "
        "that the search certified with a check truly deciding at least the share alone, with its 95% "
        f"Clopper-Pearson interval. ✓ where the interval reaches {probability:g}.",
        "",
    ]
    if found.empty:
        return [*lines, "No cell said `insufficient_data`.", ""]
    lines += [
        "| question set | evaluator | labels | alpha | datasets | advised totals | unattainable | came true | 95% CI | |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (qset, ev, n, a), g in found.groupby(["qset", "evaluator", "n", "alpha"]):
        k, m = int(g["came_true"].sum()), int(g["fresh"].sum())
        totals = ", ".join(f"{int(t):,}" for t in g["advised"].dropna())
        unatt = int(g["advised"].isna().sum())
        if m:
            lo, hi = clopper_pearson(k, m)
            share, ci, mark = (
                f"{k}/{m} ({k / m:.0%})",
                f"{lo:.0%}–{hi:.0%}",
                "✓" if hi >= probability else "✗",
            )
        else:
            share, ci, mark = "–", "–", ""
        lines.append(
            f"| {qset} | {ev} | {n} | {a:g} | {len(g)} | {totals or '–'} | {unatt} | {share} | {ci} | {mark} |"
        )
    return [*lines, ""]


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks import power

    ap = argparse.ArgumentParser(
        prog="python -m benchmarks.needed_check", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--cells", help="as benchmarks.power --cells")
    ap.add_argument(
        "--datasets", type=int, default=10, help="datasets drawn per cell to find insufficient ones"
    )
    ap.add_argument("--per-cell", type=int, default=PER_CELL)
    ap.add_argument("--fresh", type=int, default=FRESH)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=power.SEED)
    ap.add_argument("--big", type=int, default=power.BIG)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    sel = power.parse_cells(args.cells)
    rows = [
        {"qset": q, "evaluator": e, "n": n, "alpha": a, "rep": r, "method": "calibrate",
         "certified": False}
        for q in regimes.QUESTION_SETS if not sel["qset"] or q in sel["qset"]
        for e in regimes.EVALUATORS if not sel["evaluator"] or e in sel["evaluator"]
        for n in power.LABELS if not sel["n"] or n in sel["n"]
        for a in power.ALPHAS if not sel["alpha"] or any(abs(a - b) < 1e-9 for b in sel["alpha"])
        for r in range(args.datasets)
    ]  # fmt: skip
    found = run(pd.DataFrame(rows), seed=args.seed, big=args.big, workers=args.workers,
                per_cell=args.per_cell, fresh=args.fresh)  # fmt: skip
    text = "\n".join(table(found, per_cell=args.per_cell))
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
