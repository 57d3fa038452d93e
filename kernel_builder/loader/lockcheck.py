"""Checking variant files against a lock entry (docs/loading.md).

Three checks, each raising :class:`~kernel_builder.loader.errors.KernelIntegrityError` with everything it
found: the hash of the Hub's tree listing against the lock (:func:`check_tree_hash`), downloaded bytes against
their tree entries (:func:`check_files_against_tree`), and, offline, the hash re-derived from the cache's blob
names after checking each blob's bytes against its name (:func:`check_cache_hash`). Nothing here makes a
request; the callers pass listings and directories in.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from kernel_builder.formats.lockfile import HASH_TYPE, LockEntry, is_bytecode, variant_hash
from kernel_builder.hub import RemoteFile
from kernel_builder.loader.errors import KernelIntegrityError

__all__ = [
    "check_cache_hash",
    "check_files_against_tree",
    "check_tree_hash",
    "git_blob_id",
    "local_files",
    "relock_hint",
    "require_covered",
]

logger = logging.getLogger("kernel_builder")

_BLOB_NAME_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_CHUNK = 1 << 20


def relock_hint(lock: str) -> str:
    return (
        f"If the repository was changed on purpose, review it and re-create the lock with "
        f"`kernel-builder lock` ({lock})"
    )


def git_blob_id(path: Path) -> str:
    """The git blob SHA-1 of a file: ``sha1(b"blob <size>\\0" + data)``, read in chunks."""
    digest = hashlib.sha1(b"blob %d\0" % path.stat().st_size)
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def local_files(variant_dir: Path) -> dict[str, Path]:
    """Every file of a variant directory by ``/``-separated relative path, bytecode left out.

    Directories are walked following symlinks (a cache snapshot's entries are links); link cycles are cut.
    """
    found: dict[str, Path] = {}

    def walk(directory: Path, prefix: str, seen: frozenset[str]) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                relpath = prefix + entry.name
                if entry.is_dir(follow_symlinks=True):
                    real = os.path.realpath(entry.path)
                    if entry.name != "__pycache__" and real not in seen:
                        walk(Path(entry.path), relpath + "/", seen | {real})
                elif not is_bytecode(relpath):
                    found[relpath] = Path(entry.path)

    walk(variant_dir, "", frozenset({os.path.realpath(variant_dir)}))
    return found


def _integrity_error(headline: str, problems: list[str], remedy: str) -> KernelIntegrityError:
    return KernelIntegrityError("\n".join([headline, *(f"  {problem}" for problem in problems), remedy]))


def require_covered(entry: LockEntry, variant: str, *, lock: str) -> None:
    """The lock must list ``variant`` at its commit."""
    if variant not in entry.variants:
        covered = ", ".join(sorted(entry.variants)) or "none"
        raise KernelIntegrityError(
            f"{entry.repo_id} at {entry.sha}, variant {variant} is not covered by the lock {lock} (locked "
            f"variants: {covered}). {relock_hint(lock)} to cover it."
        )


def check_tree_hash(
    entry: LockEntry,
    variant: str,
    files: Mapping[str, str],
    *,
    lock: str,
    what: str = "the files at that commit",
) -> None:
    """The lock must cover ``variant`` and its hash must equal the hash of ``files`` (relpath → object id)."""
    subject = f"{entry.repo_id} at {entry.sha}, variant {variant}"
    require_covered(entry, variant, lock=lock)
    locked = entry.variants[variant]
    if locked.hash_type != HASH_TYPE:
        raise KernelIntegrityError(
            f"{subject}: the lock {lock} uses hash type {locked.hash_type!r}; this version of kernel-builder "
            f"checks only {HASH_TYPE!r}. Re-create the lock with `kernel-builder lock`."
        )
    actual = variant_hash(files.items())
    if actual != locked.hash:
        raise KernelIntegrityError(
            f"{subject}: {what} do not match the lock {lock}: expected {locked.hash}, "
            f"actual {actual}. {relock_hint(lock)}."
        )


def check_files_against_tree(variant_dir: Path, tree: Mapping[str, RemoteFile], *, remedy: str) -> None:
    """Each downloaded file's bytes must match its tree entry (SHA-256 for LFS, else the git blob SHA-1), and
    the directory must hold exactly the listed files."""
    present = local_files(variant_dir)
    problems: list[str] = []
    for relpath in sorted(set(present) | set(tree)):
        remote = tree.get(relpath)
        if remote is None:
            problems.append(f"{relpath}: unknown (downloaded, but not in the repository's tree)")
            continue
        path = present.get(relpath)
        if path is None:
            problems.append(f"{relpath}: missing (in the repository's tree, not downloaded)")
            continue
        actual = _sha256(path) if remote.sha256 is not None else git_blob_id(path)
        if actual != remote.content_id:
            kind = "LFS SHA-256" if remote.sha256 is not None else "git blob SHA-1"
            problems.append(f"{relpath}: mismatch ({kind} is {actual}, the tree lists {remote.content_id})")
    if problems:
        raise _integrity_error(
            f"the downloaded files of {variant_dir} do not match the repository's tree:", problems, remedy
        )


def _blob_name(path: Path) -> str | None:
    """The name of the cache blob a snapshot entry links to, or ``None`` when it is not a link."""
    if not path.is_symlink():
        return None
    return Path(os.readlink(path)).name


def check_cache_hash(entry: LockEntry, variant: str, variant_dir: Path, *, lock: str, remedy: str) -> bool:
    """Re-derive the lock hash of a cached variant from its blob names and compare it with the lock.

    Each blob's bytes must hash to its name (40 hex: git blob SHA-1, 64 hex: LFS SHA-256). Returns ``False``
    (and checks nothing) when the cache holds copies instead of links; a file that is not a link among links
    is a problem.
    """
    files = local_files(variant_dir)
    blobs = {relpath: _blob_name(path) for relpath, path in sorted(files.items())}
    if files and all(name is None for name in blobs.values()):
        logger.debug("%s: the cache holds copies, not links to blobs; lock hash not re-derived", variant_dir)
        return False
    names: dict[str, str] = {}
    problems: list[str] = []
    for relpath, name in blobs.items():
        path = files[relpath]
        if name is None:
            problems.append(f"{relpath}: not a link into the cache's blobs (added after download?)")
            continue
        if not _BLOB_NAME_RE.fullmatch(name):
            problems.append(f"{relpath}: links to {name!r}, which is not a git or LFS object id")
            continue
        actual = git_blob_id(path) if len(name) == 40 else _sha256(path)
        if actual != name:
            problems.append(f"{relpath}: mismatch (its content hashes to {actual}, its cache blob is {name})")
        names[relpath] = name
    if problems:
        raise _integrity_error(
            f"the cached files of {entry.repo_id} at {entry.sha}, variant {variant} ({variant_dir}) were "
            f"modified after download:",
            problems,
            remedy,
        )
    check_tree_hash(entry, variant, names, lock=lock, what="the cached files")
    return True
