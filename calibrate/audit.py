"""Audit draws: a stored random sample of enforced checks for a person to review.

After ``advisory`` is dropped (check-1 §3) a pass completes its step with no
person and a fail goes back to the agent; only unsure verdicts reach anyone.
The one unbiased look at the passes and fails is a random sample of them,
drawn by calibrate, stored with its design, and reviewed. ``calibrate audit
draw`` makes that sample:

* **Eligible**: the step's checks recorded with ``advisory: false`` whose
  verdict is one of ``verdicts`` and that no earlier draw considered. A check
  is considered by one draw at most, so it is never offered twice and its
  chance of being audited is the one stored.
* **Poisson sampling**: each eligible check is drawn independently with its
  inclusion probability ``pi``, from one seeded generator in a fixed order
  (check time, then check id), so the same store and seed give the same draw.
  Uniform: ``pi = rate`` for every check. By band (``by_band=True``): within
  each verdict the eligible checks are split in terciles of their answers'
  distance from the decision threshold; the near band is drawn at twice and
  the far band at half the middle band's probability, scaled so the expected
  size is the same as uniform. The probabilities depend on the answers and
  counts, never on a label.
* **Stored**: ``audit_draws`` (the design) and ``audit_eligible`` (every
  eligible check, drawn or not, with ``pi``). A decision on a drawn check is
  an audit because the store says it was drawn, not because of anything the
  reviewer writes; the ``labeled`` view carries it as ``audited``.

This is the one writer of the store besides ingest.
"""

from __future__ import annotations

import csv
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from calibrate.errors import UsageError
from calibrate.textsafe import csv_cell

#: The decision-table columns (docs/formats.md §3), filled by the reviewer.
DECISION_COLUMNS = ("run", "process", "step", "attempt", "decision", "by", "at", "note")
#: Read-only context after them; ingest ignores columns it does not know.
CONTEXT_COLUMNS = ("verdict", "checked_at", "model", "answers", "audit_draw", "inclusion_p")
#: Verdicts a draw may offer: the ones the check decides alone once enforced.
DRAWABLE = ("pass", "fail")
#: Relative inclusion probability of the near, middle and far band (by_band).
BAND_WEIGHTS = {"near": 2.0, "middle": 1.0, "far": 0.5}


@dataclass(frozen=True)
class Draw:
    """One stored audit draw.

    Attributes
    ----------
    draw_id : int
    process, step : str
    seed : int
    design : {"uniform", "by_band"}
    rate : float
        Expected share of the eligible checks drawn.
    per_week : float or None
        The ``--per-week`` asked for, if any.
    verdicts : tuple of str
    n_eligible, n_drawn : int
    drawn : DataFrame
        The drawn checks in the draw's order, with the columns of the CSV.
    """

    draw_id: int
    process: str
    step: str
    seed: int
    design: str
    rate: float
    per_week: float | None
    verdicts: tuple[str, ...]
    n_eligible: int
    n_drawn: int
    drawn: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """The design as plain values (no rows)."""
        return {
            "draw_id": self.draw_id, "process": self.process, "step": self.step,
            "seed": self.seed, "design": self.design, "rate": self.rate,
            "per_week": self.per_week, "verdicts": list(self.verdicts),
            "n_eligible": self.n_eligible, "n_drawn": self.n_drawn,
        }  # fmt: skip


def eligible_checks(
    con: duckdb.DuckDBPyConnection, process: str, step: str, verdicts: Sequence[str]
) -> pd.DataFrame:
    """Enforced checks of a step with one of ``verdicts`` that no draw has considered.

    Returns
    -------
    DataFrame
        ``check_id, run_id, process, step, attempt, verdict, model, at, score,
        yes_no`` in check-time order; ``score`` is the lowest yes-probability
        of the check's yes/no answers (``yes_no`` true), else its lowest
        confidence, and missing for a check with neither.
    """
    return con.execute(
        """
        WITH scored AS (
            SELECT check_id,
                   min(p) AS min_p,
                   min(confidence) AS min_conf
            FROM answers GROUP BY check_id
        )
        SELECT c.check_id, c.run_id, c.process, c.step, c.attempt, c.verdict, c.model,
               c.checked_at AS "at",
               coalesce(s.min_p, s.min_conf) AS score,
               s.min_p IS NOT NULL AS yes_no
        FROM checks c
        LEFT JOIN scored s USING (check_id)
        WHERE c.process = ? AND c.step = ? AND c.advisory IS NOT DISTINCT FROM false
          AND list_contains(?, c.verdict)
          AND c.check_id NOT IN (SELECT check_id FROM audit_eligible)
        ORDER BY c.checked_at NULLS LAST, c.check_id
        """,
        [process, step, list(verdicts)],
    ).df()


def bands(score: np.ndarray, verdict: np.ndarray, yes_no: np.ndarray) -> np.ndarray:
    """Split checks in terciles of their distance from the decision threshold.

    Within each verdict, a pass with a low yes-probability, a fail with a high
    one, or any answer given with low confidence is *near*; the opposite
    tercile is *far*. A check with no score is *middle*.

    Parameters
    ----------
    score : array of float
        From :func:`eligible_checks`.
    verdict : array of str
    yes_no : array of bool
        Whether the score is a yes-probability (else a confidence).

    Returns
    -------
    array of str
        ``near``, ``middle`` or ``far`` per check.
    """
    score = np.asarray(score, dtype=float)
    verdict = np.asarray(verdict, dtype=object)
    yes_no = np.asarray(yes_no, dtype=bool)
    # Closeness: higher is nearer the threshold.
    closeness = np.where(yes_no & (verdict == "fail"), score, -score)
    out = np.full(score.shape, "middle", dtype=object)
    for v in np.unique(verdict):
        sel = (verdict == v) & np.isfinite(closeness)
        if sel.sum() < 3:
            continue
        # Ranks, not values, so ties of many equal scores still split in thirds.
        ranks = pd.Series(closeness[sel]).rank(method="first").to_numpy() / sel.sum()
        out[np.flatnonzero(sel)] = np.where(
            ranks > 2 / 3, "near", np.where(ranks <= 1 / 3, "far", "middle")
        )
    return out


def inclusion_probabilities(band: np.ndarray, rate: float) -> np.ndarray:
    """Per-check inclusion probabilities with expected total ``rate * n``.

    The bands get probabilities in the ratio of :data:`BAND_WEIGHTS`, capped at
    1; the common scale is found by bisection so that the sum is ``rate * n``.

    Examples
    --------
    >>> inclusion_probabilities(np.array(["near", "middle", "far"]), 0.35).round(3).tolist()
    [0.6, 0.3, 0.15]
    """
    w = np.array([BAND_WEIGHTS[b] for b in band], dtype=float)
    target = rate * len(w)
    if rate >= 1.0 or len(w) == 0:
        return np.ones(len(w)) if rate >= 1.0 else np.zeros(0)
    lo, hi = 0.0, 1.0 / w.min()
    for _ in range(80):
        mid = (lo + hi) / 2
        if np.minimum(1.0, mid * w).sum() < target:
            lo = mid
        else:
            hi = mid
    return np.minimum(1.0, hi * w)


def draw(
    con: duckdb.DuckDBPyConnection,
    *,
    process: str,
    step: str,
    rate: float | None = None,
    per_week: float | None = None,
    verdicts: Sequence[str] = ("pass",),
    by_band: bool = False,
    seed: int | None = None,
    now: datetime | None = None,
) -> Draw:
    """Draw, store and return a random audit sample of a step's enforced checks.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Open for writing.
    process, step : str
        The enforced step.
    rate : float, optional
        Share of the eligible checks to draw, in (0, 1].
    per_week : float, optional
        Instead of ``rate``: this many checks per week of the eligible checks'
        span (at least one week); the rate is capped at 1.
    verdicts : sequence of {"pass", "fail"}, default=("pass",)
    by_band : bool, default=False
        Stratify by answer band (module docstring); otherwise uniform.
    seed : int, optional
        Seed of the draw; a fresh one (stored) when not given.
    now : datetime, optional
        The draw's time; the clock when not given.

    Returns
    -------
    Draw

    Raises
    ------
    UsageError
        Neither or both of ``rate`` and ``per_week``, a rate outside (0, 1],
        or a verdict that cannot be drawn.
    """
    if (rate is None) == (per_week is None):
        raise UsageError("give one of --rate and --per-week")
    if rate is not None and not 0.0 < rate <= 1.0:
        raise UsageError(f"--rate must be in (0, 1], got {rate}")
    if per_week is not None and not per_week > 0:
        raise UsageError(f"--per-week must be positive, got {per_week}")
    bad = [v for v in verdicts if v not in DRAWABLE]
    if bad or not verdicts:
        raise UsageError(f"--verdicts takes pass and/or fail, got {', '.join(bad) or 'none'}")
    verdicts = tuple(dict.fromkeys(verdicts))
    seed = int(secrets.randbits(31)) if seed is None else int(seed)
    now = now or datetime.now(UTC)
    elig = eligible_checks(con, process, step, verdicts)
    n = len(elig)
    if per_week is not None:
        times = pd.to_datetime(elig["at"], utc=True).dropna()
        span = (times.max() - times.min()).total_seconds() / (7 * 86400) if len(times) else 0.0
        use_rate = min(1.0, per_week * max(1.0, span) / n) if n else 1.0
    else:
        use_rate = float(rate)
    if by_band:
        band = bands(
            elig["score"].to_numpy(), elig["verdict"].to_numpy(), elig["yes_no"].to_numpy()
        )
        pi = inclusion_probabilities(band, use_rate)
    else:
        band = np.full(n, None, dtype=object)
        pi = np.full(n, use_rate)
    rng = np.random.default_rng(seed)
    drawn = rng.random(n) < pi
    design = "by_band" if by_band else "uniform"
    con.execute("BEGIN")
    try:
        draw_id = int(con.execute("SELECT nextval('draw_id_seq')").fetchone()[0])
        con.execute(
            "INSERT INTO audit_draws VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [draw_id, now, process, step, seed, design, use_rate, per_week, list(verdicts), n,
             int(drawn.sum())],
        )  # fmt: skip
        rows = pd.DataFrame(
            {
                "draw_id": np.full(n, draw_id, dtype=np.int32),
                "check_id": elig["check_id"].astype(str),
                "position": np.arange(n, dtype=np.int64),
                "band": pd.Series(band, dtype=object),
                "inclusion_p": pi.astype(float),
                "drawn": drawn,
            }
        )
        con.register("_audit_rows", rows)
        con.execute("INSERT INTO audit_eligible SELECT * FROM _audit_rows")
        con.unregister("_audit_rows")
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    picked = elig.loc[drawn].reset_index(drop=True)
    picked["inclusion_p"] = pi[drawn]
    picked["draw_id"] = draw_id
    picked["answers"] = _answer_text(con, picked["check_id"].tolist())
    return Draw(
        draw_id=draw_id, process=process, step=step, seed=seed, design=design,
        rate=use_rate, per_week=per_week, verdicts=verdicts, n_eligible=n,
        n_drawn=int(drawn.sum()), drawn=picked,
    )  # fmt: skip


def _answer_text(con: duckdb.DuckDBPyConnection, check_ids: list[str]) -> list[str]:
    """Each check's answers as one line: ``ask → answer (result)``, joined by `` | ``."""
    if not check_ids:
        return []
    rows = con.execute(
        """
        SELECT check_id, string_agg(
            ask || ' → ' || CASE kind
                WHEN 'yes_no' THEN 'p ' || CAST(round(p, 3) AS VARCHAR)
                WHEN 'choice' THEN name || coalesce(' (' || CAST(round(confidence, 2) AS VARCHAR) || ')', '')
                ELSE 'level ' || CAST(level AS VARCHAR)
                     || coalesce(' (' || CAST(round(confidence, 2) AS VARCHAR) || ')', '') END
            || ' ' || coalesce(result, ''), ' | ' ORDER BY position) AS text
        FROM answers WHERE list_contains(?, check_id) GROUP BY check_id
        """,
        [check_ids],
    ).fetchall()
    text = dict(rows)
    return [text.get(c, "") for c in check_ids]


def write_csv(result: Draw, path: str | Path) -> None:
    """Write the drawn checks as a decision table with blank decisions.

    The decision columns come first (``run, process, step, attempt, decision,
    by, at, note``); the context columns after them are for the reviewer and
    are ignored by ingest. Context text is neutralised against spreadsheet
    formulas (:func:`calibrate.textsafe.csv_cell`); the key columns are
    written as recorded so the filled file finds its checks again.
    """
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([*DECISION_COLUMNS, *CONTEXT_COLUMNS])
        for rec in result.drawn.to_dict("records"):
            at = rec["at"]
            writer.writerow(
                [rec["run_id"], rec["process"], rec["step"], int(rec["attempt"]), "", "", "", ""]
                + [csv_cell(v) for v in (
                    rec["verdict"],
                    at.isoformat() if isinstance(at, datetime | pd.Timestamp) and not pd.isna(at) else "",
                    rec["model"] or "", rec["answers"], rec["draw_id"],
                    round(float(rec["inclusion_p"]), 6),
                )]
            )  # fmt: skip


def draws(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The stored draws, oldest first (``audit_draws``)."""
    return con.execute("SELECT * FROM audit_draws ORDER BY draw_id").df()
