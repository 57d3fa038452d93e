"""Locked loads: ``load_kernel`` and ``get_locked_kernel`` (docs/loading.md).

Both take the commit SHA from a lock file in either format (the caller's, found by
:mod:`~kernel_builder.loader.caller`, or ``lockfile``) and never resolve versions. ``load_kernel`` applies no
trust gate (trust is checked when locking); ``get_locked_kernel`` applies it online, as upstream's does, with
``trust_remote_code`` as for ``get_kernel``. ``load_kernel`` never uses the network: the variant must be in the
cache, where each file is checked against the blob it names (and an older-format lock's hash re-derived from
those names). ``get_locked_kernel`` downloads a missing variant (unless offline), checking every downloaded file
against the tree listing at the locked commit (and that listing against an older-format lock's hash).
:func:`fetch_locked_variant` is that download, shared with ``kernel-builder download``.

A locked kernel's ``kernel-depends`` load from the same lock: each dependency at the commit the lock pins for
it, chosen, fetched and verified exactly as the kernel itself (the trust gate included, for
``get_locked_kernel``), the whole tree resolved before anything is downloaded
(:mod:`~kernel_builder.loader.dependencies`). As in upstream's ``kernels``, ``LOCAL_KERNELS`` plays no part
in a locked load.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType

from kernel_builder.common.env import env_flag
from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.files import variant_directories
from kernel_builder.formats.lockfile import LockEntry, find_dependency, group_variant_files
from kernel_builder.formats.metadata import METADATA_FILE, Metadata
from kernel_builder.hub import Hub, RemoteFile, RemoteRepo
from kernel_builder.loader.arguments import check_trust_argument, trusted_by_caller
from kernel_builder.loader.caller import LockMatch, find_locked
from kernel_builder.loader.choose import choose_variant
from kernel_builder.loader.dependencies import Sources
from kernel_builder.loader.errors import KernelNotLockedError
from kernel_builder.loader.hub_steps import Operation, Target, start_operation, variant_metadata
from kernel_builder.loader.importer import RepoInfo, check_digest, read_variant_metadata
from kernel_builder.loader.lockcheck import (
    check_cache_hash,
    check_files_against_tree,
    check_tree_hash,
    require_covered,
)
from kernel_builder.loader.sequence import Located, load_located, locate, run_load
from kernel_builder.loader.trust import require_trusted

__all__ = [
    "cache_fix",
    "fetch_locked_variant",
    "get_locked_kernel",
    "get_locked_match",
    "load_kernel",
    "variant_tree",
]

logger = logging.getLogger("kernel_builder")


def _download_hint(project_dir: Path | None) -> str:
    where = f" {project_dir}" if project_dir is not None else " [PROJECT_DIR]"
    return f"run `kernel-builder download{where}`"


def cache_fix(hub: Hub, repo: RemoteRepo, project_dir: Path | None) -> str:
    """What to do about a cached locked download that fails its checks: delete it and download it again."""
    return (
        f"delete {hub.repo_folder(repo)} (the cached download of {repo.repo_id}) and "
        f"{_download_hint(project_dir)}"
    )


_LOAD_ANYWAY = "To load it anyway, pass verify_digest=False or set KERNEL_BUILDER_VERIFY_DIGEST=0."


def variant_tree(files: Iterable[RemoteFile], variant: str) -> dict[str, RemoteFile]:
    """The tree entries of ``build/<variant>/`` that are variant files (docs/layout.md), by path relative to it."""
    return group_variant_files((file.path, file) for file in files).get(variant, {})


def fetch_locked_variant(
    hub: Hub,
    repo: RemoteRepo,
    entry: LockEntry,
    variant: str,
    tree: Mapping[str, RemoteFile],
    *,
    lock: str,
    fix: str,
    load_anyway: str = "",
    verify_files: bool = True,
    verify_digest: bool | None = None,
) -> tuple[Path, Metadata]:
    """Download one locked variant by SHA and verify it (docs/loading.md): tree hash against the lock, then each file
    against the tree (unless ``verify_files`` is false), then the digest. ``tree`` is :func:`variant_tree`;
    ``fix`` says what to do about modified files (``To fix it, <fix>.``), ``load_anyway`` how to skip it."""
    check_tree_hash(entry, variant, {path: file.content_id for path, file in tree.items()}, lock=lock)
    variant_dir = hub.download_folder(repo, entry.sha, f"build/{variant}")
    if verify_files:
        check_files_against_tree(variant_dir, tree, remedy=f"To fix it, {fix}. {load_anyway}".rstrip())
    metadata = read_variant_metadata(variant_dir)
    check_digest(variant_dir, metadata, verify_digest, remedy=fix)
    return variant_dir, metadata


@dataclass
class _Locked:
    match: LockMatch
    operation: Operation
    repo: RemoteRepo | None  # the cached repo (type known), or None when the SHA is not cached

    @property
    def entry(self) -> LockEntry:
        return self.match.entry


def _start(match: LockMatch, operation: Operation) -> _Locked:
    hub = operation.hub
    sha = match.entry.sha
    cached = hub.find_cached(match.entry.repo_id, lambda candidate: hub.snapshot(candidate, sha).is_dir())
    return _Locked(match, operation, cached)


def _candidates(locked: _Locked, online: RemoteRepo | None = None) -> list[str]:
    """The variants to choose from: an older-format lock's, the cached ones, and (``online``) those of the tree
    at the locked commit."""
    hub = locked.operation.hub
    names = set(locked.entry.variants)
    if locked.repo is not None:
        names.update(variant_directories(hub.snapshot(locked.repo, locked.entry.sha) / "build"))
    if online is not None and not locked.entry.legacy:
        names.update(hub.folders(online, locked.entry.sha, "build"))
    return sorted(names)


def _downloaded(hub: Hub, repo: RemoteRepo, sha: str, variant: str) -> bool:
    """Whether the cache holds the variant: more than its ``metadata.json``, which choosing a variant online
    fetches alone (a failed download leaves nothing else: it removes what it wrote)."""
    try:
        return any(
            entry.name != METADATA_FILE for entry in (hub.snapshot(repo, sha) / "build" / variant).iterdir()
        )
    except (FileNotFoundError, NotADirectoryError):
        return False


def _not_cached(locked: _Locked, variant: str | None = None) -> FileNotFoundError:
    what = f", variant {variant}," if variant is not None else ""
    return FileNotFoundError(
        f"{locked.entry.repo_id} at {locked.entry.sha}{what} (locked in {locked.match.source}) is not in the "
        f"cache ({locked.operation.hub.cache_dir}): {_download_hint(locked.match.project_dir)}"
    )


def _lock_hint(project_dir: Path | None) -> str:
    """What to do about a lock that does not pin a kernel dependency: re-create it (it pins the whole tree)."""
    if project_dir is None:  # a lock shipped in an installed distribution: its project re-creates it
        return "re-create the lock of the project that ships it with `kernel-builder lock` and reinstall it"
    return (
        f"re-create the lock with `kernel-builder lock {project_dir}`, then run "
        f"`kernel-builder download {project_dir}`"
    )


def _subject(locked: _Locked) -> str:
    return f"{locked.entry.repo_id} at {locked.entry.sha} (locked in {locked.match.source})"


def _verify_cached(
    locked: _Locked, repo: RemoteRepo, variant: str, verify: bool | None
) -> tuple[Path, Metadata]:
    hub = locked.operation.hub
    variant_dir = hub.snapshot(repo, locked.entry.sha) / "build" / variant
    fix = cache_fix(hub, repo, locked.match.project_dir)
    require_covered(locked.entry, variant, lock=locked.match.source)
    if env_flag("KERNEL_BUILDER_VERIFY_DIGEST", default=True) if verify is None else verify:
        remedy = f"To fix it, {fix}. {_LOAD_ANYWAY}"
        check_cache_hash(locked.entry, variant, variant_dir, lock=locked.match.source, remedy=remedy)
    metadata = read_variant_metadata(variant_dir)
    check_digest(variant_dir, metadata, verify, remedy=fix)
    return variant_dir, metadata


@dataclass(frozen=True)
class _Chosen:
    """A locked kernel's variant for this environment, chosen from metadata alone; ``fetch`` downloads it when it
    is not cached, verifies it as the lock requires and returns its directory and the metadata read there."""

    repo: RemoteRepo
    entry: LockEntry
    variant: str
    metadata: Metadata | None  # read before anything else is fetched; None: a legacy variant without one
    fetch: Callable[[], tuple[Path, Metadata]]

    @property
    def repo_info(self) -> RepoInfo:
        return RepoInfo(self.repo.repo_id, self.entry.sha)

    def located(self, where: str, backend: str) -> Located:
        """The variant checked as every load checks it (:func:`~kernel_builder.loader.sequence.locate`)."""
        if self.metadata is None:
            raise FileNotFoundError(f"{where}: {METADATA_FILE} not found")
        return locate(
            where,
            self.variant,
            self.metadata,
            self.fetch,
            backend=backend,
            repo_info=self.repo_info,
        )


_Choose = Callable[[_Locked], _Chosen]
_Gate = Callable[[_Locked], None]


def _choose(locked: _Locked, names: Iterable[str], target: Target, check_arch: bool) -> str:
    """The one chooser over the locked commit's variants."""
    operation = locked.operation
    return choose_variant(
        names,
        operation.env,
        operation.backend,
        partial(variant_metadata, operation.hub, target),
        subject=_subject(locked),
        check_arch=check_arch,
    )


def _choose_cached(locked: _Locked, verify_digest: bool | None, check_arch: bool = True) -> _Chosen:
    """``load_kernel``'s steps: the variant in the cache at the locked commit, or ``FileNotFoundError``."""
    if locked.repo is None:
        raise _not_cached(locked)
    repo = locked.repo
    hub = locked.operation.hub
    target = Target(repo, locked.entry.sha, None)
    variant = _choose(locked, _candidates(locked), target, check_arch)
    if not _downloaded(hub, repo, locked.entry.sha, variant):
        raise _not_cached(locked, variant)
    return _Chosen(
        repo,
        locked.entry,
        variant,
        variant_metadata(hub, target, variant),
        partial(_verify_cached, locked, repo, variant, verify_digest),
    )


def _choose_or_download(locked: _Locked, verify_digest: bool | None, check_arch: bool = True) -> _Chosen:
    """``get_locked_kernel``'s steps after the trust gate: the cached variant, else (online) the one at the
    locked commit, to be downloaded."""
    hub = locked.operation.hub
    entry = locked.entry
    if locked.repo is None and hub.offline:
        raise _not_cached(locked)
    repo = locked.repo or RemoteRepo(entry.repo_id)
    target = Target(repo, entry.sha, None)
    variant = _choose(locked, _candidates(locked, None if hub.offline else repo), target, check_arch)
    cached = locked.repo is not None and _downloaded(hub, repo, entry.sha, variant)
    if not cached and hub.offline:
        raise _not_cached(locked, variant)
    require_covered(entry, variant, lock=locked.match.source)
    metadata = variant_metadata(hub, target, variant)
    if cached:
        return _Chosen(
            repo, entry, variant, metadata, partial(_verify_cached, locked, repo, variant, verify_digest)
        )

    def download() -> tuple[Path, Metadata]:
        verify = (
            env_flag("KERNEL_BUILDER_VERIFY_DIGEST", default=True) if verify_digest is None else verify_digest
        )
        tree = variant_tree(hub.tree_files(repo, entry.sha, f"build/{variant}"), variant)
        return fetch_locked_variant(
            hub,
            repo,
            entry,
            variant,
            tree,
            lock=locked.match.source,
            fix=cache_fix(hub, repo, locked.match.project_dir),
            load_anyway=_LOAD_ANYWAY,
            verify_files=verify,
            verify_digest=verify,
        )

    return _Chosen(repo, entry, variant, metadata, download)


def _trust_gate(trust: bool | frozenset[str]) -> _Gate:
    """``get_locked_kernel``'s trust gate for each kernel of the tree, online only: offline the lock decides (it
    was trust-checked when written)."""

    def gate(locked: _Locked) -> None:
        hub = locked.operation.hub
        entry = locked.entry
        requested = [repo_id for repo_id in (entry.repo_id, entry.redirected_from) if repo_id is not None]
        if not hub.offline and not any(trusted_by_caller(trust, repo_id) for repo_id in requested):
            require_trusted(hub, entry.repo_id)

    return gate


class _LockedSource:
    """The kernel dependencies of a locked load (docs/loading.md): each at the commit the same lock pins for it,
    chosen, fetched and verified exactly as the locked kernel itself. ``LOCAL_KERNELS`` is not consulted, for
    the dependencies as for the kernel (as in upstream's ``kernels``)."""

    def __init__(self, match: LockMatch, operation: Operation, choose: _Choose, gate: _Gate) -> None:
        self.match = match
        self.operation = operation
        self.choose = choose
        self.gate = gate

    def locate(self, dependency: KernelDependency) -> Located:
        match = self.match
        entry = find_dependency(match.entries, dependency.repo_id, dependency.version, dependency.revision)
        if entry is None:
            raise KernelNotLockedError(
                f"the lock {match.source} does not pin it (it was written before this dependency existed, or "
                f"by hand): {_lock_hint(match.project_dir)}"
            )
        locked = _start(LockMatch(entry, match.source, match.project_dir, match.entries), self.operation)
        self.gate(locked)
        chosen = self.choose(locked)
        where = f"{_subject(locked)}, build/{chosen.variant}"
        return chosen.located(where, self.operation.backend)


def _load_locked(match: LockMatch, operation: Operation, choose: _Choose, gate: _Gate) -> ModuleType:
    """Choose the locked kernel's variant, then run the load sequence (:func:`load_located`): its whole
    dependency tree from the same lock (reading only metadata), the kernel fetched and verified, the tree loaded
    and the kernel imported with it."""
    locked = _start(match, operation)
    gate(locked)
    chosen = choose(locked)
    source = _LockedSource(match, operation, choose, gate)
    where = f"{_subject(locked)}, build/{chosen.variant}"
    if chosen.metadata is None:  # a legacy locked variant without metadata.json: checked once fetched
        return run_load(match.entry.repo_id, where, (), chosen.fetch, chosen.repo_info, Sources([source]))
    located = chosen.located(where, operation.backend)
    return load_located(match.entry.repo_id, located, Sources([source]))


def load_kernel(
    repo_id: str,
    *,
    lockfile: Path | None = None,
    backend: str | None = None,
    check_arch: bool = True,
    verify_digest: bool | None = None,
) -> ModuleType:
    """Import the locked build of ``repo_id`` from the cache, without any network access.

    The lock is ``lockfile`` or the calling project's (docs/loading.md). The locked commit's variant for this
    environment must have been downloaded (``kernel-builder download``); otherwise ``FileNotFoundError`` says so.
    The cached files are checked against the lock hash (where the cache holds links) and the digest, unless
    ``verify_digest=False`` / ``KERNEL_BUILDER_VERIFY_DIGEST=0``. No trust gate: trust is checked when locking.
    Its kernel dependencies load the same way, each at the commit the same lock pins for it
    (:class:`KernelDependencyError` names the chain when one is not pinned or not downloaded).
    ``check_arch=False`` skips the GPU-architecture check (of the kernel and its dependencies), as for
    ``get_kernel``.
    """
    match = find_locked(repo_id, lockfile, sys._getframe(1))
    operation = start_operation(backend, None, offline=True)
    choose = partial(_choose_cached, verify_digest=verify_digest, check_arch=check_arch)
    return _load_locked(match, operation, choose, lambda _: None)


def get_locked_kernel(
    repo_id: str,
    *,
    lockfile: Path | None = None,
    trust_remote_code: bool | list[str] = False,
    backend: str | None = None,
    user_agent: str | dict[str, object] | None = None,
    check_arch: bool = True,
    verify_digest: bool | None = None,
) -> ModuleType:
    """Import the locked build of ``repo_id``, downloading its variant first when it is not cached.

    As :func:`load_kernel`, except that a missing variant is downloaded (unless offline) and verified against
    the lock (tree hash, file bytes, digest), the variant's Python dependencies are checked, and online the
    trust gate applies (``trust_remote_code`` as for ``get_kernel``), to each of its kernel dependencies too.
    ``check_arch=False`` skips the GPU-architecture check of the variant choice.
    """
    check_trust_argument(trust_remote_code)
    match = find_locked(repo_id, lockfile, sys._getframe(1))
    return get_locked_match(
        match,
        backend=backend,
        user_agent=user_agent,
        verify_digest=verify_digest,
        trust_remote_code=trust_remote_code,
        check_arch=check_arch,
    )


def get_locked_match(
    match: LockMatch,
    *,
    backend: str | None = None,
    user_agent: str | dict[str, object] | None = None,
    verify_digest: bool | None = None,
    trust_remote_code: bool | list[str] = False,
    check_arch: bool = True,
) -> ModuleType:
    """:func:`get_locked_kernel` for a lock entry found earlier
    (:func:`~kernel_builder.loader.caller.find_locked`).

    A ``LockedLayerRepository`` finds its lock where it is constructed, in the code that names the kernel, and
    loads later from ``kernelize``, whose caller may belong to another project.
    """
    trust = check_trust_argument(trust_remote_code)
    operation = start_operation(backend, user_agent)
    choose = partial(_choose_or_download, verify_digest=verify_digest, check_arch=check_arch)
    return _load_locked(match, operation, choose, _trust_gate(trust))
