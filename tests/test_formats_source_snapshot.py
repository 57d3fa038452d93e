"""The record of a project's sources at its last build (``kernel_builder.formats.source_snapshot``): a changed
or removed file is reported; a touched file with the same bytes is not."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from kernel_builder.formats import source_snapshot


def project(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "build.toml").write_text("[general]\n", encoding="utf-8")
    (tmp_path / "src" / "a.cpp").write_text("int a;\n", encoding="utf-8")
    (tmp_path / "src" / "b.cpp").write_text("int b;\n", encoding="utf-8")
    files = ["build.toml", "src/a.cpp", "src/b.cpp"]
    source_snapshot.write(tmp_path, [source_snapshot.read_source(tmp_path, rel)[0] for rel in files])
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


def test_a_file_edited_after_it_was_read_is_a_change(tmp_path: Path) -> None:
    """The builder records its sources as it read them when it planned: an edit during the compile (same size,
    even) is not taken for what the build was made from."""
    root = project(tmp_path)
    read = [source_snapshot.read_source(root, rel)[0] for rel in ("build.toml", "src/a.cpp", "src/b.cpp")]
    path = root / "src" / "a.cpp"
    info = path.stat()
    path.write_text("int A;\n", encoding="utf-8")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
    source_snapshot.write(root, read)
    assert source_snapshot.changed_files(root) == ["src/a.cpp"]


def test_read_source_gives_the_bytes_and_their_record(tmp_path: Path) -> None:
    root = project(tmp_path)
    file, data = source_snapshot.read_source(root, "src/b.cpp")
    info = (root / "src" / "b.cpp").stat()
    assert data == b"int b;\n"
    assert file == source_snapshot.SourceFile(
        "src/b.cpp", hashlib.sha256(data).hexdigest(), info.st_size, info.st_mtime_ns
    )
