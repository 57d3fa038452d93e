"""The build state beside the outputs (``kernel_builder.pipeline.state``): the project lock, sweeping, the atomic swap and
writes, and the stamp that tells a reusable CMake build tree from one made elsewhere or by another version."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from kernel_builder import __version__
from kernel_builder.pipeline import state


def test_second_holder_says_it_waits_and_gets_the_lock_after(tmp_path: Path) -> None:
    said: list[str] = []
    order: list[str] = []
    with state.project_lock(tmp_path, said.append):

        def second() -> None:
            with state.project_lock(tmp_path, said.append):
                order.append("second")

        thread = threading.Thread(target=second)
        thread.start()
        deadline = time.monotonic() + 10
        while not said and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        order.append("first done")
    thread.join(10)
    assert order == ["first done", "second"]
    assert said == [
        (
            f"waiting for another kernel-builder build of {tmp_path} to finish "
            f"(it holds {tmp_path / '.kernel-builder' / 'build.lock'})"
        )
    ]


def test_lock_without_waiting_says_nothing(tmp_path: Path) -> None:
    said: list[str] = []
    with state.project_lock(tmp_path, said.append):
        pass
    with state.project_lock(tmp_path, said.append):
        pass
    assert said == []


def test_sweep_removes_leftovers_and_nothing_else(tmp_path: Path) -> None:
    build = tmp_path / "build"
    keep = ["CARD.md", "torch213-cxx11-cpu-x86_64-linux", "torch-cuda", ".gitignore", ".not-ours"]
    gone = [".torch213-cxx11-cpu-x86_64-linux.k3x_9abz", ".torch-cuda.old.0a1b2c3d"]
    for name in keep[1:3] + gone + [".not-ours"]:
        (build / name).mkdir(parents=True)
    (build / "CARD.md").write_text("card")
    (build / ".gitignore").write_text("*")
    (tmp_path / ".kernel-builder" / "tmp" / "torch-cuda.abcdefgh").mkdir(parents=True)
    state.sweep(tmp_path, build)
    assert sorted(p.name for p in build.iterdir()) == sorted(keep)
    assert not (tmp_path / ".kernel-builder" / "tmp").exists()


def test_exchange_swaps_two_directories(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "from-a").touch()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "from-b").touch()
    if not state.exchange(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this system or file system cannot exchange entries (renameat2)")
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["from-b"]
    assert [p.name for p in (tmp_path / "b").iterdir()] == ["from-a"]


def test_exchange_with_a_missing_entry_names_it(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    if state._renameat2() is None:
        pytest.skip("no renameat2")
    with pytest.raises(FileNotFoundError) as info:
        state.exchange(tmp_path / "a", tmp_path / "missing")
    assert info.value.filename == str(tmp_path / "missing")


def test_write_atomic_replaces_whole_files(tmp_path: Path) -> None:
    target = tmp_path / "build" / "CARD.md"
    target.parent.mkdir()
    target.write_text("old")
    state.write_atomic(target, b"new", tmp_path / "staging")
    assert target.read_bytes() == b"new"
    assert list((tmp_path / "staging").iterdir()) == []


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "kernel" / ".kernel-builder" / "v" / "cmake-build"
    tree.mkdir(parents=True)
    state.stamp_tree(tree)
    return tree


def test_fresh_tree_is_reusable(tmp_path: Path) -> None:
    assert state.tree_problem(tmp_path / "absent") is None
    assert state.tree_problem(_tree(tmp_path)) is None


def test_tree_reached_through_a_symlink_is_reusable(tmp_path: Path) -> None:
    _tree(tmp_path)
    os.symlink(tmp_path / "kernel", tmp_path / "link")
    assert state.tree_problem(tmp_path / "link" / ".kernel-builder" / "v" / "cmake-build") is None


@pytest.mark.parametrize("how", ["copy", "move"])
def test_copied_or_moved_tree_is_made_elsewhere(tmp_path: Path, how: str) -> None:
    tree = _tree(tmp_path)
    (shutil.copytree if how == "copy" else os.rename)(tmp_path / "kernel", tmp_path / "other")
    moved = tmp_path / "other" / ".kernel-builder" / "v" / "cmake-build"
    assert state.tree_problem(moved) == f"it was made in {tree}"


def test_tree_of_another_version_or_without_stamp(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    stamp = tree / state.TREE_STAMP
    stamp.write_text(json.dumps({"path": str(tree), "tool": "0.0.1"}))
    assert state.tree_problem(tree) == "it was made by kernel-builder 0.0.1"
    stamp.write_text(json.dumps({"path": str(tree), "tool": __version__}))
    assert state.tree_problem(tree) is None
    stamp.unlink()
    assert state.tree_problem(tree) == "it has no kernel-builder stamp"
