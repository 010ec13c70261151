"""The analyst notebooks run top to bottom on the bundled sample, with parameters overridable.

Each notebook is executed with nbclient in a kernel started from *this*
interpreter (a kernel spec written to a temporary folder), so the test needs
nothing but ``pip install -e '.[test]'``: no registered kernel, and a user's
own ``python3`` kernel elsewhere on the machine cannot be picked up by
mistake. Parameters are overridden the way papermill does it: a cell is
inserted right after the cell tagged ``parameters``.

The notebook runs are marked ``slow`` (each starts a kernel and runs a whole
notebook); ``make test`` runs them. The helpers of
:mod:`calibrate.notebook_support` are tested here as well.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import yaml
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell

import calibrate
from calibrate import notebook_support as ns
from calibrate.analysis import agreement as ag
from calibrate.analysis import approvers as ap
from calibrate.analysis.readiness import ReadinessOptions, audit_plan, audit_sample_size
from calibrate.errors import StoreError, UsageError

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "calibrate-tests"
#: Per-cell limit; the whole of a notebook takes seconds, a hang should not take minutes.
CELL_TIMEOUT = 300


# --------------------------------------------------------------------------- running notebooks


@pytest.fixture(scope="session")
def kernel_dir(tmp_path_factory) -> Path:
    """A kernel spec that starts ipykernel with the interpreter running the tests."""
    root = tmp_path_factory.mktemp("kernels")
    spec = root / KERNEL
    spec.mkdir()
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec.joinpath("kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": "calibrate tests", "language": "python"}),
        encoding="utf-8",
    )
    return root


def run_notebook(name: str, kernel_dir: Path, **params: object) -> nbformat.NotebookNode:
    """Execute ``notebooks/<name>`` with ``params`` injected after its parameters cell."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    if params:
        tagged = [i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{name}: expected one cell tagged 'parameters'"
        cell = new_code_cell("\n".join(f"{k} = {v!r}" for k, v in params.items()))
        cell.metadata["tags"] = ["injected-parameters"]
        nb.cells.insert(tagged[0] + 1, cell)
    km = KernelManager(
        kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(kernel_dir)])
    )
    client = NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    return nb


def stdout(nb: nbformat.NotebookNode) -> str:
    """Everything the notebook printed."""
    return "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "stream" and o.name == "stdout"
    )


def plain(nb: nbformat.NotebookNode) -> str:
    """The text/plain of every displayed result."""
    return "\n".join(
        o["data"].get("text/plain", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type in ("execute_result", "display_data")
    )


def n_images(nb: nbformat.NotebookNode) -> int:
    return sum(
        "image/png" in o.get("data", {})
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
    )


def stderr(nb: nbformat.NotebookNode) -> str:
    return "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "stream" and o.name == "stderr"
    )


@pytest.mark.slow  # a kernel and a whole notebook: seconds, not milliseconds
def test_01_agreement_runs_as_shipped(kernel_dir, sample_store):
    # No injected parameters: exactly what an analyst gets on opening it (the bundled
    # sample loaded into a temporary store).
    nb = run_notebook("01_agreement.ipynb", kernel_dir)
    con = calibrate.connect(sample_store, read_only=True)
    subs = calibrate.submissions(con)
    con.close()
    n, n_labeled = len(subs), int(subs["label"].notna().sum())
    assert f"{n} recorded checks, {n_labeled} with a person's decision" in stdout(nb)
    # A figure per section: step x model, question, one per step by week, approvers.
    assert n_images(nb) >= 3 + subs.groupby(["process", "step"]).ngroups
    # The filterable table of disagreements lists the false passes of the sample.
    false_passes = int(((subs["verdict"] == "pass") & (subs["label"] == False)).sum())  # noqa: E712
    assert false_passes > 0
    assert "false pass" in plain(nb)
    assert "Traceback" not in stderr(nb)


@pytest.mark.slow  # a kernel and a whole notebook: seconds, not milliseconds
def test_01_agreement_on_an_empty_window(kernel_dir, sample_store):
    # A window with no checks is an empty answer, not an error (black-box run: KeyError in the
    # table of model changes).
    nb = run_notebook(
        "01_agreement.ipynb", kernel_dir, db_path=str(sample_store), since="2030-01-01"
    )
    assert "0 recorded checks, 0 with a person's decision" in stdout(nb)
    assert "Traceback" not in stderr(nb)


@pytest.mark.slow  # a kernel and a whole notebook: seconds, not milliseconds
def test_02_calibration_and_thresholds_ends_with_check_blocks(kernel_dir, sample_store):
    nb = run_notebook(
        "02_calibration_and_thresholds.ipynb", kernel_dir, db_path=str(sample_store),
        alpha=0.1, delta=0.05, beta=0.25,
    )  # fmt: skip
    out = stdout(nb)
    assert "limits: alpha = 0.1, delta = 0.05, beta = 0.25" in out
    assert n_images(nb) >= 3  # reliability per step, per-answer rates, trade-off
    # The last printed text is one check: block per step, each valid YAML in check-1's keys.
    last = next(
        c
        for c in reversed(nb.cells)
        if c.cell_type == "code" and any(o.get("name") == "stdout" for o in c.outputs)
    )
    printed = "".join(o.get("text", "") for o in last.outputs if o.get("name") == "stdout")
    blocks = [b for b in re.split(r"^# .*$", printed, flags=re.M) if b.strip()]
    headers = re.findall(r"^# (.*): (READY|NOT_YET|NO)$", printed, flags=re.M)
    con = calibrate.connect(sample_store, read_only=True)
    steps = ns.assess_steps(con, options=ReadinessOptions(alpha=0.1, delta=0.05, beta=0.25))
    con.close()
    assert len(blocks) == len(headers) == len(steps)
    for block, (_, decision), step in zip(blocks, headers, steps, strict=True):
        doc = yaml.safe_load(block)
        assert decision == step.decision
        # As in the report: a READY step drops advisory unless its pattern keeps it.
        keeps = step.pattern.get("recommended") == "keep advisory"
        assert doc.get("advisory", False) is (decision != "READY" or keeps)
        # The suggestion when one is certified, else today's check, which stands.
        shown = step.suggested_check or step.current_check
        assert [q["ask"] for q in doc["check"]] == [q["ask"] for q in shown]
    # Beside each block, every comment line `calibrate thresholds --format yaml` writes at the
    # same limits (black-box run: the READY block came without its "unsure only for
    # [0.048, 0.048001)" remark and the note on passes scored below 0.5).
    from calibrate.cli.thresholds import yaml_blocks

    con = calibrate.connect(sample_store, read_only=True)
    cli = yaml_blocks(calibrate.suggest_from_store(con, alpha=0.1, delta=0.05, beta=0.25))
    con.close()
    comments = [line for line in cli.splitlines() if line.startswith("#")]
    assert any(" labeled" in line for line in comments)
    assert set(comments) <= set(printed.splitlines())


@pytest.mark.slow  # a kernel and a whole notebook: seconds, not milliseconds
def test_03_trust_over_time_shows_the_model_change_and_audit(kernel_dir, sample_store):
    nb = run_notebook(
        "03_trust_over_time.ipynb", kernel_dir, db_path=str(sample_store), audit_weeks=6
    )
    out = stdout(nb)
    assert "within 6 weeks" in out
    text = plain(nb)
    # The sample's vendor-onboarding step switches evaluator model part-way.
    con = calibrate.connect(sample_store, read_only=True)
    subs = calibrate.submissions(con, calibrate.Filters(process="vendor-onboarding"))
    con.close()
    models = sorted(subs["model"].dropna().unique())
    assert len(models) == 2
    assert all(m in text for m in models)
    assert "No step changed its evaluator model" not in out
    # The audit is the report's: the monitor's plan, simulated for the overridden window, in the
    # report's words per step (black-box run: a fixed-sample binomial test said "audit 76.7% of
    # passes, 80% power" where the report said even every pass reaches 59%: no audit pays).
    con = calibrate.connect(sample_store, read_only=True)
    steps = ns.assess_steps(con, options=ReadinessOptions(audit_weeks=6))
    con.close()
    planned = [st for st in steps if st.sequential_audit is not None]
    assert planned
    flat = " ".join(out.split())
    for st in planned:
        assert st.sequential_audit.weeks == 6
        words = st.sequential_audit.text()
        if st.decision != "READY":
            words = "Once the step is READY: " + words[0].lower() + words[1:]
        assert " ".join(words.split()) in flat
    # Nothing of the fixed-sample test: its method, its sample size (169 at alpha 0.05).
    assert "binomial" not in out + text
    m, _ = audit_sample_size(0.05)
    assert not re.search(rf"\b{m} audited passes\b", text)
    assert n_images(nb) >= 4


# --------------------------------------------------------------------------- notebook_support


@pytest.fixture()
def con(sample_store):
    con = calibrate.connect(sample_store, read_only=True)
    yield con
    con.close()


def test_sample_store_is_the_bundled_sample_and_reingest_is_harmless(tmp_path, sample_store):
    path = ns.sample_store(tmp_path / "s.duckdb")
    again = ns.sample_store(path)  # ingesting the same files again changes nothing
    assert again == path
    a = calibrate.connect(path, read_only=True)
    b = calibrate.connect(sample_store, read_only=True)
    try:
        assert len(calibrate.submissions(a)) == len(calibrate.submissions(b)) > 0
    finally:
        a.close()
        b.close()


def test_resolve_store(tmp_path, sample_store):
    assert ns.resolve_store(sample_store) == sample_store
    assert ns.resolve_store(str(sample_store)) == sample_store
    with pytest.raises(StoreError, match="no store at"):
        ns.resolve_store(tmp_path / "missing.duckdb")
    with pytest.raises(UsageError, match="sample folder"):
        ns.sample_store(tmp_path / "x.duckdb", sample=tmp_path / "nothing")


def test_utc():
    assert ns.utc(None) is None
    assert ns.utc("2026-09-01") == pd.Timestamp("2026-09-01", tz="UTC")
    assert ns.utc("2026-09-01T02:00+02:00") == pd.Timestamp("2026-09-01", tz="UTC")


def test_disagreements_match_the_agreement_counts(con):
    subs = calibrate.submissions(con)
    ans = calibrate.answers(con)
    table = ag.agreement(subs, by=["process", "step", "model"])
    dis = ns.disagreements(subs, ans, kinds=ns.DISAGREEMENT_KINDS)
    assert list(dis.columns) == ns.DISAGREEMENT_COLUMNS
    counts = dis.groupby(["process", "step", "model", "kind"]).size()
    for row in table.itertuples(index=False):
        key = (row.process, row.step, row.model)
        for kind, expected in (
            ("false pass", row.pass_not_acceptable),
            ("false fail", row.fail_acceptable),
            ("unsure, acceptable", row.unsure_acceptable),
            ("unsure, not acceptable", row.unsure_not_acceptable),
        ):
            assert counts.get((*key, kind), 0) == expected
    # Newest first, each with its answers, and weeks as the agreement tables bucket them.
    assert dis["at"].is_monotonic_decreasing
    assert dis["answers"].notna().all()
    first = dis.iloc[0]
    n_q = int(ans.loc[ans["check_id"] == first["check_id"]].shape[0])
    assert first["answers"].count(" → ") == n_q
    weekly = ag.agreement(subs, by=["week"])
    assert set(dis["week"]) <= set(weekly["week"])


def test_disagreements_strip_control_characters_and_validate_kinds():
    subs = pd.DataFrame(
        {
            "check_id": ["c1", "c2", "c3"],
            "run_id": ["r1", "r2", "r3"],
            "process": "p",
            "step": "s",
            "attempt": 1,
            "model": "m",
            "at": pd.to_datetime(["2026-09-01", "2026-09-02", "2026-09-03"], utc=True),
            "verdict": ["pass", "fail", "pass"],
            "label": pd.array([False, True, True], dtype="boolean"),
            "decision": ["rejected", "approved", "approved"],
            "decided_by": ["ana\x1b[31m", "ben", "ana"],
            "note": ["<b>bad</b>\x1b]8;;http://x\x07 link", None, None],
        }
    )
    answers = pd.DataFrame(
        {
            "check_id": ["c1", "c2"],
            "position": [0, 0],
            "ask": ["Is it \x1b[2Jfine?", "Is it fine?"],
            "kind": ["yes_no", "yes_no"],
            "p": [0.95, 0.2],
            "name": [None, None],
            "level": pd.array([None, None], dtype="Int64"),
            "confidence": [np.nan, np.nan],
            "result": ["pass", "fail"],
            "pass_p": [0.9, 0.9],
        }
    )
    dis = ns.disagreements(subs, answers)
    assert dis["kind"].tolist() == ["false fail", "false pass"]
    row = dis.set_index("run_id").loc["r1"]
    assert "\x1b" not in row["note"] and "\x1b" not in row["decided_by"]
    assert row["note"].startswith("<b>bad</b>")  # kept as text: the DataFrame escapes it
    assert row["answers"] == "Is it fine? → yes (0.95) [pass]"
    assert dis.set_index("run_id").loc["r2", "answers"] == "Is it fine? → no (0.20) [fail]"
    assert "&lt;b&gt;" in dis.to_html()  # what Jupyter shows: escaped
    with pytest.raises(ValueError, match="allowed: false pass"):
        ns.disagreements(subs, kinds=["wrong"])


def test_rate_table_uses_the_report_wording(con):
    from calibrate.report.render import rate_text

    subs = calibrate.submissions(con)
    table = ag.agreement(subs, by=["process", "step", "model", "week"])
    shown = ns.rate_table(table)
    words = ns.RATES["false_pass"][5]
    for row, text in zip(table.itertuples(index=False), shown[words], strict=True):
        assert text == rate_text(row.pass_not_acceptable, row.n_pass)
    agree_words = ns.RATES["agree"][5]
    row = table.iloc[0]
    k = int(row["pass_acceptable"] + row["fail_not_acceptable"])
    assert shown.loc[0, agree_words] == rate_text(k, row["n_decided"])
    assert shown.loc[0, agree_words].startswith(f"{k / row['n_decided']:.1%}")
    # Small weeks say "too few" rather than a bare number.
    small = table["n_pass"] < 20
    assert small.any()
    assert shown.loc[small.to_numpy(), words].str.startswith(("too few", "no data")).all()
    with pytest.raises(ValueError, match="allowed"):
        ns.rate_table(table, rates=["nope"])


def test_approver_table(con):
    subs = calibrate.submissions(con)
    appr = ap.approvers(subs)
    shown = ns.approver_table(appr)
    assert list(shown["approver"]) == list(appr["approver"].fillna("(unnamed)"))
    assert shown["flag"].tolist() == appr["flag"].tolist()
    r = appr.iloc[0]
    assert shown.loc[0, "approval rate"].startswith(f"{r['approvals'] / r['n']:.1%}")
    assert shown.loc[0, "agreement with the check"].startswith(f"{r['agree']:.1%}")


def test_displays_draw(con):
    subs = calibrate.submissions(con)
    table = ag.agreement(subs, by=["process", "step", "model"])
    disp = ns.IntervalDisplay(table, rate="false_pass", limit=0.05, title="t $x$").plot()
    ax = disp.ax_
    assert len(ax.get_yticklabels()) == len(table)
    assert ax.get_xlim()[1] < 1  # error rates are zoomed in
    assert ax.get_xlim()[1] >= table["false_pass_high"].max()
    assert ns.IntervalDisplay(table, rate="agree").plot().ax_.get_xlim() == (-0.02, 1.02)
    with pytest.raises(ValueError, match="allowed"):
        ns.IntervalDisplay(table, rate="nope")
    appr = ap.approvers(subs)
    assert appr["flag"].any()  # the sample has an approver who follows the check
    labels = [t.get_text() for t in ns.IntervalDisplay(appr).plot().ax_.get_yticklabels()]
    assert sum(label.endswith(", flagged)") for label in labels) == int(appr["flag"].sum())
    plan = audit_plan(alpha=0.05, passes_per_week=40)
    audit = ns.AuditDisplay({"p / s": plan, "p / t": plan}).plot()
    assert len(audit.ax_.get_lines()) >= 1
    assert "p / s, p / t" in audit.ax_.get_legend().get_texts()[0].get_text()


def test_audit_detection_matches_the_sizing():
    alpha, factor, level, power = 0.05, 2.0, 0.05, 0.8
    m, c = audit_sample_size(alpha, factor=factor, level=level, power=power)
    curve = ns.audit_detection(m, c, [0.0, alpha, factor * alpha, 0.5])
    p = curve["p_alarm"].to_numpy()
    assert p[0] == 0.0
    assert p[1] <= level  # a check still at alpha rarely raises a false alarm
    assert p[2] >= power  # the rise it is sized for is caught
    assert p[3] > 0.999
    # Against a simulation of the audit.
    rng = np.random.default_rng(3)
    sim = (rng.binomial(m, factor * alpha, size=20_000) >= c).mean()
    assert abs(sim - p[2]) < 0.015


def test_audit_catch():
    at = pd.to_datetime(["2026-09-01", "2026-10-01", "2026-10-02", "2026-10-03"], utc=True)
    subs = pd.DataFrame(
        {
            "at": at,
            "verdict": ["pass", "pass", "pass", "fail"],
            "label": pd.array([False, False, True, None], dtype="boolean"),
        }
    )
    out = ns.audit_catch(subs, 0.5, weeks=4)
    assert out["passes"] == 2 and out["false_passes"] == 1  # the September one is outside
    assert out["audited"] == 1.0 and out["caught"] == 0.5
    assert out["p_any"] == 0.5
    assert ns.audit_catch(subs, None)["caught"] == 0.0


def test_assess_steps_agrees_with_the_report(con):
    from calibrate.analysis.readiness import assess_store

    # The step whose evaluator model changed: the search must see only the current one.
    opts, only = ReadinessOptions(), calibrate.Filters(process="vendor-onboarding")
    fast = {(s.process, s.step): s for s in ns.assess_steps(con, only, options=opts)}
    full = {(s.process, s.step): s for s in assess_store(con, only, options=opts, n_boot=0).steps}
    assert len(fast) == 1
    assert fast.keys() == full.keys()
    for key, s in fast.items():
        r = full[key]
        assert (s.decision, s.model, s.n_labeled) == (r.decision, r.model, r.n_labeled)
        assert s.suggested_check == r.suggested_check
        assert s.thresholds.certified == r.thresholds.certified


def test_planned_audit(con):
    opts = ReadinessOptions(alpha=0.05, audit_weeks=4)
    for step in ns.assess_steps(con, options=opts):
        plan, basis = ns.planned_audit(step, opts)
        if step.audit is not None:
            assert plan is step.audit and "certified" in basis
        else:
            assert plan is not None and "what-if" in basis
            share = step.thresholds.current["auto_pass"]
            assert plan.per_week == pytest.approx(plan.rate * step.volume.checks_per_week * share)
        m, _ = audit_sample_size(0.05)
        assert plan.sample_size == m


def test_check_blocks_carry_the_cli_comments(con):
    # The block to paste with what `calibrate thresholds --format yaml` says above it: the
    # certificate, the shares, the questions' remarks and the search's notes.
    from calibrate.cli.thresholds import yaml_blocks

    opts = ReadinessOptions()
    steps = ns.assess_steps(con, options=opts)
    printed = ns.check_blocks(con, steps, options=opts)
    cli = yaml_blocks(calibrate.suggest_from_store(con))
    lines = printed.splitlines()
    assert {line for line in cli.splitlines() if line.startswith("#")} <= set(lines)
    ready = next(st for st in steps if st.decision == "READY")
    # The sample's READY step: an unsure band too narrow to matter, and passes scored below 0.5.
    flat = " ".join(line[2:] for line in lines if line.startswith("# "))
    assert "unsure only for yes-probabilities in" in flat
    assert "more likely no than yes" in flat
    assert f"`calibrate report` says READY (pattern: {ready.pattern['recommended']})" in flat
    # One header per step with the report's decision, then its comments and one YAML body.
    headers = re.findall(r"^# (.*) · model (.*): (READY|NOT_YET|NO)$", printed, flags=re.M)
    assert [(h[0], h[2]) for h in headers] == [
        (f"{s.process} / {s.step}", s.decision) for s in steps
    ]
    bodies = [b for b in re.split(r"^#.*$", printed, flags=re.M) if b.strip()]
    docs = [yaml.safe_load(b) for b in bodies]
    keeps = [s.pattern.get("recommended") == "keep advisory" for s in steps]
    assert [d.get("advisory", False) for d in docs] == [
        s.decision != "READY" or k for s, k in zip(steps, keeps, strict=True)
    ]


def test_tradeoff_table_gives_the_cli_figures_with_n_and_intervals(con):
    from calibrate.cli.thresholds import tradeoff_lines

    steps = ns.assess_steps(con, options=ReadinessOptions())
    ready = next(st for st in steps if st.decision == "READY")
    search = ready.thresholds.raw
    table = ns.tradeoff_table(search)
    assert list(table.columns) == ns.TRADEOFF_TABLE_COLUMNS
    assert table.attrs["beta"] == search.beta and table.attrs["n"] == search.n_labeled
    cli = " ".join(" ".join(tradeoff_lines(search)).split())
    ok = table[table["status"] == "ok"]
    assert len(ok)
    for _, row in ok.iterrows():
        # "decided alone 99.1% [98.1, 99.6]": the CLI's share and its Wilson interval.
        low, high = 100 * row["decided_low"], 100 * row["decided_high"]
        assert f"decided alone {100 * row['decided_share']:.1f}% [{low:.1f}, {high:.1f}]" in cli
        assert row["decided_low"] <= row["decided_share"] <= row["decided_high"]
        assert f"({row['decided']} of {row['n']}; 95% CI" in row["decided alone"]
    nothing = table[table["status"] != "ok"]
    assert (nothing["decided"] == 0).all()
    assert nothing["decided alone"].str.startswith("nothing certified").all()


def test_plot_tradeoff_labels_its_axes_truthfully(con):
    import matplotlib

    matplotlib.use("Agg")
    steps = ns.assess_steps(con, options=ReadinessOptions(beta=0.25))
    search = next(st for st in steps if st.decision == "READY").thresholds.raw
    table = ns.tradeoff_table(search)
    ax = ns.plot_tradeoff(table, title="p / s")
    assert "certified" in ax.get_xlabel() and "held at beta = 0.25" in ax.get_xlabel()
    assert "optimistic" in ax.get_ylabel() and f"{table.attrs['n']} labeled" in ax.get_ylabel()
    assert "optimistic" in ax.get_title()
    # Error bars on the shares; today's observed false-pass rate is no point on the alpha axis.
    assert len(ax.containers) >= 2
    today = table.attrs["today"]
    observed = today["false_passes"] / today["n_pass"]
    for line in ax.get_lines():
        xs = np.asarray(line.get_xdata(), dtype=float)
        assert not np.isclose(xs, observed).any() or np.isclose(xs, table["alpha"]).any()
    legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
    assert f"{today['false_passes']} of {today['n_pass']} passes" in legend


def test_detection_curve_is_the_plan_simulation_with_its_error():
    from calibrate.analysis.audit import PLAN_STREAMS, plan_audit

    plan = plan_audit(passes_per_week=55, alpha=0.05, delta=0.1, weeks=4)
    assert plan.rate is None  # even every pass falls short at this volume
    curve = ns.detection_curve(plan, [0.0, 0.05, 0.1, 0.3])
    assert (curve["streams"] == PLAN_STREAMS).all()
    p = curve["p_alarm"].to_numpy()
    # At the rise the plan is sized for, the curve is the plan's own figure.
    assert p[2] == pytest.approx(plan.achieved)
    assert p[0] == 0.0 and p[3] > 0.99
    assert ((curve["low"] <= p) & (p <= curve["high"])).all()
    assert (curve["high"] - curve["low"]).iloc[2] > 0.05  # 300 streams: a few points of error
    paying = plan_audit(passes_per_week=400, alpha=0.05, delta=0.1, weeks=8)
    again = ns.detection_curve(paying, [paying.factor * paying.alpha])
    assert again["p_alarm"].iloc[0] == pytest.approx(paying.achieved)


def test_start_ending_today():
    from datetime import UTC, datetime, timedelta

    from calibrate.simulate import WINDOW_DAYS

    now = datetime(2026, 12, 5, 10, tzinfo=UTC)
    for weeks in (0, 4, 12):
        start = ns.start_ending_today(weeks, now=now)
        end = start + timedelta(days=WINDOW_DAYS + 7 * weeks)
        assert start.weekday() == 0 and start.hour == 0
        assert end + timedelta(days=1) <= now  # a day spare for reviews made a day later
        assert end + timedelta(days=8) > now  # and the latest such Monday
    # The README's tour: --start 2026-06-15 for 12 enforced weeks.
    assert ns.start_ending_today(12, now=now).date().isoformat() == "2026-06-15"


def test_enforced_sample_store_ends_by_today():
    # Black-box run: without --start the simulated records ran to next January, and the audit
    # drawn today "considered" checks that did not exist yet.
    path = ns.enforced_sample_store(runs=400, shift_week=None)  # 12 enforced weeks, as notebook 04
    con = calibrate.connect(path, read_only=True)
    try:
        last = con.execute('SELECT max("at") FROM labeled').fetchone()[0]
        drawn_at, latest_eligible = con.execute(
            """SELECT min(d.drawn_at), max(l."at") FROM audit_draws d
               JOIN audit_eligible e USING (draw_id) JOIN labeled l USING (check_id)"""
        ).fetchone()
    finally:
        con.close()
    now = pd.Timestamp.now(tz="UTC")
    assert pd.Timestamp(last) <= now
    assert pd.Timestamp(latest_eligible) <= pd.Timestamp(drawn_at)


@pytest.fixture(scope="module")
def enforced_store():
    """A simulated store past the switch (its monitor alarms), shared by the tests that only read it."""
    return ns.enforced_sample_store(runs=600)


def test_check_blocks_of_an_enforced_step_are_the_cli_advice(enforced_store):
    # An enforced step's block is the report's advice as `thresholds --format yaml` prints it,
    # never a block that drops advisory on the readiness decision alone.
    from calibrate.analysis.enforced_advice import enforced_advice
    from calibrate.cli.thresholds import yaml_blocks

    con = calibrate.connect(enforced_store, read_only=True)
    try:
        opts = ReadinessOptions()
        steps = ns.assess_steps(con, options=opts)
        printed = ns.check_blocks(con, steps, options=opts)
        report = calibrate.suggest_from_store(con)
        advice = enforced_advice(con, alpha=opts.alpha, delta=opts.delta, beta=opts.beta)
    finally:
        con.close()
    enforced = [s for s in report.steps if (s.process, s.step) in advice]
    assert enforced
    for s in enforced:
        s.enforced = advice[(s.process, s.step)]
        doc = yaml_blocks(type(report)(alpha=report.alpha, delta=report.delta, beta=report.beta,
                                       steps=[s]))  # fmt: skip
        head = f"# {s.process} / {s.step} · model {s.model}: enforced; `calibrate report` says "
        assert f"{head}{s.enforced['recommended'].upper()}\n{doc}" in printed


def test_assess_steps_judges_an_enforced_step_by_its_monitor_as_the_report_does(enforced_store):
    # A copy of the report's assessment once left out the monitor's enforcement: notebooks 02/03
    # called READY a step whose monitor alarmed and the report returned to advisory.
    from calibrate.analysis.readiness import assess_store

    con = calibrate.connect(enforced_store, read_only=True)
    try:
        opts = ReadinessOptions()
        fast = {(s.process, s.step): s for s in ns.assess_steps(con, options=opts)}
        full = {(s.process, s.step): s for s in assess_store(con, options=opts, n_boot=0).steps}
    finally:
        con.close()
    enforced = [k for k, s in full.items() if s.enforcement is not None]
    assert enforced and fast.keys() == full.keys()
    for key in enforced:
        assert fast[key].enforcement is not None
        assert fast[key].decision == full[key].decision
        assert fast[key].enforced_dict() == full[key].enforced_dict()
