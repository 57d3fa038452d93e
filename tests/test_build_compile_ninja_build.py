"""The compile stage's links for editors (``kernel_builder.build.compile.ninja_build.link_compile_commands``): fast,
real links in a temporary kernel root."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from build_runs import STATE_DIR

from kernel_builder.build.compile.ninja_build import link_compile_commands


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
