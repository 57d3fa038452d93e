"""Finding the lock of the code that calls a locked load (docs/loading.md, caller detection).

The caller is the first stack frame outside ``kernel_builder``, ``importlib`` and ``runpy``. Code of an
installed distribution uses the ``kernels.lock`` shipped in that distribution's metadata (docs/loading.md); ``__main__``
and code outside any distribution use the ``kernels.lock`` found from the caller's directory upwards, up to the
first directory holding ``pyproject.toml``.
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded
from kernel_builder.formats.lockfile import (
    LOCK_FILE,
    LOCK_LIMIT,
    LockEntry,
    LockFileError,
    find_entry,
    parse_lock,
    read_lock,
)
from kernel_builder.loader.arguments import check_repo_id
from kernel_builder.loader.errors import KernelNotLockedError

__all__ = ["Caller", "LockMatch", "find_caller", "find_locked"]

_SKIPPED = ("kernel_builder", "importlib", "runpy")


@dataclass(frozen=True)
class Caller:
    """The calling frame's module name and the directory its code lives in."""

    module: str
    directory: Path


@dataclass(frozen=True)
class LockMatch:
    """The lock entry found for a repo, where the lock came from (for messages), and all of that lock's entries
    (a locked kernel's own kernel dependencies are looked up among them)."""

    entry: LockEntry
    source: str
    project_dir: Path | None  # where `kernel-builder download` would run; None for an installed package
    entries: tuple[LockEntry, ...] = ()


def _skipped(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in _SKIPPED)


def find_caller(frame: FrameType | None) -> Caller:
    """Walk outward from ``frame`` to the first frame outside our package and the import machinery."""
    while frame is not None:
        module = str(frame.f_globals.get("__name__") or "")
        if not _skipped(module):
            filename = frame.f_code.co_filename
            real = filename and not filename.startswith("<") and os.path.exists(filename)
            directory = Path(os.path.abspath(filename)).parent if real else Path.cwd()
            return Caller(module or "__main__", directory)
        frame = frame.f_back
    return Caller("__main__", Path.cwd())


def _distribution_lock(name: str, source: str) -> str | None:
    """The text of a distribution's shipped lock, read with the same bounds as any lock file; ``None`` if none."""
    try:
        distribution = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - listed a moment ago
        return None
    folder = getattr(distribution, "_path", None)  # a PathDistribution's metadata directory
    if not isinstance(folder, Path):
        return distribution.read_text(LOCK_FILE)  # pragma: no cover - zip imports and other finders
    path = folder / LOCK_FILE
    try:
        return read_bounded(path, LOCK_LIMIT).decode("utf-8")
    except FileNotFoundError:
        return None
    except (UnsafeFileError, UnicodeDecodeError) as error:
        raise LockFileError(f"{source} ({path}): cannot be read as a lock file: {error}") from None
    except OSError as error:
        raise LockFileError(f"{source} ({path}): cannot be read: {error.strerror or error}") from None


def _from_distributions(repo_id: str, caller: Caller, searched: list[str]) -> LockMatch | None:
    top = caller.module.partition(".")[0]
    for name in importlib.metadata.packages_distributions().get(top, []):
        searched.append(f"{LOCK_FILE} in the metadata of distribution {name!r}")
        source = f"{LOCK_FILE} of distribution {name!r}"
        text = _distribution_lock(name, source)
        if not text:
            continue
        entries = parse_lock(text, source)
        entry = find_entry(entries, repo_id)
        if entry is not None:
            return LockMatch(entry, source, None, tuple(entries))
    return None


def _from_directories(repo_id: str, start: Path, searched: list[str]) -> LockMatch | None:
    directory = start
    while True:
        candidate = directory / LOCK_FILE
        searched.append(str(candidate))
        if os.path.lexists(candidate):  # not is_file(): a FIFO or a directory there is reported, not skipped
            entries = read_lock(candidate)
            entry = find_entry(entries, repo_id)
            if entry is not None:
                return LockMatch(entry, str(candidate), directory, tuple(entries))
        if (directory / "pyproject.toml").exists() or directory.parent == directory:
            return None
        directory = directory.parent


def find_locked(repo_id: str, lockfile: str | os.PathLike[str] | None, frame: FrameType | None) -> LockMatch:
    """The lock entry for ``repo_id``: from ``lockfile`` if given, else from the caller's project (above).

    Raises :class:`KernelNotLockedError` naming the repo and every place searched, ``FileNotFoundError`` for
    a given ``lockfile`` that does not exist, :class:`~kernel_builder.formats.lockfile.LockFileError` (a
    ``ValueError``) for a lock that cannot be read or is invalid, and ``ValueError`` for an invalid repo id.
    """
    check_repo_id(repo_id)
    searched: list[str] = []
    if lockfile is not None:
        path = Path(os.path.abspath(lockfile))
        searched.append(str(path))
        entries = read_lock(path)
        entry = find_entry(entries, repo_id)
        match = None if entry is None else LockMatch(entry, str(path), path.parent, tuple(entries))
    else:
        caller = find_caller(frame)
        match = None
        if caller.module != "__main__":
            match = _from_distributions(repo_id, caller, searched)
        if match is None and not searched:  # __main__, or code outside any installed distribution
            match = _from_directories(repo_id, caller.directory, searched)
    if match is None:
        raise KernelNotLockedError(
            f"{repo_id} is not locked: no lock file lists it (searched: {'; '.join(searched)}). Add it to "
            f"[tool.kernels.dependencies] in the project's pyproject.toml and run `kernel-builder lock`, then "
            f"`kernel-builder download`; or pass lockfile=<path to kernels.lock>."
        )
    return match
