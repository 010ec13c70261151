"""The simulator: deterministic for a seed, and over-confident by construction."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import numpy as np
import pandas as pd

from calibrate.simulate import simulate


def digest(folder) -> str:
    h = hashlib.sha256()
    for name in ("runs.jsonl", "decisions.csv", ".truth/truth.csv"):
        h.update((folder / name).read_bytes())
    return h.hexdigest()


def test_same_seed_same_files_across_processes(tmp_path):
    # Different hash seeds in two interpreters: set iteration order must not leak into the output.
    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"s{hash_seed}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        code = f"from calibrate.simulate import simulate; simulate({str(out)!r}, runs=150, seed=4)"
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        outs.append(digest(out))
    assert outs[0] == outs[1]
    simulate(tmp_path / "other", runs=150, seed=5)
    assert digest(tmp_path / "other") != outs[0]


def test_yes_no_answers_are_over_confident(tmp_path):
    simulate(tmp_path, runs=1500, seed=2)
    truth = pd.read_csv(tmp_path / ".truth" / "truth.csv")
    rows = []
    for line in (tmp_path / "runs.jsonl").read_text().splitlines():
        doc = json.loads(line)
        if doc["process"] != "invoice-matching" or "check" not in doc["steps"]["match_invoice"]:
            continue
        check = doc["steps"]["match_invoice"]["check"]
        if check["verdict"] != "error" and "history" not in doc["steps"]["match_invoice"]:
            rows.append((doc["run"], check["questions"][0]["answer"]))
    frame = pd.DataFrame(rows, columns=["run", "p"]).merge(truth[truth.attempt == 1], on="run")
    mid = frame[(frame.p_calibrated > 0.6) & (frame.p_calibrated < 0.95)]

    def logit(p):
        return np.log(p) - np.log1p(-p)

    # The report is further from 0.5 than the calibrated probability: over-confident by construction.
    assert np.median(logit(mid.p.clip(1e-3, 1 - 1e-3)) / logit(mid.p_calibrated)) > 1.3
    high = frame[frame.p >= 0.95]
    assert high.acceptable.mean() < high.p.mean()
    assert np.corrcoef(frame.p, frame.acceptable)[0, 1] > 0.3


def test_start_moves_the_timeline_and_the_cli_warns_of_records_after_today(tmp_path):
    from typer.testing import CliRunner

    from calibrate.cli import app

    moved = simulate(
        tmp_path / "m", runs=120, seed=2, start=pd.Timestamp("2026-01-05").to_pydatetime()
    )
    assert moved["period"] == {"from": "2026-01-05T00:00:00Z", "to": "2026-03-30T00:00:00Z"}
    text = (tmp_path / "m" / "runs.jsonl").read_text()
    times = pd.to_datetime(re.findall(r'"at":"([^"]+)"', text), utc=True)
    assert times.min() >= pd.Timestamp("2026-01-05", tz="UTC")
    assert times.max() <= pd.Timestamp("2026-03-30", tz="UTC")
    # Far in the future: the records run past today, and the warning says which --start fixes it.
    result = CliRunner().invoke(
        app, ["simulate", "--out", str(tmp_path / "f"), "--runs", "60", "--start", "2100-01-04"]
    )
    assert result.exit_code == 0, result.output
    assert "after today" in result.stderr and "--start 20" in result.stderr


def test_the_enforced_manifest_adds_up_and_agrees_with_status(tmp_path):
    """With enforced weeks the manifest's checks are its labeled plus unlabeled ones, and each
    count is what `calibrate status` finds after ingest (was: the enforced weeks' checks counted
    in neither, their escalations as decisions only)."""
    from calibrate.ingest import ingest
    from calibrate.status import store_status
    from calibrate.store import connect

    manifest = simulate(tmp_path / "sim", runs=600, seed=1, enforce_weeks=4)
    assert manifest["checks"] == manifest["labeled_checks"] + manifest["unlabeled_checks"]
    con = connect(tmp_path / "s.duckdb")
    try:
        ingest(con, [tmp_path / "sim"])
        info = store_status(con)
    finally:
        con.close()
    for key in ("runs", "checks", "answers", "decisions", "labeled_checks", "unlabeled_checks"):
        assert info[key] == manifest[key], key
    assert info["quarantined"] == 0
