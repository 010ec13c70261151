"""``calibrate curves`` through Typer's CliRunner, on a store built row by row and on the sample."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score
from sklearn.metrics import log_loss as sk_log_loss
from typer.testing import CliRunner

from calibrate.cli import app
from calibrate.store import connect

runner = CliRunner()
T0 = pd.Timestamp("2026-10-05T08:00:00Z")
HOSTILE_ASK = "Is the total $5 or $6?\x1b[2J ../../etc/passwd <script>alert(1)</script>"
QUESTION_KEYS = {
    "kind",
    "n",
    "bins",
    "ece",
    "ece_ci",
    "mce",
    "brier",
    "log_loss",
    "auroc",
    "recalibration",
}
BIN_KEYS = {"lo", "hi", "mean_predicted", "observed", "n", "ci"}
RECAL_KEYS = {"method", "ece_before", "ece_after", "brier_before", "brier_after"}


def _insert(con, table: str, df: pd.DataFrame) -> None:
    con.register("_rows", df)
    try:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _rows")  # noqa: S608 - fixed names
    finally:
        con.unregister("_rows")


def _group(rng, prefix: str, n: int, model: str):
    ids = [f"{prefix}{i}" for i in range(n)]
    p = 1 / (1 + np.exp(-rng.normal(0.5, 2.5, n)))
    label = rng.random(n) < 1 / (1 + np.exp(-0.5 * np.log(p / (1 - p))))
    at = T0 + pd.to_timedelta(np.arange(n), unit="h")
    checks = pd.DataFrame({
        "check_id": ids, "run_id": ids, "process": "proc", "version": "1", "step": "review",
        "attempt": 1, "verdict": "pass", "advisory": True, "model": model, "checked_at": at,
        "recorded_in": "steps.check", "truncated": False, "n_questions": 2,
    })  # fmt: skip
    answers = pd.concat([
        pd.DataFrame({"check_id": ids, "position": 0, "question_id": f"yes-{prefix}", "ask": HOSTILE_ASK,
                      "kind": "yes_no", "p": p, "result": "pass"}),
        pd.DataFrame({"check_id": ids, "position": 1, "question_id": f"choice-{prefix}",
                      "ask": "What does it do?", "kind": "choice",
                      "name": np.where(label, "states", rng.choice(["states", "hedges"], n)),
                      "confidence": rng.uniform(0.5, 1, n), "result": "pass"}),
    ])  # fmt: skip
    decisions = pd.DataFrame({
        "decision_id": [f"d{i}" for i in ids], "run_id": ids, "process": "proc", "step": "review",
        "attempt": 1, "decision": np.where(label, "approved", "rejected"), "decided_by": "ana",
        "decided_at": at + pd.Timedelta("1h"), "source": "table",
    })  # fmt: skip
    return (checks, answers, decisions), p, label


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    rng = np.random.default_rng(0)
    big, p, label = _group(rng, "a", 150, "m1")
    small, _, _ = _group(rng, "b", 12, "m2")  # too few labels
    path = tmp_path_factory.mktemp("curves") / "store.duckdb"
    con = connect(path)
    for i, table in enumerate(("checks", "answers", "decisions")):
        _insert(con, table, pd.concat([big[i], small[i]], ignore_index=True))
    con.close()
    return path, p, label


def run(store, *args):
    return runner.invoke(app, ["curves", "--db", str(store[0]), *args])


@pytest.fixture(scope="module")
def json_run(store, tmp_path_factory):
    """One JSON run shared by the tests that read its output and its files."""
    out = tmp_path_factory.mktemp("json-run") / "new" / "figs"
    res = run(store, "--out", str(out), "--format", "json")
    assert res.exit_code == 0, res.output
    return out, json.loads(res.stdout)


def test_json_keys_and_numbers_match_sklearn(store, json_run):
    _, records = json_run
    assert len(records) == 4  # two questions x two models, never pooled
    for rec in records:
        assert QUESTION_KEYS <= rec.keys()
        assert all(BIN_KEYS == b.keys() for b in rec["bins"])
        assert RECAL_KEYS <= rec["recalibration"].keys()
        assert rec["strategy"] == "uniform" and rec["n_bins"] == 10
    m1 = next(r for r in records if r["model"] == "m1" and r["kind"] == "yes_no")
    _, p, label = store
    prob_true, prob_pred = calibration_curve(label, p, n_bins=10)
    seen = [b for b in m1["bins"] if b["n"]]
    np.testing.assert_allclose([b["observed"] for b in seen], prob_true, rtol=1e-12)
    np.testing.assert_allclose([b["mean_predicted"] for b in seen], prob_pred, rtol=1e-12)
    assert m1["n"] == 150 and not m1["too_few"]
    assert m1["brier"] == pytest.approx(brier_score_loss(label, p), rel=1e-12)
    assert m1["log_loss"] == pytest.approx(sk_log_loss(label, y_proba=p, labels=[0, 1]), rel=1e-10)
    assert m1["auroc"] == pytest.approx(roc_auc_score(label, p), rel=1e-12)
    assert m1["ece_ci"][0] <= m1["ece"] <= m1["ece_ci"][1]
    assert m1["recalibration"]["method"] in ("isotonic", "sigmoid")
    assert m1["ask"] == HOSTILE_ASK  # JSON keeps the text; json.dumps escapes it
    small = [r for r in records if r["model"] == "m2"]
    assert all(r["too_few"] for r in small)
    choice = next(r for r in records if r["model"] == "m1" and r["kind"] == "choice")
    assert choice["pass_source"] == "learnt" and choice["pass_names"] == ["states"]
    assert {a["name"] for a in choice["answers"]} == {"states", "hedges"}


def test_writes_png_and_svg_with_safe_names(json_run):
    out, records = json_run
    files = sorted(p.name for p in out.iterdir())
    # One figure per question and model, one small-multiples figure per step and model.
    assert len(files) == 2 * (4 + 2)
    assert sum(f.startswith("step-") for f in files) == 4
    for rec in records:
        for kind in ("png", "svg"):
            for key in ("figure", "step_figure"):
                path = out / rec[key][kind].rsplit("/", 1)[-1]
                assert str(path) == rec[key][kind] and path.exists()
        assert (out / rec["figure"]["png"].rsplit("/", 1)[-1]).read_bytes()[
            :8
        ] == b"\x89PNG\r\n\x1a\n"
        svg = (out / rec["figure"]["svg"].rsplit("/", 1)[-1]).read_text()
        ET.fromstring(svg.encode())  # well-formed XML: the hostile text cannot add markup
        assert "<script" not in svg and "\x1b" not in svg
    assert all(f.isascii() and "/" not in f and not f.startswith(".") for f in files)
    assert [p.name for p in out.parent.iterdir()] == ["figs"]  # "../" in the text went nowhere


def test_table_fits_80_columns_and_says_too_few(store, tmp_path):
    res = run(store, "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "\x1b" not in res.stdout
    assert "too few labels (n = 12 < 20)" in res.stdout
    assert "ECE" in res.stdout and "Brier" in res.stdout and "AUROC" in res.stdout
    assert (
        "recalibration" in res.stdout and "pass list ['states'] (learnt from labels)" in res.stdout
    )
    assert "wrote 12 figures" in res.stderr


def test_recalibration_numbers_say_what_they_are_over(store, tmp_path):
    """Withheld with the curve's numbers below 20 points (they read "numbers withheld" and then
    "ECE 0.210 -> 0.159"); for a choice question over the passing answers, which the table says
    (its ECE before differed from the curve's two lines up with no word why)."""
    blocks = run(store, "--out", str(tmp_path)).stdout.split("━━ ")[1:]
    small = [b for b in blocks if "model m2" in b.splitlines()[0]]
    assert len(small) == 2
    for block in small:
        assert "too few labels (n = 12 < 20): figure marked, numbers withheld" in block
        fit = 9 if "What does it do?" in block else 12  # the passing answers / every point
        assert f"fit on {fit} points: too few, numbers withheld" in block, block
        assert " -> " not in block and "Brier" not in block, block
    big = {b.splitlines()[1]: b for b in blocks if "model m1" in b.splitlines()[0]}
    choice = " ".join(big["What does it do?"].split())
    assert "confidence vs acceptable (the curve: 150 answers vs the correct call" in choice
    assert "ECE" in choice and " -> " in choice
    yes = next(b for ask, b in big.items() if ask != "What does it do?")
    assert "on the curve's 150 points (before: the curve's ECE):" in yes


def test_bins_strategy_and_filters(store, tmp_path):
    res = run(store, "--out", str(tmp_path), "--format", "json", "--bins", "5",
              "--strategy", "quantile", "--model", "m1", "--by", "week")  # fmt: skip
    assert res.exit_code == 0, res.output
    records = json.loads(res.stdout)
    assert {r["model"] for r in records} == {"m1"}
    assert {r["week"] for r in records} == {"2026-10-05"}
    yes = next(r for r in records if r["kind"] == "yes_no")
    assert yes["strategy"] == "quantile" and yes["n_bins"] == 5 and len(yes["bins"]) == 5
    assert all(abs(b["n"] - 30) <= 1 for b in yes["bins"])  # quantile bins hold equal counts


def test_bad_options_and_empty_selection(store, tmp_path):
    res = run(store, "--out", str(tmp_path), "--by", "approver")
    assert res.exit_code == 2 and "model, week" in res.output
    res = run(store, "--out", str(tmp_path), "--strategy", "kmeans")
    assert res.exit_code == 2
    res = run(store, "--out", str(tmp_path), "--format", "json", "--model", "nobody")
    assert res.exit_code == 2 and not res.stdout
    assert "--model 'nobody' matches no check; models in the store: m1, m2" in res.stderr
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = run(store, "--out", str(blocker / "sub"))
    assert res.exit_code == 2 and "cannot write figures" in res.stderr


def test_bundled_sample(sample_store, tmp_path):
    out = tmp_path / "curves"
    res = runner.invoke(app, ["curves", "--db", str(sample_store), "--out", str(out),
                              "--format", "json", "--process", "invoice-matching"])  # fmt: skip
    assert res.exit_code == 0, res.output
    records = json.loads(res.stdout)
    assert records and all(QUESTION_KEYS <= r.keys() for r in records)
    assert len(list(out.glob("*.png"))) == len(list(out.glob("*.svg"))) >= len(records) + 1


@pytest.fixture(scope="module")
def banded():
    """The black-box set-up: enforced, then a stratified (--by-band) audit draw reviewed."""
    from calibrate.notebook_support import enforced_sample_store

    return enforced_sample_store(runs=1500, shift_week=None, audit_rate=0.3, by_band=True)


def test_audit_draw_labels_are_left_out_and_said(banded, tmp_path):
    db = ["--db", str(banded), "--step", "match_invoice", "--out", str(tmp_path)]
    res = runner.invoke(app, ["curves", *db, "--format", "json"])
    assert res.exit_code == 0, res.output
    (rec,) = json.loads(res.stdout)
    reviews = runner.invoke(app, ["curves", *db, "--format", "json", "--advisory-only"])
    (only,) = json.loads(reviews.stdout)
    # The advisory window's labels alone, as the threshold search reads them.
    assert rec["n"] == only["n"] and rec["auroc"] == only["auroc"] and rec["ece"] == only["ece"]
    assert rec["left_out"]["audits"] > 0 and rec["n_audits"] == 0
    assert f"{rec['left_out']['audits']} audit-draw labels after the switch left out" in res.stderr
    table = runner.invoke(app, ["curves", *db])
    assert "audit-draw labels after the switch left out; --with-audits" in table.stdout
    # Stratified draws beside reviews: unequal inclusion probabilities, refused.
    refused = runner.invoke(app, ["curves", *db, "--with-audits"])
    assert refused.exit_code == 2 and "different probabilities or frames" in refused.stderr
    both = runner.invoke(app, ["curves", *db, "--with-audits", "--with-escalations"])
    assert both.exit_code == 2
    kept = runner.invoke(app, ["curves", *db, "--format", "json", "--with-escalations"])
    (sel,) = json.loads(kept.stdout)
    assert sel["selected_sample"] and sel["n"] > rec["n"] and "selected" in kept.stderr
