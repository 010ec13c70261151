"""Checks of arguments shared by the Python API and the command line.

A refused argument is a :class:`~calibrate.errors.UsageError` (a
``ValueError``) whose message names the argument as its caller wrote it: the
Python keyword (``rate``, ``per_week``) by default, the command-line option
(``--rate``, ``--per-week``) with ``cli=True``. The CLI checks its options this
way before it calls the API, so the API's own checks name Python arguments.
"""

from __future__ import annotations

import numbers

from calibrate.errors import UsageError


def argument_name(name: str, *, cli: bool = False) -> str:
    """``name`` (a Python keyword) as its caller knows it: itself, or ``--name-with-dashes``."""
    return "--" + name.replace("_", "-") if cli else name


def check_unit(name: str, value: float, *, one_allowed: bool = False) -> None:
    """Refuse ``value`` outside (0, 1), or (0, 1] with ``one_allowed``; ``name`` as shown.

    Raises
    ------
    UsageError
        Naming ``name`` and the accepted span.
    """
    if not (0.0 < value < 1.0 or (one_allowed and value == 1.0)):
        span = "(0, 1]" if one_allowed else "(0, 1)"
        raise UsageError(f"{name} must be in {span}, got {value}")


def check_at_least(name: str, value: int, minimum: int = 1) -> None:
    """Refuse ``value`` that is no whole number or is below ``minimum``; ``name`` as shown.

    Raises
    ------
    UsageError
        Naming ``name`` and the least value accepted.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise UsageError(f"{name} must be a whole number at least {minimum}, got {value!r}")


def check_levels(alpha: float, delta: float, beta: float, *, cli: bool = False) -> None:
    """Refuse levels outside (0, 1) (``beta`` may be 1: false fails uncontrolled).

    Raises
    ------
    UsageError
        Naming the first level refused.
    """
    check_unit(argument_name("alpha", cli=cli), alpha)
    check_unit(argument_name("delta", cli=cli), delta)
    check_unit(argument_name("beta", cli=cli), beta, one_allowed=True)
