"""``calibrate thresholds``: suggested check-1 thresholds with a certified bound on false passes."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated, Any

import typer

from calibrate.arguments import check_unit
from calibrate.cli.app import app, err, handle_errors
from calibrate.cli.options import (
    AdvisoryOnlyOption,
    AlphaOption,
    BetaOption,
    DbOption,
    DeltaOption,
    EscalationsOption,
    Format,
    ModelOption,
    ProcessOption,
    SinceOption,
    StepOption,
    UntilOption,
    check_levels,
    format_option,
    make_filters,
    note_left_out,
    require_format,
    require_known,
)
from calibrate.cli.render import echo_json, write_csv
from calibrate.defaults import (
    DEFAULT_ALPHA,
    DEFAULT_BETA,
    DEFAULT_DELTA,
    MIN_N,
    NEEDED_PROBABILITY,
    NEEDED_SHARE,
    TRADEOFF_ALPHAS,
)  # fmt: skip
from calibrate.lazy import lazy_module
from calibrate.profile import Kind, Question
from calibrate.store import connect
from calibrate.textsafe import NO_MODEL, shown_name, step_name, strip_control, yaml_block

if TYPE_CHECKING:
    from calibrate.analysis import enforced_step as lib_enforced
    from calibrate.analysis import thresholds as lib
else:
    lib = lazy_module("calibrate.analysis.thresholds")
    lib_enforced = lazy_module("calibrate.analysis.enforced_step")

WIDTH = 80


ThresholdsFormat = format_option(Format.table, Format.json, Format.yaml, Format.csv)
#: ``--tradeoff --format csv``: one row per step and alpha.
TRADEOFF_COLUMNS = [
    "process", "step", "model", "alpha", "status", "certified_false_pass", "observed_false_pass",
    "n_pass", "coverage", "auto_pass", "auto_fail", "n",
]  # fmt: skip


@app.command("thresholds")
@handle_errors
def thresholds_command(
    db: DbOption = None,
    alpha: AlphaOption = DEFAULT_ALPHA,
    delta: DeltaOption = DEFAULT_DELTA,
    beta: BetaOption = DEFAULT_BETA,
    process: ProcessOption = None,
    step: StepOption = None,
    model: ModelOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    advisory_only: AdvisoryOnlyOption = False,
    with_escalations: EscalationsOption = False,
    relearn_lists: Annotated[
        bool,
        typer.Option(
            "--relearn-lists",
            help="Relearn the pass/unsure answer lists of choice questions.",
        ),
    ] = False,
    seed: Annotated[
        int, typer.Option("--seed", min=0, help="Seed of the search/certification split.")
    ] = 0,
    tradeoff: Annotated[
        bool,
        typer.Option(
            "--tradeoff",
            help="Also the trade-off over a range of alpha (table, json; csv prints its rows).",
        ),
    ] = False,
    needed_share: Annotated[
        float,
        typer.Option(
            "--needed-share",
            help="Labels needed: the share of submissions a useful check decides alone.",
        ),
    ] = NEEDED_SHARE,
    needed_probability: Annotated[
        float,
        typer.Option(
            "--needed-probability",
            help="Labels needed: how often the advised total must certify such a check.",
        ),
    ] = NEEDED_PROBABILITY,
    fmt: ThresholdsFormat = Format.table,
) -> None:
    """Suggest thresholds per checked step, certified: false passes <= alpha, false fails <= beta.

    With probability at least 1 - delta over the labeled sample, at most a
    share alpha of what the suggested check passes would have been rejected,
    and at most a share beta of what it fails would have been approved;
    among such thresholds, the ones that leave the least to a person. Only
    the latest evaluator model's checks count, unless --model names one.
    --format yaml prints an advisory: true and check: block per step to paste
    into the process file (calibrate report says when advisory can go); none
    where nothing is certified and no process file gives today's thresholds;
    on an enforced step the report's block (nothing when kept enforced);
    --tradeoff --format csv prints the trade-off's rows. Where too
    few labels certify anything, the labels needed are the smallest total at
    which the search, rerun on resampled labels, certifies a check deciding
    at least --needed-share alone in --needed-probability of the resamples.
    See docs/method.md for the method and its assumptions.
    """
    check_unit("--needed-share", needed_share)
    check_unit("--needed-probability", needed_probability)
    if tradeoff:
        require_format(
            fmt, "thresholds --tradeoff", Format.table, Format.json, Format.csv,
            why="prints the trade-off as table, json or csv (a check: block has no trade-off)",
        )  # fmt: skip
    else:
        require_format(
            fmt, "thresholds", Format.table, Format.json, Format.yaml,
            why="prints table, json or yaml (csv is the trade-off's rows: add --tradeoff)",
        )  # fmt: skip
    check_levels(alpha, delta, beta)
    filters = make_filters(process, step, model, since, until, advisory_only, with_escalations)
    con = connect(db, read_only=True)
    try:
        require_known(con, filters)
        note_left_out(con, filters)
        report = lib.suggest_from_store(
            con, filters, alpha=alpha, delta=delta, beta=beta, model=model,
            relearn_lists=relearn_lists, seed=seed, needed_share=needed_share,
            needed_probability=needed_probability,
        )  # fmt: skip
        if fmt is not Format.csv:
            # An enforced step's block is the report's (keep it so, or return it to advisory).
            from calibrate.analysis.enforced_advice import attach_enforced_advice

            attach_enforced_advice(con, report, filters, min_coverage=needed_share)
    finally:
        con.close()
    for s in report.steps:
        for note in s.notes:
            err.print(f"{strip_control(s.process)}/{strip_control(s.step)}: {strip_control(note)}",
                      markup=False)  # fmt: skip
    if fmt is Format.json:
        doc = report.to_dict()
        if tradeoff:
            for s, step_doc in zip(report.steps, doc["steps"], strict=True):
                step_doc["tradeoff"] = _tradeoff_records(s)
        echo_json(doc)
    elif fmt is Format.csv:
        rows = [
            {"process": s.process, "step": s.step, "model": s.model, **row}
            for s in report.steps
            for row in _tradeoff_records(s)
        ]
        write_csv(rows, TRADEOFF_COLUMNS)
    elif fmt is Format.yaml:
        typer.echo(yaml_blocks(report), nl=False)
    else:
        lines: list[str] = []
        for s in report.steps:
            lines += step_lines(s)
            if tradeoff and s.n_labeled:
                lines += tradeoff_lines(s)
            lines.append("")
        typer.echo("\n".join(lines).rstrip("\n") or "no checked step matches these filters")


# -- yaml ----------------------------------------------------------------------


def _comment(text: str) -> list[str]:
    """Comment lines: record text cannot break out of the comment (no newline survives)."""
    safe = strip_control(text)
    # Not broken at hyphens: a note reads back whole from the comment lines joined by spaces.
    lines = textwrap.wrap(safe, WIDTH - 2, break_on_hyphens=False)
    return [f"# {line}" for line in lines] or ["#"]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _status_sentence(s: lib.StepThresholds) -> str:
    c = s.certified if s.certified is not None else s.best_bounds
    conf = f"{100 * (1 - s.delta):g}%"
    if s.status == "ok":
        ff = c.get("false_fail_upper")
        fails = "it never fails" if c.get("never_fails") else f"false fails <= {_pct(ff)}"
        return f"certified with {conf} confidence: false passes <= {_pct(c['false_pass_upper'])}, {fails}"
    ff = c.get("false_fail_upper")
    best = f"lowest bounds reached {_pct(c.get('false_pass_upper'))} / " + (
        _pct(ff) if ff is not None else "none for false fails"
    )
    if s.status == "insufficient_data":
        need = s.needed_labels
        if need is not None and need.total is None:
            return f"nothing certified: {need.sentence()} ({best}, not a certificate)"
        more = need.sentence() if need is not None else "more labels needed"
        return f"nothing certified: too few labels; {more} ({best}, not a certificate)"
    if s.status == "selected_sample":
        return (
            "nothing certified: the labels include checks decided after the switch, which the "
            f"enforced check selected; run without --with-escalations ({best}, not a certificate)"
        )
    return (
        f"nothing certified: no thresholds reach false passes <= {_pct(s.alpha)} and false fails "
        f"<= {_pct(s.beta)} however many labels ({best}, not a certificate)"
    )


def _shares(r: lib.Rates | None) -> str:
    if r is None or not r.n:
        return "n/a"
    parts = [
        f"{_share(k, r.n)} {words}"
        for k, words in zip(r.share_counts().values(), ("pass", "fail", "to a person"), strict=True)
    ]
    return f"{', '.join(parts)} (of {r.n} labeled; 95% Wilson)"


def _share(k: int, n: int) -> str:
    """``87.5% [85.0, 89.6]``: a share of ``n`` with its 95% Wilson interval."""
    from calibrate.analysis.stats import wilson_interval

    low, high = wilson_interval(k, n)
    return f"{_pct(k / n)} [{100 * low:.1f}, {100 * high:.1f}]"


#: Said once where the suggestion's shares are shown: the search chose the check on these very
#: labels, so its shares there flatter it; only the certified bounds account for the choice.
EXPECTED_HEAD = (
    "expected (measured on the labels that chose it, so optimistic; the certified bounds are "
    "the honest figures)"
)

#: What an alarm on the enforced step means for the search's answer (text and YAML).
_ALARM_WORDS = (
    "its audits contradict the labels certified on; return the step to advisory "
    "(`calibrate monitor` says how) and label anew before changing these thresholds"
)


def yaml_blocks(report: lib.ThresholdsReport) -> str:
    """One YAML document per step: comment lines, then paste-ready ``advisory: true`` and ``check:``.

    The body is written by :func:`calibrate.textsafe.yaml_block`, so question texts that
    look like YAML syntax are quoted; only the comments carry record text, sanitised.
    """
    docs = []
    for s in report.steps:
        left = [
            f"{n} {what}"
            for n, what in (
                (s.left_out.get("other_models", 0), "of other models"),
                (s.left_out.get("other_wording", 0), "asked other questions"),
                (s.left_out.get("audits", 0), "audit decisions after the switch"),
            )
            if n
        ]
        head = [
            *_comment(
                f"{step_name(s.process, s.step)} · model {shown_name(s.model, NO_MODEL)} · {s.n_labeled} labeled"
                + (f" (left out: {', '.join(left)})" if left else "")
            ),
            *_comment(f"status {s.status}: {_status_sentence(s)}"),
        ]
        if s.monitor_alarm:
            head += _comment(f"MONITOR ALARM on the enforced check: {_ALARM_WORDS}")
        if s.status == "ok":
            head += _comment(f"{EXPECTED_HEAD}: {_shares(s.expected)}")
            if s.current_rates is not None:
                head += _comment(f"today: {_shares(s.current_rates)}")
        words, questions, body = _paste(s)
        head += _comment(words)
        for i, q in enumerate(questions, start=1):
            for remark in q.remarks():
                head += _comment(f"Q{i} {remark}")
        # The search's notes, as stderr has them: the block pasted may be all a reader keeps.
        # One the comments already say word for word (the labels needed) is not said twice.
        said = " ".join(line[2:] for line in head)
        for note in s.notes:
            if " ".join(strip_control(note).split()) not in said:
                head += _comment(f"note: {note}")
        docs.append("\n".join(head) + "\n" + body)
    return "---\n".join(docs)


def _paste(s: lib.StepThresholds) -> tuple[str, list[Question], str]:
    """What to paste for one step: the words that lead it, its questions, its YAML (maybe none).

    An enforced step's block is the report's (:mod:`calibrate.analysis.enforced_advice`): kept
    enforced, nothing (or the certified thresholds as an optional change, ``advisory: false``
    kept); returned to advisory, its check in force with ``advisory: true`` back. Any other
    step's block says ``advisory: true``, as the report's does for a step that is not READY: a
    pasted block without it would enforce the check. Where today's thresholds are not known
    (no process file), nothing certified gives no block: the server's defaults are no check.
    """
    e = s.enforced
    if e is not None:
        head = f"enforced since {e['since']} (advisory: false); `calibrate report` at these limits says"
        if e["recommended"] == lib_enforced.RETURN_TO_ADVISORY:
            paste = e["paste"]
            words = f"{head} RETURN TO ADVISORY: {e['why']} To return it: {paste['text']}" + (
                "; the certified thresholds are a candidate, not yet to paste"
                if e["suggestion"] == "not_yet"
                else ""
            )
            if paste["check"] is None:
                return words, [], paste["yaml"].rstrip("\n") + "\n"
            from calibrate.analysis.threshold_view import suggested_questions

            qs = suggested_questions(paste["check"], s.current)
            return words, qs, _block(True, qs)
        words = (
            f"{head} KEEP ENFORCED: nothing to paste, the check in force stays as it stands "
            "(advisory: false)"
        )
        if (
            e["suggestion"] == "optional"
            and s.suggested is not None
            and _items(s.suggested) != _items(s.current)
        ):
            words += (
                "; an optional change, commented out below: the certified thresholds with "
                "advisory: false kept. Pasted, they start a new enforcement period, which "
                "`calibrate monitor` tests and plans afresh"
            )
            # Commented out: nothing is to be pasted by default, as the report says.
            return words, s.suggested, _commented(_block(False, s.suggested))
        return words, [], ""
    if s.status == "ok":
        # Certified thresholds are not yet a decision to drop advisory: the report's is
        # (coverage, drift, labels...). Its block keeps advisory: true too until READY.
        words = "certified thresholds: keep advisory: true until `calibrate report` says READY"
        if not s.today_known:
            # Without a process file the answer texts are unknown: only the thresholds are.
            words += "".join(
                f"; Q{i} has no {what} here (no process file): keep its {what} as the process "
                "file has them"
                for i, q in enumerate(s.check, start=1)
                for what in (
                    ("levels",) if q.kind is Kind.RUBRIC and not q.levels
                    else ("one_of",) if q.kind is Kind.CHOICE and not q.one_of
                    else ()
                )
            )  # fmt: skip
    elif not s.today_known:
        return (
            "nothing certified, and today's thresholds are not known here (no process file "
            "names every question): nothing to paste, the check stands as the process file has "
            "it",
            [],
            "",
        )
    elif s.status == "selected_sample":
        words = (
            "today's check, unchanged: nothing can be certified on labels the enforced check "
            "selected; run without --with-escalations"
        )
    else:
        words = "today's check, unchanged: keep advisory: true until it is certified"
    return words, s.check, _block(True, s.check)


def _commented(block: str) -> str:
    """A YAML block as comment lines, each whole (no line of record text escapes its ``#``)."""
    return "".join(f"# {strip_control(line)}\n" for line in block.splitlines())


def _items(questions: Sequence[Question]) -> list[dict[str, Any]]:
    return [q.to_check_item() for q in questions]


def _block(advisory: bool, questions: Sequence[Question]) -> str:
    """``advisory`` and ``check:`` as YAML (record text quoted by :func:`yaml_block`)."""
    return yaml_block({"advisory": advisory, "check": _items(questions)}, width=WIDTH)


# -- table ---------------------------------------------------------------------


def _wrap(text: str, indent: str = "  ", more: str = "    ") -> list[str]:
    return textwrap.wrap(
        strip_control(text), WIDTH, initial_indent=indent, subsequent_indent=more
    ) or [indent]


def _rate(k: int, n: int, interval: tuple[float, float] | None) -> str:
    if n == 0:
        return "n/a (none decided)"
    if n < MIN_N:
        return f"too few (n={n})"
    lo, hi = interval if interval else (float("nan"), float("nan"))
    return f"{100 * k / n:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] of {n}"


def _rule(q: Question) -> str:
    if q.kind is Kind.YES_NO:
        return f"pass {q.pass_p:g}" + ("" if q.fail_p is None else f" fail {q.fail_p:g}")
    if q.kind is Kind.RUBRIC:
        level = "?" if q.pass_level is None else str(q.pass_level)
        conf = "" if q.confidence is None else f" confidence {q.confidence:g}"
        return f"pass level >= {level}{conf}"
    names = ", ".join(q.pass_names) or "?"
    unsure = f" unsure [{', '.join(q.unsure_names)}]" if q.unsure_names else ""
    conf = "" if q.confidence is None else f" confidence {q.confidence:g}"
    return f"pass [{names}]{unsure}{conf}"


def step_lines(s: lib.StepThresholds) -> list[str]:
    """The table face of one step: status, bounds, shares with n, and each question's thresholds."""
    # The status first, so that a long step name cannot push it off the line.
    out = [
        _fit(
            f"{s.status} · {strip_control(s.process)} / {strip_control(s.step)} · "
            f"model {strip_control(s.model)}"
        )
    ]
    if s.monitor_alarm:
        out += _wrap(f"MONITOR ALARM on the enforced check: {_ALARM_WORDS}")
    left = s.left_out
    out += _wrap(
        f"{s.n_labeled} labeled (error verdicts and incomplete answers count as unsure); left out: "
        f"{left.get('other_models', 0)} of other models, {left.get('other_wording', 0)} with other questions"
        + (
            f", {left['audits']} audit decisions after the switch (not a sample of every "
            "submission: the monitor reads them)"
            if left.get("audits")
            else ""
        )
    )
    method = {
        "fixed_sequence": "fixed-sequence tests on all labels",
        "fixed_sequence_learned_start": (
            f"fixed-sequence tests; the pass walk's start learned on {s.n_search} labels, "
            f"passes certified on {s.n_certify}, fails on all"
        ),
        "fixed_paths": "paths fixed before the labels, tested on all of them",
        "fixed_and_learned_paths": (
            "paths fixed before the labels, tested on all of them, and a path learned on a split"
            if s.n_search == 0
            else f"path learned on {s.n_search} labels, certified on {s.n_certify}"
        ),
        "answers_and_learned_paths": (
            "path ordered by the answers alone, tested on all labels, and a path learned on a split"
            if s.n_search == 0
            else f"path learned on {s.n_search} labels, certified on {s.n_certify}"
        ),
    }.get(s.method, f"path learned on {s.n_search} labels, certified on {s.n_certify}")
    out += _wrap(f"{_status_sentence(s)} [{method}]")
    if s.status == "ok":
        out += _wrap(f"{EXPECTED_HEAD}: {_shares(s.expected)}")
    cur = s.current_rates
    if s.current_note:
        out += _wrap(s.current_note[:1].upper() + s.current_note[1:] + ".")
    if cur is not None and cur.n:
        iv = cur.intervals()
        out += _wrap(f"today: {_shares(cur)}")
        out += _wrap(
            f"today's false passes {_rate(cur.false_pass, cur.n_pass, iv['false_pass'])}, "
            f"false fails {_rate(cur.false_fail, cur.n_fail, iv['false_fail'])} (95% Clopper-Pearson)",
            indent="    ", more="      ",
        )  # fmt: skip
    if s.enforced is not None:
        e = s.enforced
        out += _wrap(
            f"enforced since {e['since']} (advisory: false): `calibrate report` at these limits "
            f"says {e['recommended'].upper()} ({e['why']})"
        )
    known = s.today_known
    for i, q in enumerate(s.current, 1):
        out += _wrap(f"Q{i} {q.ask}")
        # Not the server's defaults: a guess the recorded verdicts may contradict.
        today = _rule(q) if known else "unknown (no process file names every question)"
        out += _wrap(f"today {today}", indent="     ", more="       ")
        if s.suggested is not None:
            out += _wrap(f"suggested {_rule(s.suggested[i - 1])}", indent="     ", more="       ")
    return out


def _tradeoff_records(s: lib.StepThresholds) -> list[dict[str, Any]]:
    """The trade-off of a step as plain rows (none on a step without labels)."""
    if not s.n_labeled:
        return []
    frame = s.tradeoff(TRADEOFF_ALPHAS)
    return [{c: row.get(c) for c in TRADEOFF_COLUMNS[3:]} for row in frame.to_dict("records")]


def tradeoff_lines(s: lib.StepThresholds, alphas: Sequence[float] = TRADEOFF_ALPHAS) -> list[str]:
    """Certified bound against the share decided without a person, for a range of alpha.

    Every share with its n and interval (black-box run: the table printed bare shares and
    "3.8% of 662"): the shares of the labeled checks under the thresholds certified at each
    alpha (95% Wilson; measured on the labels that chose them, so optimistic), the observed
    false passes among their passes (95% Clopper-Pearson, as today's).
    """
    from calibrate.analysis.stats import clopper_pearson_interval

    frame = s.tradeoff(alphas)
    n = int(frame["n"].iloc[0]) if len(frame) else s.n_labeled
    out = _wrap(
        f"trade-off (bound certified at {100 * (1 - s.delta):g}% confidence; * = --alpha): "
        f"shares of the {n} labeled checks under the thresholds certified at each alpha "
        "(measured on the labels that chose them, so optimistic; 95% Wilson), observed false "
        "passes among their passes (95% Clopper-Pearson)"
    )
    for row in frame.itertuples(index=False):
        mark = "*" if abs(row.alpha - s.alpha) < 1e-12 else " "
        head = f"{mark} {100 * row.alpha:4.1f}%  {row.status}"
        if row.status != "ok":
            out += _wrap(f"{head}: nothing certified, every submission to a person", indent="  ",
                         more="          ")  # fmt: skip
            continue
        k_fp = round(row.observed_false_pass * row.n_pass) if row.n_pass else 0
        fp = _rate(
            k_fp, row.n_pass, clopper_pearson_interval(k_fp, row.n_pass) if row.n_pass else None
        )
        decided = round(row.coverage * n)
        out += _wrap(
            f"{head}: decided alone {_share(decided, n)} (pass "
            f"{_share(round(row.auto_pass * n), n)}, fail {_share(decided - round(row.auto_pass * n), n)}); "
            f"false passes {fp}",
            indent="  ", more="          ",
        )  # fmt: skip
    return out


def _fit(text: str) -> str:
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"
