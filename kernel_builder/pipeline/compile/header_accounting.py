"""Header accounting: project files that compiled sources include but no ``src`` lists.

Those files are outside the unique id (two builds that differ only there get the same op namespace), and a
sandboxed build, which sees only what ``src`` lists, would not find them. The build warns about each one.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from kernel_builder import backends
from kernel_builder.config.model import KernelProject
from kernel_builder.pipeline.compile.ninja_build import included_files
from kernel_builder.pipeline.state import BUILD_DIR, KERNEL_TREE_COPY, STATE_DIR

#: Compiled sources: they are listed in ``src`` by construction, or compiled by another component. C and C++, and
#: each backend's own (``source_suffixes``: ``.cu``, ``.hip``, ``.mm``, ...).
CXX_SOURCE_SUFFIXES = frozenset({".c", ".cc", ".cpp", ".cxx"})
#: Build products that dependency records may mention (never headers).
PRODUCT_SUFFIXES = frozenset({".o", ".obj", ".a", ".so", ".lib", ".dll", ".dylib", ".d"})
#: Files the build writes into the kernel root itself.
GENERATED = frozenset({KERNEL_TREE_COPY})


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
    sources = CXX_SOURCE_SUFFIXES.union(*(b.source_suffixes for b in backends.all_backends()))
    unlisted: dict[str, str] = {}
    seen: set[Path] = set()
    directories: dict[str, str] = {}
    for obj, files in included.items():
        for file in files:
            if file in seen:  # Torch's headers, read by every object (and a precompiled header)
                continue
            seen.add(file)
            path = _resolve(file, directories)
            if not path.is_relative_to(root) or any(path.is_relative_to(e) for e in skipped):
                continue
            if path.suffix in sources or path.suffix in PRODUCT_SUFFIXES:
                continue
            rel = path.relative_to(root).as_posix()
            if rel not in known:
                unlisted.setdefault(rel, obj)
    return unlisted


def _resolve(file: Path, directories: dict[str, str]) -> Path:
    """``file.resolve()``, each directory resolved once (a build's objects read a thousand headers in a few)."""
    if os.path.islink(file):
        return file.resolve()
    parent = str(file.parent)
    real = directories.get(parent)
    if real is None:
        real = directories[parent] = os.path.realpath(parent)
    return Path(real) / file.name


def header_warnings(project: KernelProject, cmake_build: Path, stage: Path | None = None) -> list[str]:
    """One warning per project header that the files compiled in ``cmake_build`` include and no ``src`` lists.
    ``stage``: the directory the compilers reached the project's files through, a mirror of the root
    (``source_stage``); what was read there counts as read in the root."""
    config = project.config
    listed = set(getattr(config.framework, "src", ())) | {s for k in config.kernels for s in k.src}
    excluded = (project.root / BUILD_DIR, project.root / STATE_DIR)
    included = included_files(cmake_build)
    if stage is not None:
        mirrors = (stage, stage.resolve())

        def in_root(file: Path) -> Path:
            base = next((m for m in mirrors if file.is_relative_to(m)), None)
            return project.root / file.relative_to(base) if base is not None else file

        included = {obj: [in_root(f) for f in files] for obj, files in included.items()}
    unlisted = unlisted_headers(project.root, included, listed, excluded)
    return [
        f"header `{rel}` is included by a compiled file but listed in no `src`: it is not part of the unique id, "
        "and a sandboxed build would not see it; add it to the `src` of the kernel that uses it"
        for rel in sorted(unlisted)
    ]
