"""Compiler errors as the author reads them: the file as written in the project (not relative to the hidden CMake
build directory), the first error in the summary, Ninja's compiler command only with ``-v``.

The compile tests build a small CMake project laid out like a variant's (``.kernel-builder/<variant>/project``
and ``cmake-build``) with the real CMake, Ninja, compiler and compiler cache; the cache is what turns project
paths into ``../../../src.cpp``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_builder.errors import BuildError
from kernel_builder.pipeline.compile import compiler_cache, ninja_build
from kernel_builder.pipeline.compile.compiler_output import Cleaner, first_error

BROKEN = """// a CPU kernel with a typo on line 5
#include <cstdint>

int64_t twice(int64_t x) {
  int64_t const y = 2 * xx;
  return y;
}
"""


def test_paths_relative_to_the_build_directory_become_project_paths(tmp_path: Path) -> None:
    root = tmp_path / "my-relu"
    cleaner = Cleaner(root / ".kernel-builder" / "v" / "cmake-build", root)
    assert cleaner.line("../../../my_relu_cpu/relu_cpu.cpp:20:3: error: expected ';'") == (
        "my_relu_cpu/relu_cpu.cpp:20:3: error: expected ';'"
    )
    assert cleaner.line(f"In file included from {root}/torch-ext/torch_binding.cpp:4:") == (
        "In file included from torch-ext/torch_binding.cpp:4:"
    )
    # Paths outside the project (system and torch headers) stay as they are.
    assert cleaner.line("/usr/include/c++/12/vector:66, from x") == "/usr/include/c++/12/vector:66, from x"
    # Ninja's failed command follows its FAILED line: dropped unless verbose.
    assert cleaner.line("FAILED: [code=1] CMakeFiles/a.o") == "FAILED: [code=1] CMakeFiles/a.o"
    assert cleaner.line("/usr/bin/g++ -c ../../../a.cpp -o a.o") is None
    verbose = Cleaner(root / "b", root, verbose=True)
    verbose.line("FAILED: a.o")
    assert verbose.line("/usr/bin/g++ -c a.cpp") == "/usr/bin/g++ -c a.cpp"


def test_first_error_reads_gcc_and_nvcc_forms() -> None:
    gcc = first_error(
        ["In file included from a.h:1:", "src/a.cpp:5:3: warning: x", "src/a.cpp:7:1: error: y"]
    )
    assert gcc is not None and gcc.location == "src/a.cpp:7:1"
    nvcc = first_error(['relu_cuda/relu.cu(12): error: identifier "foo" is undefined'])
    assert nvcc is not None and nvcc.location == "relu_cuda/relu.cu:12"
    fatal = first_error(["k/a.cpp:2:10: fatal error: nope.h: No such file or directory"])
    assert fatal is not None and fatal.location == "k/a.cpp:2:10"
    assert first_error(["ninja: build stopped: subcommand failed."]) is None


def configured(root: Path) -> Path:
    """The fixture's CMake build directory, configured with the compiler cache as ``build`` does."""
    source = root / "my_relu_cpu" / "relu_cpu.cpp"
    source.parent.mkdir(parents=True)
    source.write_text(BROKEN, encoding="utf-8")
    project = root / ".kernel-builder" / "v" / "project"
    project.mkdir(parents=True)
    (project / "CMakeLists.txt").write_text(
        f"cmake_minimum_required(VERSION 3.26)\nproject(fixture LANGUAGES CXX)\nadd_library(fixture OBJECT {source})\n",
        encoding="utf-8",
    )
    cache = compiler_cache.find()
    build_dir = project.parent / "cmake-build"
    ninja_build.configure(
        project, build_dir, build_type="Release", cuda=False, verbose=False,
        launcher=cache.launcher(root) if cache else (),
    )  # fmt: skip
    return build_dir


@pytest.mark.slow
def test_a_syntax_error_names_the_file_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "my-relu"
    build_dir = configured(root)

    with pytest.raises(BuildError) as streamed:
        ninja_build.build(build_dir, jobs=1, verbose=False, root=root)
    message = str(streamed.value)
    summary = message.splitlines()[0]
    assert summary.startswith("compilation failed: my_relu_cpu/relu_cpu.cpp:5:"), message
    assert "error:" in summary
    assert "run with -v to see every compiler command" in message
    assert "--build" not in message and "../" not in message
    out = capsys.readouterr().out
    assert "my_relu_cpu/relu_cpu.cpp:5:" in out and "../../../" not in out
    assert " -c " not in out  # the compiler command line is not shown

    # A parallel build's log: the summary, then the end of the output, then where the log is.
    log = build_dir.parent / "build.log"
    with pytest.raises(BuildError) as logged:
        ninja_build.build(build_dir, jobs=1, verbose=False, root=root, log_file=log)
    message = str(logged.value)
    assert message.splitlines()[0] == summary
    assert f"full output: {log}" in message
    assert "../../../" not in log.read_text(encoding="utf-8")

    # -v: the compiler command and the build command are there.
    with pytest.raises(BuildError) as verbose:
        ninja_build.build(build_dir, jobs=1, verbose=True, root=root)
    assert verbose.value.args[0].splitlines()[0] == summary
    assert "command: " in str(verbose.value) and "--build" in str(verbose.value)
    assert " -c " in capsys.readouterr().out
