"""Header accounting from Ninja's dependency records (docs/layout.md "listed in no `src`").

A real Ninja tree, compiled and linked with the real g++ and GNU ld: the compile rule records the headers it read,
and the link rule records its inputs through the linker's depfile, as CMake sets it up for GNU ld >= 2.41, lld
and mold. Paths in the records are relative to the build directory where the compiler and linker got relative
ones: an object (``obj/a.cpp.o``) and a header found through a relative include directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cpu_projects import GENERAL

from kernel_builder.config import load_project
from kernel_builder.pipeline.compile.header_accounting import header_warnings, unlisted_headers
from kernel_builder.pipeline.compile.ninja_build import included_files
from kernel_builder.pipeline.environment import toolchain

NINJA = """
rule cxx
  command = g++ -MD -MF $out.d -I../../include -I{root}/abs -fPIC -c $in -o $out
  depfile = $out.d
  deps = gcc
rule link
  command = g++ -shared -Wl,--dependency-file=$out.d -o $out $in
  depfile = $out.d
  deps = gcc
build obj/a.cpp.o: cxx {root}/src/a.cpp
build kernel.so: link obj/a.cpp.o
"""


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A kernel root with a build directory ``.kernel-builder/b`` built by Ninja; returns the root."""
    if shutil.which("g++") is None:
        pytest.skip("no g++")
    root = tmp_path / "kernel"
    for rel, text in {
        "src/a.cpp": '#include "listed.h"\n#include "relative.h"\n#include "absolute.h"\nint f() { return 1; }\n',
        # Distinct contents: GCC's #pragma once treats identical files as one.
        "include/listed.h": "#pragma once\n#define LISTED 1\n",
        "include/relative.h": "#pragma once\n#define RELATIVE 1\n",
        "abs/absolute.h": "#pragma once\n#define ABSOLUTE 1\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    build = root / ".kernel-builder" / "b"
    build.mkdir(parents=True)
    (build / "build.ninja").write_text(NINJA.format(root=root), encoding="utf-8")
    result = subprocess.run(
        [str(toolchain.ninja().path), "-C", str(build)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return root


@pytest.mark.parametrize("cwd", ["root", "elsewhere"])
def test_included_files_are_absolute_and_only_from_compile_steps(
    tree: Path, cwd: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tree if cwd == "root" else tmp_path)
    deps = included_files(tree / ".kernel-builder" / "b")
    assert list(deps) == ["obj/a.cpp.o"]  # the link step's record (objects, libraries) is not about headers
    files = deps["obj/a.cpp.o"]
    assert all(p.is_absolute() for p in files)
    for rel in ("src/a.cpp", "include/listed.h", "include/relative.h", "abs/absolute.h"):
        assert tree / rel in files, rel


@pytest.mark.parametrize("cwd", ["root", "elsewhere"])
def test_only_unlisted_headers_are_reported_from_any_directory(
    tree: Path, cwd: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tree if cwd == "root" else tmp_path)
    deps = included_files(tree / ".kernel-builder" / "b")
    unlisted = unlisted_headers(tree, deps, ["src/a.cpp", "include/listed.h"], [tree / ".kernel-builder"])
    assert unlisted == {"include/relative.h": "obj/a.cpp.o", "abs/absolute.h": "obj/a.cpp.o"}


def test_products_and_sources_are_never_headers(tmp_path: Path) -> None:
    root = tmp_path / "kernel"
    records = {
        "x.o": [
            root / "CMakeFiles/t.dir/a.cpp.o",
            root / "lib/libfoo.a",
            root / "k.abi3.so",
            root / "kernel/a.cu",
        ],
        "y.o": [root / "kernel/a.cuh", root / "torch-ext/registration.h", tmp_path / "outside.h"],
    }
    assert unlisted_headers(root, records, []) == {"kernel/a.cuh": "y.o"}


def test_excluded_directories_and_symlinked_root(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "build").mkdir(parents=True)
    link = tmp_path / "link"
    os.symlink(real, link)
    records = {"a.o": [real / "build/gen.h", real / "inc/x.h"]}
    assert unlisted_headers(link, records, [], [link / "build"]) == {"inc/x.h": "a.o"}


def test_the_build_warns_once_per_header_of_no_src(tree: Path) -> None:
    """``header_warnings``: the ``src`` lists of the kernel sections count, build/ and .kernel-builder/ do not."""
    (tree / "build.toml").write_text(
        GENERAL.format(name="hdr", backends='["cpu"]')
        + '\n[torch]\n\n[kernel.a]\nbackend = "cpu"\ndepends = []\nsrc = ["src/a.cpp", "include/listed.h"]\n',
        encoding="utf-8",
    )
    (tree / "torch-ext" / "hdr").mkdir(parents=True)
    (tree / "torch-ext" / "hdr" / "__init__.py").write_text("", encoding="utf-8")
    warnings = header_warnings(load_project(tree).project, tree / ".kernel-builder" / "b")
    assert [w.split("`")[1] for w in warnings] == ["abs/absolute.h", "include/relative.h"]
    assert warnings[0].endswith(
        "is included by a compiled file but listed in no `src`: it is not part of the unique id, and a sandboxed "
        "build would not see it; add it to the `src` of the kernel that uses it"
    )
