"""File-system rules for files that someone else controls: bounded reads, confined writes, walks that stay put.

Three functions, each the one way the tool does that thing with untrusted paths:

* :func:`read_bounded` reads a configuration or metadata file only if it is a regular file of at most a given
  size (a FIFO, ``/dev/zero`` or a 64 MiB file is refused at once instead of hanging or filling memory).
* :func:`write_inside` writes a file below a root directory, atomically, and never through a symlink: the file
  is created fresh and renamed into place, so a link planted at the target is replaced, not followed, and a
  path that would leave the root is refused before anything is written.
* :func:`scan_tree` lists a directory tree without following directory symlinks, and reports those links and
  every entry that is not a regular file, so a caller can refuse them without walking or opening them; or,
  asked to, follows the links its caller accepts (a link back up the tree is reported, never walked again).
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from kernel_builder.errors import KernelBuilderError

__all__ = [
    "OutsideRootError",
    "TreeScan",
    "UnsafeFileError",
    "describe_mode",
    "read_bounded",
    "scan_tree",
    "write_inside",
]


class UnsafeFileError(ValueError, KernelBuilderError):
    """A file that must not be read: not a regular file, or larger than allowed. ``str()`` says which."""


class OutsideRootError(ValueError, KernelBuilderError):
    """A write whose target would not be inside the root it was confined to."""


def describe_mode(mode: int) -> str:
    """What a non-regular file is, in words (``a FIFO``, ``a character device``, ...)."""
    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symlink"),
    )
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _size(limit: int) -> str:
    if limit % (1 << 20) == 0:
        return f"{limit >> 20} MiB"
    if limit % (1 << 10) == 0:
        return f"{limit >> 10} KiB"
    return f"{limit} bytes"


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of ``path``, which must be a regular file (a symlink to one is fine) of at most ``limit`` bytes.

    The file is opened non-blocking (a FIFO does not wait for a writer) and checked on the open descriptor, so
    what is checked is what is read. Raises :class:`UnsafeFileError` for anything else, and ``OSError`` as
    ``open`` does (``FileNotFoundError``, ``PermissionError``, ``ENAMETOOLONG``, ...).
    """
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeFileError(f"it is {describe_mode(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            raise UnsafeFileError(f"it is larger than {_size(limit)} ({info.st_size} bytes)")
        os.set_blocking(descriptor, True)
        chunks: list[bytes] = []
        remaining = limit + 1  # one byte more tells a file that grew since fstat
        while remaining > 0:
            chunk = os.read(descriptor, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise UnsafeFileError(f"it is larger than {_size(limit)}")
        return data
    finally:
        os.close(descriptor)


def _relative_parts(relpath: str | os.PathLike[str]) -> tuple[str, ...]:
    text = PurePosixPath(relpath).as_posix() if isinstance(relpath, Path) else os.fspath(relpath)
    parts = tuple(text.split("/"))
    if not text or any(part in ("", ".", "..") for part in parts):
        raise OutsideRootError(f"{text!r} is not a plain relative path")
    return parts


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def write_inside(
    root: str | os.PathLike[str], relpath: str | os.PathLike[str], data: bytes, mode: int = 0o644
) -> Path:
    """Write ``data`` to ``root/relpath`` atomically; returns that path.

    ``relpath`` must be a plain relative path (no ``..``, not absolute). Missing directories are created. The
    directory the file lands in must resolve to a place inside ``root`` (``root`` itself may be a symlink: it
    is resolved once, and everything below it is checked against that). The content goes to a new temporary
    file beside the target and is renamed over it, so a symlink at the target is replaced and its own target
    is never touched. Raises :class:`OutsideRootError` when the target would leave ``root``.
    """
    parts = _relative_parts(relpath)
    base = Path(root)
    real_root = os.path.realpath(base)
    parent = base.joinpath(*parts[:-1])
    if not _inside(os.path.realpath(parent), real_root):
        raise OutsideRootError(f"{parent} is outside {base} (a symlink leads elsewhere)")
    parent.mkdir(parents=True, exist_ok=True)
    real_parent = os.path.realpath(parent)
    if not _inside(real_parent, real_root):  # a link appeared while the directories were made
        raise OutsideRootError(f"{parent} is outside {base} (a symlink leads elsewhere)")
    target = base.joinpath(*parts)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{parts[-1][:200]}.", suffix=".tmp", dir=real_parent)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(temporary, mode)
        os.replace(temporary, os.path.join(real_parent, parts[-1]))
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


@dataclass
class TreeScan:
    """What :func:`scan_tree` found, by ``/``-separated path relative to the root.

    ``files``: regular files, and symlinks to regular files (the cache stores downloads as such links).
    ``directory_links``: symlinks to directories, not entered. ``special``: everything else (FIFOs, devices,
    sockets, dangling links), with what it is; none was opened. ``unreadable``: directories that could not be
    listed, with the error. With ``follow``: ``refused_links``, the links ``follow`` refused, with their
    resolved targets; ``loops``, the directory links that lead back to a directory they are in, with it.
    """

    files: dict[str, Path] = field(default_factory=dict)
    directory_links: list[str] = field(default_factory=list)
    special: dict[str, str] = field(default_factory=dict)
    unreadable: dict[str, str] = field(default_factory=dict)
    refused_links: dict[str, Path] = field(default_factory=dict)
    loops: dict[str, Path] = field(default_factory=dict)


def scan_tree(
    root: str | os.PathLike[str],
    *,
    skip: Callable[[str, bool], bool] | None = None,
    follow: Callable[[str, Path], bool] | None = None,
) -> TreeScan:
    """List every entry under ``root`` (iteratively, no recursion limit).

    ``skip(relpath, is_directory)`` leaves an entry out (a skipped directory is not entered). Without
    ``follow``, directory symlinks are reported, not entered, and file symlinks count as their files. With
    ``follow``, it is asked about every symlink that resolves, with its real target: a refused link is reported
    (``refused_links``) and neither read nor entered; an accepted one counts as its file or is entered as a
    directory, except a directory link back to a directory it is in (``loops``), so no walk goes round forever.
    """
    result = TreeScan()
    start = os.fspath(root)
    pending: list[tuple[str, str, tuple[str, ...]]] = [
        (start, "", (os.path.realpath(start),) if follow else ())
    ]
    while pending:
        directory, prefix, ancestors = pending.pop()
        try:
            with os.scandir(directory) as entries:
                listed = list(entries)
        except OSError as error:
            result.unreadable[prefix.rstrip("/") or "."] = error.strerror or str(error)
            continue
        for entry in listed:
            relpath = prefix + entry.name
            try:
                is_link = entry.is_symlink()
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError as error:
                result.special[relpath] = error.strerror or str(error)
                continue
            if skip is not None and skip(relpath, is_dir):
                continue
            if is_dir:
                inside = (*ancestors, os.path.realpath(entry.path)) if follow else ()
                pending.append((entry.path, relpath + "/", inside))
                continue
            try:
                info = os.stat(entry.path)  # follows a file link: the cache's files are links to blobs
            except OSError as error:
                dangling = is_link and error.errno in (errno.ENOENT, errno.ELOOP)
                result.special[relpath] = "a dangling symlink" if dangling else (error.strerror or str(error))
                continue
            target = Path(os.path.realpath(entry.path)) if is_link and follow is not None else None
            if target is not None and follow is not None and not follow(relpath, target):
                result.refused_links[relpath] = target
                continue
            if stat.S_ISDIR(info.st_mode):
                if skip is not None and skip(relpath, True):
                    continue
                if target is None:
                    result.directory_links.append(relpath)
                elif str(target) in ancestors:
                    result.loops[relpath] = target
                else:
                    pending.append((entry.path, relpath + "/", (*ancestors, str(target))))
            elif stat.S_ISREG(info.st_mode):
                result.files[relpath] = Path(entry.path)
            else:
                result.special[relpath] = describe_mode(info.st_mode)
    result.directory_links.sort()
    return result
