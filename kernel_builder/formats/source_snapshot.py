"""What the sources of a project were at its last successful build, in ``.kernel-builder/sources.json``.

The builder writes it after a build whose variants all succeeded: for each file the unique id hashes
(``build.toml``, every ``src``, the shipped Python files), its SHA-256, size and modification time as the build
read them when it planned (:func:`read_source`), so a file edited while the build compiled reads as changed. The loader
reads it to tell, cheaply, whether ``build/`` is older than the sources (:func:`changed_files`): a file whose
size and time are unchanged is taken as unchanged; any other is hashed, so a touch or a checkout that restores
the same bytes is not a change. Shared by the builder and the loader, so it imports neither.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SNAPSHOT = Path(".kernel-builder") / "sources.json"
_VERSION = 1


@dataclass(frozen=True)
class SourceFile:
    """One source file as a build read it: its path (``/``-separated, relative to the kernel root), the SHA-256
    of the bytes read, and its size and modification time."""

    path: str
    sha256: str
    size: int
    mtime_ns: int


def read_source(root: Path, rel: str) -> tuple[SourceFile, bytes]:
    """Read ``root/rel`` once: its record and its bytes. Size and time are taken before the bytes are read, so a
    write racing the read leaves the file newer than its record (and the loader then hashes it again)."""
    with open(root / rel, "rb") as handle:
        info = os.fstat(handle.fileno())
        data = handle.read()
    return SourceFile(rel, hashlib.sha256(data).hexdigest(), info.st_size, info.st_mtime_ns), data


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write(root: Path, files: Iterable[SourceFile]) -> None:
    """Record ``files`` (their paths relative to ``root``) as the build read them."""
    entries: dict[str, dict[str, object]] = {}
    for file in files:
        entries[file.path] = {"sha256": file.sha256, "size": file.size, "mtime_ns": file.mtime_ns}
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
