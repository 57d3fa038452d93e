"""What the sources of a project were at its last successful build, in ``.kernel-builder/sources.json``.

The builder writes it after a build whose variants all succeeded: for each file the unique id hashes
(``build.toml``, every ``src``, the shipped Python files), its SHA-256, size and modification time. The loader
reads it to tell, cheaply, whether ``build/`` is older than the sources (:func:`changed_files`): a file whose
size and time are unchanged is taken as unchanged; any other is hashed, so a touch or a checkout that restores
the same bytes is not a change. Shared by the builder and the loader, so it imports neither.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

SNAPSHOT = Path(".kernel-builder") / "sources.json"
_VERSION = 1


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write(root: Path, files: Iterable[str]) -> None:
    """Record ``files`` (relative to ``root``) as they are now."""
    entries: dict[str, dict[str, object]] = {}
    for rel in files:
        path = root / rel
        info = path.stat()
        entries[rel] = {"sha256": _digest(path), "size": info.st_size, "mtime_ns": info.st_mtime_ns}
    target = root / SNAPSHOT
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(
        json.dumps({"version": _VERSION, "files": entries}, indent=1, sort_keys=True) + "\n", "utf-8"
    )
    os.replace(tmp, target)


def changed_files(root: Path) -> list[str] | None:
    """The recorded files that differ from the last build (changed or removed), in recorded order; None when
    there is no usable record (never built by this version, or unreadable)."""
    try:
        data = json.loads((root / SNAPSHOT).read_text(encoding="utf-8"))
        files = data["files"] if data.get("version") == _VERSION else None
    except (OSError, ValueError, AttributeError, KeyError):
        return None
    if not isinstance(files, dict):
        return None
    changed = []
    for rel, entry in files.items():
        if not isinstance(entry, dict) or not isinstance(rel, str):
            return None
        path = root / rel
        try:
            info = path.stat()
            if info.st_size == entry.get("size") and info.st_mtime_ns == entry.get("mtime_ns"):
                continue
            if info.st_size == entry.get("size") and _digest(path) == entry.get("sha256"):
                continue
        except OSError:
            pass  # removed or unreadable: changed
        changed.append(rel)
    return changed
