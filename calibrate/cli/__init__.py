"""The ``calibrate`` command line: a thin face over the library.

Each command lives in its own module under ``calibrate.cli``, parses its
options, calls one library function and renders what it returns. Shared
options are defined once in :mod:`calibrate.cli.options`.
"""

from __future__ import annotations

import sys

from calibrate.cli.app import app

# Importing a command module registers its command on ``app``.
from calibrate.cli import ingest as _ingest  # noqa: E402,F401
from calibrate.cli import status as _status  # noqa: E402,F401
from calibrate.cli import simulate as _simulate  # noqa: E402,F401
from calibrate.cli import demo as _demo  # noqa: E402,F401
# -- more commands register below this line --
from calibrate.cli import agreement as _agreement  # noqa: E402,F401
from calibrate.cli import curves as _curves  # noqa: E402,F401


def main() -> None:
    """Console-script entry point."""
    app(prog_name="calibrate")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
