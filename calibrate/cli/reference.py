"""Generate the command-line reference (``docs/cli.md``) from the commands themselves.

The test suite checks that the committed file equals what this module
produces, so the documentation cannot drift from the code. Regenerate with
``python -m calibrate.cli.reference > docs/cli.md``.
"""

from __future__ import annotations

import inspect
import typing
from enum import Enum
from typing import Any

import typer

from calibrate.cli import app


def _type_name(annotation: Any) -> str:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if args and typing.get_origin(annotation) is not list:
        annotation = args[0]
    if typing.get_origin(annotation) is list:
        return "list of " + _type_name(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, Enum):
        return " / ".join(str(m.value) for m in annotation)
    return getattr(annotation, "__name__", str(annotation)).lower()


def _param_row(param: Any) -> str:
    is_argument = type(param).__name__ == "TyperArgument"
    names = [param.name.upper()] if is_argument else list(param.opts) + list(param.secondary_opts)
    name = ", ".join(f"`{opt}`" for opt in names)
    kind = (
        "flag" if getattr(param, "is_flag", False) else _type_name(param.type_descriptor.annotation)
    )
    # A command offering only some of an option's choices says which in its metavar.
    metavar = getattr(param, "metavar", None)
    if metavar and " / " in kind:
        kind = metavar.strip("[]").replace("|", " / ")
    default = param.default
    if isinstance(default, Enum):
        default = default.value
    shown = "" if default in (None, False) or is_argument or callable(default) else f"`{default}`"
    help_text = (param.help or "").replace("|", "/")
    return f"| {name} | {kind} | {shown} | {help_text} |"


def cli_reference() -> str:
    """The Markdown reference of every command, its options and defaults."""
    root = typer.main.get_command(app)
    lines = [
        "# Command-line reference",
        "",
        "Generated from the code by `python -m calibrate.cli.reference`; a test keeps it in step.",
        "",
        f"`calibrate` — {root.help}",
        "",
        "Every command that reads the store takes `--db PATH` (default `$CALIBRATE_DB`, else "
        "`./calibrate.duckdb`). Results go to stdout, diagnostics to stderr. Exit codes: 0 done, "
        "1 `--strict` found quarantined records, `monitor --fail-on-alarm` an alarm (or a "
        "command's own failure), 2 unusable arguments (a `--process`, `--step` or `--model` no "
        "check carries, a `--since` later than `--until`), 3 the store is in use by another "
        "process. A `--since`/`--until` window that holds no check is not an error: exit 0, "
        "an empty result and a note on stderr.",
        "",
    ]
    for name, command in _commands(root):
        lines += [f"## `calibrate {name}`", "", inspect.cleandoc(command.help or ""), ""]
        params = [p for p in command.params if p.name != "help"]
        if params:
            lines += ["| Option | Type | Default | Meaning |", "|---|---|---|---|"]
            lines += [_param_row(p) for p in params]
            lines.append("")
    return "\n".join(lines)


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Every command with its full name; a group's commands follow it (``audit draw``)."""
    out: list[tuple[str, Any]] = []
    for name, command in group.commands.items():
        sub = getattr(command, "commands", None)
        if sub is not None:
            out += _commands(command, f"{prefix}{name} ")
        else:
            out.append((f"{prefix}{name}", command))
    return out


if __name__ == "__main__":  # pragma: no cover
    print(cli_reference(), end="")
