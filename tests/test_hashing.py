"""Chunked file hashing (kernel_builder.common.hashing): the same answers as hashing the bytes at once."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

from kernel_builder.common.hashing import CHUNK_SIZE, feed_file, file_digest, git_blob_id

SIZES = [0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, 2 * CHUNK_SIZE + 7]


def _file(tmp_path: Path, size: int) -> tuple[Path, bytes]:
    data = bytes(range(256)) * (size // 256) + bytes(range(size % 256))
    path = tmp_path / f"f{size}"
    path.write_bytes(data)
    return path, data


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("algorithm", ["sha256", "sha512", "sha1"])
def test_file_digest_equals_the_whole_file_hash(tmp_path: Path, size: int, algorithm: str) -> None:
    path, data = _file(tmp_path, size)
    assert file_digest(path, algorithm).hexdigest() == hashlib.new(algorithm, data).hexdigest()


def test_feed_file_feeds_every_digest_in_one_pass(tmp_path: Path) -> None:
    path, data = _file(tmp_path, CHUNK_SIZE + 3)
    first, second = hashlib.sha256(b"prefix"), hashlib.md5()
    feed_file(path, first, second)
    assert first.hexdigest() == hashlib.sha256(b"prefix" + data).hexdigest()
    assert second.hexdigest() == hashlib.md5(data).hexdigest()


@pytest.mark.parametrize("size", [0, 5, CHUNK_SIZE + 1])
def test_git_blob_id_is_what_git_computes(tmp_path: Path, size: int) -> None:
    path, _ = _file(tmp_path, size)
    expected = subprocess.run(
        ["git", "hash-object", "--no-filters", str(path)], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert git_blob_id(path) == expected


def test_a_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        file_digest(tmp_path / "missing")
