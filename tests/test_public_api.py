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


def test_filters_validate_times_at_entry():
    import pytest

    with pytest.raises(
        ValueError, match="since 'yesterday' is not a time: give a datetime, a date or ISO 8601"
    ):
        calibrate.Filters(since="yesterday")
    assert calibrate.Filters(until="2026-10-01").until.isoformat() == "2026-10-01T00:00:00+00:00"


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
