"""Tiny CPU and pure-Python kernel projects for the end-to-end build tests, rendered into temporary directories,
and the helpers every project module writes with (:func:`write_tree`, :data:`GENERAL`, :func:`toml_list`);
also the repository's examples, copied and built once per session.

The projects are kept cheap on purpose: only the binding file includes a Torch header (``torch/library.h``,
a few seconds with g++), and kernel sources are plain C++. Each test module builds each project once
(session-scoped fixtures) and many tests inspect the result.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest
from build_runs import EXAMPLES, STATE_DIR, Built, build, shared_build

# ---------------------------------------------------------------------------------------------------------
# Writing projects


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def copy_example(name: str, dest: Path) -> Path:
    """A copy of ``examples/<name>`` without build output, so tests never write into the repository."""
    ignore = shutil.ignore_patterns("build", STATE_DIR, "registration.h", "__pycache__")
    shutil.copytree(EXAMPLES / name, dest, ignore=ignore)
    return dest


_EXAMPLE_BUILDS: dict[str, Built] = {}


def built_example(name: str, factory: pytest.TempPathFactory) -> Built:
    """``examples/<name>`` copied and built with the tests' interpreter, once per test run (all pytest-xdist
    workers share it, :func:`build_runs.shared_build`): every test that needs the example's default build shares
    this one (and must not change it)."""
    if name not in _EXAMPLE_BUILDS:

        def make(tree: Path) -> Built:
            root = copy_example(name, tree / name)
            return Built(root, build(root))

        _EXAMPLE_BUILDS[name] = shared_build(factory, f"example-{name}", make)
    return _EXAMPLE_BUILDS[name]


GENERAL = """
[general]
name = "{name}"
version = 1
edition = 5
license = "Apache-2.0"
backends = {backends}
"""


def toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


# --- the counter project: an inline function with a static local  ---------------


def counter_project(root: Path, *, marker: str = "", backends: Sequence[str] = ("cpu",)) -> Path:
    """``kb-counter``: ``bump()`` increments a static local of an inline function in a shared header.

    ``marker`` goes into a comment of the kernel source: one different byte gives a different id.
    """
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name="kb-counter", backends=toml_list(backends))
            + textwrap.dedent(
                """
                [torch]
                src = ["torch-ext/torch_binding.cpp"]

                [kernel.counter]
                backend = "cpu"
                depends = []
                src = ["counter/bump.cpp", "counter/counter.h"]
                """
            ),
            "counter/counter.h": """
                #pragma once
                // Without -fno-gnu-unique, GCC makes this static a STB_GNU_UNIQUE symbol, which the dynamic loader
                // shares between every library that defines it, even when they are loaded with RTLD_LOCAL.
                inline long &kb_shared_counter() {
                  static long value = 0;
                  return value;
                }
            """,
            "counter/bump.cpp": f"""
                // {marker or "original"}
                #include <cstdint>

                #include "counter.h"
                #include "offset.h"

                int64_t kb_counter_bump() {{ return ++kb_shared_counter() + KB_COUNTER_OFFSET; }}
            """,
            # Listed in no `src`: outside the id, so changing it relinks without a new id ("Up to date").
            "counter/offset.h": "#pragma once\n#define KB_COUNTER_OFFSET 0\n",
            "torch-ext/torch_binding.cpp": """
                #include <cstdint>

                #include <torch/library.h>

                #include "registration.h"

                int64_t kb_counter_bump();

                TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { ops.def("bump() -> int", &kb_counter_bump); }

                REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
            """,
            "torch-ext/kb_counter/__init__.py": """
                from ._ops import ops


                def bump() -> int:
                    return ops.bump()
            """,
        },
    )


# --- a pure-Python project  ------------------------------------------------------------


def noarch_project(root: Path) -> Path:
    """``kb-noarch``: a ``[torch-noarch]`` kernel with a custom op, a subpackage and data files."""
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name="kb-noarch", backends='["cpu", "cuda"]')
            + '\n[torch-noarch]\npyext = ["py", "json"]\n',
            "torch-ext/kb_noarch/__init__.py": """
                import torch

                from . import layers
                from ._ops import add_op_namespace_prefix, ops


                @torch.library.custom_op(add_op_namespace_prefix("twice"), mutates_args=())
                def twice(x: torch.Tensor) -> torch.Tensor:
                    return x * 2


                __all__ = ["layers", "ops", "twice"]
            """,
            "torch-ext/kb_noarch/layers/__init__.py": "from .._ops import ops\n\nLAYER = 'twice'\n",
            "torch-ext/kb_noarch/data.json": '{"shipped": true}\n',
            "torch-ext/kb_noarch/notes.txt": "not shipped: txt is not in pyext\n",
            "torch-ext/kb_noarch/stub.pyi": "# not shipped: pyi is not in this pyext\n",
            "torch-ext/kb_noarch/_ops.py": "# a user copy: replaced by the generated one\n",
        },
    )


# --- a quick cpu project: every build stage, seconds each (interrupted, copied and concurrent builds) --------


def quick_project(root: Path, *, marker: str = "", data: str = "", repo_id: str = "") -> Path:
    """``kb-quick``: a cpu kernel whose one source includes no Torch header (so compiling takes a second), a
    pure-Python ``torch-cuda`` variant beside it, a ``CARD.md``, and a shipped data file ``data.json``.

    A build runs every stage (probe, Torch check, configure, compile, link, install, ABI check, assembly, import
    check) in seconds. ``marker`` changes one source comment: a new id, so the next build does all of them again.
    """
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name="kb-quick", backends='["cpu", "cuda"]')
            + (f'\n[general.hub]\nrepo-id = "{repo_id}"\n' if repo_id else "")
            + textwrap.dedent(
                """
                [torch]
                pyext = ["py", "json"]

                [kernel.quick]
                backend = "cpu"
                depends = []
                src = ["quick/quick.cpp"]
                """
            ),
            "quick/quick.cpp": f"""
                // {marker or "original"}
                #include "registration.h"

                REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
            """,
            "torch-ext/kb_quick/__init__.py": """
                from ._ops import ops

                __all__ = ["ops"]
            """,
            "torch-ext/kb_quick/data.json": data or '{"quick": true}\n',
            "CARD.md": "# kb-quick\n\nA kernel for build-robustness tests.\n",
        },
    )
