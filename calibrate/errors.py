"""Exceptions raised by calibrate.

The CLI turns each kind into one line on stderr and the exit code stored on
the class, never a traceback.
"""

from __future__ import annotations


class CalibrateError(Exception):
    """Base class for every error calibrate raises on purpose."""

    exit_code: int = 1


class UsageError(CalibrateError, ValueError):
    """The arguments cannot be used (missing path, bad option value).

    Also a ``ValueError``, so that a caller of the Python API catches a bad
    argument as one (the CLI turns it into exit 2 like every other usage error).
    """

    exit_code = 2


class StoreError(CalibrateError):
    """The store cannot be opened or has an unsupported schema."""

    exit_code = 2


class StoreBusyError(StoreError):
    """Another process holds the store for writing."""

    exit_code = 3


class ProcessFileError(CalibrateError):
    """A process file or limits file does not have the check-1 shape."""

    exit_code = 1
