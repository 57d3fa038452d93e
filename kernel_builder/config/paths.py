"""Checks of the relative paths listed in ``src`` and ``include`` (build-toml spec §1, rule E12)."""

from __future__ import annotations

import posixpath
from pathlib import Path

from .context import Context, describe
from .positions import KeyPath

_GLOB = set("*?[")


def check_path(ctx: Context, root: Path, value: str, where: KeyPath, *, directory: bool) -> bool:
    """True when ``value`` is a valid relative path to an existing file (or directory)."""
    what = describe(where[:-1]) if isinstance(where[-1], int) else describe(where)
    if not value:
        ctx.error(f"empty path in {what}", where, "remove the empty entry")
        return False
    if "\\" in value:
        ctx.error(f"path `{value}` in {what} uses `\\`", where, f"use `/` as separator: `{value.replace(chr(92), '/')}`")
        return False
    if value.startswith("/") or (len(value) > 1 and value[1] == ":"):
        ctx.error(f"absolute path `{value}` in {what}", where, "paths are relative to the directory of build.toml")
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
    target = root / value
    if directory:
        if not target.is_dir():
            problem = "is not a directory" if target.exists() else "does not exist"
            ctx.error(f"include directory `{value}` in {what} {problem}", where, f"looked for {target}")
            return False
    elif not target.is_file():
        problem = "is not a regular file" if target.exists() else "does not exist"
        ctx.error(
            f"source file `{value}` in {what} {problem}",
            where,
            f"looked for {target}; list each file explicitly, relative to the kernel root",
        )
        return False
    return True
