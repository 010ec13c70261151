"""Find input files and tell their kind.

Folders are walked recursively in a stable order; hidden files and folders
(names starting with ``.``) are skipped, as are files whose extension is not an
export kind, and both are reported rather than silently ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from calibrate.errors import UsageError

RECORD_EXTENSIONS = {".jsonl": "records", ".ndjson": "records", ".json": "json"}
TABLE_EXTENSIONS = {".csv": "csv", ".parquet": "parquet"}
PROCESS_EXTENSIONS = {".yaml": "process", ".yml": "process"}
KINDS = {**RECORD_EXTENSIONS, **TABLE_EXTENSIONS, **PROCESS_EXTENSIONS}


@dataclass(frozen=True)
class Source:
    """One file to ingest and the kind its extension says it is."""

    path: Path
    kind: str  # records | json | csv | parquet | process | skipped


def discover(paths: list[str | Path]) -> list[Source]:
    """Expand files and folders into the files to ingest, in a stable order.

    Raises
    ------
    UsageError
        A path does not exist.
    """
    out: list[Source] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise UsageError(f"no such file or folder: {path}")
        # Stored absolute: a file is then the same file (its versions, its quarantine) from any
        # working directory, and two files given as the same relative name are not confused.
        path = path.resolve()
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                rel = child.relative_to(path)
                if any(part.startswith(".") for part in rel.parts) or not child.is_file():
                    continue
                out.append(Source(child, KINDS.get(child.suffix.lower(), "skipped")))
        else:
            out.append(Source(path, KINDS.get(path.suffix.lower(), "skipped")))
    return out


def json_file_kind(text: str) -> str:
    """Tell a ``.json`` file's kind from its content: ``limits`` or ``records``."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return "records"
    if isinstance(doc, dict) and (
        isinstance(doc.get("limits"), dict)
        or {"checkPass", "checkFail", "checkConfidence"} & doc.keys()
    ):
        return "limits"
    return "records"
