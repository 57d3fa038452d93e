"""Checking variant files against a lock entry (docs/loading.md).

Three checks, each raising :class:`~kernel_builder.loader.errors.KernelIntegrityError` with everything it
found: the hash of the Hub's tree listing against an older-format lock's variant hash (:func:`check_tree_hash`),
downloaded bytes against their entries in the tree listing at the locked commit
(:func:`check_files_against_tree`), and, offline, each cached blob's bytes against its name, then (older format)
the hash re-derived from those names (:func:`check_cache_hash`). A ``kernels``-format entry records only the
commit: the commit names its tree, so the tree listing at that commit is what the files are checked against.
Nothing here makes a request; the callers pass listings and directories in.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from kernel_builder.formats.files import git_blob_id, scan_variant, sha256_hex
from kernel_builder.formats.lockfile import HASH_TYPE, LockEntry, variant_hash
from kernel_builder.hub import RemoteFile
from kernel_builder.loader.errors import KernelIntegrityError

__all__ = [
    "check_cache_hash",
    "check_files_against_tree",
    "check_tree_hash",
    "local_files",
    "relock_hint",
    "require_covered",
]

logger = logging.getLogger("kernel_builder")

_BLOB_NAME_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def relock_hint(lock: str) -> str:
    return (
        f"If the repository was changed on purpose, review it and re-create the lock with "
        f"`kernel-builder lock` ({lock})"
    )


def local_files(variant_dir: Path) -> dict[str, Path]:
    """The variant files of a directory (docs/layout.md) by ``/``-separated relative path.

    A cache snapshot's files are links to blobs, which count as the files they point to; a link to a
    directory is not entered (its files are then missing).
    """
    return scan_variant(variant_dir).files


def _integrity_error(headline: str, problems: list[str], remedy: str) -> KernelIntegrityError:
    return KernelIntegrityError("\n".join([headline, *(f"  {problem}" for problem in problems), remedy]))


def require_covered(entry: LockEntry, variant: str, *, lock: str) -> None:
    """An older-format lock must list ``variant`` at its commit (a ``kernels``-format lock pins the whole
    commit, every variant included)."""
    if entry.legacy and variant not in entry.variants:
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
    """An older-format lock must cover ``variant`` and its hash must equal the hash of ``files`` (relpath → object
    id). A ``kernels``-format entry has no hash to compare: nothing to check here."""
    if not entry.legacy:
        return
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
        actual = sha256_hex(path) if remote.sha256 is not None else git_blob_id(path)
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
    """Check each cached blob's bytes against its name, then re-derive an older-format lock's hash from the names
    and compare it with the lock.

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
        actual = git_blob_id(path) if len(name) == 40 else sha256_hex(path)
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
