"""``calibrate curves``: reliability diagrams and calibration numbers per question and model."""

from __future__ import annotations

import textwrap
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

from calibrate.cli.app import app, err, handle_errors
from calibrate.cli.options import (
    AdvisoryOnlyOption,
    DbOption,
    EscalationsOption,
    Format,
    ModelOption,
    ProcessOption,
    SinceOption,
    StepOption,
    UntilOption,
    format_option,
    make_filters,
    note_left_out,
    require_format,
    require_known,
)
from calibrate.cli.render import clip, echo_json, terminal_safe, write_csv
from calibrate.defaults import DEFAULT_BINS, MIN_N
from calibrate.errors import UsageError
from calibrate.lazy import lazy_module
from calibrate.store import connect

calibration = lazy_module("calibrate.analysis.calibration")
dataset = lazy_module("calibrate.dataset")
plots = lazy_module("calibrate.report.plots")

WIDTH = 80
_KIND = {"yes_no": "yes/no", "choice": "choice", "rubric": "rubric"}


class Strategy(StrEnum):
    uniform = "uniform"
    quantile = "quantile"


CurvesFormat = format_option(Format.table, Format.json, Format.csv)
#: ``--format csv``: one row per bin of each question's reliability curve.
BIN_COLUMNS = [
    "process", "step", "model", "week", "question_id", "ask", "kind", "n", "ece", "ece_low",
    "ece_high", "bin_lo", "bin_hi", "mean_predicted", "observed", "observed_low", "observed_high",
    "bin_n",
]  # fmt: skip


def bin_rows(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bins of every question's curve as flat rows (:data:`BIN_COLUMNS`)."""
    rows = []
    for rec in records:
        head = {k: rec.get(k) for k in BIN_COLUMNS[:9]}
        head["ece_low"], head["ece_high"] = rec["ece_ci"]
        for b in rec["bins"]:
            rows.append(
                {**head, "bin_lo": b["lo"], "bin_hi": b["hi"], "mean_predicted": b["mean_predicted"],
                 "observed": b["observed"], "observed_low": b["ci"][0], "observed_high": b["ci"][1],
                 "bin_n": b["n"]}
            )  # fmt: skip
    return rows


def _parse_by(by: str | None) -> list[str]:
    keys = [k.strip() for k in (by or "").split(",") if k.strip()]
    bad = [k for k in keys if k not in calibration.GROUP_BY]
    if bad:
        raise UsageError(
            f"--by {by!r}: choose from {', '.join(calibration.GROUP_BY)} (comma-separated)"
        )
    return keys


@app.command("curves")
@handle_errors
def curves_command(
    out: Annotated[
        Path,
        typer.Option(
            "--out",
            help="Folder for the PNG and SVG figures (created if missing).",
            file_okay=False,
            show_default=False,
        ),
    ],
    db: DbOption = None,
    process: ProcessOption = None,
    step: StepOption = None,
    model: ModelOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    advisory_only: AdvisoryOnlyOption = False,
    with_escalations: EscalationsOption = False,
    with_audits: Annotated[
        bool,
        typer.Option(
            "--with-audits",
            help="Also read the audit-draw labels after the switch (left out by default), only "
            "where every label of a curve was seen with one probability (reviews 1, a uniform "
            "draw its rate): else refused, as unweighted they would be the draw's curve.",
        ),
    ] = False,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            help="Also group by week ('week' or 'model,week'). The evaluator "
            "model is always a group: models are never pooled.",
        ),
    ] = None,
    fmt: CurvesFormat = Format.table,
    bins: Annotated[
        int, typer.Option("--bins", min=2, max=50, help="Number of bins.")
    ] = DEFAULT_BINS,
    strategy: Annotated[
        Strategy, typer.Option("--strategy", help="uniform: equal widths; quantile: equal counts.")
    ] = Strategy.uniform,
) -> None:
    """Reliability diagrams, calibration error and recalibration maps, per question and model.

    Writes a figure per question and a small-multiples figure per step (PNG
    and SVG) into --out and prints the figures' numbers: per bin the mean
    prediction, observed rate, 95% Wilson interval and count; ECE with a bias-corrected
    bootstrap interval, MCE, Brier, log loss, AUROC; and ECE/Brier before and
    after the chosen recalibration map on held-out folds (for a choice or
    rubric question over its passing answers' confidence against acceptable,
    not the curve's correct call, so its ECE before differs from the curve's).
    Below 20 points the numbers are withheld, in the table (not in json).
    The curves read the labels of checks reviewed under advisory: true, as the
    threshold search does: audit-draw labels after the switch are left out and
    counted (left_out.audits in json); --with-audits reads them where that is
    sound, --with-escalations every decision (a selected sample).
    """
    require_format(fmt, "curves", Format.table, Format.json, Format.csv)
    if with_audits and with_escalations:
        raise UsageError("choose one of --with-audits and --with-escalations (which keeps audits)")
    keys = _parse_by(by)
    filters = make_filters(process, step, model, since, until, advisory_only, with_escalations)
    after_switch = "keep" if with_escalations else "audits" if with_audits else "leave_out"
    con = connect(db, read_only=True)
    try:
        matched = require_known(con, filters)
        note_left_out(con, filters)
        audits = dataset.audit_label_count(con, filters) if after_switch == "leave_out" else 0
        results = calibration.calibrate_store(
            con, filters, n_bins=bins, strategy=strategy.value, by=keys, after_switch=after_switch
        )
    finally:
        con.close()
    if audits:
        err.print(f"note: {audits_left_out_text(audits)}", markup=False, soft_wrap=True)
    if after_switch == "keep" and any(q.selected_sample for q in results):
        err.print(f"note: {SELECTED_TEXT}", markup=False, soft_wrap=True)
    if not results and matched:  # checks, none labeled: an empty result too
        err.print("note: no labeled answers match these filters: an empty result", markup=False)
    try:
        figures = plots.write_figures(results, out)
    except OSError as exc:
        raise UsageError(f"cannot write figures to {out}: {exc.strerror or exc}") from None
    records = []
    for q in results:
        rec = q.to_dict()
        rec["figure"] = {k: str(v) for k, v in figures[q.key].items()}
        rec["step_figure"] = {
            k: str(v)
            for k, v in figures[plots.step_key(q.process, q.step, q.model, q.week)].items()
        }
        records.append(rec)
    if fmt is Format.json:
        echo_json(records)
    elif fmt is Format.csv:
        write_csv(bin_rows(records), BIN_COLUMNS)
    else:
        typer.echo(
            "\n".join(_table(records)) if records else "no labeled answers match these filters"
        )
    err.print(f"wrote {2 * len(figures)} figures (PNG and SVG) to {out}", markup=False)


#: Said of curves that read decisions after the switch kept by --with-escalations.
SELECTED_TEXT = (
    "these curves read decisions made after the switch (--with-escalations): a sample the "
    "enforced check selected (its escalations and audit draws), so they describe that sample, "
    "not the check"
)


def audits_left_out_text(n: int) -> str:
    """That ``n`` audit-draw labels were left out of the curves, why, and how to read them."""
    return (
        f"{n} audit-draw label{'s' if n != 1 else ''} after the switch left out of the curves: "
        "a draw among the enforced check's own verdicts is not a sample of every submission "
        "(a stratified draw's labels would need their inclusion probabilities as weights); "
        "--with-audits reads them where every label of a curve was seen with one probability"
    )


# --------------------------------------------------------------------------- table rendering


def _f(x: Any, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _ci(ci: list[Any], digits: int = 2) -> str:
    if ci is None or ci[0] is None:
        return "-"
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _table(records: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for rec in records:
        lines += _block(rec)
        lines.append("")
    lines.append(
        f"Rates are shown with 95% Wilson intervals; below {MIN_N} labels numbers are withheld "
        "(see --format json)."
    )
    return [
        ln for part in lines for ln in (textwrap.wrap(part, WIDTH) if len(part) > WIDTH else [part])
    ]


def _block(rec: dict[str, Any]) -> list[str]:
    week = f" · week of {rec['week']}" if rec.get("week") else ""
    head = terminal_safe(f"{rec['process']} / {rec['step']} · model {rec['model']}{week}")
    out = ["━━ " + clip(head, WIDTH - 3)]
    out += textwrap.wrap(terminal_safe(rec["ask"]), WIDTH, max_lines=3, placeholder=" …") or [""]
    kind = rec["kind"]
    what = "p vs acceptable" if kind == "yes_no" else "confidence vs correct call"
    out.append(
        f"{_KIND[kind]} · n {rec['n']} labeled · {what} on {rec['n_curve']} · "
        f"{rec['strategy']}, {rec['n_bins']} bins"
    )
    if rec.get("n_missing"):
        out.append(f"({rec['n_missing']} labeled answers had no usable answer and are left out)")
    left = (rec.get("left_out") or {}).get("audits", 0)
    if left:
        out.append(
            f"({left} audit-draw labels after the switch left out; --with-audits reads them)"
        )
    if rec.get("selected_sample"):
        out.append(
            f"({rec['n_audits']} labels after the switch kept: a sample the enforced check "
            "selected, not the check's curve)"
        )
    elif rec.get("n_audits"):
        out.append(f"({rec['n_audits']} of the labels from audit draws, all seen alike)")
    if rec["too_few"]:
        out.append(
            f"  too few labels (n = {rec['n_curve']} < {MIN_N}): figure marked, numbers withheld"
        )
    else:
        x, y = ("mean p", "accepted") if kind == "yes_no" else ("mean conf", "correct")
        out.append(f"  {'bin':<11} {x:>9} {y:>9} {'95% CI':>14} {'n':>7}")
        for b in rec["bins"]:
            if b["n"] == 0:
                out.append(f"  {b['lo']:.2f}-{b['hi']:.2f}   {'(empty)':>9}")
                continue
            out.append(
                f"  {b['lo']:.2f}-{b['hi']:.2f}   {_f(b['mean_predicted']):>9} "
                f"{_f(b['observed']):>9} {_ci(b['ci']):>14} {b['n']:>7}"
            )
        out.append(
            f"  ECE {_f(rec['ece'])} {_ci(rec['ece_ci'], 3)} · MCE {_f(rec['mce'])} · "
            f"Brier {_f(rec['brier'])} · log loss {_f(rec['log_loss'])}"
        )
        auroc = _f(rec["auroc"]) if rec["auroc"] is not None else f"- ({rec['auroc_note']})"
        out.append(clip(f"  AUROC {auroc}", WIDTH))
    out += _recal_lines(rec)
    if kind == "choice":
        out += _rates_lines(rec["answers"], "answer", rec)
    elif kind == "rubric":
        out += _rates_lines(rec["levels"], "level", rec)
    out.append(f"  figure: {Path(rec['figure']['png']).name} (and .svg)")
    return out


def _recal_lines(rec: dict[str, Any]) -> list[str]:
    r = rec["recalibration"]
    on = "" if rec["kind"] == "yes_no" else " of passing answers' confidence"
    if r["method"] == "none":
        return [clip(f"  recalibration{on}: none ({r['reason']})", WIDTH)]
    head = f"  recalibration{on}: {r['method']}, {r['n_splits']}-fold held out"
    if r["n"] < MIN_N:  # as the curve's numbers: too few to read
        return [clip(head, WIDTH), f"    fit on {r['n']} points: too few, numbers withheld"]
    # Before: the evaluator's numbers; after: the map's held-out predictions. Over the curve's
    # points for a yes/no question; for a choice or rubric, over the passing answers against
    # acceptable (what the threshold search reads), not the curve's correct call: another ECE.
    over = (
        [f"    on the curve's {r['n']} points (before: the curve's ECE):"]
        if rec["kind"] == "yes_no"
        else textwrap.wrap(
            f"on the {r['n']} passing answers, confidence vs acceptable (the curve: "
            f"{rec['n_curve']} answers vs the correct call, hence another ECE before):",
            WIDTH, initial_indent="    ", subsequent_indent="    ",
        )
    )  # fmt: skip
    body = (
        f"    ECE {_f(r['ece_before'])} -> {_f(r['ece_after'])} · "
        f"Brier {_f(r['brier_before'])} -> {_f(r['brier_after'])}"
    )
    return [clip(head, WIDTH), *over, body]


def _rates_lines(rows: list[dict[str, Any]], what: str, rec: dict[str, Any]) -> list[str]:
    source = "process file" if rec["pass_source"] == "process file" else "learnt from labels"
    if what == "answer":
        call = f"pass list {rec['pass_names']} ({source})"
    else:
        call = f"pass level {rec['pass_level']} ({source})"
    out = [clip(terminal_safe(f"  acceptance per {what}; {call}"), WIDTH)]
    out.append(f"  {what:<20} {'n':>6} {'rate':>7} {'95% CI':>14}  passes")
    flagged = set(rec.get("non_monotone_levels") or [])
    for row in rows:
        name = terminal_safe(row["name"] if what == "answer" else row["level"])
        rate = "too few" if row["too_few"] and row["n"] else _f(row["rate"], 2)
        ci = "" if row["too_few"] else _ci(row["ci"])
        mark = "  non-monotone" if what == "level" and row["level"] in flagged else ""
        out.append(
            f"  {clip(name, 20):<20} {row['n']:>6} {rate:>7} {ci:>14}  "
            f"{'yes' if row['passes'] else 'no'}{mark}"
        )
    if flagged:
        out.append("  non-monotone: a level accepted significantly less often than a lower one")
        out.append("  (one-sided Fisher exact test, Holm-adjusted, alpha 0.05)")
    return out
