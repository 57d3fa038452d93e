"""The lines of a kernel project's own source files, for messages that point at the author's code (a
declaration that does not match its definition, an op parameter of a type no schema takes). Build outputs,
kernel-builder's state and git's files are not the author's code, so they are never searched."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path

#: Top-level folders of a project that hold no source of its author's.
NOT_SOURCES = frozenset({"build", ".kernel-builder", ".git"})


def source_lines(root: Path, suffixes: Collection[str]) -> Iterator[tuple[str, int, str]]:
    """``(path relative to root, line number, stripped text)`` for every line of the files below ``root``
    whose suffix is in ``suffixes``, in path order; unreadable files are passed over."""
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] in NOT_SOURCES or path.suffix not in suffixes:
            continue
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            yield relative.as_posix(), number, line.strip()
