"""The record of a project's sources at its last build (``kernel_builder.formats.source_snapshot``): a changed
or removed file is reported; a touched file with the same bytes is not."""

from __future__ import annotations

import os
from pathlib import Path

from kernel_builder.formats import source_snapshot


def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "build.toml").write_text("[general]\n", encoding="utf-8")
    (tmp_path / "src" / "a.cpp").write_text("int a;\n", encoding="utf-8")
    (tmp_path / "src" / "b.cpp").write_text("int b;\n", encoding="utf-8")
    source_snapshot.write(tmp_path, ["build.toml", "src/a.cpp", "src/b.cpp"])
    return tmp_path


def test_nothing_changed(tmp_path: Path) -> None:
    assert source_snapshot.changed_files(project(tmp_path)) == []


def test_a_touch_with_the_same_bytes_is_no_change(tmp_path: Path) -> None:
    root = project(tmp_path)
    info = (root / "src" / "a.cpp").stat()
    os.utime(root / "src" / "a.cpp", ns=(info.st_atime_ns, info.st_mtime_ns + 5_000_000_000))
    assert source_snapshot.changed_files(root) == []


def test_edited_and_removed_files_are_named(tmp_path: Path) -> None:
    root = project(tmp_path)
    (root / "src" / "b.cpp").write_text("int b = 1;\n", encoding="utf-8")
    assert source_snapshot.changed_files(root) == ["src/b.cpp"]
    (root / "src" / "a.cpp").unlink()
    assert source_snapshot.changed_files(root) == ["src/a.cpp", "src/b.cpp"]


def test_no_record_or_a_damaged_one_says_nothing(tmp_path: Path) -> None:
    assert source_snapshot.changed_files(tmp_path) is None
    (tmp_path / source_snapshot.SNAPSHOT).parent.mkdir()
    (tmp_path / source_snapshot.SNAPSHOT).write_text("{not json", encoding="utf-8")
    assert source_snapshot.changed_files(tmp_path) is None
    (tmp_path / source_snapshot.SNAPSHOT).write_text('{"version": 1, "files": []}', encoding="utf-8")
    assert source_snapshot.changed_files(tmp_path) is None
