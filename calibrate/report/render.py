"""Write the readiness report as one self-contained HTML file, Markdown with figures, and JSON.

The report is computed by :func:`calibrate.analysis.readiness.assess_store`;
this module only formats and draws it.

Untrusted text. Process names, step ids, model names, question text, approver
names and notes come from records and process files. In HTML they go through
Jinja2's autoescape. In Markdown the template environment escapes **every**
value with :func:`calibrate.textsafe.escape_markdown` unless it is a
:class:`Md` string built here from numbers; the ``check:`` blocks go into
fenced code blocks whose fence is longer than any run of backticks in the
block, so no text can close the fence. Figures are drawn with text made safe
by :mod:`calibrate.report.plots` and embedded as base64 PNG (HTML) or written
beside the Markdown; file names are slugs plus hashes, never record text.

The HTML loads nothing: no script, no external style sheet, font or image.
"""

from __future__ import annotations

import base64
import difflib
import io
import json
import math
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from calibrate.analysis.audit import SequentialAuditPlan
from calibrate.analysis.audit_fixed import AuditPlan
from calibrate.analysis.displays import WeeklyDisplay  # noqa: F401 - re-exported
from calibrate.analysis.draw_design import LABEL_SOURCES
from calibrate.analysis.enforced_step import KEEP_ENFORCED
from calibrate.analysis.plain import num as _num
from calibrate.analysis.rate import Rate, limit_pct
from calibrate.analysis.readiness import ReadinessReport
from calibrate.analysis.readiness_decision import DECISIONS
from calibrate.analysis.readiness_result import StepReadiness
from calibrate.analysis.stats import MIN_N
from calibrate.analysis.threshold_view import suggested_questions
from calibrate.errors import UsageError
from calibrate.report import plots, switch
from calibrate.textsafe import (
    NO_MODEL,
    NO_PROCESS,
    NO_STEP,
    escape_markdown,
    shown_name,
    step_name,
    strip_control,
    yaml_block,
)

#: The formats :func:`write_report` writes, and their file names.
FORMATS = {"html": "report.html", "md": "report.md", "json": "report.json"}
DECISION_WORDS = {"READY": "READY", "NOT_YET": "NOT YET", "NO": "NO"}
#: The figures of a step, in the order they appear.
FIGURES = ("reliability", "tradeoff", "weekly")
#: A weekly rate over audit draws made at unequal probabilities is not the step's rate.
UNEQUAL_DRAWS = "not every verdict drawn alike: see Since the switch"
#: A rate over labels the enforced check selected (escalations kept by --with-escalations).
SELECTED_LABELS = "labels the enforced check selected (escalations): no rate of the step"
#: The unsure share of rows whose checks an audit draw chose (or left): the draw's, not the check's.
CHOSEN_BY_DRAW = "set by the draw: see Since the switch"
#: Both without their pointer, for a report with no "Since the switch" section (no monitored step).
NO_SWITCH_WORDS = {
    UNEQUAL_DRAWS: "not every verdict drawn alike: no rate of the step",
    CHOSEN_BY_DRAW: "set by the draw (or by what it left), not the check's",
}
#: Resolution of the embedded figures.
DPI = 100


class Md(str):
    """Markdown that needs no escaping: text built here from numbers and fixed words."""


# --------------------------------------------------------------------------- formatting


def pct(value: Any, digits: int = 1) -> Md:
    """``0.041`` -> ``"4.1%"``; missing -> ``"–"``."""
    v = _num(value)
    return Md("–" if v is None else f"{v:.{digits}%}")


def rate_text(k: Any, n: Any) -> Md:
    """A rate with its n and 95% Wilson interval, or "too few" below ``MIN_N``."""
    return Md(Rate(int(k or 0), int(n or 0)).text())


def share_text(share: Any, n: int) -> Md:
    """A share of ``n`` submissions (e.g. expected auto-pass) with its interval."""
    v = _num(share)
    if v is None or n <= 0:
        return Md("–")
    return rate_text(int(round(v * n)), n)


def _value_text(value: Any, name: str) -> Md:
    if value is None:
        return Md("–")
    if isinstance(value, bool):
        return Md("yes" if value else "no")
    if isinstance(value, int):
        return Md(f"{value:,}")
    if isinstance(value, float):
        if name.startswith("drift_"):
            return Md(f"p = {value:.3g}")
        return pct(value)
    return Md(escape_markdown(value))


def _limit_text(value: Any, name: str) -> Md:
    if value is None:
        return Md("–")
    if name.startswith("drift_"):
        return Md(f"p > {value:.3g}")
    if name == "labeled_submissions":
        return Md(f">= {value:,}")
    if name == "evaluator_models":
        return Md(f"<= {value}")
    if name == "coverage":
        return Md(f">= {pct(value, 0)}")
    return Md(f"<= {pct(value, 1)}")


def check_yaml(
    items: Sequence[Mapping[str, Any]], *, advisory: bool, say_false: bool = False
) -> str:
    """A step's ``advisory``/``check:`` keys as YAML in check-1's full form (no ``kind``).

    ``advisory: false`` is written only with ``say_false`` (an enforced step's
    check as it stands); otherwise a check without ``advisory`` is enforced.
    """
    questions = []
    for item in items:
        body = {k: v for k, v in item.items() if k != "kind" and v is not None}
        questions.append(body)
    doc: dict[str, Any] = {}
    if advisory or say_false:
        doc["advisory"] = bool(advisory)
    doc["check"] = questions
    return yaml_block(doc)


def check_diff(current: str, suggested: str) -> list[tuple[str, str]]:
    """Line diff of two YAML blocks as ``(kind, line)``; kind is ``" "``, ``"-"`` or ``"+"``."""
    out = []
    for line in difflib.ndiff(current.splitlines(), suggested.splitlines()):
        tag = line[:1]
        if tag in (" ", "-", "+"):
            out.append((tag, line[2:]))
    return out


def fence(text: str, info: str = "") -> Md:
    """``text`` in a fenced code block that nothing inside can close (CommonMark §4.5)."""
    body = strip_control(text, keep_newlines=True)
    longest = max((len(run) for run in _backtick_runs(body)), default=0)
    ticks = "`" * max(3, longest + 1)
    return Md(f"{ticks}{info}\n{body.rstrip()}\n{ticks}")


def _backtick_runs(text: str) -> Iterable[str]:
    run = ""
    for ch in text:
        if ch == "`":
            run += ch
        elif run:
            yield run
            run = ""
    if run:
        yield run


# --------------------------------------------------------------------------- figures


def _png(fig: Any) -> bytes:
    buf = io.BytesIO()
    with warnings.catch_warnings():
        # Untrusted text may hold glyphs the font lacks; a missing glyph is not an error.
        warnings.filterwarnings("ignore", message=".*[Gg]lyph.*missing.*")
        fig.savefig(buf, format="png", dpi=DPI)
    fig.clear()
    return buf.getvalue()


def step_figures(step: StepReadiness, *, alpha: float) -> dict[str, bytes]:
    """PNG bytes of a step's figures: ``reliability``, ``tradeoff``, ``weekly`` (when drawable)."""
    out: dict[str, bytes] = {}
    if step.calibration:
        out["reliability"] = _png(
            plots.step_figure(
                step.calibration,
                title=f"{step_name(step.process, step.step)} · model {shown_name(step.model, NO_MODEL)}",
            )
        )
    try:
        display = step.thresholds.make_display()
        if display is not None:
            # Draw on our own Agg figure: nothing global, and the title made safe.
            fig = plots.new_figure((8.0, 4.2))
            fig.set_layout_engine("constrained")  # room for the legend beside the axes
            ax = fig.add_subplot()
            display.plot(ax=ax)
            ax.set_title(
                plots.safe_text(
                    f"{step_name(step.process, step.step)} · model {shown_name(step.model, NO_MODEL)}",
                    width=80,
                ),
                fontsize=9,
            )
            out["tradeoff"] = _png(fig)
    except Exception as exc:  # noqa: BLE001 - a figure that fails must not sink the report
        warnings.warn(
            f"trade-off figure of {step_name(step.process, step.step, sep='/')} failed: {exc}",
            stacklevel=2,
        )
    if step.by_week is not None and step.by_week["week"].notna().any():
        out["weekly"] = _png(WeeklyDisplay(step.by_week, alpha=alpha).plot().figure_)
    return out


# --------------------------------------------------------------------------- the view


def _step_view(
    step: StepReadiness, report: ReadinessReport, figures: dict[str, bytes], key: str
) -> dict[str, Any]:
    """Everything the templates show for one step, as plain values (record text unescaped)."""
    opts = report.options
    enforced = step.enforcement is not None
    verdict = step.enforced_verdict
    keep = enforced and step.pattern.get("recommended") == KEEP_ENFORCED
    # An enforced step's check stands as advisory: false; any other is still advisory.
    current_yaml = (
        check_yaml(step.current_check, advisory=not enforced, say_false=enforced)
        if step.current_check
        else ""  # today's thresholds unknown (no process file): none to show
    )
    # Only a certified suggestion is shown as one; otherwise today's check stands. On an
    # enforced step kept so it is an optional change of thresholds (advisory stays false).
    offered = step.thresholds.status == "ok" and (
        not enforced or bool(verdict and verdict.suggestion)
    )
    # A READY step drops advisory unless its pattern keeps it (an audit that does not pay and
    # fails that save nothing: the paste block dropped advisory beside "keep advisory").
    drops = step.decision == "READY" and step.pattern.get("recommended") != "keep advisory"
    suggested_yaml = (
        check_yaml(step.suggested_check, advisory=not drops, say_false=keep)
        if step.suggested_check and offered
        else ""
    )
    if keep and suggested_yaml == current_yaml:
        suggested_yaml = ""  # the suggestion is the check in force: no change to offer
    # An enforced step returned to advisory: its check as it stands, under review again; with
    # its thresholds unknown, advisory: true on the step alone (the monitor's own block).
    paste = step.enforced_dict()["paste"] if enforced and not keep else None
    return_yaml = (
        "" if paste is None else paste["yaml"] or check_yaml(step.current_check, advisory=True)
    )
    # What a person pasting the suggestion should know (a question switched off, ...).
    remarks = (
        [
            f"Q{i} ({q.ask}) {remark}"
            for i, q in enumerate(suggested_questions(step.suggested_check, []), start=1)
            for remark in q.remarks()
        ]
        if suggested_yaml
        else []
    )
    t = step.thresholds
    bounds = t.certified if t.certified is not None else t.best_bounds
    # The search's shares are of every labeled check, error verdicts counted unsure: its own n
    # (today's, with labels after the switch kept, of the reviews alone: `current.n`).
    n = step.n_labeled_searched
    shares = ("auto_pass", "auto_fail", "unsure")
    expected = {k: share_text(t.expected.get(k), int(t.expected.get("n") or n)) for k in shares}
    current = {k: share_text(t.current.get(k), int(t.current.get("n") or n)) for k in shares}
    agree = _agreement_view(step.agreement)
    weekly = _weekly_rows(step.by_week)
    by_model = _model_rows(step.by_model)
    if report.since_switch is None or not report.since_switch.steps:
        # No "Since the switch" section to point at: the same words without the pointer.
        weekly, by_model = _unpointed(weekly), _unpointed(by_model)
        if agree is not None:
            agree["rates"] = [(k, NO_SWITCH_WORDS.get(v, v)) for k, v in agree["rates"]]
            agree["kappa"] = NO_SWITCH_WORDS.get(agree["kappa"], agree["kappa"])
    approvers = _approver_rows(step.approvers)
    drivers = []
    for r in step.drivers.to_dict("records") if step.drivers is not None else []:
        n_rej, n_all = int(r["rejected"]), int(r["n"])
        if r["result"] == "fail":
            follow = Md(f"accepted {rate_text(n_all - n_rej, n_all)}")
        else:
            follow = Md(f"rejected {rate_text(n_rej, n_all)}")
        drivers.append(
            {
                "ask": r["ask"],
                "answer": str(r["answer"]),
                "result": str(r["result"]),
                "rejected": rate_text(n_rej, n_all),
                "follow": follow,
                "disagreements": Md(str(int(r["disagreements"]))),
                "n_disagree": int(r["disagreements"]),
            }
        )
    return {
        "key": key,
        "anchor": "step-" + plots.short_hash(key),
        "process": shown_name(step.process, NO_PROCESS),
        "step": shown_name(step.step, NO_STEP),
        "model": shown_name(step.model, NO_MODEL),
        "decision": step.decision,
        # The evidence's decision (for an enforced step, beside the verdict on the check in force).
        "decision_word": DECISION_WORDS[step.evidence],
        # An enforced step's verdict is about keeping it so; the evidence's decision beside it.
        "enforced": enforced,
        "verdict_word": Md(str(step.pattern["recommended"]).upper())
        if enforced
        else DECISION_WORDS[step.decision],
        "enforced_since": Md(step.enforcement.since) if enforced else None,
        "return_yaml": return_yaml,
        # Whether today's thresholds are known (a process file names every question).
        "thresholds_known": bool(step.current_check),
        "suggestion": verdict.suggestion if verdict else None,
        "suggestion_note": verdict.suggestion_note if verdict else "",
        "no_suggestion": _no_suggestion(step),
        "reasons": step.reasons,
        "summary": step.reasons[0] if step.reasons else "",
        "criteria": [
            {
                "label": c.label,
                "value": _value_text(c.value, c.name),
                "limit": _limit_text(c.limit, c.name),
                "ok": c.ok,
                "blocks": DECISION_WORDS[c.blocks],
                "detail": c.detail,
            }
            for c in step.criteria
        ],
        "n_labeled": Md(f"{n:,}"),
        "needed_labels": step.needed_labels,
        "needed_text": needed_text(step),
        "hours": Md(
            "–"
            if not np.isfinite(step.hours_saved_per_month)
            else f"{step.hours_saved_per_month:,.1f}"
        ),
        "volume": Md(
            f"{step.volume.checks_per_week:,.1f} submissions and {step.volume.labeled_per_week:,.1f} "
            f"labels a week over the last {step.volume.days:.0f} days"
            if np.isfinite(step.volume.checks_per_week)
            else "no dated checks"
        ),
        "status": t.status,
        # Certified on labels before a rise the audits show: withheld (no certificate shown).
        "withheld": bool(enforced and step.enforcement.alarm and t.status == "ok"),
        "status_words": Md(str(t.status).replace("_", " ")),
        # The certificate when there is one, else the best single-candidate bounds (the
        # templates say which): never one taken for the other.
        "bounds": {
            "false_pass_upper": pct(bounds.get("false_pass_upper")),
            "false_fail_upper": pct(bounds.get("false_fail_upper")),
            # A check (or candidate) that never fails has no false-fail rate, so no bound on one.
            "never_fails": bounds.get("false_fail_upper") is None
            and (bool(bounds.get("never_fails")) or t.status != "ok"),
            "confidence": pct(bounds.get("confidence", 1 - opts.delta), 0),
        },
        "expected": expected,
        "current": current,
        # Which labels today's row is over, where some were left out of it (--with-escalations).
        "current_note": t.current.get("note") or "",
        # One string a note (a note may itself hold "; "): shown as a list, never joined.
        "threshold_notes": list(t.notes),
        "current_yaml": current_yaml,
        "suggested_yaml": suggested_yaml,
        "remarks": remarks,
        # What to paste now: the suggestion of a READY step, or an enforced step's return to
        # advisory (nothing when it stays enforced: any change of thresholds is optional).
        "paste_yaml": return_yaml
        if enforced
        else (suggested_yaml if step.decision == "READY" else ""),
        "diff": check_diff(current_yaml, suggested_yaml) if suggested_yaml else [],
        "diff_text": "\n".join(
            f"{tag} {line}" for tag, line in check_diff(current_yaml, suggested_yaml)
        )
        if suggested_yaml
        else "",
        "figure_files": dict.fromkeys(FIGURES),
        "agreement": agree,
        "agreement_note": _agreement_note(
            step, pointer=report.since_switch is not None and bool(report.since_switch.steps)
        ),
        "weekly": weekly,
        "by_model": by_model,
        "approvers": approvers,
        "drivers": drivers,
        "top_drivers": [d for d in drivers if d["n_disagree"] > 0][:3],
        "calibration": _calibration_rows(step.calibration),
        "calibration_note": _calibration_note(step),
        "audit": _audit_view(step.sequential_audit or step.audit, step, opts),
        "pattern": step.pattern,
        "bias": _bias_view(step.automation_bias),
        "left_out": step.left_out,
        "drift_split": step.drift.split_at,
        "model_change": step.model_change.to_dict(),
        "figures": figures,
        "figure_b64": dict.fromkeys(FIGURES)
        | {k: base64.b64encode(v).decode("ascii") for k, v in figures.items()},
    }


def _no_suggestion(step: StepReadiness) -> str:
    """Why an enforced step shows no suggested thresholds (empty when it shows one)."""
    if step.enforcement is not None and step.enforcement.alarm and step.thresholds.status == "ok":
        return (
            "No thresholds are suggested: the labels reviewed before the switch predate the rise "
            "the audits show."
        )
    return "Nothing is certified, so there is no suggestion."


def needed_text(step: StepReadiness) -> Md:
    """What to collect, after "keep advisory: true and": the search's estimate in its own words."""
    if not step.needed_labels:
        return Md("")
    if step.needed is not None:
        return Md(f"collect more labeled checks: {step.needed.sentence()}")
    if step.needed_days is None:
        when = "no recent volume to time it"
    else:
        d = step.needed_days
        when = f"about {d:.0f} days" if d < 14 else f"about {d / 7:.1f} weeks"
    return Md(f"collect about {step.needed_labels:,} more labeled checks ({when})")


def _agreement_view(df: pd.DataFrame | None) -> dict[str, Any] | None:
    if df is None or df.empty:
        return None
    r = df.iloc[0]
    cells = [
        {
            "verdict": v,
            "acceptable": Md(str(int(r[f"{v}_acceptable"]))),
            "not_acceptable": Md(str(int(r[f"{v}_not_acceptable"]))),
        }
        for v in ("pass", "fail", "unsure", "error")
    ]
    kappa = _num(r["kappa"])
    if (why := _withheld(r, "agree")) is not None:
        kappa_text = why
    elif kappa is not None and int(r["n_decided"]) >= MIN_N:
        kappa_text = Md(
            f"{kappa:.2f} (95% CI {r['kappa_low']:.2f} to {r['kappa_high']:.2f}; n={int(r['n_decided'])})"
        )
    elif kappa is not None:
        kappa_text = Md(f"too few to say (n={int(r['n_decided'])})")
    else:
        kappa_text = Md("undefined")
    flagged = _flagged_rates(r)
    return {
        "cells": cells,
        "n": Md(str(int(r["n"]))),
        "n_checks": Md(str(int(r["n_checks"]))),
        "rates": [
            ("agreement (decided verdicts)", flagged["agree"]),
            ("false-pass rate, P(not acceptable | pass)", flagged["false_pass"]),
            ("false-fail rate, P(acceptable | fail)", flagged["false_fail"]),
            ("unsure rate (all checks)", rate_text(r["n_unsure"], r["n_checks"])),
            ("error rate (all checks)", rate_text(r["n_error"], r["n_checks"])),
            ("TPR, P(pass | acceptable)", flagged["tpr"]),
            ("TNR, P(not pass | not acceptable)", flagged["tnr"]),
        ],
        "kappa": kappa_text,
        "kappa_reason": ""
        if _withheld(r, "agree") is not None or pd.isna(r["kappa_reason"])
        else str(r["kappa_reason"] or ""),
    }


#: Each rate of an agreement row: its numerator, its denominator and the flag that withholds it
#: (the verdicts it conditions on were not offered alike by the audit draws beside its labels).
_ROW_RATES: dict[str, tuple[Callable[[Any], Any], str, str]] = {
    "agree": (lambda r: r["pass_acceptable"] + r["fail_not_acceptable"], "n_decided",
              "unequal_draws"),
    "false_pass": (lambda r: r["pass_not_acceptable"], "n_pass", "unequal_draws_pass"),
    "false_fail": (lambda r: r["fail_acceptable"], "n_fail", "unequal_draws_fail"),
    "tpr": (lambda r: r["pass_acceptable"], "n_acceptable", "unequal_draws_verdicts"),
    "tnr": (lambda r: r["n_not_acceptable"] - r["pass_not_acceptable"], "n_not_acceptable",
            "unequal_draws_verdicts"),
}  # fmt: skip


def _withheld(r: Any, name: str) -> str | None:
    """Why the rate ``name`` of an agreement row is not shown, or ``None`` when it is."""
    if int(r.get("n_selected", 0) or 0):
        return SELECTED_LABELS
    return UNEQUAL_DRAWS if bool(r.get(_ROW_RATES[name][2], False)) else None


def _flagged_rates(r: Any) -> dict[str, Any]:
    """The rates of one agreement row that condition on a verdict or a label, each as text or
    as why it is withheld: audit draws that did not offer its verdicts alike (an unweighted rate
    is not the step's), or labels the enforced check selected."""
    out = {}
    for name, (numerator, denominator, _) in _ROW_RATES.items():
        why = _withheld(r, name)
        out[name] = why if why is not None else rate_text(numerator(r), r[denominator])
    return out


def _unlabeled_enforced(r: dict[str, Any]) -> bool:
    """Checks recorded with advisory: false that no person labeled (nothing to show)."""
    return not r["n"] and not _reviewed(r)


def _reviewed(r: dict[str, Any]) -> bool:
    """A row whose labels are advisory reviews, which see every verdict (no draw chose them)."""
    return r.get("labels", LABEL_SOURCES["review"]) == LABEL_SOURCES["review"]


def _weekly_rows(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    if df is None or df.empty:
        return []
    return [
        {
            "week": "(no time)" if pd.isna(r["week"]) else str(r["week"]),
            "model": shown_name(r["model"], NO_MODEL),
            "labels": str(r.get("labels", "")),
            "n": Md(str(int(r["n"]))),
            **_flagged_rates(r),
        }
        for r in df.to_dict("records")
        if not _unlabeled_enforced(r)
    ]


def _model_rows(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    """One row per evaluator model and label source (advisory review, audit draw, ...)."""
    if df is None or df.empty:
        return []
    return [
        {
            "model": shown_name(r["model"], NO_MODEL),
            "labels": str(r.get("labels", "")),
            "n_checks": Md(str(int(r["n_checks"]))),
            "n": Md(str(int(r["n"]))),
            **_flagged_rates(r),
            # Only reviews see every verdict: an audit draw (or what it left) holds the verdicts
            # the draw chose, so its unsure share says how the draw was made, not the check.
            "unsure": rate_text(r["n_unsure"], r["n_checks"]) if _reviewed(r) else CHOSEN_BY_DRAW,
        }
        for r in df.to_dict("records")
    ]


def _unpointed(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows with :data:`NO_SWITCH_WORDS` in place of the texts that point at Since the switch."""
    return [
        {k: NO_SWITCH_WORDS.get(v, v) if isinstance(v, str) else v for k, v in r.items()}
        for r in rows
    ]


def _approver_rows(df: pd.DataFrame | None) -> list[dict[str, Any]]:
    if df is None or df.empty:
        return []
    rows = []
    for r in df.to_dict("records"):
        median = _num(r["median_review_s"])
        rows.append(
            {
                "approver": "(unnamed)"
                if r["approver"] is None or pd.isna(r["approver"])
                else str(r["approver"]),
                "n": Md(str(int(r["n"]))),
                "approval": rate_text(r["approvals"], r["n"]),
                "agree": rate_text(r["n_decided"] * (_num(r["agree"]) or 0), r["n_decided"])
                if r["n_decided"]
                else Md("no decided verdicts"),
                "median": Md("–" if median is None else _duration(median)),
                "flag": bool(r["flag"]),
            }
        )
    return rows


def _duration(seconds: float) -> str:
    if abs(seconds) < 120:
        return f"{seconds:.0f} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _calibration_rows(qs: Sequence[Any]) -> list[dict[str, Any]]:
    rows = []
    for q in qs:
        c = q.curve
        ece = _num(c.ece)
        lo, hi = (_num(x) for x in c.ece_ci)
        if c.too_few:
            text = Md(f"too few labels (n={c.n})")
        elif ece is None:
            text = Md("–")
        else:
            ci = f"; 95% CI {lo:.3f}–{hi:.3f}" if lo is not None and hi is not None else ""
            text = Md(f"{ece:.3f} (n={c.n}{ci}; {c.binning})")
        rows.append({"ask": q.ask, "kind": q.kind, "ece": text, "x": c.x_label})
    return rows


def _agreement_note(step: StepReadiness, pointer: bool) -> Md:
    """What the agreement table leaves out: the audit decisions after the switch (empty if none)."""
    left = int(step.left_out.get("audits_after_switch", 0))
    if not left:
        return Md("")
    where = "Since the switch, weighted by their draw" if pointer else "calibrate monitor"
    reviews = int(step.agreement["n"].sum()) if step.agreement is not None else 0
    return Md(
        f"The table holds the {reviews} labels reviewed under advisory: true; the {left} audit "
        "decisions after the switch are not in it (a draw among the enforced check's own "
        f"verdicts is not a sample of every submission): their false passes are in {where}, "
        "and the rows by evaluator model below show them apart."
    )


def _calibration_note(step: StepReadiness) -> Md:
    """Which labels the calibration reads: reviews only, the audits it left out, or a selected sample."""
    qs = step.calibration
    if any(q.selected_sample for q in qs):
        n = max(q.n_audits for q in qs)
        return Md(
            f"These curves read {n} decisions made after the switch (--with-escalations): a "
            "sample the enforced check selected, so they describe that sample, not the check."
        )
    left = max((q.left_out.get("audits", 0) for q in qs), default=0)
    left = left or int(step.left_out.get("audits_after_switch", 0))
    if not left:
        return Md("")
    return Md(
        f"Over the labels reviewed under advisory: true; {left} audit-draw labels after the "
        "switch are left out (a draw among the enforced check's own verdicts is not a sample of "
        "every submission; `calibrate curves --with-audits` reads them where every label of a "
        "curve was seen with one probability)."
    )


def _audit_view(
    plan: AuditPlan | SequentialAuditPlan | None, step: StepReadiness, opts: Any
) -> dict[str, Any]:
    if step.enforcement is not None:
        return _enforced_audit_view(plan, step)
    if isinstance(plan, SequentialAuditPlan):
        text = plan.text()
        if step.decision != "READY":
            text = "Once the step is READY: " + text[0].lower() + text[1:]
        return {
            "text": Md(text),
            "rate": pct(plan.rate if plan.rate is not None else 1.0, 0),
            "method": Md(SEQUENTIAL_METHOD),
        }
    if plan is None:
        return {
            "text": Md(
                "No certified thresholds yet, so no audit to plan: plan it once the step is READY."
            ),
            "rate": None,
            "method": None,
        }
    if plan.rate is None:
        return {
            "text": Md(
                "The check passes nothing at the suggested thresholds: there is nothing to audit."
            ),
            "rate": None,
            "method": plan.method,
        }
    weeks_full = plan.weeks_at_full_review or float("nan")
    if plan.attainable:
        text = (
            f"Keep a person reviewing a uniform random {plan.rate:.0%} of the check's passes "
            f"(about {plan.per_week:.1f} a week). Alarm when {plan.critical} or more of "
            f"{plan.sample_size} audited passes turn out not acceptable: a rise of the false-pass rate "
            f"to {plan.target:.0%} (2 x alpha) is then caught within {plan.weeks} weeks with "
            f"probability {plan.power:.0%}, and a check still at {plan.alpha:.0%} raises a false "
            f"alarm at most {plan.level:.0%} of the time."
        )
    else:
        text = (
            f"At this volume even reviewing every pass collects the {plan.sample_size} audited "
            f"passes the test needs in {weeks_full:.1f} weeks, not {plan.weeks}: keep reviewing all "
            f"passes for now, or accept slower detection (alarm at {plan.critical} or more not "
            f"acceptable among {plan.sample_size})."
        )
    if step.decision != "READY":
        text = "Once the step is READY: " + text[0].lower() + text[1:]
    return {"text": Md(text), "rate": pct(plan.rate, 0), "method": plan.method}


#: How the monitor's audit plan is computed, said beside it.
SEQUENTIAL_METHOD = (
    "the anytime-valid e-process of `calibrate monitor` (docs/method.md, after the "
    "switch), simulated on uniform random audits at the step's weekly passes"
)


def _enforced_audit_view(plan: SequentialAuditPlan | None, step: StepReadiness) -> dict[str, Any]:
    """The audit of an enforced step: the monitor's one plan, at the thresholds in force."""
    if plan is None:
        why = (
            "the monitor alarms, so the step goes back to advisory and people decide every "
            "submission; plan an audit again when it is READY and enforced"
            if step.enforcement is not None and step.enforcement.alarm
            else "no enforced passes to plan on"
        )
        return {"text": Md(f"No audit to plan: {why}."), "rate": None, "method": None}
    text = plan.text(enforced=True)
    return {
        "text": Md(
            "For the enforced check at its current thresholds (the plan of Since the switch): "
            + text[0].lower()
            + text[1:]
        ),
        "rate": pct(plan.enforced_rate, 0),
        "method": Md(SEQUENTIAL_METHOD),
    }


def _bias_view(bias: Mapping[str, Any]) -> dict[str, Any]:
    without = bias.get("without_flagged")
    return {
        "note": bias.get("note", ""),
        "flagged": [dict(f) for f in bias.get("flagged", [])],
        "without": None
        if not without
        else {
            "n": Md(str(without["n"])),
            "agree": rate_text(without["agree"]["k"], without["agree"]["n"]),
            "false_pass": rate_text(without["false_pass"]["k"], without["false_pass"]["n"]),
        },
    }


def report_view(report: ReadinessReport, figures: Mapping[str, dict[str, bytes]]) -> dict[str, Any]:
    """The whole report as the templates see it."""
    opts = report.options
    steps = []
    for step in report.steps:
        key = plots.step_key(step.process, step.step, step.model or "")
        steps.append(_step_view(step, report, figures.get(key, {}), key))
    counts = {d: sum(1 for s in report.steps if s.decision == d) for d in DECISIONS}
    return {
        # An ISO time stamp we made: digits and punctuation that start no markup.
        "generated_at": Md(str(report.generated_at)),
        "store": report.store,
        "options": opts.to_dict(),
        "filters": {k: v for k, v in report.filters.items() if v not in (None, False)},
        # Limits are settings: printed with their own digits (7.5%, not 8%).
        "alpha": Md(limit_pct(opts.alpha)),
        "beta": Md(limit_pct(opts.beta)),
        "confidence": Md(limit_pct(1 - opts.delta)),
        "min_coverage": Md(limit_pct(opts.min_coverage)),
        "minutes": Md(f"{opts.minutes_per_review:g}"),
        "counts": {DECISION_WORDS[k]: v for k, v in counts.items()},
        "steps": steps,
        "switch": _switch_entries(report),
        "notes": report.notes,
        "min_n": MIN_N,
        "drift_level": Md(f"{opts.drift_level:g}"),
        "delta": Md(f"{opts.delta:g}"),
        "cs_level": Md(limit_pct(1 - opts.delta)),
    }


def _switch_entries(report: ReadinessReport) -> list[dict[str, Any]]:
    """The since-the-switch entries; the lines built from numbers and fixed words are :class:`Md`."""
    entries = switch.switch_view(report.since_switch, _png)
    for e in entries:
        e["lines"] = [Md(line) for line in e["lines"]]
        e["status"] = Md(e["status"])  # fixed words (switch.STATUS_WORDS)
        e["since"] = Md(e["since"])
        e["escalations"] = Md(e["escalations"])
        if e["plan"]:
            e["plan"] = Md(e["plan"])
    return entries


# --------------------------------------------------------------------------- writing


def _environments() -> tuple[Environment, Environment]:
    loader = PackageLoader("calibrate.report", "templates")
    html = Environment(
        loader=loader,
        autoescape=True,
        # Control characters from records (ESC, BEL, bidi overrides) are dropped before escaping.
        finalize=_html_finalize,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    md = Environment(
        loader=loader,
        autoescape=False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        # Every value is escaped for Markdown unless it was built here as Md.
        finalize=_md_finalize,
    )
    for env in (html, md):
        env.filters["pct"] = pct
    md.filters["fence"] = fence
    md.filters["md"] = lambda v: Md(escape_markdown(v))
    return html, md


def _html_finalize(value: Any) -> Any:
    if isinstance(value, str) and not isinstance(value, Markup):
        return strip_control(value, keep_newlines=True)
    return value


def _md_finalize(value: Any) -> str:
    if isinstance(value, Md):
        return value
    if value is None:
        return ""
    if isinstance(value, bool | int | float):
        return str(value)
    return escape_markdown(value)


def report_json(report: ReadinessReport) -> dict[str, Any]:
    """The content of report.json (strict JSON values: NaN becomes null)."""
    return _jsonable(report.to_dict())


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bool | int | str):
        return value
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def parse_formats(value: str | Sequence[str] | None) -> list[str]:
    """``"html,md"`` -> ``["html", "md"]``; validates against :data:`FORMATS`."""
    if value is None:
        return list(FORMATS)
    items = value.split(",") if isinstance(value, str) else list(value)
    out = []
    for item in items:
        name = item.strip().lower()
        if not name:
            continue
        if name == "markdown":
            name = "md"
        if name not in FORMATS:
            raise ValueError(f"unknown report format {item!r}; choose from {', '.join(FORMATS)}")
        if name not in out:
            out.append(name)
    if not out:
        raise ValueError(f"no report format given; choose from {', '.join(FORMATS)}")
    return out


def write_report(
    report: ReadinessReport, out_dir: str | Path, *, formats: str | Sequence[str] | None = None
) -> dict[str, Path]:
    """Write the report into ``out_dir`` (created if needed).

    Parameters
    ----------
    report : ReadinessReport
        From :func:`calibrate.analysis.readiness.assess_store`.
    out_dir : path-like
        ``report.html`` (self-contained), ``report.md`` with its figures in
        ``figures/``, ``report.json``.
    formats : str or sequence of str, optional
        Any of ``html``, ``md``, ``json`` (all by default).

    Returns
    -------
    dict
        ``{format: path}`` of the files written.

    Raises
    ------
    ValueError
        ``report`` is not a ``ReadinessReport`` (a :class:`calibrate.errors.UsageError`,
        before anything is written), or ``formats`` names an unknown format.
    """
    if not isinstance(report, ReadinessReport):
        raise UsageError(
            "report must be a ReadinessReport such as calibrate.assess_store(con), got "
            f"{type(report).__name__}; nothing was written"
        )
    fmts = parse_formats(formats)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    if "json" in fmts:
        path = out / FORMATS["json"]
        path.write_text(
            json.dumps(report_json(report), indent=2, allow_nan=False, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        written["json"] = path
    if "html" not in fmts and "md" not in fmts:
        return written
    figures = {
        plots.step_key(s.process, s.step, s.model or ""): step_figures(
            s, alpha=report.options.alpha
        )
        for s in report.steps
    }
    view = report_view(report, figures)
    html_env, md_env = _environments()
    if "html" in fmts:
        path = out / FORMATS["html"]
        path.write_text(html_env.get_template("report.html.j2").render(**view), encoding="utf-8")
        written["html"] = path
    if "md" in fmts:
        fig_dir = out / "figures"
        fig_dir.mkdir(exist_ok=True)
        for step in view["steps"]:
            files = dict.fromkeys(FIGURES)
            for name, png in step["figures"].items():
                stem = plots.figure_stem(
                    f"{step['process']}-{step['step']}-{name}", step["key"] + name
                )
                (fig_dir / f"{stem}.png").write_bytes(png)
                files[name] = Md(f"figures/{stem}.png")
            step["figure_files"] = files
        for entry in view["switch"]:
            if entry["figure"]:
                stem = plots.figure_stem(f"{entry['process']}-{entry['step']}-switch", entry["key"])
                (fig_dir / f"{stem}.png").write_bytes(entry["figure"])
                entry["figure_file"] = Md(f"figures/{stem}.png")
        path = out / FORMATS["md"]
        path.write_text(md_env.get_template("report.md.j2").render(**view), encoding="utf-8")
        written["md"] = path
    return written


def summary_lines(report: ReadinessReport) -> list[str]:
    """Terminal lines: per step the decision, the step and model, and the main reason.

    Record text is stripped of control characters; the reason goes on its own
    indented line so the first line fits an 80-column terminal.
    """
    words = {"READY": "READY  ", "NOT_YET": "NOT YET", "NO": "NO     ",
             "KEEP_ENFORCED": "KEEP ENFORCED", "RETURN_TO_ADVISORY": "RETURN TO ADVISORY"}  # fmt: skip
    lines = []
    for s in report.steps:
        name = strip_control(step_name(s.process, s.step, sep="/"))
        model = strip_control(shown_name(s.model, NO_MODEL))
        hours = s.hours_saved_per_month
        saved = (
            f", ~{hours:.0f} h/month saved" if s.decision == "READY" and np.isfinite(hours) else ""
        )
        evidence = (
            f"  (enforced; evidence: {s.evidence.replace('_', ' ')})"
            if s.enforcement is not None
            else ""
        )
        lines.append(f"{words[s.headline]}  {name}  [{model}{saved}]{evidence}")
        if s.reasons:
            lines.append(f"         {strip_control(s.reasons[0])}")
    return lines
