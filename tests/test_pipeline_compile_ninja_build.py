"""The compile stage (``kernel_builder.pipeline.compile.ninja_build``): the links for editors, and when configure runs;
fast, real links in a temporary kernel root, and a CMake project of no language."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from build_runs import STATE_DIR

from kernel_builder.pipeline.compile.ninja_build import build, configure, link_compile_commands


def test_links_follow_the_latest_configured_variant(tmp_path: Path) -> None:
    root = tmp_path / "kernel"
    for variant in ("a", "b"):
        (root / STATE_DIR / variant / "cmake-build").mkdir(parents=True)
        (root / STATE_DIR / variant / "cmake-build" / "compile_commands.json").write_text(f'["{variant}"]\n')
    link_compile_commands(root, root / STATE_DIR / "a" / "cmake-build")
    assert os.readlink(root / STATE_DIR / "compile_commands.json") == "a/cmake-build/compile_commands.json"
    assert os.readlink(root / "compile_commands.json") == f"{STATE_DIR}/compile_commands.json"
    link_compile_commands(root, root / STATE_DIR / "b" / "cmake-build")
    assert (root / "compile_commands.json").read_text() == '["b"]\n'
    # Relative links: still right after the project is moved.
    shutil.move(root, tmp_path / "moved")
    assert (tmp_path / "moved" / "compile_commands.json").read_text() == '["b"]\n'


def test_the_projects_own_compile_commands_stays(tmp_path: Path) -> None:
    root = tmp_path / "kernel"
    (root / STATE_DIR / "a" / "cmake-build").mkdir(parents=True)
    (root / "compile_commands.json").write_text("[] # the project's own\n")
    link_compile_commands(root, root / STATE_DIR / "a" / "cmake-build")
    assert (root / "compile_commands.json").read_text() == "[] # the project's own\n"
    assert (root / STATE_DIR / "compile_commands.json").is_symlink()


def test_staged_sources_are_named_in_the_root_for_editors(tmp_path: Path) -> None:
    """Compiled through the source stage (``source_stage``): the editors' file names the root's files."""
    root, stage = tmp_path / "kernel", tmp_path / "stages" / "kernel-a"
    build = root / STATE_DIR / "a" / "cmake-build"
    build.mkdir(parents=True)
    entry = {"directory": str(build), "file": f"{stage}/k/x.cu", "command": f"nvcc -c {stage}/k/x.cu"}
    (build / "compile_commands.json").write_text(json.dumps([entry]))
    link_compile_commands(root, build, stage)
    [seen] = json.loads((root / "compile_commands.json").read_text())
    assert seen == {"directory": str(build), "file": f"{root}/k/x.cu", "command": f"nvcc -c {root}/k/x.cu"}
    assert not (root / STATE_DIR / "compile_commands.json").is_symlink()


def test_links_already_right_are_left_alone(tmp_path: Path) -> None:
    """A new link would change the root's modification time, and the root is often the build interpreter's current
    directory, on its search path: the interpreter probe would run again at every ``kernel_builder.load``."""
    root = tmp_path / "kernel"
    build = root / STATE_DIR / "a" / "cmake-build"
    build.mkdir(parents=True)
    link_compile_commands(root, build)
    os.utime(root, ns=(1, 1))
    link_compile_commands(root, build)
    assert root.stat().st_mtime_ns == 1
    assert os.readlink(root / "compile_commands.json") == f"{STATE_DIR}/compile_commands.json"


PROJECT = """cmake_minimum_required(VERSION 3.26)
project(kb_test LANGUAGES NONE)
add_custom_target(marker ALL COMMAND "${CMAKE_COMMAND}" -E touch "${CMAKE_BINARY_DIR}/MARKER")
"""


def test_configure_runs_again_only_for_new_arguments(tmp_path: Path) -> None:
    """The same arguments: no CMake run (``kernel_builder.load`` after an edit); a changed CMakeLists.txt is run by
    ``cmake --build`` itself (Ninja's rule for build.ninja); new arguments configure again."""
    project, build_dir = tmp_path / "project", tmp_path / "build"
    project.mkdir()
    (project / "CMakeLists.txt").write_text(PROJECT)
    configure(project, build_dir, build_type="Release", cuda=False, verbose=False)
    cache = build_dir / "CMakeCache.txt"
    os.utime(cache, ns=(1, 1))
    configure(project, build_dir, build_type="Release", cuda=False, verbose=False)
    assert cache.stat().st_mtime_ns == 1
    (project / "CMakeLists.txt").write_text(PROJECT.replace("MARKER", "EDITED"))
    configure(project, build_dir, build_type="Release", cuda=False, verbose=False)
    build(build_dir, jobs=1, verbose=False, log_file=tmp_path / "build.log")
    assert (build_dir / "EDITED").is_file() and not (build_dir / "MARKER").exists()
    configure(project, build_dir, build_type="Debug", cuda=False, verbose=False)
    assert "CMAKE_BUILD_TYPE:UNINITIALIZED=Debug" in cache.read_text()  # no language: CMake leaves it untyped
