"""Checks of the relative paths listed in ``src`` and ``include`` (docs/build-toml.md, rule E12)."""

from __future__ import annotations

import os
import posixpath
import stat
from pathlib import Path, PurePosixPath

from kernel_builder.config.context import Context, describe
from kernel_builder.config.positions import KeyPath

_GLOB = set("*?[")
#: NAME_MAX of common file systems: longer names fail in the compiler's paths.
MAX_FILE_NAME = 255


def check_path(ctx: Context, root: Path, value: str, where: KeyPath, *, directory: bool) -> bool:
    """True when ``value`` is a valid relative path to an existing file (or directory)."""
    what = describe(where[:-1]) if isinstance(where[-1], int) else describe(where)
    if not value:
        ctx.error(f"empty path in {what}", where, "remove the empty entry")
        return False
    if "\\" in value:
        ctx.error(
            f"path `{value}` in {what} uses `\\`",
            where,
            f"use `/` as separator: `{value.replace(chr(92), '/')}`",
        )
        return False
    if value.startswith("/") or (len(value) > 1 and value[1] == ":"):
        ctx.error(
            f"absolute path `{value}` in {what}", where, "paths are relative to the directory of build.toml"
        )
        return False
    if ";" in value:
        ctx.error(
            f"path `{value}` in {what} contains `;`, which CMake cannot pass inside one path",
            where,
            "rename the file or directory (CMake splits paths at `;`)",
        )
        return False
    if "$(" in value:
        ctx.error(
            f"path `{value}` in {what} contains `$(`, which CMake passes on as a build-tool variable reference "
            f"(Ninja then stops with `bad $-escape`)",
            where,
            "rename the file or directory without `$(`",
        )
        return False
    if _GLOB & set(value):
        ctx.error(
            f"path `{value}` in {what} contains a glob character",
            where,
            "globs are never expanded: list each file explicitly",
        )
        return False
    normal = posixpath.normpath(value)
    if normal == ".." or normal.startswith("../"):
        ctx.error(
            f"path `{value}` in {what} leaves the kernel root",
            where,
            "keep every source inside the directory that holds build.toml",
        )
        return False
    longest = max(value.split("/"), key=lambda part: len(part.encode()))
    if len(longest.encode()) > MAX_FILE_NAME:
        ctx.error(
            f"path `{value}` in {what} is longer than the file system allows (a name of "
            f"{len(longest.encode())} bytes; at most {MAX_FILE_NAME})",
            where,
            "shorten the file or directory name",
        )
        return False
    target = root / value
    kind = "include directory" if directory else "source file"
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as exc:  # an unreadable directory on the way, a loop of links, a name too long
        ctx.error(
            f"{kind} `{value}` in {what} cannot be read: {exc.strerror or exc}", where, f"looked for {target}"
        )
        return False
    if directory:
        if info is None or not stat.S_ISDIR(info.st_mode):
            problem = "is not a directory" if info is not None else "does not exist"
            ctx.error(f"include directory `{value}` in {what} {problem}", where, f"looked for {target}")
            return False
    elif info is None or not stat.S_ISREG(info.st_mode):
        problem = "is not a regular file" if info is not None else "does not exist"
        near = near_miss(root, value) if info is None else None
        ctx.error(
            f"source file `{value}` in {what} {problem}",
            where,
            f"did you mean `{near}`? (looked for {target})"
            if near
            else f"looked for {target}; list each file explicitly, relative to the kernel root",
        )
        return False
    return True


_HEADERS = frozenset({".h", ".hh", ".hpp", ".hxx", ".cuh", ".inc", ".inl"})


def near_miss(root: Path, value: str) -> str | None:
    """The existing file most like ``value`` in the directory it names (a typo, a changed extension), as a
    path relative to ``root``; None when there is none close enough or the directory does not exist."""
    relative = PurePosixPath(value)
    folder = root / relative.parent
    header = (
        relative.suffix in _HEADERS
    )  # a missing header is not a source of a similar name, nor the reverse
    try:
        names = sorted(
            entry.name for entry in os.scandir(folder)
            if entry.is_file() and (PurePosixPath(entry.name).suffix in _HEADERS) == header
        )  # fmt: skip
    except OSError:
        return None
    import difflib  # only for a message: a build.toml without mistakes never needs it

    close = difflib.get_close_matches(relative.name, names, n=1, cutoff=0.6)
    if not close:
        return None
    return (relative.parent / close[0]).as_posix()
