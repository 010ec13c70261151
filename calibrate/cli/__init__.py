"""The ``calibrate`` command line: a thin face over the library.

Each command lives in its own module under ``calibrate.cli``, parses its
options, calls one library function and renders what it returns. Shared
options are defined once in :mod:`calibrate.cli.options`.
"""

from __future__ import annotations

import sys

# ruff: noqa: I001 - the import order below is the order of `calibrate --help`.

# Importing a command module registers its command on ``app``.
from calibrate.cli import (  # noqa: F401
    demo,
    ingest,
    status,
    agreement,
    curves,
    thresholds,
    report,
    simulate,
    audit,
    monitor,
)
from calibrate.cli.app import app

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point."""
    app(prog_name="calibrate")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
