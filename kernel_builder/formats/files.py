"""Which files belong to a variant, and their hashes: the one rule every stage asks (docs/layout.md).

A variant's files are every file under ``build/<variant>/`` except

* bytecode: anything under a ``__pycache__`` directory, ``*.pyc`` and ``*.pyo`` (an interpreter writes it;
  it is never shipped, and one found in a variant is ignored), and
* hidden paths: a path with a component that starts with ``.`` (editors, the OS and tools leave such files
  behind; a hidden name cannot be imported, so no kernel code is lost).

The build ships only such files from the kernel's Python package; the digest lists them (without the
top-level ``metadata.json`` it lives in); upload sends them; ``kernel-builder lock`` hashes them; downloads
fetch and verify them. Because all of these ask :func:`is_variant_file`, they cannot disagree on a file.

The chunked hashes of a file (git blob SHA-1, SHA-256, SHA-512) live here too: the upload, the lock checks and
the digest hash the same files the same way.
"""

from __future__ import annotations

import base64
import hashlib
import os

from kernel_builder.common.safe_fs import TreeScan, scan_tree

__all__ = [
    "BYTECODE_SUFFIXES",
    "GITIGNORE_PATTERNS",
    "GIT_BLOB",
    "HUB_IGNORE_PATTERNS",
    "PYCACHE",
    "digest_value",
    "file_hashes",
    "git_blob_id",
    "is_bytecode",
    "is_hidden",
    "is_variant_file",
    "scan_variant",
    "sha256_hex",
    "skipped_directory",
    "variant_directories",
]

PYCACHE = "__pycache__"
BYTECODE_SUFFIXES = (".pyc", ".pyo")
#: The same rule as ``huggingface_hub`` ``ignore_patterns`` (``fnmatch``, where ``*`` also matches ``/``), so a
#: download never fetches a file that is not part of the variant.
HUB_IGNORE_PATTERNS = ("*.pyc", "*.pyo", f"{PYCACHE}/*", f"*/{PYCACHE}/*", ".*", "*/.*")
#: The same rule as gitignore-style patterns (scikit-build-core's ``wheel.exclude``), for the wheel of a kernel.
GITIGNORE_PATTERNS = (f"**/{PYCACHE}", "**/*.pyc", "**/*.pyo", "**/.*")
GIT_BLOB = "git-blob"
_CHUNK = 1 << 20


def is_bytecode(relpath: str) -> bool:
    """``*.pyc``, ``*.pyo`` or anything under a ``__pycache__`` directory (``relpath`` is ``/``-separated)."""
    return relpath.endswith(BYTECODE_SUFFIXES) or PYCACHE in relpath.split("/")


def is_hidden(relpath: str) -> bool:
    """Whether any component of the ``/``-separated ``relpath`` starts with ``.``."""
    return any(part.startswith(".") for part in relpath.split("/"))


def is_variant_file(relpath: str) -> bool:
    """Whether a file at ``relpath`` (``/``-separated, relative to the variant directory) is part of the variant."""
    return not is_bytecode(relpath) and not is_hidden(relpath)


def skipped_directory(name: str) -> bool:
    """Whether a directory named ``name`` holds no variant file (a walk need not enter it)."""
    return name == PYCACHE or name.startswith(".")


def variant_directories(build_dir: str | os.PathLike[str]) -> list[str]:
    """The names of the directories in ``build_dir`` that may be variants, sorted: real directories (a link is
    never a variant; a cache holds links to files only) whose name is not hidden (a builder's temporary)."""
    try:
        with os.scandir(build_dir) as entries:
            return sorted(
                e.name for e in entries if e.is_dir(follow_symlinks=False) and not is_hidden(e.name)
            )
    except (FileNotFoundError, NotADirectoryError):
        return []


def _not_variant(relpath: str, is_directory: bool) -> bool:
    return skipped_directory(relpath.rsplit("/", 1)[-1]) if is_directory else not is_variant_file(relpath)


def scan_variant(variant_dir: str | os.PathLike[str]) -> TreeScan:
    """The variant files of a directory (:func:`~kernel_builder.common.safe_fs.scan_tree`: directory symlinks
    and special files are reported, not entered or opened); bytecode and hidden directories are not entered."""
    return scan_tree(variant_dir, skip=_not_variant)


def file_hashes(path: str | os.PathLike[str], *algorithms: str) -> dict[str, str]:
    """Hex digests of a file's bytes, read once in chunks; ``git-blob`` is the git blob SHA-1 (the Hub's ``oid``
    of a file not stored in LFS), the others any ``hashlib`` name."""
    hashers = {}
    for name in algorithms:
        if name == GIT_BLOB:
            hashers[name] = hashlib.sha1(b"blob %d\0" % os.stat(path).st_size)
        else:
            hashers[name] = hashlib.new(name)
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            for hasher in hashers.values():
                hasher.update(chunk)
    return {name: hasher.hexdigest() for name, hasher in hashers.items()}


def git_blob_id(path: str | os.PathLike[str]) -> str:
    """The git blob SHA-1 of a file: ``sha1(b"blob <size>\\0" + data)``."""
    return file_hashes(path, GIT_BLOB)[GIT_BLOB]


def sha256_hex(path: str | os.PathLike[str]) -> str:
    """The SHA-256 of a file, in hex (the LFS object id)."""
    return file_hashes(path, "sha256")["sha256"]


def digest_value(hex_digest: str) -> str:
    """A hex digest as ``metadata.json``'s ``digest`` spells it: the standard padded base64 of the raw bytes."""
    return base64.b64encode(bytes.fromhex(hex_digest)).decode("ascii")
