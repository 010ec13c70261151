"""The names in calibrate.__all__ resolve, and the light import stays light."""

from __future__ import annotations

import subprocess
import sys

import calibrate


def test_every_public_name_resolves():
    for name in calibrate.__all__:
        assert getattr(calibrate, name) is not None, name


def test_import_does_not_load_plotting_or_sklearn():
    code = "import sys, calibrate; print('matplotlib' in sys.modules, 'sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
