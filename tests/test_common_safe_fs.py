"""Bounded reads, confined writes and walks that do not follow directory links (kernel_builder.common.safe_fs)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from kernel_builder.common.safe_fs import (
    OutsideRootError,
    UnsafeFileError,
    read_bounded,
    scan_tree,
    write_inside,
)


def test_read_bounded_reads_regular_files_and_links_to_them(tmp_path: Path) -> None:
    (tmp_path / "a").write_bytes(b"12345")
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert read_bounded(tmp_path / "a", 5) == b"12345"
    assert read_bounded(tmp_path / "link", 5) == b"12345"
    with pytest.raises(UnsafeFileError) as caught:
        read_bounded(tmp_path / "a", 4)
    assert str(caught.value) == "it is larger than 4 bytes (5 bytes)"
    (tmp_path / "big").write_bytes(b"x" * ((1 << 20) + 1))
    with pytest.raises(UnsafeFileError, match=r"^it is larger than 1 MiB \(1048577 bytes\)$"):
        read_bounded(tmp_path / "big", 1 << 20)


def test_read_bounded_refuses_fifos_devices_and_directories_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would wait forever
    (tmp_path / "zero").symlink_to("/dev/zero")
    started = time.monotonic()
    for name, kind in (("fifo", "a FIFO"), ("zero", "a character device"), (".", "a directory")):
        with pytest.raises(UnsafeFileError) as caught:
            read_bounded(tmp_path / name, 1 << 20)
        assert str(caught.value) == f"it is {kind}, not a regular file"
    assert time.monotonic() - started < 2
    with pytest.raises(FileNotFoundError):
        read_bounded(tmp_path / "missing", 10)
    with pytest.raises(OSError, match="File name too long"):
        read_bounded(tmp_path / ("x" * 300), 10)


def test_write_inside_is_atomic_and_creates_directories(tmp_path: Path) -> None:
    target = write_inside(tmp_path, "a/b/c.txt", b"one")
    assert target == tmp_path / "a" / "b" / "c.txt" and target.read_bytes() == b"one"
    write_inside(tmp_path, "a/b/c.txt", b"two", mode=0o600)
    assert target.read_bytes() == b"two" and (target.stat().st_mode & 0o777) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["c.txt"]  # no temporary left behind


def test_write_inside_replaces_a_planted_link_instead_of_writing_through_it(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    root = tmp_path / "root"
    root.mkdir()
    (root / "out.txt").symlink_to(victim)
    (root / "dangling").symlink_to(tmp_path / "created-outside")
    write_inside(root, "out.txt", b"new")
    write_inside(root, "dangling", b"new")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "created-outside").exists()
    assert not (root / "out.txt").is_symlink() and (root / "out.txt").read_bytes() == b"new"
    assert not (root / "dangling").is_symlink()


@pytest.mark.parametrize("relpath", ["../x", "a/../../x", "/etc/passwd", "", "a//b", "./x"])
def test_write_inside_refuses_paths_that_are_not_plain(tmp_path: Path, relpath: str) -> None:
    with pytest.raises(OutsideRootError, match="is not a plain relative path"):
        write_inside(tmp_path / "root", relpath, b"x")
    assert sorted(tmp_path.iterdir()) == []


def test_write_inside_refuses_a_directory_link_that_leaves_the_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (root / "refs").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    with pytest.raises(OutsideRootError, match="is outside"):
        write_inside(root, "refs/main", b"x")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    # The root itself may be a link (a cache on another disk): what is below it is checked against its target.
    (tmp_path / "alias").symlink_to(root, target_is_directory=True)
    assert write_inside(tmp_path / "alias", "ok.txt", b"y").read_bytes() == b"y"
    assert (root / "ok.txt").is_file()


def test_scan_tree_lists_files_and_reports_what_it_does_not_enter(tmp_path: Path) -> None:
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "a.py").write_text("a")
    (tmp_path / "pkg" / "__pycache__" / "a.pyc").write_text("b")
    (tmp_path / "blob").write_text("c")
    (tmp_path / "linked.py").symlink_to(tmp_path / "blob")
    (tmp_path / "up").symlink_to(tmp_path, target_is_directory=True)  # a cycle, never entered
    (tmp_path / "root").symlink_to("/", target_is_directory=True)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    scan = scan_tree(tmp_path, skip=lambda rel, is_dir: is_dir and rel.endswith("__pycache__"))
    assert sorted(scan.files) == ["blob", "linked.py", "pkg/a.py"]
    assert scan.files["linked.py"] == tmp_path / "linked.py"
    assert scan.directory_links == ["root", "up"]
    assert scan.special == {"dangling": "a dangling symlink", "fifo": "a FIFO"}
    assert scan.unreadable == {}


def _linked_tree(tmp_path: Path) -> tuple[Path, Path]:
    """A package whose links lead to a shared directory outside it, back up into itself, and to a file."""
    root, shared = tmp_path / "pkg", tmp_path / "shared"
    (root / "sub").mkdir(parents=True)
    shared.mkdir()
    (root / "sub" / "a.py").write_text("a")
    (shared / "s.py").write_text("s")
    (shared / "back").symlink_to(shared, target_is_directory=True)  # a loop inside the followed directory
    (root / "sub" / "shared").symlink_to(shared, target_is_directory=True)
    (root / "sub" / "up").symlink_to(root, target_is_directory=True)  # back to an ancestor
    (root / "again").symlink_to(root / "sub", target_is_directory=True)  # a sibling: not a loop
    (root / "file.py").symlink_to(shared / "s.py")
    (root / "dangling").symlink_to(tmp_path / "nowhere")
    return root, shared


def test_scan_tree_follows_accepted_links_and_cuts_loops(tmp_path: Path) -> None:
    root, shared = _linked_tree(tmp_path)
    asked: list[str] = []

    def follow(rel: str, target: Path) -> bool:
        asked.append(rel)
        return True

    scan = scan_tree(root, follow=follow)
    assert sorted(scan.files) == [
        "again/a.py",
        "again/shared/s.py",
        "file.py",
        "sub/a.py",
        "sub/shared/s.py",
    ]
    assert scan.loops == {
        "again/shared/back": shared,
        "again/up": root,
        "sub/shared/back": shared,
        "sub/up": root,
    }
    assert scan.directory_links == [] and scan.refused_links == {}
    assert scan.special == {"dangling": "a dangling symlink"}
    assert "dangling" not in asked and "file.py" in asked


def test_scan_tree_reports_refused_links_without_entering_them(tmp_path: Path) -> None:
    root, shared = _linked_tree(tmp_path)
    real_root = Path(os.path.realpath(root))
    scan = scan_tree(root, follow=lambda rel, target: target == real_root or real_root in target.parents)
    assert sorted(scan.files) == ["again/a.py", "sub/a.py"]
    assert scan.refused_links == {
        "again/shared": shared,
        "file.py": shared / "s.py",
        "sub/shared": shared,
    }
    assert scan.loops == {"again/up": root, "sub/up": root}


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every directory")
def test_scan_tree_reports_unreadable_directories(tmp_path: Path) -> None:
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0)
    try:
        assert scan_tree(tmp_path).unreadable == {"locked": "Permission denied"}
    finally:
        (tmp_path / "locked").chmod(0o755)


def test_scan_tree_is_not_limited_by_recursion_depth(tmp_path: Path) -> None:
    deep = tmp_path
    for _ in range(60):
        deep = deep / ("d" * 50)
    try:
        os.makedirs(deep)
    except OSError:
        pytest.skip("the file system refuses such a deep path")
    (deep / "f").write_text("x")
    scan = scan_tree(tmp_path)
    assert len(scan.files) == 1
