"""The Hub cache's layout as ``huggingface_hub`` writes it (``<cache>/<type>s--<org>--<name>/``: ``blobs``,
``refs/<name>``, ``snapshots/<sha>/``), and the checks made before a download writes into it: the directory is
usable, no folder on the way is a planted link (docs/security.md), and a failed download leaves nothing half
written."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from kernel_builder.common.hub_env import cache_location, repo_folder_name
from kernel_builder.common.safe_fs import UnsafeFileError, describe_mode, read_bounded, write_inside
from kernel_builder.errors import KernelBuilderError
from kernel_builder.formats.identifiers import is_commit_id, ref_name_problem
from kernel_builder.hub.repos import KERNEL, RemoteRepo

__all__ = ["CacheError", "CacheLayout", "CacheLinkError", "entries", "remove_partial"]

_REF_FILE_LIMIT = 4096  # a ref file holds one commit id


class CacheError(KernelBuilderError, OSError):
    """The Hub cache cannot be written: the directory the environment names is unusable, or a folder in it is a
    planted link. The message names the variable or the folder and what to do; nothing was written."""


class CacheLinkError(CacheError):
    """A folder the download would write into is a symbolic link (or not a folder): nothing is written.

    Anyone who can write to a shared cache could plant such a link to make the next download write elsewhere
    (docs/security.md). Downloads write through none, and say which one to remove.
    """


def entries(folder: Path) -> set[Path]:
    """Everything below ``folder`` now (nothing when it does not exist)."""
    return set(folder.rglob("*")) if folder.is_dir() else set()


def remove_partial(folder: Path, before: set[Path], blobs: Path) -> None:
    """Remove what a failed download added below ``folder`` (files first, then the folders it emptied) and its
    unfinished blobs; what was there ``before`` stays."""
    added = sorted(entries(folder) - before, key=lambda path: len(path.parts), reverse=True)
    with contextlib.suppress(OSError):
        for path in added:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        if not before and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        for unfinished in blobs.glob("*.incomplete"):
            unfinished.unlink(missing_ok=True)


def _kind(mode: int) -> str:
    return "a regular file" if stat.S_ISREG(mode) else describe_mode(mode)


def _no_links_below(root: Path, folders: Sequence[Path]) -> None:
    """Refuse when any of ``folders`` (each below ``root``), or a folder between it and ``root``, is a symbolic
    link or an existing non-folder. ``root`` itself may be a link: the user chose where the cache lives."""
    checked: set[Path] = set()
    for folder in folders:
        relative = folder.relative_to(root)
        current = root
        for part in relative.parts:
            current = current / part
            if current in checked:
                continue
            checked.add(current)
            try:
                info = current.lstat()
            except FileNotFoundError:
                break  # created by the download, as a folder
            except OSError as error:
                raise CacheLinkError(
                    f"cannot inspect {current} in the cache: {error.strerror or error}"
                ) from None
            if stat.S_ISLNK(info.st_mode):
                raise CacheLinkError(
                    f"{current} in the Hub cache is a symbolic link (to {os.readlink(current)}); a download would "
                    f"write through it, outside the cache. Remove it (and check who can write to {root}); the "
                    f"next download recreates it as a folder."
                )
            if not stat.S_ISDIR(info.st_mode):
                raise CacheLinkError(
                    f"{current} in the Hub cache is not a folder ({_kind(info.st_mode)}); remove it and "
                    f"download again"
                )


class CacheLayout:
    """The cache one operation uses (``cache_dir``, chosen by ``cache_source``), read once at creation."""

    def __init__(self) -> None:
        self.cache_dir, self.cache_source = cache_location()

    def _type(self, repo: RemoteRepo) -> str:
        return repo.repo_type or KERNEL

    def writable_cache(self) -> None:
        """Make sure the cache directory exists and can be written, or raise :class:`CacheError` naming the
        variable that chose it (``KERNELS_CACHE``, ``HF_HUB_CACHE``, ``HF_HOME``) and what to do."""
        root = self.cache_dir
        chosen = (
            f"the cache directory {root}"
            if self.cache_source == "the default"
            else f"{self.cache_source} ({root})"
        )
        remedy = (
            "point KERNELS_CACHE at a writable directory, or set HF_HUB_OFFLINE=1 to load only what the cache "
            "already holds"
        )
        try:
            if not root.is_dir():
                root.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            pass
        except OSError as error:
            raise CacheError(f"{chosen} cannot be created: {error.strerror or error}; {remedy}") from None
        try:
            info = root.stat()
        except OSError as error:
            raise CacheError(f"{chosen} cannot be used: {error.strerror or error}; {remedy}") from None
        if not stat.S_ISDIR(info.st_mode):
            raise CacheError(f"{chosen} is not a directory ({_kind(info.st_mode)}); {remedy}")
        if not os.access(root, os.W_OK | os.X_OK):
            raise CacheError(f"{chosen} is not writable; {remedy}")

    def guard(self, repo: RemoteRepo, sha: str, folder: str) -> None:
        """Refuse a download whose cache folders include a planted link (:class:`CacheLinkError`).

        Covers what ``huggingface_hub`` writes for the repo: ``blobs``, ``snapshots/<sha>/<folder>``, ``refs``
        and its lock files under ``.locks``. Checked before each download: a link planted during one is a race
        this cannot close (docs/security.md).
        """
        self.writable_cache()
        top = self.repo_folder(repo)
        snapshot = self.snapshot(repo, sha)
        inner = snapshot.joinpath(*[part for part in folder.split("/") if part])
        locks = self.cache_dir / ".locks" / top.name
        _no_links_below(self.cache_dir, [top / "blobs", top / "refs", inner, locks])

    def repo_folder(self, repo: RemoteRepo) -> Path:
        return self.cache_dir / repo_folder_name(repo.repo_id, self._type(repo))

    def snapshot(self, repo: RemoteRepo, sha: str) -> Path:
        """``<repo folder>/snapshots/<sha>``; ``sha`` must be a 40-hex commit id (it becomes a path)."""
        if not is_commit_id(sha):
            raise ValueError(
                f"{repo.repo_id}: {sha!r} is not a 40-hex commit id; refusing to use it as a path"
            )
        return self.repo_folder(repo) / "snapshots" / sha

    def _ref_path(self, repo: RemoteRepo, name: str) -> Path:
        problem = ref_name_problem(name)
        if problem is not None:
            raise ValueError(f"{repo.repo_id}: {name!r} is not a branch, tag or commit id ({problem})")
        return self.repo_folder(repo) / "refs" / name

    def read_ref(self, repo: RemoteRepo, name: str) -> str | None:
        """The commit id cached for a named revision (``refs/<name>``), or ``None`` when there is none.

        A ref file that does not hold a 40-hex commit id (or is not a small regular file) raises ``ValueError``:
        its content would otherwise become a path.
        """
        path = self._ref_path(repo, name)
        if path.is_dir():
            return None  # refs/<a>/<b> exists: <a> is a folder of longer refs, not a ref
        try:
            text = read_bounded(path, _REF_FILE_LIMIT).decode("ascii", errors="replace").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, UnsafeFileError) as error:
            raise ValueError(f"{repo.repo_id}: cannot read the cached ref {name} ({path}): {error}") from None
        if not text:
            return None
        if not is_commit_id(text):
            raise ValueError(
                f"{repo.repo_id}: the cached ref {name} ({path}) does not hold a 40-hex commit id; delete it and "
                f"load the kernel online again"
            )
        return text

    def write_ref(self, repo: RemoteRepo, name: str, sha: str) -> None:
        """Record ``name → sha`` as ``huggingface_hub`` does: 40 hex, no newline, replaced atomically (docs/loading.md).

        The ref file is written inside the cache only (:func:`~kernel_builder.common.safe_fs.write_inside`).
        """
        path = self._ref_path(repo, name)
        if not is_commit_id(sha):
            raise ValueError(f"{repo.repo_id}: {sha!r} is not a 40-hex commit id; not recording it as {name}")
        try:
            if self.read_ref(repo, name) == sha:
                return
        except ValueError:
            pass  # a damaged ref is replaced
        write_inside(self.cache_dir, path.relative_to(self.cache_dir), sha.encode("ascii"))
