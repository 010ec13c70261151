"""``calibrate agreement``: how often the check and the approver agree, with honest uncertainty."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
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
from calibrate.cli.render import echo_json, write_csv
from calibrate.defaults import MIN_N
from calibrate.errors import UsageError
from calibrate.lazy import lazy_module
from calibrate.store import connect
from calibrate.textsafe import strip_control

lib = lazy_module("calibrate.analysis.agreement")
approvers_lib = lazy_module("calibrate.analysis.approvers")
corrected_lib = lazy_module("calibrate.analysis.corrected")
dataset = lazy_module("calibrate.dataset")

WIDTH = 80

ByOption = Annotated[
    str | None,
    typer.Option(
        "--by",
        help=(
            "Comma list of group keys: process, version, step, question, model, approver, "
            "week, day, month, labels (advisory review, audit draw, advisory: false not drawn). "
            "Default: process,step,model (with --approvers: approver only)."
        ),
        show_default=False,
    ),
]


def parse_by(value: str | None) -> list[str] | None:
    """Split and check a ``--by`` list; ``None`` means the command's default."""
    if value is None:
        return None
    keys = [k.strip().lower() for k in value.split(",") if k.strip()]
    unknown = [k for k in keys if k not in lib.GROUP_KEYS]
    if unknown:
        raise UsageError(
            f"--by: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(lib.GROUP_KEYS)}"
        )
    if len(set(keys)) != len(keys):
        raise UsageError(f"--by: a key is repeated in {value!r}")
    return keys


AgreementFormat = format_option(Format.table, Format.json, Format.csv)


@app.command("agreement")
@handle_errors
def agreement_command(
    db: DbOption = None,
    by: ByOption = None,
    process: ProcessOption = None,
    step: StepOption = None,
    model: ModelOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    advisory_only: AdvisoryOnlyOption = False,
    with_escalations: EscalationsOption = False,
    fmt: AgreementFormat = Format.table,
    show_approvers: Annotated[
        bool,
        typer.Option(
            "--approvers",
            help="Per approver: approval rate, agreement, median review time, automation-bias "
            "hint; a row pooling evaluator models says how many (n_models).",
        ),
    ] = False,
    corrected: Annotated[
        bool,
        typer.Option(
            "--corrected",
            help=(
                "Estimated true acceptable rate of the unlabeled submissions the check passed "
                "or failed (unsure ones go to a person): the checks an audit draw offered at "
                "their audits' share weighted by 1/inclusion_p, the others by Rogan-Gladen from "
                "TPR/TNR on the reviews of every verdict (advisory: true); labels after the "
                "switch (audit draws, escalations) are left out of TPR/TNR and counted. Not "
                "with --with-escalations."
            ),
        ),
    ] = False,
    flag_agree: Annotated[
        float,
        typer.Option(
            "--flag-agree",
            min=0.5,
            max=1.0,
            help="--approvers: agreement at or above which to flag.",
        ),
    ] = 0.95,
    flag_seconds: Annotated[
        float,
        typer.Option(
            "--flag-seconds",
            min=0.0,
            help="--approvers: median review seconds at or below which to flag.",
        ),
    ] = 30.0,
) -> None:
    """Agreement between the check's verdicts and people's decisions, per group.

    False passes (check pass, person rejected), false fails (check fail,
    person approved) and unsure verdicts are shown apart, each with its n and
    a 95% Wilson interval. Evaluator models are kept apart unless --by leaves
    model out, and then each row says how many models it pools.
    """
    require_format(fmt, "agreement", Format.table, Format.json, Format.csv)
    if show_approvers and corrected:
        raise UsageError("choose one of --approvers and --corrected")
    if corrected and with_escalations:
        raise UsageError(
            "--corrected measures TPR/TNR on the reviews of every verdict (advisory: true) only: "
            "decisions after the switch are a sample the enforced check selected or drew, so "
            "--with-escalations does not apply (they are left out and counted)"
        )
    keys = parse_by(by)
    filters = make_filters(process, step, model, since, until, advisory_only, with_escalations)
    analysis = "approvers" if show_approvers else "corrected" if corrected else "agreement"
    if analysis == "agreement" and keys and "question" in keys:
        analysis = "question"
    con = connect(db, read_only=True)
    try:
        require_known(con, filters)
        if not corrected:  # --corrected says what it left out itself, from its own counts
            note_left_out(con, filters)
        # Only the columns the analysis reads, in any order (it aggregates): the whole
        # view as pandas objects took 1.9 GiB at a million runs.
        try:
            need = lib.input_columns(keys, analysis=analysis)
            if corrected:
                need = list(dict.fromkeys([*need, *corrected_lib.EXTRA_COLUMNS]))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        view = "labeled_answers" if analysis == "question" else "labeled"
        rows = dataset.view_columns(con, view, need, filters, ordered=False)
        subs, ans = (None, rows) if analysis == "question" else (rows, None)
    finally:
        con.close()
    try:
        if show_approvers:
            df = approvers_lib.approvers(
                subs, by=keys or (), agree_above=flag_agree, review_below_s=flag_seconds
            )
            records = approvers_lib.approver_records(df)
        elif corrected:
            df = corrected_lib.corrected_pass_rate(subs, by=keys)
            records = corrected_lib.corrected_records(df)
            left = {k: int(df[f"left_out_{k}"].sum()) for k in corrected_lib.LEFT_OUT_KINDS}
            if sum(left.values()):
                err.print(f"note: {corrected_left_out_text(left)}", markup=False, soft_wrap=True)
        else:
            df = lib.agreement(subs, by=keys, answers=ans)
            records = lib.agreement_records(df)
    except ValueError as exc:
        raise UsageError(str(exc)) from None

    if fmt is Format.json:
        echo_json(records)
        return
    flat = lib.flat_records(df)
    if fmt is Format.csv:
        write_csv(
            flat, list(df.columns) + [k for k in ("interval_method", "unit") if k in df.attrs]
        )
        return
    group_keys = list(df.attrs.get("by", [])) or [c for c in df.columns if c in lib.GROUP_KEYS]
    if not flat:
        typer.echo("no checks match these filters: nothing to compare")
        return
    if show_approvers:
        lines = approver_table(flat, [k for k in group_keys if k != "approver"], df.attrs)
    elif corrected:
        lines = corrected_blocks(flat, group_keys, df.attrs)
    else:
        lines = agreement_blocks(flat, group_keys, df.attrs)
    typer.echo("\n".join(lines))


# -- rendering ----------------------------------------------------------------


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _wrap(text: str, indent: str = "  ") -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent + "  ") or [
        ""
    ]


def _heading(row: dict[str, Any], keys: Sequence[str]) -> str:
    parts = [f"{k} {strip_control(row[k]) if row[k] is not None else '(none)'}" for k in keys]
    return _fit(" · ".join(parts) or "all checks", WIDTH)


def _rate(value: Any, low: Any, high: Any, n: int, *, min_n: int = MIN_N) -> str:
    """``12.3% [5.1, 20.2] of 84``, "too few" below ``min_n``, "withheld" where the note says why."""
    if n and value is None:  # a rate over n > 0 is missing only where the analysis withheld it
        return f"withheld (n={n})"
    if n == 0 or value is None:
        return f"n/a (n={n})"
    if n < min_n:
        return f"too few (n={n})"
    return f"{100 * value:5.1f}% [{100 * low:.1f}, {100 * high:.1f}] of {n}"


def agreement_blocks(rows: Sequence[dict[str, Any]], keys: Sequence[str], attrs: dict) -> list[str]:
    """One block per group: the verdict x label table beside the rates, then the summary lines."""
    out: list[str] = []
    for row in rows:
        # Question text can be long: it gets its own wrapped line under the other keys.
        out.append(_heading(row, [k for k in keys if k != "question"]))
        if "question" in keys:
            out += _wrap(f"question: {strip_control(row['question'])}")
        out.append(f"  {row['n']} labeled of {row['n_checks']} checks")
        out.append(f"  {'':<8}{'acceptable':>12}{'not acc.':>10}")
        side = {
            "pass": ("false pass", row["false_pass_rate"], row["false_pass_low"], row["false_pass_high"], row["n_pass"]),
            "fail": ("false fail", row["false_fail_rate"], row["false_fail_low"], row["false_fail_high"], row["n_fail"]),
            "unsure": ("unsure", row["unsure_rate"], row["unsure_low"], row["unsure_high"], row["n_checks"]),
            "error": ("error", row["error_rate"], row["error_low"], row["error_high"], row["n_checks"]),
        }  # fmt: skip
        for verdict in lib.VERDICTS:
            name, value, low, high, n = side[verdict]
            # Unsure and error rates need no label: they are over all checks.
            min_n = MIN_N if verdict in ("pass", "fail") else 1
            cells = f"  {verdict:<8}{row[f'{verdict}_acceptable']:>12}{row[f'{verdict}_not_acceptable']:>10}"
            out.append(
                _fit(f"{cells}   {name:<11}{_rate(value, low, high, n, min_n=min_n)}", WIDTH)
            )
        agree = _rate(row["agree"], row["agree_low"], row["agree_high"], row["n_decided"])
        reason = strip_control(row["kappa_reason"] or "")
        if row["kappa"] is None:
            kappa = "withheld" if reason.startswith("withheld") else "n/a"
        elif row["n_decided"] < MIN_N:
            kappa = "too few"
        else:
            kappa = f"{row['kappa']:.2f} [{row['kappa_low']:.2f}, {row['kappa_high']:.2f}]"
        out += _wrap(f"agree {agree} · kappa {kappa}")
        tpr = _rate(row["tpr"], row["tpr_low"], row["tpr_high"], row["n_acceptable"])
        tnr = _rate(row["tnr"], row["tnr_low"], row["tnr_high"], row["n_not_acceptable"])
        out += _wrap(f"TPR {tpr} · TNR {tnr}")
        # A withheld kappa's reason is the note's own (said once).
        notes = [strip_control(row["note"] or ""), "" if kappa == "withheld" else reason]
        note = "; ".join(x for x in notes if x)
        if note:
            out += _wrap(f"note: {note}")
        out.append("")
    foot = (
        "false pass = P(not acceptable | pass); false fail = P(acceptable | fail); "
        "unsure and error over all checks; TPR = P(pass | acceptable), TNR = P(not pass | "
        "not acceptable) over all labeled verdicts; agree and kappa over labeled pass/fail. "
        f"Intervals: {attrs.get('interval_method', lib.INTERVAL_METHOD)}. "
        f"Below {MIN_N} labels a figure shows 'too few'."
    )
    out += _wrap(foot, indent="")
    if "unit" in attrs:
        out += _wrap(f"Question level: {attrs['unit']}.", indent="")
    return out


def _duration(seconds: Any) -> str:
    if seconds is None:
        return "n/a"
    s = float(seconds)
    if abs(s) < 120:
        return f"{s:.0f} s"
    if abs(s) < 7200:
        return f"{s / 60:.0f} min"
    if abs(s) < 172800:
        return f"{s / 3600:.1f} h"
    return f"{s / 86400:.1f} d"


def _short_rate(value: Any, low: Any, high: Any, n: int) -> str:
    if n == 0 or value is None:
        return "n/a"
    if n < MIN_N:
        return f"too few ({n})"
    return f"{100 * value:.0f}% [{100 * low:.0f}, {100 * high:.0f}]"


def approver_table(rows: Sequence[dict[str, Any]], extra: Sequence[str], attrs: dict) -> list[str]:
    """Approvers as rows, under a heading per extra group key; flag reasons below."""
    out: list[str] = []
    header = f"{'approver':<18}{'n':>6}  {'approval':<16}{'agree':<16}{'median':>8}  flag"
    current: tuple | None = None
    reasons: list[str] = []
    notes: list[str] = []
    for row in rows:
        group = tuple(row[k] for k in extra)
        if group != current:
            if extra:
                out += ["", _heading(row, extra)] if out else [_heading(row, extra)]
            out.append(header)
            current = group
        who = strip_control(row["approver"]) if row["approver"] is not None else "(unknown)"
        approval = _short_rate(
            row["approval_rate"], row["approval_low"], row["approval_high"], row["n"]
        )
        agree = _short_rate(row["agree"], row["agree_low"], row["agree_high"], row["n_decided"])
        flag = "hint" if row["flag"] else ""
        out.append(
            f"{_fit(who, 17):<18}{row['n']:>6}  {approval:<16}{agree:<16}"
            f"{_duration(row['median_review_s']):>8}  {flag}"
        )
        if row["flag"]:
            reasons.append(f"{who}: {strip_control(row['flag_reason'])}")
        if row.get("note"):
            notes.append(f"{who}: {strip_control(row['note'])}")
    out.append("")
    for reason in reasons:
        out += _wrap(reason, indent="* ")
    for note in notes:
        out += _wrap(f"note: {note}", indent="")
    th = attrs.get("thresholds", {})
    foot = (
        "approval = share of decisions acceptable; agree = with the check's pass/fail; "
        "median = time from the check to the decision. A row pools the processes, steps and "
        "models its approver decided on unless --by names them (a note counts the models). "
        "A hint is shown when agreement is at "
        f"least {th.get('agree_above', 0.95):.0%} and the median at most "
        f"{th.get('review_below_s', 30):.0f} s over {MIN_N}+ decided verdicts. "
        f"Intervals: {attrs.get('interval_method', 'Wilson score 95%')}."
    )
    out += _wrap(foot, indent="")
    return out


def corrected_blocks(rows: Sequence[dict[str, Any]], keys: Sequence[str], attrs: dict) -> list[str]:
    """Per group: the unlabeled pass rate and the corrected acceptable rate."""
    out: list[str] = []
    for row in rows:
        out.append(_heading(row, keys))
        if row["estimate"] is not None and row["low"] is not None:
            est = f"{100 * row['estimate']:.1f}% [{100 * row['low']:.1f}, {100 * row['high']:.1f}]"
        elif row["estimate"] is not None:
            est = f"{100 * row['estimate']:.1f}% (no interval)"
        elif row.get("estimate_min") is not None and row.get("estimate_max") is not None:
            # Audits pending: the figure is a range (pending all not acceptable, all acceptable).
            span = f"{100 * row['estimate_min']:.1f}% and {100 * row['estimate_max']:.1f}%"
            est = (
                f"between {span} [{100 * row['low']:.1f}, {100 * row['high']:.1f}]"
                if row["low"] is not None
                else f"between {span} (no interval)"
            )
        else:
            est = "n/a"
        n_dec = row["n_unlabeled_decided"]
        out += _wrap(
            f"{row['n_unlabeled']} unlabeled, {n_dec} of them with a pass or fail verdict: "
            f"check passes {_share(row, 'apparent_pass_rate', n_dec)} of those; "
            f"estimated acceptable {est}"
        )
        differ = (
            f" (the report's TPR/TNR also count the {row['n_labeled_undecided']} reviewed "
            "unsure or error verdicts)"
            if row["n_labeled_undecided"]
            else ""
        )
        out += _wrap(
            f"from TPR {_share(row, 'tpr', row['n_acceptable'])}, "
            f"TNR {_share(row, 'tnr', row['n_not_acceptable'])} among the {row['n_labeled']} "
            f"reviews with a pass or fail verdict{differ}; acceptable among them "
            f"{_share(row, 'labeled_acceptable_rate', row['n_labeled'])}"
        )
        if row["rests_on"]:
            out += _wrap(f"rests on: {row['rests_on']}")
        audits = [
            f"{many} {corrected_lib.audit_share_text(row, v)}"
            for v, many in (("pass", "passes"), ("fail", "fails"))
            if row[f"audit_{v}_used"]
        ]
        if audits:
            out += _wrap(f"audits: {'; '.join(audits)}")
        left = {k: row[f"left_out_{k}"] for k in corrected_lib.LEFT_OUT_KINDS}
        if sum(left.values()):
            out += _wrap(f"({left_out_parts(left)} after the switch left out of TPR/TNR)")
        if row["note"]:
            out += _wrap(f"note: {strip_control(row['note'])}")
        out.append("")
    foot = (
        "Estimated over the pass and fail verdicts (unsure ones go to a person, so they are "
        "left out): each verdict's checks at their acceptable share. For the checks an audit "
        "draw offered, the share among its audit labels weighted by 1/inclusion_p (Hajek; "
        "k of n where one probability offered them all; with drawn checks still pending, a "
        "range with them all acceptable and all not); for the others (after the last draw, "
        "a probability no audit reached, or a verdict no draw took) the share Rogan-Gladen "
        "implies, (pass rate + TNR - 1) / (TPR + TNR - 1) clipped to [0, 1], with TPR and TNR "
        "among the reviews with a pass or fail verdict (advisory: true), never labels after "
        "the switch: that part assumes the check has not changed since the reviews. Where the "
        "audits refute it, a verdict's other checks are held at its audit share, and without "
        "audits of theirs the interval is withheld. "
        f"Interval: {attrs.get('interval_method', 'percentile bootstrap')}; the bootstrap "
        "resamples the reviews and the verdicts, and draws each inclusion probability's audit "
        "share on its own."
    )
    out += _wrap(foot, indent="")
    return out


def _share(row: dict[str, Any], col: str, n: int) -> str:
    """A share of a corrected row with its count and Wilson interval."""
    if not n or row[col] is None:
        return "n/a (n=0)"
    k = round(row[col] * n)  # the share is k / n exactly
    low, high = row[f"{col}_low"], row[f"{col}_high"]
    return f"{row[col]:.1%} ({k} of {n}; 95% CI {low:.1%}–{high:.1%})"


def left_out_parts(n: dict[str, int]) -> str:
    """The counts of :data:`calibrate.analysis.corrected.LEFT_OUT_KINDS` in words."""
    words = {
        "audits": ("audit-draw label", "audit-draw labels"),
        "escalations": ("escalation", "escalations"),
        "undrawn": (
            "decision on an enforced pass/fail check no draw drew",
            "decisions on enforced pass/fail checks no draw drew",
        ),
    }
    return ", ".join(f"{n[k]} {words[k][n[k] != 1]}" for k in words if n.get(k))


def corrected_left_out_text(n: dict[str, int]) -> str:
    """What ``--corrected`` left out of TPR/TNR after the switch, why, and where the checks went."""
    total = sum(n.values())
    return (
        f"{total} label{'s' if total != 1 else ''} after the switch left out of TPR/TNR "
        f"({left_out_parts(n)}): the enforced check selected them (its escalations) or a draw "
        "took them among its own verdicts only (--by-band: at unequal inclusion probabilities), "
        "so they are no sample of the verdicts the reviews measure; TPR/TNR come from the "
        "reviews of every verdict (advisory: true), and the checks count as unlabeled"
    )
