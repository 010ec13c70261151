"""The root Typer app and the one place errors become exit codes."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import typer
from rich.console import Console

from calibrate.errors import CalibrateError

app = typer.Typer(
    name="calibrate",
    help="Tell when an automatic check (check-1) has earned enough trust to act without a person.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class _Diagnostics(Console):
    """stderr that wraps long lines only on a terminal: in a log or a pipe, one line stays one line."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: D102 - Console.print
        if kwargs.get("soft_wrap") is None:
            kwargs["soft_wrap"] = not self.is_terminal
        super().print(*objects, **kwargs)


#: Diagnostics and progress go to stderr so that stdout stays machine-readable.
err = _Diagnostics(stderr=True, highlight=False)

F = TypeVar("F", bound=Callable[..., Any])


def handle_errors(func: F) -> F:
    """Turn a :class:`CalibrateError` into one line on stderr and its exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CalibrateError as exc:
            err.print(f"error: {exc}", markup=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None

    return wrapper  # type: ignore[return-value]
