"""Audit draws: reproducible, stored, never offering a check twice; honest labels after the switch."""

from __future__ import annotations

import csv
import json
from datetime import UTC, datetime

import pandas as pd
import pytest
from typer.testing import CliRunner

from calibrate import audit
from calibrate.analysis.corrected import corrected_pass_rate, corrected_records
from calibrate.analysis.monitor import monitor_store
from calibrate.analysis.step_data import UNKNOWN_MODEL
from calibrate.cli import app
from calibrate.dataset import Filters, left_out_count, left_out_counts, submissions
from calibrate.errors import UsageError
from calibrate.ingest import ingest
from calibrate.simulate import simulate
from calibrate.simulate_enforced import review_audit
from calibrate.store import SCHEMA_VERSION, connect, schema_version

runner = CliRunner()
STEP = {"process": "invoice-matching", "step": "match_invoice"}
DRAWN_AT = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def enforced_export(tmp_path_factory):
    out = tmp_path_factory.mktemp("enforced") / "exp"
    simulate(out, runs=1500, seed=11, enforce_weeks=6)
    return out


@pytest.fixture()
def store(tmp_path, enforced_export):
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [enforced_export])
    yield con
    con.close()


def test_draw_is_reproducible_by_seed(tmp_path, enforced_export):
    drawn = []
    for name in ("a", "b"):
        con = connect(tmp_path / f"{name}.duckdb")
        ingest(con, [enforced_export])
        # The same store, seed and time of the draw give the same draw (the CSV says when).
        result = audit.draw(con, **STEP, rate=0.3, seed=7, by_band=True, now=DRAWN_AT)
        audit.write_csv(result, tmp_path / f"{name}.csv")
        drawn.append(con.execute("SELECT * EXCLUDE (drawn_at) FROM audit_draws").fetchall())
        con.close()
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text()
    assert drawn[0] == drawn[1]
    con = connect(tmp_path / "c.duckdb")
    ingest(con, [enforced_export])
    other = audit.draw(con, **STEP, rate=0.3, seed=8, by_band=True)
    assert set(other.drawn["check_id"]) != set(
        pd.read_csv(tmp_path / "a.csv")["run"]
    )  # another seed, another sample


def test_a_draw_never_offers_a_check_twice(store):
    first = audit.draw(store, **STEP, rate=0.5, seed=1)
    second = audit.draw(store, **STEP, rate=1.0, seed=2, verdicts=("pass", "fail"))
    assert first.n_eligible > 100 and first.n_drawn > 30
    assert not set(first.drawn["check_id"]) & set(second.drawn["check_id"])
    # The second draw saw only what the first did not consider: the fails.
    assert set(second.drawn["verdict"]) == {"fail"}
    rows = store.execute("SELECT count(*), count(DISTINCT check_id) FROM audit_eligible").fetchone()
    assert rows[0] == rows[1] == first.n_eligible + second.n_eligible
    third = audit.draw(store, **STEP, rate=1.0, seed=3)
    assert third.n_eligible == 0 and third.draw_id is None  # nothing eligible: not stored
    stored = audit.draws(store)
    assert stored["seed"].tolist() == [1, 2]
    assert stored["n_drawn"].tolist() == [first.n_drawn, second.n_drawn]


def test_only_enforced_checks_are_eligible(store):
    result = audit.draw(store, **STEP, rate=1.0, seed=1, verdicts=("pass", "fail"))
    advisory = store.execute(
        "SELECT count(*) FROM checks WHERE check_id IN (SELECT check_id FROM audit_eligible)"
        " AND advisory"
    ).fetchone()[0]
    assert advisory == 0 and result.n_eligible > 0


def test_by_band_probabilities_and_expected_size(store):
    result = audit.draw(store, **STEP, rate=0.2, seed=4, by_band=True)
    elig = store.execute("SELECT band, inclusion_p FROM audit_eligible").df()
    means = elig.groupby("band")["inclusion_p"].mean()
    # In the ratio of the band weights (2 : 1 : 1/2); yes-probabilities tied at 1 may leave a
    # band empty.
    assert len(means) >= 2
    first = means.index[0]
    for band, mean in means.items():
        ratio = audit.BAND_WEIGHTS[band] / audit.BAND_WEIGHTS[first]
        assert mean == pytest.approx(ratio * means[first])
    # The expected size is set at the certification window's band shares: near the rate asked.
    assert elig["inclusion_p"].sum() == pytest.approx(0.2 * result.n_eligible, rel=0.2)
    # The band edges come from the advisory checks, fixed before the draw: a check's band is a
    # function of its own answers (the same score is in the same band in two draws).
    from calibrate.audit import band_edges, reference_checks

    edges = band_edges(reference_checks(store, **STEP, verdicts=("pass",)))
    assert "pass" in edges


def test_bad_arguments():
    con = connect(":memory:")
    with pytest.raises(UsageError, match="one of"):
        audit.draw(con, **STEP)
    with pytest.raises(UsageError, match="rate"):
        audit.draw(con, **STEP, rate=1.5)
    with pytest.raises(UsageError, match="verdicts"):
        audit.draw(con, **STEP, rate=0.5, verdicts=("unsure",))


def test_audits_of_checks_recorded_without_a_model_are_monitored(store, tmp_path, enforced_export):
    # check-1 lets a verdict leave out its model; the store keeps NULL.
    store.execute("UPDATE checks SET model = NULL")
    result = audit.draw(store, **STEP, rate=0.5, seed=3, out=tmp_path / "a.csv")
    review_audit(tmp_path / "a.csv", enforced_export / ".truth", tmp_path / "r.csv")
    ingest(store, [tmp_path / "r.csv"])
    (step,) = [s for s in monitor_store(store).steps if s.step == STEP["step"]]
    assert step.model == UNKNOWN_MODEL and step.status != "no_audits"
    assert step.false_pass.audited == result.n_drawn > 50
    assert not any("new evaluator model" in w for w in step.warnings)
    (one,) = monitor_store(store, model=UNKNOWN_MODEL).steps
    assert one.false_pass.audited == result.n_drawn


def test_decisions_on_drawn_checks_are_audits_and_nothing_else(store, tmp_path, enforced_export):
    result = audit.draw(store, **STEP, rate=0.4, seed=5)
    path = tmp_path / "audit.csv"
    audit.write_csv(result, path)
    filled = tmp_path / "filled.csv"
    review_audit(path, enforced_export / ".truth", filled)
    # A reviewer's note claiming "audit" on an escalation changes nothing: the store decides.
    with open(filled, "a", encoding="utf-8", newline="") as fh:
        esc = store.execute(
            "SELECT run_id, attempt FROM checks WHERE NOT advisory AND verdict = 'pass'"
            " AND check_id NOT IN (SELECT check_id FROM audit_eligible WHERE drawn) LIMIT 1"
        ).fetchone()
        row = [esc[0], *STEP.values(), esc[1], "rejected", "x", "", "audit"]
        csv.writer(fh).writerow(row + [""] * len(audit.CONTEXT_COLUMNS))
    report = ingest(store, [filled])
    assert sum(f.quarantined for f in report.files) == 0
    subs = submissions(store, Filters(process="invoice-matching", escalations=True))
    audited = subs[subs["audited"]]
    assert set(audited["check_id"]) == set(result.drawn["check_id"])
    assert audited["label"].notna().all()
    assert (audited["inclusion_p"] == 0.4).all()
    undrawn = subs[(subs["run_id"] == esc[0]) & (subs["attempt"] == esc[1])]
    assert len(undrawn) == 1 and undrawn["left_out"].all() and not undrawn["audited"].any()


def test_escalations_after_the_switch_are_left_out_of_certification(store, tmp_path):
    # Escalated (unsure) checks of the enforced weeks were decided by a person.
    esc = store.execute(
        "SELECT count(*) FROM labeled WHERE advisory = false AND verdict = 'unsure' AND label IS NOT NULL"
    ).fetchone()[0]
    assert esc > 5
    labeled = submissions(store, Filters(process="invoice-matching"), labeled_only=True)
    assert (labeled["advisory"] | labeled["audited"]).all()
    assert left_out_count(store, Filters(process="invoice-matching")) == esc
    everything = submissions(
        store, Filters(process="invoice-matching", escalations=True), labeled_only=True
    )
    assert len(everything) == len(labeled) + esc


def test_agreement_leaves_escalations_out_and_counts_them(tmp_path, enforced_export):
    db = str(tmp_path / "a.duckdb")
    runner.invoke(app, ["ingest", "--db", db, "--quiet", str(enforced_export)])
    base = ["agreement", "--db", db, "--process", "invoice-matching", "--format", "json"]
    honest = runner.invoke(app, base)
    assert honest.exit_code == 0, honest.output
    con = connect(db, read_only=True)
    advisory = con.execute(
        "SELECT count(*) FROM labeled WHERE process = 'invoice-matching' AND advisory AND label IS NOT NULL"
    ).fetchone()[0]
    con.close()
    text = json.dumps(json.loads(honest.stdout))
    assert f'"n": {advisory}' in text
    assert "escalations after the switch" in honest.stderr


def test_old_store_migrates(tmp_path, sample_dir):
    path = tmp_path / "old.duckdb"
    con = connect(path)
    ingest(con, [sample_dir / "limits.json"])
    con.execute("DROP TABLE audit_eligible")
    con.execute("DROP TABLE audit_draws")
    con.execute("DROP SEQUENCE draw_id_seq")
    con.execute("DROP VIEW labeled_answers")
    con.execute("DROP VIEW labeled")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    con.close()
    con = connect(path)
    assert schema_version(con) == SCHEMA_VERSION
    assert con.execute("SELECT count(*) FROM audit_draws").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM labeled WHERE audited").fetchone()[0] == 0
    con.close()


def test_cli_audit_draw_writes_a_decision_table(tmp_path, enforced_export):
    db = str(tmp_path / "c.duckdb")
    runner.invoke(app, ["ingest", "--db", db, "--quiet", str(enforced_export)])
    out = tmp_path / "draw.csv"
    args = ["audit", "draw", "--db", db, "--process", "invoice-matching", "--step",
            "match_invoice", "--per-week", "10", "--seed", "3", "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(frame.columns[:8]) == list(audit.DECISION_COLUMNS)
    assert len(frame) == info["n_drawn"] and (frame["decision"] == "").all()
    # About ten a week over the six enforced weeks.
    assert 30 <= info["n_drawn"] <= 95
    assert runner.invoke(app, [*args[:-2], "--rate", "0.5", "--out", str(out)]).exit_code == 2


def test_blocking_fails_before_the_switch_are_not_eligible(store):
    # The simulated advisory window records a blocking fail (handoff.check) as advisory: false;
    # the switch is the step's first pass or unsure verdict recorded so.
    switch = store.execute(
        "SELECT min(checked_at) FROM checks WHERE process = 'invoice-matching' AND NOT advisory"
        " AND verdict IN ('pass', 'unsure')"
    ).fetchone()[0]
    before = store.execute(
        "SELECT count(*) FROM checks WHERE process = 'invoice-matching' AND NOT advisory"
        " AND checked_at < ?",
        [switch],
    ).fetchone()[0]
    assert before > 0
    result = audit.draw(store, **STEP, rate=1.0, seed=1, verdicts=("pass", "fail"))
    assert (pd.to_datetime(result.drawn["at"], utc=True) >= pd.Timestamp(switch)).all()


def draw_args(db, out, *more):
    return ["audit", "draw", "--db", db, "--process", "invoice-matching", "--step",
            "match_invoice", "--out", str(out), *more]  # fmt: skip


def test_a_draw_whose_csv_cannot_be_written_is_not_stored(tmp_path, enforced_export, monkeypatch):
    db = str(tmp_path / "c.duckdb")
    runner.invoke(app, ["ingest", "--db", db, "--quiet", str(enforced_export)])
    bad = runner.invoke(app, draw_args(db, tmp_path / "nope" / "a.csv", "--rate", "0.5"))
    assert bad.exit_code == 2 and bad.stderr.startswith("error: --out")
    assert len(bad.stderr.strip().splitlines()) == 1
    con = connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM audit_draws").fetchone()[0] == 0
    con.close()
    # A failure while writing rolls the draw back and leaves no file behind.
    con = connect(db)
    out = tmp_path / "w.csv"
    original = audit.write_csv

    def broken(result, path, **options):
        original(result, path, **options)
        raise OSError("disk full")

    monkeypatch.setattr(audit, "write_csv", broken)
    with pytest.raises(OSError):
        audit.draw(con, **STEP, rate=0.5, seed=1, out=out)
    monkeypatch.undo()
    assert con.execute("SELECT count(*) FROM audit_eligible").fetchone()[0] == 0
    assert list(tmp_path.glob("*w.csv*")) == []
    con.close()
    good = runner.invoke(app, draw_args(db, out, "--rate", "0.5", "--seed", "1"))
    assert good.exit_code == 0, good.output
    assert json.loads(good.stdout)["n_eligible"] > 100 and out.exists()


def test_a_draw_that_picks_nothing_is_stored_and_uses_its_checks_up(tmp_path, enforced_export):
    db = str(tmp_path / "c.duckdb")
    runner.invoke(app, ["ingest", "--db", db, "--quiet", str(enforced_export)])
    out = tmp_path / "e.csv"
    empty = runner.invoke(app, draw_args(db, out, "--rate", "0.0001", "--seed", "1"))
    assert empty.exit_code == 0, empty.output
    design = json.loads(empty.stdout)
    assert design["n_drawn"] == 0 and design["n_eligible"] > 100 and design["draw_id"] == 1
    assert "picked none of the" in empty.stderr and "stored as draw 1" in empty.stderr
    assert out.read_text().splitlines() == [
        ",".join(audit.DECISION_COLUMNS + audit.CONTEXT_COLUMNS)
    ]
    # Its checks were considered: the next draw finds none left.
    again = runner.invoke(app, draw_args(db, tmp_path / "f.csv", "--rate", "1"))
    assert again.exit_code == 2 and "no eligible checks" in again.stderr
    con = connect(db, read_only=True)
    assert con.execute("SELECT count(*) FROM audit_draws").fetchone()[0] == 1
    assert con.execute("SELECT count(*), sum(drawn::INT) FROM audit_eligible").fetchone() == (
        design["n_eligible"],
        0,
    )
    con.close()


DRAWS = 100


def test_stored_draws_keep_the_stored_inclusion_probability(store):
    """Over draws at about one expected pick, sum(drawn / pi) estimates the checks considered.

    Were a draw that picks nothing left unstored, every stored draw would hold at least one
    drawn check: the estimate would be 1 / (1 - (1 - r)^n), about 1.58 times the checks
    considered, and the monitor's weights would over-count by as much.
    """
    n = len(audit.eligible_checks(store, STEP["process"], STEP["step"], ("pass",)))
    rate = 1.0 / n
    weighted = considered = 0.0
    for seed in range(DRAWS):
        audit.draw(store, **STEP, rate=rate, seed=seed)
        drawn, pi, rows = store.execute(
            "SELECT coalesce(sum(drawn::INT), 0), max(inclusion_p), count(*) FROM audit_eligible"
        ).fetchone()
        weighted += drawn / pi if rows else 0.0
        considered += rows
        store.execute("DELETE FROM audit_eligible; DELETE FROM audit_draws")
    assert considered == DRAWS * n
    # Poisson(1) picks a draw: the mean ratio is 1 with standard error about 1/sqrt(DRAWS) = 0.1,
    # against 1.58 were empty draws unstored (2.8 standard errors past the bound either way).
    assert abs(weighted / considered - 1.0) < 0.3


def test_left_out_says_escalations_apart_from_undrawn_decisions(tmp_path, enforced_export):
    db = str(tmp_path / "l.duckdb")
    runner.invoke(app, ["ingest", "--db", db, "--quiet", str(enforced_export)])
    con = connect(db, read_only=True)
    esc = con.execute(
        "SELECT count(*) FROM labeled WHERE NOT advisory AND verdict = 'unsure' AND label IS NOT NULL"
    ).fetchone()[0]
    undrawn = con.execute(
        "SELECT run_id, attempt, checked_at FROM checks WHERE NOT advisory AND verdict = 'pass'"
        " ORDER BY checked_at DESC LIMIT 3"
    ).fetchall()
    con.close()
    # Somebody decided three enforced passes that no draw drew.
    path = tmp_path / "extra.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(audit.DECISION_COLUMNS)
        for run, attempt, at in undrawn:
            writer.writerow([run, *STEP.values(), attempt, "approved", "x", at.isoformat(), ""])
    runner.invoke(app, ["ingest", "--db", db, "--quiet", str(path)])
    con = connect(db, read_only=True)
    assert left_out_counts(con, Filters(process="invoice-matching")) == {
        "escalations": esc, "undrawn": 3,
    }  # fmt: skip
    con.close()
    result = runner.invoke(app, ["agreement", "--db", db, "--process", "invoice-matching"])
    assert result.exit_code == 0
    assert (
        f"{esc + 3} decisions left out of the labeled figures: {esc} escalations after the "
        "switch (the unsure region the enforced check selected) and 3 decisions on enforced "
        "pass/fail checks that no audit draw drew; the checks still count in the rates over all "
        "checks; --with-escalations keeps the decisions"
    ) in result.stderr


def test_the_audit_csv_is_blind_unless_asked(store, tmp_path):
    """The reviewer does not see the check's verdict or answers unless --show-answers."""
    result = audit.draw(store, **STEP, rate=0.2, seed=11)
    blind, shown = tmp_path / "blind.csv", tmp_path / "shown.csv"
    audit.write_csv(result, blind)
    audit.write_csv(result, shown, show_answers=True)
    head = blind.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert "verdict" not in head and "answers" not in head
    assert head == [*audit.DECISION_COLUMNS, *audit.CONTEXT_COLUMNS]
    rows = list(csv.DictReader(shown.open(encoding="utf-8")))
    assert len(rows) == result.n_drawn and {r["verdict"] for r in rows} == {"pass"}
    assert all(r["answers"] for r in rows)


def test_corrected_rate_measures_tpr_tnr_on_reviews_and_counts_the_audits(
    tmp_path, enforced_export
):
    """`agreement --corrected` counted a by-band draw's labels unweighted beside the reviews
    (biasing TPR/TNR) and dropped the drawn checks from the set it estimates (biasing the
    apparent pass rate). Now both match the store before the audits, and the output counts what
    it left out (the estimate moves: the checks the draw offered rest on its weighted audits,
    test_corrected_rate_weights_a_by_band_draw_against_the_truth). Fails on the old code."""
    db = tmp_path / "s.duckdb"
    args = ["agreement", "--db", str(db), "--process", STEP["process"], "--corrected"]

    def corrected(*more):
        result = runner.invoke(app, [*args, *more])
        assert result.exit_code == 0, result.output
        return result

    con = connect(db)
    ingest(con, [enforced_export])
    con.close()
    (before,) = json.loads(corrected("--format", "json").stdout)
    con = connect(db)
    result = audit.draw(con, **STEP, rate=0.3, verdicts=("pass", "fail"), by_band=True, seed=3)
    assert len(set(result.drawn["inclusion_p"])) > 1  # unequal probabilities, by band
    audit.write_csv(result, tmp_path / "audit.csv")
    review_audit(tmp_path / "audit.csv", enforced_export / ".truth", tmp_path / "f.csv")
    ingest(con, [tmp_path / "f.csv"])
    sql = "SELECT count(*) FILTER (audited AND label IS NOT NULL), count(*) FILTER (left_out) FROM labeled"
    n_audits, esc = con.execute(sql).fetchone()
    con.close()
    assert n_audits > 20
    out = corrected("--format", "json")
    (after,) = json.loads(out.stdout)
    for key in ("tpr", "tnr", "n_labeled", "apparent_pass_rate"):
        assert after[key] == before[key], key
    assert after["left_out"] == {"audits": n_audits, "escalations": esc, "undrawn": 0}
    assert f"{n_audits + esc} labels after the switch left out of TPR/TNR" in out.stderr
    text = corrected().stdout
    assert f"({n_audits} audit-draw labels, {esc} escalations after the switch left out" in text
    assert "audits: passes weighted rate " in text and "weighted by 1/inclusion_p" in text
    refused = runner.invoke(app, [*args, "--with-escalations"])
    assert refused.exit_code == 2 and "--with-escalations does not apply" in refused.output


def test_corrected_rate_weights_a_by_band_draw_against_the_truth(tmp_path, store, enforced_export):
    """A by-band draw of passes and fails, reviewed from the simulation's truth: each verdict's
    offered checks rest on its audits weighted by 1/inclusion_p, and the weighted shares and the
    estimate hold the true acceptable shares of the checks they estimate. The old code left a
    by-band draw's audits unused (Rogan-Gladen for every check). Fails on the old code."""
    result = audit.draw(store, **STEP, rate=0.3, verdicts=("pass", "fail"), by_band=True, seed=3)
    audit.write_csv(result, tmp_path / "audit.csv")
    review_audit(tmp_path / "audit.csv", enforced_export / ".truth", tmp_path / "f.csv")
    ingest(store, [tmp_path / "f.csv"])
    subs = submissions(store, Filters(process=STEP["process"], step=STEP["step"]))
    (rec,) = corrected_records(corrected_pass_rate(subs, by=["process", "step"]))
    truth = pd.read_csv(
        enforced_export / ".truth" / "truth.csv", dtype={"run": str, "attempt": str}
    )
    keys = pd.MultiIndex.from_arrays([subs[c].astype(str) for c in ("run_id", "step", "attempt")])
    acceptable = truth.set_index(["run", "step", "attempt"])["acceptable"].reindex(keys).to_numpy()
    # The checks estimated: the latest pass or fail verdict of each attempt no review labeled.
    estimated = (
        subs["is_latest"].astype(bool).to_numpy()
        & subs["verdict"].isin(["pass", "fail"]).to_numpy()
        & ~(subs["advisory"].astype(bool) & subs["label"].notna()).to_numpy()
    )
    assert estimated.sum() == rec["n_unlabeled_decided"]
    offered = estimated & (pd.to_numeric(subs["inclusion_p"]).fillna(0) > 0).to_numpy()
    for v in ("pass", "fail"):
        share = rec["audits"][v]
        rows = offered & (subs["verdict"] == v).to_numpy()
        assert share["used"] and share["weighted"] and share["n_offered"] == rows.sum() > 30
        assert share["ci"][0] <= acceptable[rows].mean() <= share["ci"][1], v
    assert rec["ci"][0] <= acceptable[estimated].mean() <= rec["ci"][1]
    assert "weighted by 1/inclusion_p" in rec["rests_on"]
