"""``kernel-builder cache ls``: the kernels in the local Hub cache, by version, with the variants each holds.

The cache is the one loads download into (``KERNELS_CACHE``, else the Hub's cache), scanned by
``huggingface_hub``'s own reader. A kernel is listed by its ``v<N>`` refs (what ``get_kernel(..., version=N)``
recorded); for each, the variants whose files are in the cache, named as variant directories are named (an
empty or unknown directory is not a variant). Kernel repositories are listed, and model repositories that hold
kernels (``build/<variant>/``), which the loader reads when a kernel was published as a model; nothing is read
but the cache's own listing and directory names.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_builder.errors import KernelBuilderError

if TYPE_CHECKING:
    from huggingface_hub import CachedRepoInfo, CachedRevisionInfo

__all__ = ["CacheListing", "CachedKernel", "CachedVersion", "list_cache"]


class CacheScanError(KernelBuilderError, OSError):
    """The cache directory cannot be read."""


@dataclass(frozen=True)
class CachedVersion:
    """One ``v<N>`` ref of a cached kernel: its size, times and the variants cached at its commit."""

    version: str  # the ref's name, ``v<N>``
    size_on_disk: int
    last_accessed: float
    last_modified: float
    variants: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "size_on_disk": self.size_on_disk,
            "last_accessed": self.last_accessed,
            "last_modified": self.last_modified,
            "variants": list(self.variants),
        }


@dataclass(frozen=True)
class CachedKernel:
    repo_id: str
    repo_type: str
    size_on_disk: int
    last_accessed: float
    last_modified: float
    versions: tuple[CachedVersion, ...]

    def to_json(self) -> dict[str, Any]:
        listing: dict[str, Any] = {
            "repo_id": self.repo_id,
            "size_on_disk": self.size_on_disk,
            "last_accessed": self.last_accessed,
            "last_modified": self.last_modified,
            "versions": [version.to_json() for version in self.versions],
        }
        if self.repo_type != "kernel":
            listing["repo_type"] = self.repo_type
        return listing


@dataclass(frozen=True)
class CacheListing:
    cache_dir: Path
    kernels: tuple[CachedKernel, ...]
    warnings: tuple[str, ...]  # cache inconsistencies the scan skipped, one line each

    def to_json(self) -> dict[str, Any]:
        return {"cache_dir": str(self.cache_dir), "repos": [kernel.to_json() for kernel in self.kernels]}


def _version_number(ref: str) -> int | None:
    digits = ref[1:]
    if ref.startswith("v") and digits.isdecimal() and digits.isascii():
        return int(digits)
    return None


def _variants(revision: CachedRevisionInfo) -> tuple[str, ...]:
    """The variant directories of ``build/`` at this revision that hold cached files, by valid name."""
    from kernel_builder.formats.variants import parse_variant

    build = revision.snapshot_path / "build"
    names = {
        file.file_path.relative_to(build).parts[0]
        for file in revision.files
        if build in file.file_path.parents
    }
    valid = []
    for name in names:
        try:
            parse_variant(name)
        except ValueError:
            continue
        valid.append(name)
    return tuple(sorted(valid))


def _versions(repo: CachedRepoInfo) -> tuple[CachedVersion, ...]:
    refs = sorted(
        (
            (number, ref, revision)
            for ref, revision in repo.refs.items()
            if (number := _version_number(ref)) is not None
        ),
        key=lambda entry: (entry[0], entry[1]),
    )
    versions = []
    for _, ref, revision in refs:
        accessed = max((file.blob_last_accessed for file in revision.files), default=None)
        if accessed is None:
            accessed = revision.snapshot_path.stat().st_atime
        versions.append(
            CachedVersion(ref, revision.size_on_disk, accessed, revision.last_modified, _variants(revision))
        )
    return tuple(versions)


def list_cache(cache_dir: str | Path | None = None) -> CacheListing:
    """The cached kernels of ``cache_dir`` (default: the cache loads use), by repository id; a cache that does
    not exist yet is empty. Raises :class:`CacheScanError` when it cannot be read."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    from kernel_builder.hub import cache_dir as default_cache_dir

    where = Path(cache_dir or default_cache_dir()).expanduser().resolve()
    try:
        cache = scan_cache_dir(where)
    except CacheNotFound:
        return CacheListing(where, (), ())
    except (OSError, ValueError) as error:
        raise CacheScanError(f"cannot scan the kernel cache {where}: {error}") from None
    kernels = []
    for repo in sorted(cache.repos, key=lambda repo: (repo.repo_id, repo.repo_type)):
        if repo.repo_type not in ("kernel", "model"):
            continue
        versions = _versions(repo)
        if not versions or (repo.repo_type == "model" and not any(v.variants for v in versions)):
            continue  # no kernel version (a model repo: no variant either)
        kernels.append(
            CachedKernel(
                repo.repo_id,
                repo.repo_type,
                repo.size_on_disk,
                repo.last_accessed,
                repo.last_modified,
                versions,
            )
        )
    warnings = tuple(f"{str(warning).rstrip('.')}; skipped" for warning in cache.warnings)
    return CacheListing(where, tuple(kernels), warnings)
