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
  each verdict the eligible checks are split in three bands of their
  answers' distance from the decision threshold, at edges fixed before the
  draw (the terciles of the certification window's checks); the near band is
  drawn at twice and the far band at half the middle band's probability,
  scaled so the expected share drawn is ``rate`` at the window's band shares.
  So a check's probability depends on its own answers alone, never on a
  label or on the other checks.
* **Stored**: ``audit_draws`` (the design) and ``audit_eligible`` (every
  eligible check, drawn or not, with ``pi``), also when nothing was drawn:
  not storing an empty draw would leave its checks eligible, so every stored
  draw would hold at least one drawn check and a check's real chance of being
  audited would exceed the stored ``pi`` (docs/method.md, "Audit draws"). A decision on a drawn check is
  an audit because the store says it was drawn, not because of anything the
  reviewer writes; the ``labeled`` view carries it as ``audited``.

This is the one writer of the store besides ingest.
"""

from __future__ import annotations

import csv
import functools
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from calibrate.analysis.monitor import unenforced_reason
from calibrate.analysis.monitor_data import read_checks
from calibrate.arguments import argument_name
from calibrate.errors import UsageError
from calibrate.store import require_writable
from calibrate.textsafe import csv_cell

#: The decision-table columns (docs/formats.md §3), filled by the reviewer.
DECISION_COLUMNS = ("run", "process", "step", "attempt", "decision", "by", "at", "note")
#: Read-only context after them; ingest ignores columns it does not know. No verdict and no
#: answers: a reviewer who sees what the check said anchors on it (automation bias), and the
#: monitor needs the reviewer's own judgement.
CONTEXT_COLUMNS = ("checked_at", "model", "audit_draw", "drawn_at", "inclusion_p")
#: Context added by ``show_answers=True`` (``calibrate audit draw --show-answers``).
ANSWER_COLUMNS = ("verdict", "answers")
#: Verdicts a draw may offer: the ones the check decides alone once enforced.
DRAWABLE = ("pass", "fail")
#: Relative inclusion probability of the near, middle and far band (by_band).
BAND_WEIGHTS = {"near": 2.0, "middle": 1.0, "far": 0.5}


@dataclass(frozen=True)
class Draw:
    """One stored audit draw.

    Attributes
    ----------
    draw_id : int or None
        ``None`` when no check was eligible (nothing stored). A draw that had
        eligible checks is stored even when it picked none of them.
    process, step : str
    seed : int
    design : {"uniform", "by_band"}
    rate : float
        Expected share of the eligible checks drawn.
    per_week : float or None
        The ``--per-week`` asked for, if any.
    verdicts : tuple of str
    n_eligible, n_drawn : int
    drawn_at : datetime
        When the draw was made: a decision on a drawn check is its audit only when made at
        or after this time.
    drawn : DataFrame
        The drawn checks in the draw's order, with the columns of the CSV.
    """

    draw_id: int | None
    process: str
    step: str
    seed: int
    design: str
    rate: float
    per_week: float | None
    verdicts: tuple[str, ...]
    n_eligible: int
    n_drawn: int
    drawn_at: datetime
    drawn: pd.DataFrame

    def to_dict(self) -> dict[str, Any]:
        """The design as plain values (no rows)."""
        return {
            "draw_id": self.draw_id, "process": self.process, "step": self.step,
            "seed": self.seed, "design": self.design, "rate": self.rate,
            "per_week": self.per_week, "verdicts": list(self.verdicts),
            "n_eligible": self.n_eligible, "n_drawn": self.n_drawn,
            "drawn_at": self.drawn_at.isoformat(),
        }  # fmt: skip


_SCORED = """
    WITH scored AS (
        SELECT check_id, min(p) AS min_p, min(confidence) AS min_conf
        FROM answers GROUP BY check_id
    )
    SELECT c.check_id, c.run_id, c.process, c.step, c.attempt, c.verdict, c.model,
           c.checked_at AS "at",
           coalesce(s.min_p, s.min_conf) AS score,
           s.min_p IS NOT NULL AS yes_no
    FROM checks c
    LEFT JOIN scored s USING (check_id)
    WHERE c.process = ? AND c.step = ? AND list_contains(?, c.verdict) AND {which}
    ORDER BY c.checked_at NULLS LAST, c.check_id
"""


def eligible_checks(
    con: duckdb.DuckDBPyConnection, process: str, step: str, verdicts: Sequence[str]
) -> pd.DataFrame:
    """Enforced checks of a step with one of ``verdicts`` that no draw has considered.

    Enforced: recorded with ``advisory: false`` at or after the step's first
    pass or unsure verdict recorded so (a blocking fail in ``handoff.check``
    alone may predate the switch); a check without a time counts. Only checks
    of the step's current enforcement period
    (:func:`calibrate.analysis.monitor_data.read_checks`): after a return to
    advisory and a second switch, or under other thresholds, the earlier
    period's checks are history.

    Returns
    -------
    DataFrame
        ``check_id, run_id, process, step, attempt, verdict, model, at, score,
        yes_no`` in check-time order; ``score`` is the lowest yes-probability
        of the check's yes/no answers (``yes_no`` true), else its lowest
        confidence, and missing for a check with neither.
    """
    # The step is enforced from its first pass or unsure verdict recorded with advisory: false,
    # as calibrate monitor reads it (a blocking fail alone may predate the switch).
    which = """c.advisory IS NOT DISTINCT FROM false
        AND c.check_id NOT IN (SELECT check_id FROM audit_eligible)
        AND coalesce(c.checked_at >= (
            SELECT min(e.checked_at) FROM checks e
            WHERE e.process = c.process AND e.step = c.step
              AND e.advisory IS NOT DISTINCT FROM false AND e.verdict IN ('pass', 'unsure')
        ), true)"""
    elig = con.execute(_SCORED.format(which=which), [process, step, list(verdicts)]).df()
    # Only the current enforcement period's: an earlier period's stream is history (the monitor
    # reads it for no status), so an audit of it would spend the reviewers' time on nothing.
    checks = read_checks(con, process, step)
    current = checks.loc[checks["current"], "check_id"].astype(str)
    return elig[elig["check_id"].astype(str).isin(current)].reset_index(drop=True)


def reference_checks(
    con: duckdb.DuckDBPyConnection, process: str, step: str, verdicts: Sequence[str]
) -> pd.DataFrame:
    """The step's checks recorded with ``advisory: true`` (the certification window), scored alike."""
    return con.execute(_SCORED.format(which="c.advisory"), [process, step, list(verdicts)]).df()


#: Reference checks of a verdict needed to fix its band edges; below, the draw's own terciles.
MIN_REFERENCE = 30


def _closeness(score: np.ndarray, verdict: np.ndarray, yes_no: np.ndarray) -> np.ndarray:
    """Higher is nearer the threshold: a pass's low yes-probability, a fail's high one, low confidence."""
    return np.where(yes_no & (verdict == "fail"), score, -score)


def band_edges(reference: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Per verdict, the terciles of the reference checks' closeness to the threshold.

    Only verdicts with at least :data:`MIN_REFERENCE` scored reference checks get edges.
    """
    close = _closeness(
        reference["score"].to_numpy(dtype=float),
        reference["verdict"].to_numpy(dtype=object),
        reference["yes_no"].to_numpy(dtype=bool),
    )
    out: dict[str, tuple[float, float]] = {}
    for v in np.unique(reference["verdict"].to_numpy(dtype=object)):
        x = close[(reference["verdict"].to_numpy(dtype=object) == v) & np.isfinite(close)]
        if x.size >= MIN_REFERENCE:
            lo, hi = np.quantile(x, [1 / 3, 2 / 3])
            out[str(v)] = (float(lo), float(hi))
    return out


def bands(
    score: np.ndarray,
    verdict: np.ndarray,
    yes_no: np.ndarray,
    edges: dict[str, tuple[float, float]] | None = None,
) -> np.ndarray:
    """Split checks in three bands by their distance from the decision threshold.

    A pass with a low yes-probability, a fail with a high one, or any answer
    given with low confidence is *near*; the opposite end is *far*. The edges
    are fixed before the draw, from ``edges`` (the certification window's
    terciles, :func:`band_edges`), so a check's band depends on its own answers
    alone; a verdict without edges is split in terciles of the draw's own
    checks (by rank). A check with no score is *middle*.

    Parameters
    ----------
    score : array of float
        From :func:`eligible_checks`.
    verdict : array of str
    yes_no : array of bool
        Whether the score is a yes-probability (else a confidence).
    edges : dict, optional
        ``{verdict: (lower, upper)}`` on the closeness scale.

    Returns
    -------
    array of str
        ``near``, ``middle`` or ``far`` per check.
    """
    score = np.asarray(score, dtype=float)
    verdict = np.asarray(verdict, dtype=object)
    closeness = _closeness(score, verdict, np.asarray(yes_no, dtype=bool))
    out = np.full(score.shape, "middle", dtype=object)
    for v in np.unique(verdict):
        sel = (verdict == v) & np.isfinite(closeness)
        if edges and str(v) in edges:
            lo, hi = edges[str(v)]
            x = closeness[sel]
            out[np.flatnonzero(sel)] = np.where(x > hi, "near", np.where(x <= lo, "far", "middle"))
            continue
        if sel.sum() < 3:
            continue
        # Ranks, not values, so ties of many equal scores still split in thirds.
        ranks = pd.Series(closeness[sel]).rank(method="first").to_numpy() / sel.sum()
        out[np.flatnonzero(sel)] = np.where(
            ranks > 2 / 3, "near", np.where(ranks <= 1 / 3, "far", "middle")
        )
    return out


def band_scale(shares: dict[str, float], rate: float) -> float:
    """The scale ``c`` with ``sum_b share_b min(1, c w_b) = rate`` (bisection; 1/min w at rate 1)."""
    w = np.array([BAND_WEIGHTS[b] for b in shares])
    share = np.array(list(shares.values()), dtype=float)
    share = share / share.sum() if share.sum() > 0 else np.full(share.size, 1 / share.size)
    lo, hi = 0.0, 1.0 / w.min()
    if rate >= 1.0:
        return hi
    for _ in range(80):
        mid = (lo + hi) / 2
        if (share * np.minimum(1.0, mid * w)).sum() < rate:
            lo = mid
        else:
            hi = mid
    return hi


def inclusion_probabilities(
    band: np.ndarray, rate: float, *, shares: dict[str, float] | None = None
) -> np.ndarray:
    """Per-check inclusion probabilities ``min(1, c w_band)``, expected share ``rate``.

    The bands get probabilities in the ratio of :data:`BAND_WEIGHTS`, capped at
    1. The scale ``c`` makes the expected share drawn equal ``rate`` for band
    shares ``shares`` (the certification window's, fixed before the draw, so
    a check's probability depends on its own band alone), else for the
    checks' own shares.

    Examples
    --------
    >>> inclusion_probabilities(np.array(["near", "middle", "far"]), 0.35).round(3).tolist()
    [0.6, 0.3, 0.15]
    """
    band = np.asarray(band, dtype=object)
    if len(band) == 0:
        return np.zeros(0)
    if shares is None:
        shares = {b: float((band == b).mean()) for b in BAND_WEIGHTS}
    c = band_scale(shares, rate)
    w = np.array([BAND_WEIGHTS[b] for b in band], dtype=float)
    return np.minimum(1.0, c * w)


def _band_design(
    con: duckdb.DuckDBPyConnection, elig: pd.DataFrame, process: str, step: str,
    verdicts: Sequence[str], rate: float,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Bands and inclusion probabilities of a by-band draw, per verdict."""
    ref = reference_checks(con, process, step, verdicts)
    edges = band_edges(ref)
    band = bands(elig["score"].to_numpy(), elig["verdict"].to_numpy(), elig["yes_no"].to_numpy(),
                 edges)  # fmt: skip
    ref_band = bands(ref["score"].to_numpy(), ref["verdict"].to_numpy(), ref["yes_no"].to_numpy(),
                     edges)  # fmt: skip
    pi = np.zeros(len(elig))
    verdict = elig["verdict"].to_numpy(dtype=object)
    for v in np.unique(verdict):
        sel = verdict == v
        fixed = str(v) in edges
        source = ref_band[ref["verdict"].to_numpy(dtype=object) == v] if fixed else band[sel]
        shares = {b: float((source == b).mean()) for b in BAND_WEIGHTS}
        pi[sel] = inclusion_probabilities(band[sel], rate, shares=shares)
    return band, pi


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
    out: str | Path | None = None,
    show_answers: bool = False,
) -> Draw:
    """Draw, store and return a random audit sample of a step's enforced checks.

    The draw is stored and its CSV written together: the CSV goes to a
    temporary file beside ``out``, the draw is committed, then the file is
    renamed to ``out``, so a failure leaves neither. A draw that picks none of
    its eligible checks is stored too (its checks considered, none drawn, the
    CSV a header alone): each then counts as an audit of nothing in the
    monitor (``z = 0``), as Poisson sampling with the stored ``pi`` needs.
    With no eligible check nothing is stored or written.

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
    out : path-like, optional
        Write the drawn checks there as a decision table (:func:`write_csv`).
    show_answers : bool, default=False
        Put the checks' verdicts and answers in that table (:func:`write_csv`).

    Returns
    -------
    Draw
        With ``draw_id`` ``None`` when no check was eligible (nothing stored).

    Raises
    ------
    UsageError
        A ``ValueError``, naming the argument: neither or both of ``rate`` and
        ``per_week``, a rate outside (0, 1], a verdict that cannot be drawn, an
        ``out`` that cannot be written, or a ``process`` / ``step`` that selects
        no enforced step (naming the names the store has, or its enforced steps).
    StoreError
        ``con`` is open read-only (the draw is stored): nothing is stored or written.
    """
    if out is not None:
        check_writable(out)
    check_design(rate=rate, per_week=per_week, verdicts=verdicts)
    require_writable(con, "an audit draw")
    reason = unenforced_reason(con, process, step)
    if reason is not None:
        raise UsageError(reason)
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
        band, pi = _band_design(con, elig, process, step, verdicts, use_rate)
    else:
        band = np.full(n, None, dtype=object)
        pi = np.full(n, use_rate)
    rng = np.random.default_rng(seed)
    drawn = rng.random(n) < pi
    design = "by_band" if by_band else "uniform"
    n_drawn = int(drawn.sum())
    result = Draw(
        draw_id=None, process=process, step=step, seed=seed, design=design, rate=use_rate,
        per_week=per_week, verdicts=verdicts, n_eligible=n, n_drawn=n_drawn, drawn_at=now,
        drawn=elig.iloc[:0].assign(inclusion_p=[], draw_id=[], answers=[]),
    )  # fmt: skip
    if n == 0:
        return result
    # A draw that picked none is stored too: left eligible, its checks would be offered again
    # until some draw picked one, and every stored draw would be conditioned on "at least one
    # drawn", so a check's real inclusion probability would exceed the stored pi.
    tmp: Path | None = None
    con.execute("BEGIN")
    try:
        draw_id = int(con.execute("SELECT nextval('draw_id_seq')").fetchone()[0])
        con.execute(
            "INSERT INTO audit_draws VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [draw_id, now, process, step, seed, design, use_rate, per_week, list(verdicts), n,
             n_drawn],
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
        picked = elig.loc[drawn].reset_index(drop=True)
        picked["inclusion_p"] = pi[drawn]
        picked["draw_id"] = draw_id
        picked["answers"] = _answer_text(con, picked["check_id"].tolist())
        result = replace(result, draw_id=draw_id, drawn=picked)
        if out is not None:
            tmp = _temp_beside(Path(out))
            write_csv(result, tmp, show_answers=show_answers)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise
    if tmp is not None:
        os.replace(tmp, out)
    return result


def check_design(
    *,
    rate: float | None,
    per_week: float | None,
    verdicts: Sequence[str],
    cli: bool = False,
) -> None:
    """Refuse a draw's design that cannot be drawn, before anything is read or stored.

    Parameters
    ----------
    rate, per_week, verdicts
        As :func:`draw` takes them.
    cli : bool, default=False
        Name the command-line options (``--rate``) instead of the arguments (``rate``).

    Raises
    ------
    UsageError
        Neither or both of ``rate`` and ``per_week``, a rate outside (0, 1], a
        ``per_week`` not above 0, or no verdict or one that cannot be drawn.
    """
    name = functools.partial(argument_name, cli=cli)
    if (rate is None) == (per_week is None):
        raise UsageError(f"give one of {name('rate')} and {name('per_week')}")
    if rate is not None and not 0.0 < rate <= 1.0:
        raise UsageError(f"{name('rate')} must be in (0, 1], got {rate}")
    if per_week is not None and not per_week > 0:
        raise UsageError(f"{name('per_week')} must be positive, got {per_week}")
    bad = [v for v in verdicts if v not in DRAWABLE]
    if bad or not verdicts:
        raise UsageError(
            f"{name('verdicts')} takes pass and/or fail, got {', '.join(map(str, bad)) or 'none'}"
        )


def check_writable(path: str | Path) -> None:
    """Refuse an output file that cannot be written, before anything is done.

    Raises
    ------
    UsageError
        Its folder is missing or not writable, or the path is a folder or a
        file that cannot be replaced.
    """
    path = Path(path)
    parent = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise UsageError(f"--out {path}: is a folder, not a file")
    if not parent.is_dir():
        raise UsageError(f"--out {path}: folder {parent} does not exist")
    # A file is replaced by renaming into its folder: the folder must be writable.
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"--out {path}: folder {parent} is not writable")


def _temp_beside(path: Path) -> Path:
    """A fresh name in ``path``'s folder, so renaming it onto ``path`` is atomic."""
    return path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


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


def write_csv(result: Draw, path: str | Path, *, show_answers: bool = False) -> None:
    """Write the drawn checks as a decision table with blank decisions.

    The decision columns come first (``run, process, step, attempt, decision,
    by, at, note``); the context columns after them (:data:`CONTEXT_COLUMNS`)
    are for the reviewer and are ignored by ingest. The review is blind: the
    check's verdict and answers are left out unless ``show_answers``
    (:data:`ANSWER_COLUMNS` then follow). Context text is neutralised against
    spreadsheet formulas (:func:`calibrate.textsafe.csv_cell`); the key
    columns are written as recorded so the filled file finds its checks again.

    Parameters
    ----------
    result : Draw
        From :func:`draw`.
    path : path-like
    show_answers : bool, default=False
        Add the check's verdict and answers (the reviewer then sees what the
        check said, which the audit's false-pass estimate assumes they do not).
    """
    extra = ANSWER_COLUMNS if show_answers else ()
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow([*DECISION_COLUMNS, *CONTEXT_COLUMNS, *extra])
        for rec in result.drawn.to_dict("records"):
            at = rec["at"]
            context = [
                at.isoformat() if isinstance(at, datetime | pd.Timestamp) and not pd.isna(at) else "",
                rec["model"] or "", rec["draw_id"], result.drawn_at.isoformat(),
                round(float(rec["inclusion_p"]), 6),
            ]  # fmt: skip
            if show_answers:
                context += [rec["verdict"], rec["answers"]]
            writer.writerow(
                [rec["run_id"], rec["process"], rec["step"], int(rec["attempt"]), "", "", "", ""]
                + [csv_cell(v) for v in context]
            )


def draws(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The stored draws, oldest first: the ``audit_draws`` table, one row a draw.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        An open store (read-only is enough).

    Returns
    -------
    pandas.DataFrame
        One row per :func:`draw` that was stored (one that found no eligible
        check is not), ordered by ``draw_id``, with the columns

        - ``draw_id`` (int): the draw's number, as in the audit CSV and ``audited`` checks;
        - ``drawn_at`` (datetime, UTC): when it was drawn;
        - ``process``, ``step`` (str): the enforced step drawn from;
        - ``seed`` (int): the seed of the draw (given, or the fresh one stored);
        - ``design`` (str): ``"uniform"`` or ``"by_band"`` (Poisson sampling either way);
        - ``rate`` (float): the share drawn (``rate``, or what ``per_week`` came to),
          the inclusion probability of a uniform draw;
        - ``per_week`` (float): ``per_week`` as asked, NaN when ``rate`` was given;
        - ``verdicts`` (list of str): the verdicts eligible (``["pass"]`` by default);
        - ``n_eligible`` (int): the checks it considered, drawn or not (each considered
          by one draw at most);
        - ``n_drawn`` (int): those drawn, offered to a person.

        Empty, with these columns, when nothing was drawn. The checks each draw
        considered, with their inclusion probability, are in the ``audit_eligible`` table.
    """
    return con.execute("SELECT * FROM audit_draws ORDER BY draw_id").df()
