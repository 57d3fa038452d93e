"""``get_kernel`` from the Hub cache alone, without importing the Hub client (docs/loading.md, "When the cache is
trusted").

Importing ``huggingface_hub`` (and the HTTP library under it) costs more than the rest of a warm load, and a
version or revision the cache already answers needs no request. So :func:`get_kernel` first tries the cache:

- offline (``HF_HUB_OFFLINE``): the cache is all there is, read as it always was (``refs/<name>``, the snapshot
  of that commit, the trust record);
- online: a record this module writes after each load that went to the Hub (``.kernel-builder/resolved/`` in the
  cache) says which commit a version or revision resolved to, and when. It is trusted for
  :data:`CACHE_TTL` seconds (a commit id for as long as the snapshot is there); the trust gate is passed by
  ``trust_remote_code`` or by a publisher verdict from an online check within that time. After that, or with
  ``KERNEL_BUILDER_CACHE_TTL=0``, the load asks the Hub again, so a new version or a moved branch is picked up.

Everything read from the cache is checked before it names a path or a module: the record's fields (a 40-hex
commit, a known repository type, variant names), the folders on the way to the variant (real folders, no
links), and each file of the variant (a link into this repository's ``blobs/`` or a file inside the snapshot,
nothing else); then the digest of every file against its ``metadata.json``, as for a download. Whatever the
cache cannot answer (no record, an expired one, a redirect, kernel dependencies, a variant not downloaded) goes
to :mod:`~kernel_builder.loader.remote`, which imports the client and asks the Hub.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

import kernel_builder.loader.resolve as resolve
from kernel_builder.common.hub_env import cache_location, endpoint, offline_requested, repo_folder_name
from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded
from kernel_builder.formats import runtime
from kernel_builder.formats.files import scan_variant, variant_directories
from kernel_builder.formats.identifiers import is_commit_id, is_kernel_name, ref_name_problem
from kernel_builder.formats.metadata import METADATA_FILE, Metadata, read_metadata
from kernel_builder.loader.arguments import (
    check_repo_id,
    check_revision_arguments,
    check_trust_argument,
    trusted_by_caller,
)
from kernel_builder.loader.choose import preferred
from kernel_builder.loader.errors import KernelIntegrityError
from kernel_builder.loader.hubcache import (
    CACHE_TTL,
    DEFAULT_TTL,
    RESOLVED,
    label,
    recalled,
    request_key,
    ttl,
    verify_download,
)
from kernel_builder.loader.importer import RepoInfo, read_variant_metadata
from kernel_builder.loader.local import load_local_override
from kernel_builder.loader.sequence import load_located, locate
from kernel_builder.loader.trust import recorded_verdict, require_recorded

__all__ = ["CACHE_TTL", "DEFAULT_TTL", "RESOLVED", "get_kernel"]

logger = logging.getLogger("kernel_builder")


# --- reading the cache (each name checked before it becomes a path) -----------------------------------------


# The two records below are named tuples, not dataclasses: a frozen dataclass costs a few milliseconds to
# define (its methods are compiled from source at import), and this module is on every warm load's path.


class _Cache(NamedTuple):
    """The cache directory and endpoint of one load (what :mod:`~kernel_builder.loader.trust` reads)."""

    cache_dir: Path
    endpoint: str


class _Found(NamedTuple):
    """A commit of a repository the cache answers for, and the variant names to choose from."""

    repo_type: str
    sha: str
    variants: tuple[str, ...]
    newest: int | None = None


def _hostile(path: Path, what: str, folder: Path, repo_id: str) -> KernelIntegrityError:
    return KernelIntegrityError(
        f"the Hub cache entry {path} {what}; refusing to load {repo_id} from it. Delete {folder} (the cached "
        f"download of {repo_id}; check who else can write to the cache) and load it again online."
    )


def _read_ref(folder: Path, name: str, repo_id: str) -> str | None:
    """``refs/<name>``, which must hold a 40-hex commit id; ``None`` when there is none."""
    if ref_name_problem(name) is not None:
        return None
    path = folder / "refs" / name
    try:
        text = read_bounded(path, 4096).decode("ascii", errors="replace").strip()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except (OSError, UnsafeFileError) as error:  # the messages of the Hub path's reader (kernel_builder.hub)
        raise KernelIntegrityError(
            f"{repo_id}: cannot read the cached ref {name} ({path}): {error}"
        ) from None
    if not text:
        return None
    if not is_commit_id(text):
        raise KernelIntegrityError(
            f"{repo_id}: the cached ref {name} ({path}) does not hold a 40-hex commit id; delete it and load the "
            f"kernel online again"
        )
    return text


def _real_folder(path: Path) -> bool:
    """Whether ``path`` is a folder itself, not a link to one (``lstat``); ``False`` when it does not exist."""
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def _offline_found(cache: _Cache, repo_id: str, version: int | None, revision: str | None) -> _Found | None:
    """Offline resolution as the Hub path does it (``refs/``, or a cached snapshot); kernel-type repositories
    only (a legacy model-type one goes the Hub path, which warns about it)."""
    folder = cache.cache_dir / repo_folder_name(repo_id, "kernel")
    if version is not None:
        sha = _read_ref(folder, f"v{version}", repo_id)
    else:
        assert revision is not None
        sha = revision if is_commit_id(revision) else _read_ref(folder, revision, repo_id)
    if sha is None:
        return None
    snapshot = folder / "snapshots" / sha
    if not _real_folder(snapshot):
        return None
    return _Found("kernel", sha, tuple(variant_directories(snapshot / "build")))


def _online_found(
    cache: _Cache, repo_id: str, version: int | None, revision: str | None, trust: bool | frozenset[str]
) -> _Found | None:
    """A recorded resolution that may be used now: fresh (a commit id: always), and the trust gate passed by
    the caller or by a fresh online publisher check whose verdict the trust record still holds."""
    limit = ttl()
    if limit == 0:
        return None
    recorded = recalled(cache.cache_dir, cache.endpoint, repo_id, request_key(version, revision))
    if recorded is None:
        return None
    age = time.time() - recorded.checked
    fresh = 0 <= age <= limit
    immutable = revision is not None and is_commit_id(revision) and revision == recorded.sha
    if not (fresh or immutable):
        logger.debug(
            "%s: the recorded resolution is %.0f s old (limit %g s); asking the Hub", repo_id, age, limit
        )
        return None
    if not trusted_by_caller(trust, repo_id):
        organization = repo_id.split("/", 1)[0]
        if not (fresh and recorded.publisher_trusted and recorded_verdict(cache, organization) is True):
            return None
    return _Found(recorded.repo_type, recorded.sha, recorded.variants, recorded.newest)


def _metadata_lookup(snapshot: Path, repo_id: str) -> resolve.MetadataLookup:
    name = repo_id.rsplit("/", 1)[-1].lower().replace("_", "-")
    default = name if is_kernel_name(name) else "kernel"

    def lookup(variant: str) -> Metadata | None:
        path = snapshot / "build" / variant / METADATA_FILE
        try:
            return read_metadata(path, default_name=default)
        except FileNotFoundError:
            return None

    return lookup


def _downloaded(variant_dir: Path) -> bool:
    """More than the ``metadata.json`` that choosing a variant online fetches alone."""
    try:
        return any(entry.name != METADATA_FILE for entry in variant_dir.iterdir())
    except OSError:
        return False


def _check_files(folder: Path, snapshot: Path, variant_dir: Path, repo_id: str) -> None:
    """Refuse a variant the cache could not have written: a link on the way to it, a link inside it to a folder
    or out of the repository's ``blobs/``, a special file (each named in the error)."""
    current = folder
    for part in ("snapshots", snapshot.name, "build", variant_dir.name):
        current = current / part
        if not _real_folder(current):
            raise _hostile(current, "is a link or not a folder", folder, repo_id)
    scan = scan_variant(variant_dir)
    problems = [f"{name} is a link to a folder" for name in scan.directory_links]
    problems += [f"{name} is {kind}" for name, kind in scan.special.items()]
    problems += [f"{name} cannot be read ({error})" for name, error in scan.unreadable.items()]
    if (folder / "blobs").exists() and not _real_folder(folder / "blobs"):
        raise _hostile(folder / "blobs", "is a link or not a folder", folder, repo_id)
    blobs = os.path.realpath(folder / "blobs") + os.sep
    inside = os.path.realpath(snapshot) + os.sep
    for name, path in scan.files.items():
        real = os.path.realpath(path)
        if path.is_symlink() and not real.startswith(blobs) and not real.startswith(inside):
            problems.append(f"{name} links to {real}, outside the repository's blobs/")
        elif not path.is_symlink() and not real.startswith(inside):
            problems.append(f"{name} resolves to {real}, outside the snapshot")
    if problems:
        raise _hostile(variant_dir, "holds what no download writes: " + "; ".join(problems), folder, repo_id)


# --- the load ---------------------------------------------------------------------------------------------


def _load_cached(
    repo_id: str,
    version: int | None,
    revision: str | None,
    backend: str | None,
    trust: bool | frozenset[str],
    check_arch: bool,
    verify_digest: bool | None,
) -> ModuleType | None:
    """The kernel from the cache, or ``None`` when the cache cannot answer without the Hub."""
    cache = _Cache(cache_location()[0], endpoint())
    offline = offline_requested()
    if offline:
        if not trusted_by_caller(trust, repo_id):
            require_recorded(cache, repo_id)  # the Hub path's offline gate, same error
        found = _offline_found(cache, repo_id, version, revision)
    else:
        found = _online_found(cache, repo_id, version, revision, trust)
    if found is None:
        return None
    if found.newest is not None and version is not None and found.newest > version:
        logger.warning(
            "%s: loading version %d, but a newer major version %d exists (branch v%d)",
            repo_id,
            version,
            found.newest,
            found.newest,
        )
    folder = cache.cache_dir / repo_folder_name(repo_id, found.repo_type)
    snapshot = folder / "snapshots" / found.sha
    if not _real_folder(snapshot):
        return None
    where = label(repo_id, found.sha, version)
    env = runtime.detect_environment()
    selected = resolve.select_backend(env, backend)
    lookup = _metadata_lookup(snapshot, repo_id)
    variant = preferred(found.variants, env, selected, lookup, check_arch=check_arch)
    if variant is None:
        return None  # the Hub path says why, with the whole listing
    variant_dir = snapshot / "build" / variant
    if not _downloaded(variant_dir):
        return None
    _check_files(folder, snapshot, variant_dir, repo_id)
    metadata = read_variant_metadata(variant_dir)
    if metadata.kernel_depends:
        return None  # kernel dependencies are resolved, and trust-checked, by the Hub path

    def fetch() -> tuple[Path, Metadata]:  # in the cache already: verifying it is all there is to do
        verify_download(where, variant_dir, metadata, verify_digest, folder=folder, repo_id=repo_id)
        return variant_dir, metadata

    located = locate(
        f"{where}, build/{variant}",
        variant,
        metadata,
        fetch,
        backend=selected,
        repo_info=RepoInfo(repo_id, found.sha),
    )
    module = load_located(repo_id, located, None)
    logger.debug("%s: loaded %s from the cache without asking the Hub", where, variant)
    return module


def get_kernel(
    repo_id: str,
    *,
    revision: str | None = None,
    version: int | None = None,
    backend: str | None = None,
    user_agent: str | dict[str, object] | None = None,
    trust_remote_code: bool | list[str] = False,
    check_arch: bool = True,
    verify_digest: bool | None = None,
) -> ModuleType:
    """Import the kernel of a Hub repository at a major ``version`` (branch ``v<N>``) or a ``revision``.

    Steps (docs/loading.md): exactly one of ``version``/``revision`` (checked first, so that code relying on a
    ``LOCAL_KERNELS`` override fails as it would without it); a ``LOCAL_KERNELS`` override wins; the trust gate
    (``trust_remote_code=True`` skips it, a list of repo ids skips it for those repositories); the revision
    resolved to a commit and redirects followed; the preferred compatible variant chosen (``check_arch=False``
    skips the GPU-architecture check); its ``kernels-minver`` and Python dependencies checked; only that
    variant downloaded; its digest verified; imported under its unique id and registered with the repo and
    commit. When the cache can answer (offline, or a resolution recorded within ``KERNEL_BUILDER_CACHE_TTL``
    seconds), no request is made and the Hub client is not imported.
    """
    check_revision_arguments(version, revision)
    trust = check_trust_argument(trust_remote_code)
    module = load_local_override(
        repo_id,
        backend,
        verify_digest=verify_digest,
        trust_remote_code=trust_remote_code,
        user_agent=user_agent,
        check_arch=check_arch,
    )
    if module is not None:
        logger.debug(
            "%s: LOCAL_KERNELS override; version=%r revision=%r not resolved", repo_id, version, revision
        )
        return module
    check_repo_id(repo_id)
    module = _load_cached(repo_id, version, revision, backend, trust, check_arch, verify_digest)
    if module is not None:
        return module
    from kernel_builder.loader.remote import (
        load_from_hub,  # imports the Hub client; never imports this module
    )

    return load_from_hub(
        repo_id,
        version=version,
        revision=revision,
        backend=backend,
        user_agent=user_agent,
        trust=trust,
        trust_remote_code=trust_remote_code,
        check_arch=check_arch,
        verify_digest=verify_digest,
    )
