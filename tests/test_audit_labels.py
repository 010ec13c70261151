"""An audit label is the reviewer's decision made after the draw, never an earlier one."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest

from calibrate import audit
from calibrate.analysis.monitor import monitor_store
from calibrate.defaults import STALE_AFTER_DAYS
from calibrate.ingest import ingest
from calibrate.simulate import simulate
from calibrate.simulate_enforced import review_audit
from calibrate.store import connect

STEP = {"process": "invoice-matching", "step": "match_invoice"}
DRAWN_AT = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    out = tmp_path_factory.mktemp("labels") / "exp"
    simulate(out, runs=1500, seed=11, enforce_weeks=6, shift_week=2, shift=0.8)
    return out


def decisions_csv(path, rows, decision, at):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(audit.DECISION_COLUMNS)
        for r in rows.to_dict("records"):
            writer.writerow([r["run_id"], r["process"], r["step"], r["attempt"], decision,
                             "someone", at, ""])  # fmt: skip


def reviewed_draw(tmp_path, export):
    """A store of the export with half the enforced passes drawn and the draw reviewed."""
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [export])
    result = audit.draw(con, **STEP, rate=0.5, seed=3, now=DRAWN_AT)
    audit.write_csv(result, tmp_path / "audit.csv")
    filled = tmp_path / "filled.csv"
    review_audit(tmp_path / "audit.csv", export / ".truth", filled)
    ingest(con, [filled])
    return con, result


def false_passes(con):
    (step,) = [s for s in monitor_store(con).steps if s.process == STEP["process"]]
    return step.false_pass


def test_decisions_before_the_draw_are_not_audits_and_later_conflicts_are_counted(tmp_path, export):
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [export])
    result = audit.draw(con, **STEP, rate=0.5, seed=3, now=DRAWN_AT)
    path = tmp_path / "audit.csv"
    audit.write_csv(result, path)
    # Somebody approved 20 of the drawn checks before the draw was made.
    early = result.drawn.iloc[:20]
    decisions_csv(tmp_path / "early.csv", early, "approved", "2026-11-30T12:00:00Z")
    ingest(con, [tmp_path / "early.csv"])
    fp = false_passes(con)
    assert fp.audited == 0 and fp.pending == result.n_drawn
    assert fp.before_draw == 20
    # The reviewer's blind decisions arrive: they are the labels, whatever came before.
    filled = tmp_path / "filled.csv"
    review_audit(path, export / ".truth", filled)
    reviewed = pd.read_csv(filled, dtype=str, keep_default_na=False)
    assert (pd.to_datetime(reviewed["at"], utc=True) >= DRAWN_AT).all()
    ingest(con, [filled])
    fp = false_passes(con)
    assert fp.audited == result.n_drawn and fp.pending == 0
    assert fp.bad == int((reviewed["decision"] == "rejected").sum())
    assert fp.conflicts == 0 and fp.before_draw == 20
    # A second opinion after the review that disagrees is a conflict; the first one stands.
    rejected = reviewed[reviewed["decision"] == "rejected"].iloc[:3]
    later = result.drawn[result.drawn["run_id"].isin(rejected["run"])]
    decisions_csv(tmp_path / "later.csv", later, "approved", "2027-06-01T00:00:00Z")
    ingest(con, [tmp_path / "later.csv"])
    again = false_passes(con)
    assert again.conflicts == 3 and again.bad == fp.bad
    assert again.to_dict()["conflicts"] == 3 and again.to_dict()["decisions_before_draw"] == 20
    con.close()


def test_pending_draws_say_to_record_them_and_what_waits_behind(tmp_path, export):
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [export])
    result = audit.draw(con, **STEP, rate=0.5, seed=3, now=DRAWN_AT)
    path, filled = tmp_path / "audit.csv", tmp_path / "filled.csv"
    audit.write_csv(result, path)
    (step,) = monitor_store(con).steps
    assert step.status == "no_audits"
    assert step.action.startswith(
        f"{result.n_drawn} drawn checks await a decision (draw {result.draw_id}, 2026-12-01): "
        "record them before drawing again"
    )
    assert "draw an audit" not in step.action
    # Ten decisions come in, but not the first drawn check's: they wait behind it.
    review_audit(path, export / ".truth", filled)
    rows = pd.read_csv(filled, dtype=str, keep_default_na=False)
    rows.iloc[1:11].to_csv(tmp_path / "some.csv", index=False)
    ingest(con, [tmp_path / "some.csv"])
    (step,) = monitor_store(con).steps
    fp = step.false_pass
    assert fp.audited == 0 and fp.pending == result.n_drawn - 10 and fp.waiting == 10
    assert "10 decided audits wait behind the first pending one" in step.action
    assert step.to_dict()["false_pass"]["waiting_behind_pending"] == 10
    assert step.to_dict()["false_pass"]["pending_draws"] == [
        {"draw_id": result.draw_id, "drawn_at": DRAWN_AT.isoformat(), "pending": fp.pending,
         "decided_before_draw": 0}
    ]  # fmt: skip
    con.close()


def test_certification_reads_the_same_audit_label_as_the_monitor(tmp_path, export):
    """The labeled view (what thresholds, agreement and the report read) labels a drawn check by
    the first decision at or after its draw, as the monitor does: an earlier one is no label."""
    from calibrate.dataset import Filters, submissions

    con = connect(tmp_path / "s.duckdb")
    ingest(con, [export])
    result = audit.draw(con, **STEP, rate=0.5, seed=3, now=DRAWN_AT)
    audit.write_csv(result, tmp_path / "audit.csv")
    early = result.drawn.iloc[:20]
    decisions_csv(tmp_path / "early.csv", early, "approved", "2026-11-30T12:00:00Z")
    ingest(con, [tmp_path / "early.csv"])
    drawn = set(result.drawn["check_id"])

    def audited_labels():
        subs = submissions(con, Filters(process=STEP["process"]))
        return subs[subs["check_id"].isin(drawn)].set_index("check_id")["label"]

    assert audited_labels().isna().all()  # the approvals before the draw label nothing
    filled = tmp_path / "filled.csv"
    review_audit(tmp_path / "audit.csv", export / ".truth", filled)
    ingest(con, [filled])
    reviewed = pd.read_csv(filled, dtype=str, keep_default_na=False)
    labels = audited_labels()
    assert len(labels) == result.n_drawn and labels.notna().all()
    assert int((~labels.astype(bool)).sum()) == int((reviewed["decision"] == "rejected").sum())
    assert int((~labels.astype(bool)).sum()) == false_passes(con).bad
    con.close()


def test_certification_leaves_audit_labels_out_unless_every_decision_is_kept(tmp_path, export):
    """A draw among the enforced check's own passes is not a sample of every submission: the
    threshold search certifies on reviews of every verdict and counts the audits it left out;
    --with-escalations (Filters(escalations=True)) keeps every decision after the switch."""
    from calibrate.analysis.thresholds import suggest_from_store
    from calibrate.dataset import Filters

    con, result = reviewed_draw(tmp_path, export)
    (default,) = suggest_from_store(con, Filters(**STEP)).steps
    (kept,) = suggest_from_store(con, Filters(**STEP, escalations=True)).steps
    con.close()
    assert default.left_out["audits"] == result.n_drawn
    assert any("decisions after the switch left out (audit draws)" in n for n in default.notes)
    assert kept.left_out["audits"] == 0
    assert kept.n_labeled > default.n_labeled + result.n_drawn - 1
    # Kept, they are no random sample of the submissions: nothing is certified or suggested on
    # them (an outside review: --with-escalations read READY with certified bounds).
    assert kept.status == "selected_sample" and kept.certified is None and kept.suggested is None
    assert any("run without --with-escalations" in n for n in kept.notes)
    assert not any("never fails" in n for n in kept.notes)  # nothing is suggested to say it of


def test_readiness_of_an_enforced_step_sets_aside_with_escalations(tmp_path, export):
    from calibrate.analysis import readiness as rd
    from calibrate.dataset import Filters

    con, _ = reviewed_draw(tmp_path, export)
    report = rd.assess_store(con, Filters(**STEP, escalations=True), store="s", n_boot=20)
    plain = rd.assess_store(con, Filters(**STEP), store="s", n_boot=20)
    # The step is enforced: the flag is set aside, its verdict the default's (outside review D6).
    (step,), (default,) = report.steps, plain.steps
    assert step.enforcement is not None and step.thresholds.status != "selected_sample"
    assert (step.decision, step.reasons) == (default.decision, default.reasons)
    assert any("--with-escalations does not apply" in n for n in report.notes)
    con.close()


def test_a_date_alone_on_the_draws_day_is_an_audit_and_an_earlier_one_is_named(tmp_path, export):
    """A reviewer who writes only the date (read as UTC midnight) on the day of a draw made in
    the afternoon has made audits; a date before the draw's day has not, and the action says
    what is wrong with those decisions instead of asking to record them again."""
    con = connect(tmp_path / "s.duckdb")
    ingest(con, [export])
    afternoon = datetime(2026, 12, 1, 17, 14, tzinfo=UTC)
    result = audit.draw(con, **STEP, rate=0.5, seed=3, now=afternoon)
    path, filled = tmp_path / "audit.csv", tmp_path / "filled.csv"
    audit.write_csv(result, path)
    review_audit(path, export / ".truth", filled)
    rows = pd.read_csv(filled, dtype=str, keep_default_na=False)
    # The day before the draw, by mistake: recorded, but no audits.
    rows.assign(at="2026-11-30").to_csv(tmp_path / "early.csv", index=False)
    ingest(con, [tmp_path / "early.csv"])
    (step,) = monitor_store(con).steps
    fp = step.false_pass
    assert fp.audited == 0 and fp.pending == result.n_drawn == fp.before_draw
    assert "await a decision" not in step.action and "record them" not in step.action
    assert step.action.startswith(
        f"{result.n_drawn} drawn checks have decisions, but all dated before their draw "
        f"(draw {result.draw_id}, 2026-12-01 17:14 UTC): those are not audits."
    )
    assert "correct their `at`" in step.action
    assert fp.to_dict()["pending_draws"][0]["decided_before_draw"] == result.n_drawn
    # The same decisions dated the draw's day: audits, in the monitor and in certification.
    rows.assign(at="2026-12-01").to_csv(tmp_path / "early.csv", index=False)
    ingest(con, [tmp_path / "early.csv"])
    (step,) = monitor_store(con).steps
    fp = step.false_pass
    assert fp.audited == result.n_drawn and fp.pending == 0 and fp.before_draw == 0
    assert fp.bad == int((rows["decision"] == "rejected").sum())
    assert step.action is None or "drawn checks" not in step.action
    labels = con.execute(
        "SELECT count(*) FROM labeled WHERE audited AND label IS NOT NULL"
    ).fetchone()[0]
    assert labels == result.n_drawn
    con.close()


def test_a_date_alone_in_a_file_ingested_before_the_draw_is_no_audit(tmp_path, export):
    """A daily export of decisions dated by day, already in the store when the draw is made,
    cannot hold a review made for the draw: its midnight decisions stay before the draw."""
    from datetime import timedelta

    con = connect(tmp_path / "s.duckdb")
    ingest(con, [export])
    enforced = con.execute(
        "SELECT run_id, process, step, attempt FROM labeled "
        "WHERE process = ? AND step = ? AND NOT advisory AND verdict = 'pass' AND label IS NULL",
        [STEP["process"], STEP["step"]],
    ).df()
    draw_at = datetime.now(UTC) + timedelta(hours=1)
    decisions_csv(tmp_path / "daily.csv", enforced, "returned", f"{draw_at:%Y-%m-%d}")
    ingest(con, [tmp_path / "daily.csv"])  # ingested before the draw
    result = audit.draw(con, **STEP, rate=0.5, seed=3, now=draw_at)
    assert result.n_drawn > 0
    fp = false_passes(con)
    assert fp.audited == 0 and fp.before_draw == result.n_drawn
    con.close()


def test_readiness_and_approvers_read_the_certification_sample(tmp_path, export):
    """The report's labeled figures read what the search certifies on (reviews of every verdict);
    --with-escalations keeps audits even where no escalation was labeled; approvers leave
    audit-drawn decisions out."""
    from calibrate.analysis import approvers as approvers_mod
    from calibrate.analysis.readiness import assess_store
    from calibrate.analysis.thresholds import suggest_from_store
    from calibrate.dataset import Filters, submissions

    con = connect(tmp_path / "s.duckdb")
    ingest(con, [export])
    result = audit.draw(con, **STEP, rate=0.5, seed=3, now=DRAWN_AT)
    audit.write_csv(result, tmp_path / "audit.csv")
    review_audit(tmp_path / "audit.csv", export / ".truth", tmp_path / "filled.csv")
    ingest(con, [tmp_path / "filled.csv"])
    con.execute("DELETE FROM decisions WHERE source = 'escalation'")  # no labeled escalation
    report = assess_store(con, Filters(**STEP), store="s")
    (step,) = report.steps
    (searched,) = suggest_from_store(con, Filters(**STEP)).steps
    errors = con.execute(
        "SELECT count(*) FROM labeled WHERE process = ? AND step = ? AND advisory "
        "AND verdict = 'error' AND label IS NOT NULL",
        [STEP["process"], STEP["step"]],
    ).fetchone()[0]
    assert step.n_labeled == searched.n_labeled - errors  # the report counts no error verdict
    assert step.left_out["audits_after_switch"] == result.n_drawn
    (kept,) = suggest_from_store(con, Filters(**STEP, escalations=True)).steps
    assert kept.left_out["audits"] == 0 and kept.n_labeled >= searched.n_labeled + result.n_drawn
    appr = approvers_mod.approvers(submissions(con, Filters(**STEP)))
    assert "audit-reviewer" not in set(appr["approver"].astype(str))
    con.close()


def test_a_window_holding_only_audits_of_the_enforced_check_is_searched_without_a_crash(
    tmp_path, export
):
    """`report --since` a date after the switch: every labeled check in the window is an audit, which
    the certification leaves out; the search says nothing is certified (it raised IndexError)."""
    from calibrate.analysis.thresholds import suggest_from_store
    from calibrate.dataset import Filters

    con, result = reviewed_draw(tmp_path, export)
    # After the last labeled check that is no audit (an escalation, a fail): only audits are labeled.
    (last,) = con.execute(
        'SELECT max("at") FROM labeled WHERE process = ? AND step = ? AND label IS NOT NULL'
        " AND (advisory OR verdict <> 'pass')",
        [STEP["process"], STEP["step"]],
    ).fetchone()
    since = (last + timedelta(seconds=1)).isoformat()
    (step,) = suggest_from_store(con, Filters(**STEP, since=since)).steps
    con.close()
    assert step.status == "insufficient_data" and step.certified is None
    assert step.left_out["audits"] > 0


def test_an_audit_overdue_makes_the_monitor_stale_and_the_step_not_kept_enforced(tmp_path, export):
    """A drawn check left undecided stops the stream: the monitor reads nothing new, so its "no
    alarm" vouches for nothing (outside review: it kept reporting ok and KEEP_ENFORCED)."""
    from calibrate.analysis.enforced_step import KEEP_ENFORCED, enforced_pattern

    con = connect(tmp_path / "s.duckdb")
    ingest(con, [export])
    (last,) = con.execute(
        'SELECT max("at") FROM labeled WHERE process = ? AND step = ?',
        [STEP["process"], STEP["step"]],
    ).fetchone()
    when = last - timedelta(days=STALE_AFTER_DAYS + 6)
    result = audit.draw(con, **STEP, rate=0.5, seed=3, now=when)
    path, filled = tmp_path / "audit.csv", tmp_path / "filled.csv"
    audit.write_csv(result, path)
    review_audit(path, export / ".truth", filled)
    rows = pd.read_csv(filled, dtype=str, keep_default_na=False)
    rows.iloc[1:].to_csv(tmp_path / "all_but_first.csv", index=False)
    ingest(con, [tmp_path / "all_but_first.csv"])
    (step,) = monitor_store(con).steps
    assert step.status == "stale" and step.false_pass.waiting == result.n_drawn - 1
    assert f"{when:%Y-%m-%d}" in step.warnings[0]
    enforcement = type("E", (), {"monitor": step, "alarm": False, "since": "x"})()
    _, pattern = enforced_pattern("READY", enforcement)
    assert pattern["recommended"] != KEEP_ENFORCED
    # The first decision comes in: the stream reads on, the monitor is no longer stale.
    rows.iloc[:1].to_csv(tmp_path / "first.csv", index=False)
    ingest(con, [tmp_path / "first.csv"])
    (step,) = monitor_store(con).steps
    con.close()
    assert step.status in ("ok", "warning", "alarm") and step.false_pass.audited == result.n_drawn


def test_todays_figures_with_every_decision_kept_are_the_reviews(tmp_path, export):
    """Black-box run: ``thresholds --with-escalations`` printed today's false passes "6.3% [5.0,
    7.8] of 1179" over the reviews pooled with a 50% pass-only draw and escalations, a figure
    that estimates nothing (agreement withholds it). Today's figures are now over the reviews of
    every verdict alone, as without --with-escalations, and say so."""
    from calibrate.analysis.thresholds import suggest_from_store
    from calibrate.dataset import Filters

    con, result = reviewed_draw(tmp_path, export)
    (default,) = suggest_from_store(con, Filters(**STEP)).steps
    (kept,) = suggest_from_store(con, Filters(**STEP, escalations=True)).steps
    con.close()
    assert kept.n_labeled >= default.n_labeled + result.n_drawn
    assert kept.current_rates == default.current_rates and default.current_rates.n
    assert kept.current_note and str(default.current_rates.n) in kept.current_note
    assert not default.current_note
    current = kept.to_dict()["current"]
    assert current["n"] == default.n_labeled and "reviews of every verdict" in current["note"]
    assert default.to_dict()["current"]["note"] is None
