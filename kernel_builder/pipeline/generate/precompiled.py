"""The precompiled Torch headers of a ``kernel_builder.load`` build (docs/performance.md, "Edit → load").

Parsing Torch's headers is most of a kernel source's compile (``<ATen/core/Tensor.h>`` alone is about 3 s of a
3.7 s compile of the ``init`` template's kernel on the development VM), and ``load`` recompiles the edited file
at every edit. So a ``load`` build gives each component whose files an edit recompiles a precompiled header
(CMake's ``target_precompile_headers``), built once in the component's CMake build directory and reused by
every later compile until Torch's headers or the component's flags change (Ninja then rebuilds it: its command
line and the headers it read are tracked like any object's).

The precompiled header changes no file's meaning. It holds the force-included manylinux header (which every
C++ file gets first anyway) followed by a run of ``#include <...>`` lines that begins a source, *exactly* as
the source begins: a file compiled with it sees the same text in the same order, the later includes of those
headers being no-ops (include guards). A file that does not begin with that run compiles without it
(``SKIP_PRECOMPILE_HEADERS``), as it would in ``kernel-builder build``. GCC itself refuses a precompiled header
that a macro defined for one file only (``TORCH_EXTENSION_NAME``) would have changed, and reads the header as
text instead. ``kernel-builder build`` never uses one: release objects are compiled as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.pipeline.generate.namespace import without_comments

#: Suffixes CMake compiles as C++ (the only language given a precompiled header here).
CXX_SUFFIXES = frozenset({".cc", ".cpp", ".cxx", ".c++", ".C"})
#: Headers worth precompiling: Torch's. A run of other headers alone (the C++ library) parses quickly, and its
#: precompiled header would cost seconds to write.
TORCH_HEADER_ROOTS = ("ATen/", "c10/", "torch/")

_INCLUDE = re.compile(r"#\s*include\s*<([^<>\s]+)>")


@dataclass(frozen=True)
class Precompiled:
    """A component's precompiled header: ``headers`` (``<...>`` names, in order), compiled once, and used by
    ``sources``; ``skipped`` (its other files) compile without it."""

    headers: tuple[str, ...]
    sources: tuple[str, ...]
    skipped: tuple[str, ...]


def leading_includes(text: str) -> tuple[str, ...]:
    """The ``#include <...>`` lines a C++ source begins with (comments and blank lines between them allowed),
    up to the first line that is anything else: a macro, a quoted include, a declaration."""
    found: list[str] = []
    for line in without_comments(text).splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        match = _INCLUDE.fullmatch(stripped)
        if match is None:
            break
        found.append(match[1])
    return tuple(found)


def _torch_prefix(includes: tuple[str, ...]) -> tuple[str, ...]:
    """``includes`` up to and with its last Torch header (empty when it has none)."""
    last = max((i for i, h in enumerate(includes) if h.startswith(TORCH_HEADER_ROOTS)), default=-1)
    return includes[: last + 1]


def choose_precompiled(root: Path, sources: Sequence[str]) -> Precompiled | None:
    """The precompiled header of a component with ``sources`` (relative to ``root``), or None when none of its
    C++ files begins with a Torch header.

    One header per component (CMake's rule): of the runs the C++ files begin with (each cut after its last
    Torch header), the one that begins the most files, the longest on a tie. Those files use it.
    """
    runs: dict[str, tuple[str, ...]] = {}
    for source in sources:
        if Path(source).suffix not in CXX_SUFFIXES:
            continue
        try:
            text = (root / source).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        run = _torch_prefix(leading_includes(text))
        if run:
            runs[source] = run

    def users(candidate: tuple[str, ...]) -> list[str]:
        return [s for s, run in runs.items() if run[: len(candidate)] == candidate]

    if not runs:
        return None
    best = max(sorted(set(runs.values())), key=lambda c: (len(users(c)), len(c)))
    using = users(best)
    return Precompiled(
        headers=best, sources=tuple(using), skipped=tuple(s for s in sources if s not in using)
    )
