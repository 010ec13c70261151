"""Simulated exports for the benchmark, cached by size and seed.

A size is generated once with :func:`calibrate.simulate.simulate` and kept in
``<cache>/sim-<runs>-s<seed>/``; a ``.complete.json`` marker written last makes
a half-written folder (an interrupted run) count as missing, and it records a
digest of the simulator's source, so an export made by an older simulator is
made again.

Sizes above ``replicate_above`` may instead be built by copying a smaller
simulated export ``k`` times with rewritten run ids (a byte-level substitution,
no JSON parsing). The copies repeat the same checks under new ids, which is
irrelevant to loading cost but says nothing new statistically; the report says
which method built each size.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

EXPORT_FILES = ("runs.jsonl", "decisions.csv")


def export_dir(cache: Path, runs: int, seed: int) -> Path:
    """Where the export of ``runs`` runs with ``seed`` lives in the cache."""
    return cache / f"sim-{runs}-s{seed}"


def _marker(folder: Path) -> Path:
    return folder / ".complete.json"


def simulator_version() -> str:
    """A digest of the simulator's source (and the decision rule it uses)."""
    import calibrate.profile
    import calibrate.simulate

    h = hashlib.sha256()
    for module in (calibrate.simulate, calibrate.profile):
        h.update(Path(module.__file__).read_bytes())
    return h.hexdigest()[:12]


def cached(cache: Path, runs: int, seed: int) -> dict[str, Any] | None:
    """The manifest of a complete cached export made by today's simulator, or None."""
    marker = _marker(export_dir(cache, runs, seed))
    if not marker.exists():
        return None
    manifest = json.loads(marker.read_text(encoding="utf-8"))
    if manifest.get("simulator") != simulator_version():
        return None  # the simulator changed since: its output would too
    return manifest


def ensure(
    cache: Path,
    runs: int,
    *,
    seed: int = 0,
    replicate_above: int | None = None,
    base_runs: int = 100_000,
) -> dict[str, Any]:
    """Return the manifest of the cached export, generating it if needed.

    Parameters
    ----------
    cache : Path
        The cache folder (git-ignored).
    runs : int
        Number of runs.
    seed : int, default=0
        Simulator seed.
    replicate_above : int, optional
        Build sizes above this by replicating the ``base_runs`` export; None
        always simulates.
    base_runs : int, default=100_000
        The size replicated; must divide ``runs``.

    Returns
    -------
    dict
        The simulator's manifest plus ``method``, ``seconds`` (generation time)
        and ``bytes`` of the export files.
    """
    found = cached(cache, runs, seed)
    if found is not None:
        return found
    out = export_dir(cache, runs, seed)
    if out.exists():
        shutil.rmtree(out)  # an interrupted generation
    t0 = time.perf_counter()
    if (
        replicate_above is not None
        and runs > replicate_above
        and runs % base_runs == 0
        and runs > base_runs
    ):
        base = ensure(cache, base_runs, seed=seed)
        manifest = _replicate(
            export_dir(cache, base_runs, seed), out, runs // base_runs, seed, base
        )
        manifest["method"] = (
            f"{base_runs:,}-run simulation copied {runs // base_runs}x with rewritten run ids"
        )
    else:
        from calibrate.simulate import simulate

        manifest = dict(simulate(out, runs=runs, seed=seed))
        manifest["method"] = "simulated"
    manifest["seconds"] = round(time.perf_counter() - t0, 1)
    manifest["simulator"] = simulator_version()
    manifest["bytes"] = {name: (out / name).stat().st_size for name in EXPORT_FILES}
    _marker(out).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _replicate(
    src: Path, out: Path, copies: int, seed: int, base: dict[str, Any]
) -> dict[str, Any]:
    """Copy an export ``copies`` times; copy k renames run ``r-SSS-n`` to ``r-SSSxk-n``."""
    out.mkdir(parents=True)
    prefix = f"r-{seed:03d}-".encode()
    runs_text = (src / "runs.jsonl").read_bytes()
    decisions = (src / "decisions.csv").read_bytes()
    header, _, body = decisions.partition(b"\n")
    with open(out / "runs.jsonl", "wb") as fh:
        for k in range(copies):
            fh.write(runs_text.replace(b'"' + prefix, b'"' + prefix[:-1] + b"x%d-" % k))
    with open(out / "decisions.csv", "wb") as fh:
        fh.write(header + b"\n")
        for k in range(copies):
            # Run ids start each CSV row.
            fh.write((b"\n" + body).replace(b"\n" + prefix, b"\n" + prefix[:-1] + b"x%d-" % k)[1:])
    for extra in src.iterdir():
        if extra.is_file() and extra.name not in EXPORT_FILES and not extra.name.startswith("."):
            shutil.copy(extra, out / extra.name)
    keys = ("runs", "checks", "answers", "decisions", "labeled_checks", "unlabeled_checks")
    manifest = {k: base[k] * copies for k in keys if k in base}
    manifest["seed"] = seed
    return manifest
