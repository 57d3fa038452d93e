"""Ninja's steps in the author's words, and which one runs: Ninja prints a step when it ends (on a pipe), so a
long first step (a precompiled header) is named from its dry run, while it runs."""

from __future__ import annotations

from pathlib import Path

import pytest
from build_runs import run_cli
from cpu_projects import quick_project

from kernel_builder.pipeline.compile.compiler_output import compiler_diagnostics
from kernel_builder.pipeline.compile.ninja_build import planned_steps, step_name


def test_step_names(tmp_path: Path) -> None:
    pch = tmp_path / "CMakeFiles" / "kb_kernel_relu_cpu.dir" / "cmake_pch.hxx"
    pch.parent.mkdir(parents=True)
    pch.write_text(
        '#include "/x/kb_manylinux.h"\n#include <ATen/core/Tensor.h>\n#include <ATen/Parallel.h>\n'
    )
    assert step_name("Building CXX object CMakeFiles/kb_kernel_relu_cpu.dir/cmake_pch.hxx.gch", tmp_path) == (
        "precompiling Torch's headers (<ATen/core/Tensor.h>, <ATen/Parallel.h>)"
    )
    root = Path("/tmp/nc/fl")
    assert (
        step_name(
            "Building CXX object CMakeFiles/kb_binding.dir/tmp/nc/fl/torch-ext/torch_binding.cpp.o", root=root
        )
        == "compiling torch-ext/torch_binding.cpp"
    )
    assert step_name("Building CXX object CMakeFiles/kb_manylinux.dir/manylinux/kb_manylinux.cpp.o") == (
        "compiling manylinux/kb_manylinux.cpp"
    )
    assert step_name("Linking CXX shared module kb_load_extension.abi3.so") == "linking"
    assert step_name("Re-running CMake...") == "re-running CMake..."


def test_planned_steps_of_a_real_ninja_file(tmp_path: Path) -> None:
    (tmp_path / "build.ninja").write_text(
        "rule cp\n  command = cp $in $out\n  description = Copying $out\n"
        "build b.txt: cp a.txt\nbuild c.txt: cp b.txt\n"
    )
    (tmp_path / "a.txt").write_text("a")
    assert planned_steps(tmp_path) == ["Copying b.txt", "Copying c.txt"]
    assert not (tmp_path / "b.txt").exists()  # a dry run
    (tmp_path / "build.ninja").write_text("this is not ninja\n")
    assert planned_steps(tmp_path) is None


def test_only_the_compilers_lines_are_kept() -> None:
    lines = [
        "-- Could NOT find kineto: library kineto not found",
        "[1/4] Building CXX object CMakeFiles/a.dir/a.cpp.o",
        "FAILED: [code=1] CMakeFiles/b.dir/b.cpp.o ",
        "b.cpp: In function 'void f()':",
        "b.cpp:3:5: error: 'x' was not declared in this scope",
        "    3 |     x = 1;",
        "[2/4] Building CXX object CMakeFiles/c.dir/c.cpp.o",
        "ninja: build stopped: subcommand failed.",
        "KB_LINKER_GOLD: off",
    ]
    assert compiler_diagnostics(lines) == [
        "b.cpp: In function 'void f()':",
        "b.cpp:3:5: error: 'x' was not declared in this scope",
        "    3 |     x = 1;",
    ]


@pytest.mark.slow
def test_a_comment_edit_rebuilds_without_cmakes_output(tmp_path: Path) -> None:
    """A comment-only edit gives a new op namespace, so Ninja runs CMake again: its one line says so, and
    CMake's own output (Torch's warnings, "-- Configuring done") is not printed."""
    root = quick_project(tmp_path / "quick")
    first = run_cli(["build", str(root), "--backend", "cpu"])
    assert first.returncode == 0, first.stderr
    quick_project(root, marker="edited comment")
    again = run_cli(["build", str(root), "--backend", "cpu"])
    assert again.returncode == 0, again.stderr
    output = again.stdout + again.stderr
    assert output.count("Re-running CMake") == 1, output
    for noise in (
        "-- Configuring done",
        "-- Generating done",
        "Build files have been written",
        "CMake Warning",
    ):
        assert noise not in output, output
    assert "[1/" in again.stdout  # the compile steps still stream
