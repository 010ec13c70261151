"""The rates observed on one step's labeled checks, beside the certified bounds.

The verdicts as recorded (:func:`recorded_rates`), a check's questions
replayed on the labeled history (:func:`replayed_rates`), and the agreement
without the approvers flagged for automation bias (:func:`automation_bias`).
Point estimates with their ``n`` and interval, never a certificate;
:mod:`calibrate.analysis.step_readiness` quotes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibrate.analysis import agreement as agreement_mod
from calibrate.analysis.rate import Rate
from calibrate.analysis.step_data import answer_rows
from calibrate.analysis.step_evidence import replay
from calibrate.profile import FAIL, PASS, UNSURE, Question


def recorded_rates(labeled: pd.DataFrame) -> dict[str, Any] | None:
    """The rates of the verdicts as recorded, on the labeled checks.

    Parameters
    ----------
    labeled : pandas.DataFrame
        The labeled checks (``verdict`` and ``label`` columns), as
        :func:`calibrate.dataset.submissions` with a label.

    Returns
    -------
    dict or None
        ``{n, false_pass, false_fail, auto_pass, auto_fail, coverage}``: the
        error rates as :class:`~calibrate.analysis.rate.Rate` dicts (count,
        ``n`` and interval), the shares over all ``n`` labeled checks;
        ``None`` without a labeled check.
    """
    if labeled.empty:
        return None
    v = labeled["verdict"].astype(str).to_numpy()
    y = labeled["label"].astype(bool).to_numpy()
    return _rates_from(v == "pass", v == "fail", y)


def replayed_rates(
    lab_ans: pd.DataFrame, qs: Sequence[Question], labeled: pd.DataFrame
) -> dict[str, Any] | None:
    """``qs`` replayed on every labeled check, over the search's denominator.

    An error verdict, or a check with no answer to replay, counts as unsure
    (as the threshold search counts it), so the shares are of the same
    labeled checks as the search's expected shares and coverage.

    Parameters
    ----------
    lab_ans : pandas.DataFrame
        The answers of the labeled checks, as :func:`calibrate.dataset.answers`.
    qs : sequence of Question
        The questions (with their thresholds) to replay.
    labeled : pandas.DataFrame
        The labeled checks, as for :func:`recorded_rates`.

    Returns
    -------
    dict or None
        As :func:`recorded_rates`; ``None`` when nothing could be replayed.
    """
    c = replayed_verdicts(lab_ans, qs, labeled)
    if c is None:
        return None
    return _rates_from(c == PASS, c == FAIL, labeled["label"].astype(bool).to_numpy())


def replayed_verdicts(
    lab_ans: pd.DataFrame, qs: Sequence[Question], labeled: pd.DataFrame
) -> np.ndarray | None:
    """The verdict code ``qs`` give each labeled check, in the order of ``labeled``.

    As :func:`replayed_rates` counts them: an error verdict, or a check with
    no answer to replay, is unsure.

    Parameters
    ----------
    lab_ans, qs, labeled
        As for :func:`replayed_rates`.

    Returns
    -------
    numpy.ndarray or None
        One of :data:`~calibrate.profile.PASS`, ``FAIL``, ``UNSURE`` per row
        of ``labeled``; ``None`` when nothing could be replayed.
    """
    codes = replay(lab_ans, qs)
    if codes.empty:
        return None
    ids = labeled["check_id"].reset_index(drop=True)
    # Each labeled check's replayed code, looked up by integer codes rather than a text index.
    at = answer_rows(pd.Series(codes.index), ids)
    c = np.where(at >= 0, codes.to_numpy()[np.maximum(at, 0)], UNSURE)
    return np.where(labeled["verdict"].astype(str).to_numpy() == "error", UNSURE, c)


def _rates_from(passed: np.ndarray, failed: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    n = int(len(y))
    fp = Rate(int((passed & ~y).sum()), int(passed.sum()))
    ff = Rate(int((failed & y).sum()), int(failed.sum()))
    return {
        "n": n,
        "false_pass": fp.to_dict(),
        "false_fail": ff.to_dict(),
        "auto_pass": float(passed.mean()) if n else float("nan"),
        "auto_fail": float(failed.mean()) if n else float("nan"),
        "coverage": float((passed | failed).mean()) if n else 0.0,
    }


def automation_bias(cur: pd.DataFrame, appr: pd.DataFrame | None) -> dict[str, Any]:
    """Approver flags and the agreement without the flagged approvers' decisions.

    Parameters
    ----------
    cur : pandas.DataFrame
        The step's checks on the current model and wording, with their labels
        and ``decided_by``.
    appr : pandas.DataFrame or None
        The approvers' table (:func:`calibrate.analysis.approvers.approvers`),
        with each approver's ``flag`` and ``flag_reason``.

    Returns
    -------
    dict
        ``{note, flagged, without_flagged}``: the caution in words, each
        flagged approver with the reason and their ``n``, and the agreement
        and false-pass rate (with ``n``) without the flagged approvers'
        decisions (``None`` when nobody is flagged or nothing is left).
    """
    note = (
        "Approvers saw the check's verdict before deciding (check-1 §3), so measured agreement "
        "may be inflated by automation bias; audit reviewers should not see the verdict."
    )
    if appr is None or appr.empty:
        return {"note": note, "flagged": [], "without_flagged": None}
    flagged = appr[appr["flag"].astype(bool)]
    names = [str(a) for a in flagged["approver"].tolist()]
    out: dict[str, Any] = {
        "note": note,
        "flagged": [
            {"approver": str(r.approver), "reason": str(r.flag_reason), "n": int(r.n)}
            for r in flagged.itertuples(index=False)
        ],
        "without_flagged": None,
    }
    if names:
        rest = cur[~cur["decided_by"].astype(object).isin(names).to_numpy()]
        row = agreement_mod.agreement(rest, by=[]).iloc[0] if len(rest) else None
        if row is not None:
            out["without_flagged"] = {
                "n": int(row["n"]),
                "agree": Rate(
                    int(row["pass_acceptable"] + row["fail_not_acceptable"]), int(row["n_decided"])
                ).to_dict(),
                "false_pass": Rate(int(row["pass_not_acceptable"]), int(row["n_pass"])).to_dict(),
            }
    return out
