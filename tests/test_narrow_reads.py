"""Lean reads of the store: the narrow readers and counts give what the whole views give.

``dataset.view_columns`` and ``dataset.question_settings`` against ``answers()`` /
``submissions()``; the agreement analyses on only the columns ``input_columns``
names; the contradiction flag counted on distinct answers against the row-by-row
rule; the bootstrap on value counts against the row bootstrap.
"""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from calibrate import dataset
from calibrate.analysis import agreement as lib
from calibrate.analysis import approvers, corrected
from calibrate.analysis.bootstrap import bootstrap_ci, bootstrap_counts_ci
from calibrate.analysis.stats import wilson_interval
from calibrate.consistency import contradicting_results, contradiction_count
from calibrate.store import connect

LIST_COLUMNS = {"pass_names", "unsure_names", "levels"}


@pytest.fixture(scope="module")
def con(sample_store):
    c = connect(sample_store, read_only=True)
    yield c
    c.close()


def _plain(series: pd.Series) -> list:
    """Values as Python objects with every kind of missing as None, for comparing frames."""
    return [None if v is None or v is pd.NA or v != v else v for v in series.astype(object)]


@pytest.mark.parametrize("view", ["labeled", "labeled_answers"])
def test_view_columns_equal_the_whole_view(con, view):
    whole = dataset.submissions(con) if view == "labeled" else dataset.answers(con)
    columns = [c for c in whole.columns if c not in LIST_COLUMNS]
    lean = dataset.view_columns(con, view, columns)
    assert list(lean.columns) == columns and len(lean) == len(whole)
    for c in columns:
        assert _plain(lean[c]) == _plain(whole[c]), c
        if isinstance(lean[c].dtype, pd.CategoricalDtype):
            cats = list(lean[c].cat.categories)
            assert cats == sorted(cats)


def test_view_columns_apply_filters_and_keep_the_rows_in_any_order(con):
    filters = dataset.Filters(process="expense-review", since=pd.Timestamp("2026-09-01", tz="UTC"))
    whole = dataset.answers(con, filters, labeled_only=True)
    assert 0 < len(whole) < len(dataset.answers(con))
    lean = dataset.view_columns(
        con, "labeled_answers", ["check_id", "position", "p"], filters, labeled_only=True
    )
    assert _plain(lean["check_id"]) == _plain(whole["check_id"])
    loose = dataset.view_columns(
        con, "labeled_answers", ["check_id", "position"], filters, labeled_only=True, ordered=False
    )
    key = ["check_id", "position"]
    assert sorted(map(tuple, loose[key].astype(object).to_numpy().tolist())) == sorted(
        map(tuple, whole[key].astype(object).to_numpy().tolist())
    )


def test_view_columns_refuse_unknown_names_and_read_empty_results(con):
    with pytest.raises(ValueError, match="unknown view"):
        dataset.view_columns(con, "checks", ["check_id"])
    with pytest.raises(ValueError, match="cannot read columns"):
        dataset.view_columns(con, "labeled", ["p"])
    with pytest.raises(ValueError, match="cannot read columns"):
        dataset.view_columns(con, "labeled_answers", ["pass_names"])
    empty = dataset.view_columns(con, "labeled", ["model", "label"], dataset.Filters(model="none"))
    assert empty.empty and list(empty.columns) == ["model", "label"]


def test_question_settings_are_what_the_rows_carry(con):
    settings = dataset.question_settings(con)
    rows = dataset.answers(con)
    rows = rows[rows["in_process_file"]].drop_duplicates("question_id")
    assert set(settings) == set(rows["question_id"])
    for rec in rows.to_dict("records"):
        s = settings[rec["question_id"]]
        for key in ("pass_names", "levels"):
            want = None if rec[key] is None else list(rec[key])
            assert s[key] == want
        assert s["one_of"] == (None if pd.isna(rec["one_of"]) else rec["one_of"])
        assert s["pass_level"] == (None if pd.isna(rec["pass_level"]) else rec["pass_level"])


@pytest.mark.parametrize(
    ("analysis", "by"),
    [
        ("agreement", None),
        ("agreement", ["step", "week"]),
        ("agreement", ["version", "approver", "day"]),
        ("agreement", []),
        ("question", ["question", "model"]),
        ("approvers", None),
        ("approvers", ["step", "month"]),
        ("corrected", None),
        ("corrected", ["process", "week"]),
    ],
)
def test_agreement_on_the_input_columns_equals_the_whole_view(con, analysis, by):
    columns = lib.input_columns(by, analysis=analysis)
    view = "labeled_answers" if analysis == "question" else "labeled"
    lean = dataset.view_columns(con, view, columns, ordered=False)
    subs = dataset.submissions(con)
    if analysis == "question":
        got = lib.agreement_records(lib.agreement(None, by=by, answers=lean))
        want = lib.agreement_records(lib.agreement(subs, by=by, answers=dataset.answers(con)))
    elif analysis == "approvers":
        got = approvers.approver_records(approvers.approvers(lean, by=by))
        want = approvers.approver_records(approvers.approvers(subs, by=by))
    elif analysis == "corrected":
        got = corrected.corrected_records(corrected.corrected_pass_rate(lean, by=by))
        want = corrected.corrected_records(corrected.corrected_pass_rate(subs, by=by))
    else:
        got = lib.agreement_records(lib.agreement(lean, by=by))
        want = lib.agreement_records(lib.agreement(subs, by=by))
    assert got == want and len(got) > 0


def test_input_columns_name_the_view_columns():
    # ``at`` too: the span of the draws' design (a fail before the step's switch was offered by
    # no draw), which the unequal-draw flags read.
    assert lib.input_columns(None) == [
        "verdict", "label", "conflict", "model", "audited", "inclusion_p", "advisory", "at",
        "process", "step",
    ]  # fmt: skip
    assert "ask" in lib.input_columns(["question"], analysis="question")
    # Elsewhere the analysis itself refuses the question key, with its own message.
    assert "ask" not in lib.input_columns(["question"], analysis="approvers")
    with pytest.raises(ValueError, match="unknown analysis"):
        lib.input_columns(None, analysis="kappa")
    with pytest.raises(ValueError, match="unknown group key"):
        lib.input_columns(["colour"])


def test_contradictions_counted_on_distinct_answers_equal_the_row_rule(sample_store, tmp_path):
    path = tmp_path / "store.duckdb"
    shutil.copy(sample_store, path)
    con = connect(path)
    try:
        assert contradiction_count(con) == 0
        # Flip some recorded results and drop a confidence: the thresholds now disagree.
        con.execute(
            """UPDATE answers SET result = CASE result WHEN 'pass' THEN 'fail' ELSE 'pass' END
               WHERE hash(check_id, position) % 7 = 0"""
        )
        con.execute("UPDATE answers SET confidence = NULL WHERE hash(check_id) % 11 = 0")
        frame = con.execute(
            """SELECT question_id, ask, kind, p, name, level, confidence, result, in_process_file,
                      pass_p, fail_p, pass_names, unsure_names, pass_level, min_confidence,
                      one_of, levels
               FROM labeled_answers WHERE in_process_file AND result IS NOT NULL"""
        ).df()
        want = int(contradicting_results(frame).sum())
        assert want > 100
        assert contradiction_count(con) == want
    finally:
        con.close()


# --------------------------------------------------------------------------- bootstrap on counts


def test_counts_bootstrap_of_a_rate_matches_the_row_bootstrap_and_wilson():
    y = np.repeat([1.0, 0.0], [300, 700])
    rows = bootstrap_ci(lambda s: s.mean(axis=1), y, n_boot=4000, vectorized=True, seed=1)
    counts = bootstrap_counts_ci(
        lambda c: c @ np.array([1.0, 0.0]) / c.sum(axis=1), [300, 700], n_boot=4000, seed=2
    )
    low, high = wilson_interval(300, 1000)
    width = float(high - low)
    for a, b in zip(rows, counts, strict=True):
        assert abs(a - b) < 0.05 * width
    assert abs(counts[0] - low) < 0.05 * width and abs(counts[1] - high) < 0.05 * width


def test_counts_bootstrap_edges():
    stat = lambda c: c[:, 0] / c.sum(axis=1)  # noqa: E731
    assert all(np.isnan(bootstrap_counts_ci(stat, [0, 0])))
    lo, hi = bootstrap_counts_ci(stat, [5, 5], n_boot=200, seed=3)
    assert (lo, hi) == bootstrap_counts_ci(stat, np.array([5, 5]), n_boot=200, seed=3)
    with pytest.raises(ValueError, match="non-negative integers"):
        bootstrap_counts_ci(stat, [1.5, 2])
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_counts_ci(stat, [1, 2], n_boot=0)
    # A statistic undefined on most resamples gives no interval.
    assert all(np.isnan(bootstrap_counts_ci(lambda c: np.full(len(c), np.nan), [3, 4])))


def test_calibrate_store_step_by_step_equals_the_whole_view(con):
    from calibrate.analysis.calibration import calibrate_answers, calibrate_store

    whole = calibrate_answers(dataset.answers(con, labeled_only=True), n_boot=20)
    lean = calibrate_store(con, n_boot=20)
    assert len({q.step for q in lean}) == 3
    assert [q.to_dict() for q in lean] == [q.to_dict() for q in whole]
    one = calibrate_store(con, dataset.Filters(step="check_vendor"), n_boot=20)
    assert [q.to_dict() for q in one] == [q.to_dict() for q in whole if q.step == "check_vendor"]
