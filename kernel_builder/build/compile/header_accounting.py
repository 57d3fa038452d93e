"""Header accounting: project files that compiled sources include but no ``src`` lists.

Those files are outside the unique id (two builds that differ only there get the same op namespace), and a
sandboxed build, which sees only what ``src`` lists, would not find them. The build warns about each one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

#: Compiled sources: they are listed in ``src`` by construction, or compiled by another component.
SOURCE_SUFFIXES = frozenset({".c", ".cc", ".cpp", ".cxx", ".cu", ".hip", ".mm", ".metal"})
#: Build products that dependency records may mention (never headers).
PRODUCT_SUFFIXES = frozenset({".o", ".obj", ".a", ".so", ".lib", ".dll", ".dylib", ".d"})
#: Files the build writes into the kernel root itself.
GENERATED = frozenset({"torch-ext/registration.h"})


def unlisted_headers(
    root: Path,
    included: Mapping[str, Iterable[Path]],
    listed: Iterable[str],
    excluded: Iterable[Path] = (),
) -> dict[str, str]:
    """Included files under ``root`` (and not under ``excluded``) that ``listed`` lacks, relative to ``root``,
    each with the first object that read it. ``included`` maps objects to absolute paths."""
    root = root.resolve()
    skipped = [Path(e).resolve() for e in excluded]
    known = set(listed) | GENERATED
    unlisted: dict[str, str] = {}
    for obj, files in included.items():
        for file in files:
            path = file.resolve()
            if not path.is_relative_to(root) or any(path.is_relative_to(e) for e in skipped):
                continue
            if path.suffix in SOURCE_SUFFIXES or path.suffix in PRODUCT_SUFFIXES:
                continue
            rel = path.relative_to(root).as_posix()
            if rel not in known:
                unlisted.setdefault(rel, obj)
    return unlisted
