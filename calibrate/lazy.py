"""Modules that load on first use, so that a command pays only for what it runs.

``calibrate ingest`` needs DuckDB and Typer; the analysis commands also need
pandas, SciPy, scikit-learn and matplotlib, which take seconds to import.
Every command is registered at start-up (that is how ``calibrate --help``
lists them), so the command modules bind their heavy dependencies with
:func:`lazy_module` instead of ``import``: the name exists at once, the module
runs when an attribute of it is first read.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    """Return module ``name``, executed on first attribute access.

    Parameters
    ----------
    name : str
        The absolute module name, e.g. ``"calibrate.analysis.agreement"``.

    Returns
    -------
    module
        The module object (the real one once it has been imported).

    Notes
    -----
    This is the recipe of :class:`importlib.util.LazyLoader`. A module that is
    already imported is returned as it is. The parent package is imported at
    once (it must be light); import errors surface at first use.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:
        # As an import does: `import a.b` then `a.b` must find the module on its package.
        setattr(sys.modules[parent], child, module)
    return module
