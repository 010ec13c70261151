"""``calibrate thresholds`` through Typer's CliRunner, on stores built row by row."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest
import yaml
from test_thresholds import YES_NO, assert_certified_step_json, build_store, yes_no_rows
from typer.testing import CliRunner

from calibrate.cli import app
from calibrate.profile import parse_check

runner = CliRunner()
HOSTILE_STEP = "check\n# injected: true\ncheck:\n- ask: pwned\x1b[31m"
HOSTILE_ASK = "- key: value # not a comment\n  pass: 0.0"


def _hostile_rows(n: int, seed: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        ok = bool(rng.random() < 0.7)
        p = float(rng.beta(8, 1.2) if ok else rng.beta(2, 3))
        rows.append(
            {
                "run": f"h{i:04d}",
                "model": "m1",
                "verdict": "pass" if p >= 0.9 else "fail",
                "at": f"2026-10-{1 + i % 28:02d}",
                "acceptable": ok,
                "step": HOSTILE_STEP,
                "answers": [(HOSTILE_ASK, "yes_no", p, None, None, None)],
            }  # fmt: skip
        )
    return rows


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("thr") / "store.duckdb"
    rows = yes_no_rows(700, 3, model="m2", model_old="m1", n_old=100) + _hostile_rows(40, 4)
    con = build_store(path, rows=rows)
    # A process file names the hostile question too: today's check is known, so its block is
    # pasted unchanged (without one it has none, test_no_process_file_...).
    name_in_process_file(con, HOSTILE_STEP, HOSTILE_ASK, pass_p=0.9)
    con.close()
    return str(path)


def name_in_process_file(con, step: str, ask: str, *, pass_p: float, fail_p=None) -> None:
    """A process file's yes/no question of ``step`` (process ``vendor``), as ingest stores it."""
    row = {"question_id": f"{step}:{ask}", "process": "vendor", "process_version": "1",
           "step": step, "position": 0, "ask": ask, "kind": "yes_no", "pass_p": pass_p,
           "fail_p": fail_p, "pass_names": None, "unsure_names": None, "pass_level": None,
           "confidence": None, "one_of": None, "levels": None, "advisory": True,
           "file_id": 1}  # fmt: skip
    con.register("incoming", pd.DataFrame([row]))
    con.execute("INSERT INTO questions BY NAME SELECT * FROM incoming")
    con.unregister("incoming")


def test_json_has_the_issue_schema(store):
    res = runner.invoke(app, ["thresholds", "--db", store, "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert (doc["alpha"], doc["delta"], doc["beta"]) == (0.05, 0.1, 0.2)
    by_step = {s["step"]: s for s in doc["steps"]}
    main = by_step["check_vendor"]
    assert main["model"] == "m2" and main["status"] == "ok" and main["n_labeled"] == 700
    for key in (
        "process",
        "step",
        "model",
        "n_labeled",
        "status",
        "check",
        "certified",
        "expected",
        "current",
    ):
        assert key in main
    assert_certified_step_json(main)
    assert main["certified"]["confidence"] == pytest.approx(0.9)
    (q,) = main["check"]
    assert q["ask"] == YES_NO.ask and q["kind"] == "yes_no" and 0 < q["pass"] <= 1
    # The few labels of the hostile step are not enough, and it says how many would be.
    hostile = by_step[HOSTILE_STEP]
    assert hostile["status"] == "insufficient_data"
    assert hostile["needed_labels"]["total"] > 40
    # Diagnostics go to stderr, not into the JSON.
    assert "other evaluator models" in res.stderr


def test_options_reach_the_search(store):
    res = runner.invoke(
        app, ["thresholds", "--db", store, "--format", "json", "--alpha", "0.1", "--beta", "1",
              "--step", "check_vendor", "--model", "m1"],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["alpha"] == 0.1 and doc["beta"] == 1.0
    (s,) = doc["steps"]
    assert s["model"] == "m1" and s["n_labeled"] == 100
    if s["status"] == "ok":
        assert s["check"][0]["fail"] is None  # false fails uncontrolled: below pass fails


def test_yaml_is_paste_ready_and_comments_cannot_be_broken_out_of(store):
    res = runner.invoke(app, ["thresholds", "--db", store, "--format", "yaml"])
    assert res.exit_code == 0, res.output
    docs = list(yaml.safe_load_all(res.stdout))
    assert len(docs) == 2
    for doc in docs:
        # Nothing injected by a step name; advisory: true whether certified or not (the report
        # says when it can go): a block pasted without it would enforce the check.
        assert list(doc) == ["advisory", "check"] and doc["advisory"] is True
        questions = parse_check(doc["check"])  # valid check-1, full form
        assert len(questions) == 1
    asks = {d["check"][0]["ask"] for d in docs}
    assert asks == {YES_NO.ask, HOSTILE_ASK}  # hostile text survives, quoted
    # What was left out is counted in the header comment (the m1 checks are another model's).
    assert "700 labeled (left out: 100 of other models)" in res.stdout
    for line in res.stdout.splitlines():
        assert "\x1b" not in line
        assert line.startswith(("#", "advisory: true", "check:", "- ", "  ", "---")), line
    json_doc = json.loads(
        runner.invoke(app, ["thresholds", "--db", store, "--format", "json"]).stdout
    )
    main = next(s for s in json_doc["steps"] if s["step"] == "check_vendor")
    yaml_main = next(d for d in docs if d["check"][0]["ask"] == YES_NO.ask)
    assert yaml_main["check"][0]["pass"] == main["check"][0]["pass"]
    text = res.stdout
    assert "certified with 90% confidence: false passes <= 5.0%" in text
    assert "keep advisory: true until it is certified" in text  # the step not certified
    assert "certified thresholds: keep advisory: true until `calibrate report` says READY" in text


def test_table_fits_80_columns_and_says_too_few(store):
    res = runner.invoke(app, ["thresholds", "--db", store, "--tradeoff"])
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "\x1b" not in res.stdout
    assert any(line.startswith("ok · vendor / check_vendor") for line in lines)
    assert any(line.startswith("insufficient_data · vendor / check") for line in lines)
    assert "95% Clopper-Pearson" in res.stdout
    assert any(line.lstrip().startswith("*") and "5.0%" in line for line in lines)  # --alpha marked
    assert "insufficient_data" in res.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--alpha", "0"], "--alpha must be in (0, 0.5) (the audit after the switch"),
        (["--delta", "1"], "--delta must be in (0, 1)"),
        (["--beta", "1.5"], "--beta must be in (0, 1]"),
        # A negative seed was a numpy traceback ("expected non-negative integer").
        (["--seed", "-1"], "--seed"),
    ],  # fmt: skip
)
def test_bad_levels_are_usage_errors(store, args, needle):
    res = runner.invoke(app, ["thresholds", "--db", store, *args])
    assert res.exit_code == 2
    assert needle in res.stderr


def test_unknown_format_and_missing_store(tmp_path):
    res = runner.invoke(app, ["thresholds", "--db", str(tmp_path / "x.duckdb"), "--format", "xml"])
    assert res.exit_code == 2
    res = runner.invoke(app, ["thresholds", "--db", str(tmp_path / "none.duckdb")])
    assert res.exit_code == 2
    assert "no store" in res.stderr


def test_no_matching_steps(store):
    res = runner.invoke(app, ["thresholds", "--db", store, "--step", "nope", "--format", "json"])
    assert res.exit_code == 2 and not res.stdout
    assert "--step 'nope' matches no check; steps in the store:" in res.stderr


def test_one_conflict_is_one_check(tmp_path):
    """'1 check had conflicting decisions', not '1 checks' (issue 18)."""
    import json as _json

    q = {"ask": "Is it right?", "kind": "yes_no", "answer": 0.95, "result": "pass"}
    lines = [
        _json.dumps({"run": f"r{i}", "process": "p", "step": "s", "attempt": 1,
                     "check": {"verdict": "pass", "advisory": True, "model": "m", "questions": [q],
                               "at": "2026-10-01T10:00:00Z"}})
        for i in range(30)
    ]  # fmt: skip
    (tmp_path / "v.jsonl").write_text("\n".join(lines) + "\n")
    rows = [f"r{i},p,s,1,approved,ana,2026-10-02T10:00:00Z," for i in range(30)]
    rows.append("r0,p,s,1,rejected,ben,2026-10-02T11:00:00Z,")
    (tmp_path / "d.csv").write_text(
        "run,process,step,attempt,decision,by,at,note\n" + "\n".join(rows) + "\n"
    )
    db = str(tmp_path / "s.duckdb")
    assert runner.invoke(app, ["ingest", "--db", db, str(tmp_path)]).exit_code == 0
    res = runner.invoke(app, ["thresholds", "--db", db])
    assert "p/s: 1 check had conflicting decisions; the latest counts" in res.stderr


def test_needed_share_and_probability_are_checked_and_passed_on(store):
    bad = runner.invoke(app, ["thresholds", "--db", store, "--needed-probability", "1.5"])
    assert bad.exit_code == 2 and "--needed-probability must be in (0, 1)" in bad.output
    res = runner.invoke(app, ["thresholds", "--db", store, "--format", "json", "--needed-share",
                              "0.3", "--needed-probability", "0.5"])  # fmt: skip
    assert res.exit_code == 0, res.output
    by_step = {s["step"]: s for s in json.loads(res.stdout)["steps"]}
    need = by_step[HOSTILE_STEP]["needed_labels"]
    assert (need["share"], need["probability"]) == (0.3, 0.5)


@pytest.mark.parametrize(
    "command",
    [
        ["simulate", "--out", "x", "--runs", "10"],
        [
            "audit",
            "draw",
            "--db",
            "none.duckdb",
            "--process",
            "p",
            "--step",
            "s",
            "--rate",
            "0.5",
            "--out",
            "x.csv",
        ],
    ],  # fmt: skip
)
def test_a_negative_seed_is_refused_naming_the_option(command, tmp_path, monkeypatch):
    # It reached numpy ("expected non-negative integer": a traceback, exit 1); refused as the
    # options are read, before any file is touched.
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, [*command, "--seed", "-1"])
    assert res.exit_code == 2 and "--seed" in res.stderr and "Traceback" not in res.output


def test_the_expected_and_todays_shares_carry_intervals(store):
    """Black-box run: `expected: 84.5% pass, 12.3% fail, 3.2% to a person` had no interval while
    the report gives one for the same figures. Fails on the old code."""
    res = runner.invoke(app, ["thresholds", "--db", store, "--step", "check_vendor"])
    assert res.exit_code == 0, res.output
    text = " ".join(res.stdout.split())
    for head in ("expected (", "today:"):
        shares = text.split(head, 1)[1].split("95% Wilson)", 1)[0]
        assert shares.count("[") == 3 and "labeled;" in shares, shares


# The sample's invoice step: a suggestion `pass: 0.048` with the note on the doubtful passes.
INVOICE = ["--process", "invoice-matching"]
IN_SAMPLE = "measured on the labels that chose it, so optimistic"


def _comments(text: str) -> str:
    """The YAML comment lines read back as one text (wrapping undone)."""
    return " ".join(line[2:] for line in text.splitlines() if line.startswith("# "))


def test_json_notes_are_one_string_a_note(sample_store):
    """Outside review: `note` joined the notes with "; ", which the notes hold themselves, so a
    script could not split them. `notes` is a list, one string a note; `note` stays (one
    release) as their join. Fails on the old code."""
    res = runner.invoke(
        app, ["thresholds", "--db", str(sample_store), *INVOICE, "--format", "json"]
    )
    assert res.exit_code == 0, res.output
    (step,) = json.loads(res.stdout)["steps"]
    notes = step["notes"]
    (doubtful,) = [n for n in notes if "more likely no than yes" in n]
    assert len(notes) >= 2 and "; " in doubtful  # joined, they could not be told apart
    assert step["note"] == "; ".join(notes)
    # The note's facts, for a script (black-box bb5 finding 2: the certified pass: 0.5 was only
    # in free text): the answers scored below one half it passes, and the stricter threshold.
    facts = step["doubtful_passes"]
    assert step["check"][0]["pass"] < facts["below"] == 0.5
    assert (facts["n_labeled"], facts["rejected"]) == (10, 3)
    assert (
        facts["stricter_pass"] == 0.5 and f"pass: {facts['stricter_pass']:g}, certified" in doubtful
    )
    assert 0 < facts["stricter_n_pass"] < facts["stricter_n"] == step["n_labeled"]


def test_yaml_comments_carry_every_note_and_the_share_its_interval(sample_store):
    """Outside review: the note on a pass threshold below one half (the demo's `pass: 0.048`)
    reached the text and JSON but not the comments of the block a process owner pastes, and its
    "passes 86.1% of 757 labeled alone" had no interval. Fails on the old code."""
    res = runner.invoke(
        app, ["thresholds", "--db", str(sample_store), *INVOICE, "--format", "yaml"]
    )
    assert res.exit_code == 0, res.output
    comments = _comments(res.stdout)
    assert "note: pass: 0.048" in comments and "more likely no than yes" in comments
    assert "pass: 0.5, certified by the same walk, leaves them to a person" in comments
    notes = json.loads(
        runner.invoke(
            app, ["thresholds", "--db", str(sample_store), *INVOICE, "--format", "json"]
        ).stdout
    )["steps"][0]["notes"]
    for note in notes:
        assert " ".join(note.split()) in comments, note
    # The share the stricter threshold passes: its n and 95% Wilson interval, as the shares beside it.
    assert re.search(r"it passes \d+\.\d% \(\d+ of \d+; 95% CI \d+\.\d%–\d+\.\d%\)", comments)
    # The comments break nothing: 80 columns, and the body still parses to the paste-ready block.
    for line in res.stdout.splitlines():
        assert len(line) <= 80 and line.startswith(("#", "advisory: true", "check:", "- ", "  ")), (
            line
        )
    (doc,) = yaml.safe_load_all(res.stdout)
    assert list(doc) == ["advisory", "check"] and doc["check"][0]["pass"] < 0.5


def test_expected_says_once_it_is_measured_on_the_labels_that_chose_it(store):
    """Outside review: the suggestion's shares are measured on the labels the search chose it
    on, so they flatter it; the output now says so once and points to the certified bounds.
    Fails on the old code."""
    for fmt in ("table", "yaml"):
        res = runner.invoke(app, ["thresholds", "--db", store, "--format", fmt])
        assert res.exit_code == 0, res.output
        text = _comments(res.stdout) if fmt == "yaml" else " ".join(res.stdout.split())
        # One certified step in the store: one caveat, before its shares.
        assert text.count(IN_SAMPLE) == 1, fmt
        assert "the certified bounds are the honest figures): " in text


def test_the_tradeoff_table_gives_every_share_its_n_and_interval(sample_store):
    """Black-box run: the trade-off table printed "99.1%  87.5%  11.6%  3.8% of 662", shares
    without n or interval and a rate without its interval (house rule: every rate carries both)."""
    res = runner.invoke(
        app,
        ["thresholds", "--db", str(sample_store), "--tradeoff", "--process", "invoice-matching"],
    )
    assert res.exit_code == 0, res.output
    table = res.stdout.split("trade-off", 1)[1]
    n = int(re.search(r"shares of the (\d+) labeled checks", " ".join(table.split())).group(1))
    rows = " ".join(table.split()).split("* 5.0% ok: ", 1)[1].split(" 7.5%", 1)[0]
    share = r"\d+\.\d% \[\d+\.\d, \d+\.\d\]"
    assert re.fullmatch(
        rf"decided alone {share} \(pass {share}, fail {share}\); false passes {share} of \d+",
        rows,
    ), rows
    assert n > 0 and "95% Wilson" in table and "95% Clopper-Pearson" in table
    assert max(len(line) for line in res.stdout.splitlines()) <= 80
    csv_out = runner.invoke(app, ["thresholds", "--db", str(sample_store), "--tradeoff",
                                  "--process", "invoice-matching", "--format", "csv"])  # fmt: skip
    assert csv_out.exit_code == 0 and f",{n}\n" in csv_out.stdout.replace("\r\n", "\n")


@pytest.fixture(scope="module")
def no_process_file(tmp_path_factory):
    """A yes/no step no process file names: the recorded verdicts are all unsure."""
    path = tmp_path_factory.mktemp("nop") / "store.duckdb"
    rows = [{**r, "verdict": "unsure"} for r in _hostile_rows(40, 5)]
    rows = [{**r, "step": "check_vendor", "answers": [(YES_NO.ask, "yes_no", *r["answers"][0][2:])]}
            for r in rows]  # fmt: skip
    build_store(path, rows=rows, questions=False).close()
    return str(path)


def test_no_process_file_leaves_todays_yes_no_thresholds_unknown(no_process_file):
    """Black-box run G2/G3: a yes/no step without a process file got "today's thresholds" from
    the server's defaults (pass 0.9: every recorded unsure replayed as a pass or a fail), and its
    YAML pasted them as "today's check, unchanged". Now today's thresholds are unknown, as for
    rubric and choice: no replay, no guess shown, no block. Fails on the old code."""
    base = ["thresholds", "--db", no_process_file]
    (s,) = json.loads(runner.invoke(app, [*base, "--format", "json"]).stdout)["steps"]
    assert s["status"] != "ok"
    assert s["current"]["n"] is None and s["current"]["auto_fail"] is None
    assert s["check"] == [] and s["expected"] == {}
    assert any("unknown (no process file)" in n for n in s["notes"])
    table = runner.invoke(app, base).stdout
    assert "today pass 0.9" not in table and "today unknown" in table
    assert "today:" not in table  # no shares replayed under a guess
    text = runner.invoke(app, [*base, "--format", "yaml"]).stdout
    assert [d for d in yaml.safe_load_all(text) if d is not None] == []
    assert "today's thresholds are not known here" in " ".join(text.split())
    assert "pass: 0.9" not in text and "advisory:" not in text


def test_json_expected_is_empty_when_nothing_is_certified(store):
    """Black-box run G6: with nothing certified `expected` held today's shares, where
    report.json and docs/method.md leave it empty. Fails on the old code."""
    doc = json.loads(runner.invoke(app, ["thresholds", "--db", store, "--format", "json"]).stdout)
    by_step = {s["step"]: s for s in doc["steps"]}
    hostile = by_step[HOSTILE_STEP]
    assert hostile["status"] == "insufficient_data" and hostile["expected"] == {}
    assert hostile["current"]["n"] == 40  # today's shares are in `current`
    assert by_step["check_vendor"]["expected"]["n"] == 700


def test_a_yes_no_check_that_never_fails_says_nothing_of_choice_answers(store):
    """Black-box run G12: a yes/no-only step was told "(a choice answer outside its declared
    names would fail under check-1)". Fails on the old code."""
    # At alpha 0.45 pass: 0 is certified (30% of the labels are not acceptable): nothing fails.
    res = runner.invoke(app, ["thresholds", "--db", store, "--step", "check_vendor", "--alpha",
                              "0.45", "--beta", "1", "--format", "json"])  # fmt: skip
    (s,) = json.loads(res.stdout)["steps"]
    assert s["status"] == "ok" and s["certified"]["never_fails"]
    assert any("never fails on the answers seen" in n for n in s["notes"])
    assert not any("choice answer" in n for n in s["notes"])
