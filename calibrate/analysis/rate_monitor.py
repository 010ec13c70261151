"""The sequential test of one error rate on one stream of audited checks.

:func:`rate_monitor` runs the e-process and the confidence sequence of
:mod:`calibrate.analysis.sequential` on the checks an audit draw considered
for one enforced step and model (``z = X / pi`` for a drawn check, 0 for one
not drawn; docs/method.md, after the switch) and says when the alarm rang.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis.rate import weighted_text
from calibrate.analysis.sequential import (
    ConfidenceSequence,
    confidence_sequence,
    first_crossing,
    log_wealth,
    memory_for,
)
from calibrate.analysis.stats import hajek


@dataclass(frozen=True)
class RateMonitor:
    """The sequential test of one error rate of one enforced step and model.

    Attributes
    ----------
    audited, bad : int
        Decided audits in the stream and how many were errors.
    pending : int
        Drawn checks still awaiting a decision (the stream stops at the first).
    rate, lower, upper : float or None
        The weighted rate and the confidence sequence's ends.
    e_value : float
        The e-process now (1 before any audit); after an alarm it may have
        fallen back below ``1/delta``, the alarm stands.
    alarm_at : datetime or None
        Time of the audit decision at which the e-process first reached
        ``1/delta``.
    e_value_at_alarm : float or None
        The e-process at that decision: the value that crossed.
    e_value_peak : float
        The largest value the e-process has reached (1 before any audit).
    limit : float
        The null rate (alpha or beta).
    path : DataFrame
        Per decided audit: ``at``, ``e_value``, ``lower``, ``upper`` (for figures).
    conflicts : int
        Drawn checks whose decisions made after the draw disagree (the first is used).
    before_draw : int
        Decisions on drawn checks dated before their draw: no audits, ignored.
    waiting : int
        Decided audits behind the first pending one: the stream stops there, so
        they count only once it is decided.
    pending_draws : tuple of dict
        Per draw with pending checks: ``draw_id``, ``drawn_at``, ``pending`` and
        ``decided_before_draw`` (those of them whose only decisions are dated
        before the draw: recorded, but no audits).
    weighted : bool
        The decided audits were drawn with unequal inclusion probabilities (a by-band
        draw, or draws at different rates): ``rate`` is then weighted by
        ``1/inclusion_p`` and differs from ``bad / audited``.
    """

    audited: int
    bad: int
    pending: int
    rate: float | None
    lower: float | None
    upper: float | None
    e_value: float
    alarm_at: datetime | None
    limit: float
    path: pd.DataFrame = field(repr=False)
    conflicts: int = 0
    before_draw: int = 0
    e_value_at_alarm: float | None = None
    e_value_peak: float = 1.0
    waiting: int = 0
    pending_draws: tuple[dict[str, Any], ...] = ()
    weighted: bool = False

    @property
    def alarm(self) -> bool:
        return self.alarm_at is not None

    def rate_text(self, what: str, fmt: str, detail: str) -> str:
        """The rate beside its counts, named weighted where ``bad / audited`` is not the rate.

        ``"17 of 131 audited (rate 13.0%; <detail>)"`` after draws that offered every check
        alike; ``"weighted rate 7.1% (17 of 131 audited, weighted by 1/inclusion_p; <detail>)"``
        after ones that did not (outside review: "17 of 131 audited (7.1%)" read as 17/131).
        """
        if self.weighted:
            return weighted_text(self.rate, self.bad, self.audited, what, fmt, detail)
        return f"{self.bad} of {self.audited} {what} (rate {self.rate:{fmt}}; {detail})"

    def interval_note(self) -> str | None:
        """How the alarm and the confidence sequence read together when they seem to disagree.

        The alarm is the one-sided test at ``1/delta``; the sequence is two-sided at ``2/delta``
        (docs/method.md), so an alarm can stand while the sequence still holds the limit, and no
        alarm does not show the rate within the limit when the sequence reaches above it.
        ``None`` when neither happens (or nothing is audited).
        """
        if self.lower is None or self.upper is None:
            return None
        if self.alarm and self.lower <= self.limit:
            return (
                f"the confidence sequence still holds {self.limit:g}: the alarm is the one-sided "
                "test at 1/δ, the sequence two-sided at 2/δ and wider"
            )
        if not self.alarm and self.upper > self.limit:
            return (
                f"the upper end is above {self.limit:g}: no alarm does not show the rate within it"
            )
        return None

    def audit_quality(self) -> list[str]:
        """Lines on the audit decisions the monitor set aside or had to choose between."""
        out = []
        if self.conflicts:
            out.append(
                f"{self.conflicts} drawn checks have disagreeing decisions after the draw: the "
                "first decision after the draw is used (the blind one)"
            )
        if self.before_draw:
            out.append(
                f"{self.before_draw} decisions on drawn checks are dated before their draw: not "
                "audits, ignored"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "audited": self.audited, "bad": self.bad, "pending": self.pending,
            "rate": self.rate, "lower": self.lower, "upper": self.upper,
            "e_value": self.e_value,
            "alarm_at": self.alarm_at.isoformat() if self.alarm_at is not None else None,
            "e_value_at_alarm": self.e_value_at_alarm, "e_value_peak": self.e_value_peak,
            "waiting_behind_pending": self.waiting,
            "pending_draws": [
                {**d, "drawn_at": d["drawn_at"].isoformat() if d["drawn_at"] is not None else None}
                for d in self.pending_draws
            ],
            "conflicts": self.conflicts, "decisions_before_draw": self.before_draw,
            "weighted": self.weighted,
            "note": self.interval_note(),
        }  # fmt: skip


def rate_monitor(
    stream: pd.DataFrame, *, limit: float, delta: float, error_label: bool
) -> RateMonitor:
    """Run the e-process and confidence sequence on one stream of considered checks.

    Parameters
    ----------
    stream : DataFrame
        One row per check an audit draw considered, in stream order, with
        ``drawn`` (bool), ``inclusion_p``, ``label`` (True / False / missing)
        and ``decided_at``, ``at``; optionally ``conflict`` (bool) and ``n_before``
        (decisions dated before the draw) per check.
    limit : float
        The null rate: alpha for passes, beta for fails.
    delta : float
    error_label : bool
        The label that is an error: False for passes (not acceptable), True
        for fails (acceptable).

    Returns
    -------
    RateMonitor
    """
    drawn = stream["drawn"].to_numpy(dtype=bool)
    label = stream["label"]
    # Counted over the whole stream: a conflict or a decided audit behind a pending one still counts.
    bookkeeping = {
        "conflicts": int(stream["conflict"].to_numpy(dtype=bool)[drawn].sum())
        if "conflict" in stream else 0,
        "before_draw": int(stream["n_before"].to_numpy(dtype=np.int64)[drawn].sum())
        if "n_before" in stream else 0,
    }  # fmt: skip
    undecided = drawn & label.isna().to_numpy()
    pending = int(undecided.sum())
    stop = int(np.argmax(undecided)) if undecided.any() else len(stream)
    bookkeeping["waiting"] = int((drawn & ~undecided)[stop:].sum())
    predated = (
        stream["n_before"].to_numpy(dtype=np.int64) > 0
        if "n_before" in stream
        else np.zeros(len(stream), dtype=bool)
    )
    bookkeeping["pending_draws"] = _pending_draws(stream[undecided], predated[undecided])
    s = stream.iloc[:stop]
    drawn = drawn[:stop]
    pi = s["inclusion_p"].to_numpy(dtype=float)
    err = (s["label"].to_numpy(dtype=object) == error_label) & drawn
    z = np.where(err, 1.0 / pi, 0.0)
    audited = int(drawn.sum())
    empty = pd.DataFrame(columns=["at", "e_value", "lower", "upper"])
    if audited == 0:
        return RateMonitor(0, 0, pending, None, None, None, 1.0, None, limit, empty, **bookkeeping)
    memory = (
        memory_for(limit, s["design_rate"].to_numpy(dtype=float)) if "design_rate" in s else None
    )
    log_k = log_wealth(z, limit, memory=memory)
    # The ends at each decided audit (for the path) and at the end of the stream.
    at = np.r_[np.flatnonzero(drawn), len(z) - 1]
    cs: ConfidenceSequence = confidence_sequence(z, design_bound(s), delta=delta, times=at)
    when = pd.to_datetime(s["decided_at"], utc=True).fillna(pd.to_datetime(s["at"], utc=True))
    first = int(first_crossing(log_k, delta))
    alarm_at = when.iloc[first].to_pydatetime() if first >= 0 else None
    rate = float(hajek(err[drawn], 1.0, pi[drawn]))
    path = pd.DataFrame(
        {"at": when.to_numpy()[drawn], "e_value": np.exp(log_k[drawn]),
         "lower": cs.lower[:-1], "upper": cs.upper[:-1]}
    )  # fmt: skip
    return RateMonitor(
        audited=audited, bad=int(err.sum()), pending=pending, rate=rate,
        lower=float(cs.lower[-1]), upper=float(cs.upper[-1]), e_value=float(np.exp(log_k[-1])),
        alarm_at=alarm_at, limit=limit, path=path, **bookkeeping,
        e_value_at_alarm=float(np.exp(log_k[first])) if first >= 0 else None,
        e_value_peak=float(np.exp(max(0.0, log_k.max()))),
        weighted=bool(np.ptp(pi[drawn]) > 1e-12),
    )  # fmt: skip


def _pending_draws(rows: pd.DataFrame, predated: np.ndarray) -> tuple[dict[str, Any], ...]:
    """Per draw holding pending checks: its id, when it was made, how many are pending and how
    many of those have decisions dated before the draw only (``predated``, per row)."""
    if rows.empty or "draw_id" not in rows:
        return ()
    when = rows["drawn_at"] if "drawn_at" in rows else pd.Series(None, index=rows.index)
    early = pd.Series(predated, index=rows.index)
    out = []
    for draw_id, group in rows.groupby("draw_id", sort=True):
        at = pd.to_datetime(when.loc[group.index], utc=True).min()
        out.append({"draw_id": int(draw_id), "drawn_at": None if pd.isna(at) else at.to_pydatetime(),
                    "pending": len(group),
                    "decided_before_draw": int(early.loc[group.index].sum())})  # fmt: skip
    return tuple(out)


def design_bound(stream: pd.DataFrame) -> np.ndarray:
    """The largest value ``z`` can take at each check, from its draw's design alone.

    The confidence sequence's downward bet must be capped by this bound and may
    not see whether the check was drawn, nor its band (that would let it bet on
    the band's own rate): a uniform draw's bound is ``1/rate``; a by-band
    draw's is ``1/pi`` of its far band, ``1 / min(1, c w_far)``, with the
    draw's scale ``c`` read back from any check's ``pi / w_band``.
    """
    from calibrate.audit import BAND_WEIGHTS

    out = 1.0 / stream["inclusion_p"].to_numpy(dtype=float)
    if "band" not in stream or stream["band"].isna().all():
        return out
    w = stream["band"].map(BAND_WEIGHTS).to_numpy(dtype=float)
    pi = stream["inclusion_p"].to_numpy(dtype=float)
    draw = stream["draw_id"].to_numpy()
    for d in np.unique(draw[~np.isnan(w)]):
        rows = (draw == d) & ~np.isnan(w)
        scaled = pi[rows] / w[rows]
        c = scaled[pi[rows] < 1].max() if (pi[rows] < 1).any() else 1.0 / min(BAND_WEIGHTS.values())
        out[rows] = 1.0 / min(1.0, c * min(BAND_WEIGHTS.values()))
    return out
