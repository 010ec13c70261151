"""The names in calibrate.__all__ resolve, and the light import stays light."""

from __future__ import annotations

import subprocess
import sys

import calibrate


def test_every_public_name_resolves():
    for name in calibrate.__all__:
        assert getattr(calibrate, name) is not None, name


def test_import_does_not_load_plotting_or_sklearn():
    code = "import sys, calibrate; print('matplotlib' in sys.modules, 'sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_analysts_three_calls(sample_store, tmp_path):
    """submissions, agreement, assess_store + write_report: levels as keywords, the store named."""
    con = calibrate.connect(sample_store, read_only=True)
    try:
        subs = calibrate.submissions(con, calibrate.Filters(process="invoice-matching"))
        table = calibrate.agreement(subs, by=["step", "model"])
        assert list(table["step"]) == ["match_invoice"]
        report = calibrate.assess_store(
            con, calibrate.Filters(process="invoice-matching"), alpha=0.1, n_boot=20
        )
    finally:
        con.close()
    assert report.store == str(sample_store)
    same = calibrate.ReadinessOptions(alpha=0.1)
    assert report.options.alpha == same.alpha == 0.1
    written = calibrate.write_report(report, tmp_path, formats="md")
    assert "from store ." not in written["md"].read_text(encoding="utf-8")
    assert (
        "sample" in written["md"].read_text(encoding="utf-8").split("from store ")[1].split("\n")[0]
    )


def test_readers_refuse_a_name_the_store_lacks_but_not_an_empty_window(sample_store):
    """As the README says: a process, step or model the store lacks is a ValueError naming what
    it has (was an empty frame, and so an empty agreement table); a window is only a window."""
    import pytest

    con = calibrate.connect(sample_store, read_only=True)
    try:
        processes = ", ".join(
            r[0] for r in con.execute("SELECT DISTINCT process FROM checks ORDER BY 1").fetchall()
        )
        im = {"process": "invoice-matching"}
        for kwargs, message in [
            ({"process": "nope"}, f"^process 'nope' matches no check; processes in the store: {processes}$"),
            ({**im, "step": "nope"}, "^step 'nope' matches no check; steps in the store: match_invoice$"),
            ({**im, "model": "nope"}, "^model 'nope' matches no check; models in the store: "),
        ]:  # fmt: skip
            for read in (calibrate.submissions, calibrate.answers, calibrate.suggest_from_store):
                with pytest.raises(ValueError, match=message):
                    read(con, calibrate.Filters(**kwargs))
        late = calibrate.Filters(**im, since="2099-01-01")
        assert calibrate.submissions(con, late).empty and calibrate.answers(con, late).empty
        assert calibrate.agreement(calibrate.submissions(con, late), by=["step"]).empty
    finally:
        con.close()


def test_filters_validate_times_at_entry():
    import pytest

    with pytest.raises(
        ValueError, match="since 'yesterday' is not a time: give a datetime, a date or ISO 8601"
    ):
        calibrate.Filters(since="yesterday")
    assert calibrate.Filters(until="2026-10-01").until.isoformat() == "2026-10-01T00:00:00+00:00"
    # A window that cannot hold a check is a mistake (it read as an empty result before).
    with pytest.raises(ValueError, match="since 2026-12-01T00:00:00[+]00:00 is later than until"):
        calibrate.Filters(since="2026-12-01", until="2026-01-01")
    assert calibrate.Filters(since="2026-12-01", until="2026-12-01").since is not None


def test_the_calls_after_the_switch(tmp_path):
    """draw_audit, write_audit_csv, audit_draws and monitor_store from the top level."""
    from calibrate.simulate import simulate

    out = tmp_path / "export"
    simulate(out, runs=600, seed=3, enforce_weeks=4)
    con = calibrate.connect(tmp_path / "s.duckdb")
    try:
        from calibrate.ingest import ingest

        ingest(con, [out])
        drawn = calibrate.draw_audit(
            con, process="invoice-matching", step="match_invoice", rate=0.5, seed=1
        )
        calibrate.write_audit_csv(drawn, tmp_path / "audit.csv")
        assert len(calibrate.audit_draws(con)) == 1
        watch = calibrate.monitor_store(con)
    finally:
        con.close()
    assert (tmp_path / "audit.csv").read_text(encoding="utf-8").count("\n") > 1
    assert watch is not None


def test_bad_arguments_after_the_switch_are_value_errors_naming_the_argument(tmp_path):
    """As the README says: a bad argument is a ValueError that names what is accepted, in the
    API's own words (``rate``, not ``--rate``); a name the store lacks is refused, not an empty
    draw or report; nothing is stored."""
    import pytest

    from calibrate.ingest import ingest
    from calibrate.simulate import simulate

    simulate(tmp_path / "export", runs=600, seed=3, enforce_weeks=4)
    con = calibrate.connect(tmp_path / "s.duckdb")
    try:
        ingest(con, [tmp_path / "export"])
        step = {"process": "invoice-matching", "step": "match_invoice"}
        for kwargs, message in [
            ({**step, "rate": 1.5}, r"^rate must be in \(0, 1\], got 1.5$"),
            ({**step}, "^give one of rate and per_week$"),
            ({**step, "per_week": 0}, "^per_week must be positive"),
            ({**step, "rate": 0.5, "verdicts": ["unsure"]}, "^verdicts takes pass and/or fail"),
            ({"process": "nope", "step": "match_invoice", "rate": 0.5},
             "^process 'nope' matches no check; processes in the store: expense-review, "
             "invoice-matching"),
            ({"process": "expense-review", "step": "review_expense", "rate": 0.5},
             "no enforced step .*; enforced steps in the store: invoice-matching / match_invoice"),
        ]:  # fmt: skip
            with pytest.raises(ValueError, match=message):
                calibrate.draw_audit(con, **kwargs, seed=1)
        assert calibrate.audit_draws(con).empty
        for kwargs, message in [
            ({"alpha": 2}, r"^alpha must be in \(0, 0.5\) \(the audit .*\), got 2$"),
            ({"delta": 0}, r"^delta must be in \(0, 1\), got 0$"),
            ({"beta": 1.5}, r"^beta must be in \(0, 1\], got 1.5$"),
            ({"plan_weeks": 0}, "^plan_weeks must be at least 1"),
            ({"step": "nope"}, "^step 'nope' matches no check; steps in the store: "),
            # Was an empty report (black-box F5), which reads as "nothing enforced".
            ({"model": "nope"}, "^model 'nope' matches no check; models in the store: "),
        ]:
            with pytest.raises(ValueError, match=message):
                calibrate.monitor_store(con, **kwargs)
        # A process with checks but none enforced: nothing to monitor, not an error.
        assert calibrate.monitor_store(con, process="expense-review").steps == []
    finally:
        con.close()


def test_the_error_classes_are_public():
    """Black-box F12: docstrings name StoreBusyError, StoreError and UsageError, which
    ``calibrate`` did not export (only CalibrateError)."""
    from calibrate import errors

    for name in ("StoreBusyError", "StoreError", "UsageError"):
        assert name in calibrate.__all__ and getattr(calibrate, name) is getattr(errors, name)
    assert issubclass(calibrate.UsageError, ValueError)


def test_unknown_process_in_process_questions_names_the_processes(sample_store):
    """Black-box F11: ``process_questions(con, process="nope")`` returned ``{}``."""
    import pytest

    con = calibrate.connect(sample_store, read_only=True)
    try:
        with pytest.raises(calibrate.UsageError, match="^process 'nope' matches no check; "):
            calibrate.process_questions(con, process="nope")
        with pytest.raises(calibrate.UsageError, match="^step 'nope' matches no check; "):
            calibrate.process_questions(con, process="invoice-matching", step="nope")
        assert calibrate.process_questions(con, process="invoice-matching")
    finally:
        con.close()


def test_rate_tables_refuse_a_bad_level_or_min_n_alike(sample_store):
    """Black-box F6: ``approvers(confidence=2)`` gave NaN intervals without a word, and
    ``min_n=-5`` was accepted by agreement, approvers and corrected_pass_rate."""
    import pytest

    con = calibrate.connect(sample_store, read_only=True)
    try:
        subs = calibrate.submissions(con, calibrate.Filters(process="invoice-matching"))
    finally:
        con.close()
    for table in (calibrate.agreement, calibrate.approvers, calibrate.corrected_pass_rate):
        for kwargs, message in [
            ({"confidence": 2}, r"^confidence must be in \(0, 1\), got 2$"),
            ({"confidence": 0}, r"^confidence must be in \(0, 1\), got 0$"),
            ({"min_n": -5}, "^min_n must be a whole number at least 1, got -5$"),
            ({"min_n": 2.5}, "^min_n must be a whole number at least 1, got 2.5$"),
        ]:
            with pytest.raises(calibrate.UsageError, match=message):
                table(subs, **kwargs)


def test_a_bad_alpha_is_one_error_in_one_wording(sample_store):
    """Black-box F12: the same bad alpha was a plain ValueError "must be a number in (0, 1)"
    in suggest_thresholds and a UsageError "must be in ..." elsewhere."""
    import pytest

    con = calibrate.connect(sample_store, read_only=True)
    try:
        subs = calibrate.submissions(con)
        ans = calibrate.answers(con, labeled_only=True)
        calls = {
            "suggest_thresholds": lambda a: calibrate.suggest_thresholds(subs, ans, alpha=a),
            "suggest_from_store": lambda a: calibrate.suggest_from_store(con, alpha=a),
            "assess_store": lambda a: calibrate.assess_store(con, alpha=a),
            "monitor_store": lambda a: calibrate.monitor_store(con, alpha=a),
        }
        for name, call in calls.items():
            with pytest.raises(calibrate.UsageError, match=r"^alpha must be in \(0, [\d.]+\)"):
                call(2)
                pytest.fail(f"{name} took alpha=2")
    finally:
        con.close()


def test_write_report_refuses_what_is_no_report(tmp_path):
    """Black-box F12: ``write_report("x", dir)`` raised ``AttributeError: 'str' object has no
    attribute 'to_dict'``."""
    import pytest

    with pytest.raises(calibrate.UsageError, match="^report must be a ReadinessReport such as"):
        calibrate.write_report("notareport", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_draw_audit_on_a_read_only_store_says_to_open_it_for_writing(tmp_path):
    """Black-box F7: DuckDB's "Cannot execute statement of type "SELECT" ... read-only"."""
    import pytest

    from calibrate.ingest import ingest
    from calibrate.simulate import simulate

    simulate(tmp_path / "export", runs=600, seed=3, enforce_weeks=4)
    path = tmp_path / "s.duckdb"
    con = calibrate.connect(path)
    ingest(con, [tmp_path / "export"])
    con.close()
    con = calibrate.connect(path, read_only=True)
    try:
        with pytest.raises(
            calibrate.StoreError,
            match="is open read-only and an audit draw is stored: open the store for writing",
        ):
            calibrate.draw_audit(con, process="invoice-matching", step="match_invoice", rate=0.5,
                                 seed=1, out=tmp_path / "a.csv")  # fmt: skip
        assert calibrate.audit_draws(con).empty
    finally:
        con.close()
    assert not (tmp_path / "a.csv").exists()
