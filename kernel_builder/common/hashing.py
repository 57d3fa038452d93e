"""Hashing files in bounded memory: the one chunked read loop, and the git blob id built on it.

A variant's shared libraries can be hundreds of megabytes; reading them whole to hash them would hold that much
in memory at once, once per file. Every file hash in the tool (the metadata digest, the upload's content ids,
the lock's object ids) goes through :func:`feed_file`.
"""

from __future__ import annotations

import hashlib
import os
from typing import Protocol

__all__ = ["CHUNK_SIZE", "feed_file", "file_digest", "git_blob_id"]

CHUNK_SIZE = 1 << 20
"""Bytes read at a time."""


class Digest(Protocol):
    """What :func:`feed_file` needs of a ``hashlib`` object."""

    def update(self, data: bytes, /) -> None: ...


def feed_file(path: str | os.PathLike[str], *digests: Digest) -> None:
    """Feed the bytes of the file at ``path`` to every one of ``digests``, in one pass over the file."""
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_SIZE):
            for digest in digests:
                digest.update(chunk)


def file_digest(path: str | os.PathLike[str], algorithm: str = "sha256") -> hashlib._Hash:
    """The ``hashlib`` object of ``algorithm`` (``sha256``, ``sha512``, ...) fed with the file's bytes."""
    digest = hashlib.new(algorithm)
    feed_file(path, digest)
    return digest


def git_blob_id(path: str | os.PathLike[str]) -> str:
    """The git blob id of a file, as the Hub reports it: ``sha1(b"blob <size>\\0" + data)`` in hex."""
    digest = hashlib.sha1(b"blob %d\0" % os.stat(path).st_size)
    feed_file(path, digest)
    return digest.hexdigest()
