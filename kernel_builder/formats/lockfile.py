"""``kernels.lock``: the lock-file format, the ``git_lfs_concat`` variant hash, and shipping the lock (docs/loading.md).

A lock pins each kernel dependency of a project to a commit SHA and, per variant at that commit, to a hash of
its files' git object ids. This module only knows the format and the hash; it makes no Hub request, so the
locked loader, the ``lock``/``download`` commands and the setuptools hook below share it without pulling in
``huggingface_hub``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from kernel_builder.common import toml
from kernel_builder.formats.files import is_variant_file
from kernel_builder.formats.identifiers import is_commit_id, is_repo_id
from kernel_builder.formats.variants import parse_variant

__all__ = [
    "HASH_TYPE",
    "LOCK_FILE",
    "LockEntry",
    "LockedVariant",
    "egg_info_writer",
    "find_entry",
    "group_variant_files",
    "parse_lock",
    "read_lock",
    "render_lock",
    "variant_hash",
    "write_lock",
]

T = TypeVar("T")

LOCK_FILE = "kernels.lock"
HASH_TYPE = "git_lfs_concat"
_HASH_RE = re.compile(r"sha256-[0-9a-f]{64}")
_OBJECT_ID_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class LockedVariant:
    """One variant's entry: ``"sha256-<hex>"`` and how it was computed."""

    hash: str
    hash_type: str = HASH_TYPE


@dataclass(frozen=True)
class LockEntry:
    """One locked repository. After a redirect ``repo_id`` is the destination and ``redirected_from`` the id
    the project asked for; lookups match either."""

    repo_id: str
    sha: str
    variants: Mapping[str, LockedVariant] = field(default_factory=dict, hash=False)
    redirected_from: str | None = None

    def matches(self, repo_id: str) -> bool:
        return repo_id in (self.repo_id, self.redirected_from)


# --- the variant hash (docs/loading.md) --------------------------------------------------------------------------------


def variant_hash(files: Iterable[tuple[str, str]]) -> str:
    """The ``git_lfs_concat`` hash of a variant's ``(relative path, object id)`` pairs.

    The object id is the LFS SHA-256 for LFS-tracked files, else the git blob SHA-1 (hex). Pairs are sorted
    by the path's UTF-8 bytes; each path's bytes and then the id's raw bytes feed one SHA-256, without
    separators. Only variant files count (:func:`~kernel_builder.formats.files.is_variant_file`: no bytecode,
    no hidden path).
    """
    pairs = sorted((path.encode("utf-8"), object_id) for path, object_id in files if is_variant_file(path))
    digest = hashlib.sha256()
    for key, object_id in pairs:
        if not _OBJECT_ID_RE.fullmatch(object_id):
            raise ValueError(f"{key.decode()}: {object_id!r} is not a git blob SHA-1 or an LFS SHA-256")
        digest.update(key)
        digest.update(bytes.fromhex(object_id))
    return "sha256-" + digest.hexdigest()


def group_variant_files(files: Iterable[tuple[str, T]]) -> dict[str, dict[str, T]]:
    """Repository ``(path, value)`` pairs (a value is an object id, or a tree entry) grouped per variant:
    ``{variant: {relpath: value}}``.

    Only variant files (no bytecode, no hidden path) under ``build/<variant>/`` whose ``<variant>`` parses as a
    variant name count. Variants come out sorted by name.
    """
    grouped: dict[str, dict[str, T]] = {}
    parseable: dict[str, bool] = {}
    for path, value in files:
        parts = path.split("/", 2)
        if len(parts) < 3 or parts[0] != "build" or not is_variant_file(parts[2]):
            continue
        name = parts[1]
        if name not in parseable:
            try:
                parse_variant(name)
            except ValueError:
                parseable[name] = False
            else:
                parseable[name] = True
        if parseable[name]:
            grouped.setdefault(name, {})[parts[2]] = value
    return {name: grouped[name] for name in sorted(grouped)}


# --- the file (docs/loading.md) ----------------------------------------------------------------------------------------


def render_lock(entries: Iterable[LockEntry]) -> str:
    """The lock file's text: entries by ``repo_id``, variants by name, 2-space indentation, final newline."""
    data: list[dict[str, Any]] = []
    for entry in sorted(entries, key=lambda e: e.repo_id):
        item: dict[str, Any] = {
            "repo_id": entry.repo_id,
            "sha": entry.sha,
            "variants": {
                name: {"hash": entry.variants[name].hash, "hash_type": entry.variants[name].hash_type}
                for name in sorted(entry.variants)
            },
        }
        if entry.redirected_from is not None:
            item["redirected_from"] = entry.redirected_from
        data.append(item)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_lock(path: str | os.PathLike[str], entries: Iterable[LockEntry]) -> None:
    """Write the lock atomically (a temporary file in the same directory, then ``os.replace``)."""
    target = Path(path)
    text = render_lock(entries)
    descriptor, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _invalid(source: str, where: str, reason: str) -> ValueError:
    return ValueError(
        f"{source}: invalid lock file: {where}: {reason}; re-create it with `kernel-builder lock`"
    )


def _parse_entry(source: str, index: int, item: object) -> LockEntry:
    where = f"entry {index}"
    if not isinstance(item, dict):
        raise _invalid(source, where, "expected an object")
    repo_id, sha, variants = item.get("repo_id"), item.get("sha"), item.get("variants")
    redirected = item.get("redirected_from")
    if not isinstance(repo_id, str) or not is_repo_id(repo_id):
        raise _invalid(source, f"{where}.repo_id", f"expected '<org>/<name>', got {json.dumps(repo_id)}")
    where = repo_id
    if not isinstance(sha, str) or not is_commit_id(sha):
        raise _invalid(source, f"{where}: sha", f"expected a 40-hex commit SHA, got {json.dumps(sha)}")
    if not isinstance(variants, dict):
        raise _invalid(source, f"{where}: variants", "expected an object")
    if redirected is not None and not is_repo_id(redirected):
        raise _invalid(source, f"{where}: redirected_from", "expected a repo id")
    parsed: dict[str, LockedVariant] = {}
    for name, value in variants.items():
        if not isinstance(value, dict):
            raise _invalid(source, f"{where}: variants.{name}", "expected an object")
        digest, hash_type = value.get("hash"), value.get("hash_type", HASH_TYPE)
        if not isinstance(digest, str) or not isinstance(hash_type, str):
            raise _invalid(source, f"{where}: variants.{name}", "expected string 'hash' and 'hash_type'")
        if hash_type == HASH_TYPE and not _HASH_RE.fullmatch(digest):
            raise _invalid(
                source, f"{where}: variants.{name}.hash", f"expected 'sha256-<64 hex>', got {digest!r}"
            )
        parsed[name] = LockedVariant(digest, hash_type)
    return LockEntry(repo_id, sha, MappingProxyType(parsed), redirected)


def parse_lock(text: str, source: str = LOCK_FILE) -> list[LockEntry]:
    """Parse a lock file's text; ``ValueError`` naming ``source`` and the bad entry. Unknown keys are ignored."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise _invalid(source, "not JSON", str(error)) from None
    if not isinstance(data, list):
        raise _invalid(source, "top level", "expected a list of entries")
    return [_parse_entry(source, index, item) for index, item in enumerate(data)]


def read_lock(path: str | os.PathLike[str]) -> list[LockEntry]:
    """Read and parse a lock file (``FileNotFoundError`` when it does not exist)."""
    file = Path(path)
    return parse_lock(file.read_text(encoding="utf-8"), str(file))


def find_entry(entries: Iterable[LockEntry], repo_id: str) -> LockEntry | None:
    """The entry for ``repo_id`` (matching its id or the id it was redirected from), or ``None``."""
    return next((entry for entry in entries if entry.matches(repo_id)), None)


# --- shipping the lock (docs/loading.md) -------------------------------------------------------------------------------


def _has_kernel_dependencies(pyproject: Path) -> bool:
    try:
        data = toml.read_toml(pyproject)
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError):
        return False
    tool = data.get("tool")
    kernels = tool.get("kernels") if isinstance(tool, dict) else None
    return isinstance(kernels, dict) and isinstance(kernels.get("dependencies"), dict)


def egg_info_writer(cmd: Any, basename: str, filename: str) -> None:
    """setuptools ``egg_info.writers`` hook ``kernels.lock``: ship the project's lock in its metadata.

    Runs in the project directory of every setuptools build where kernel-builder is installed; it acts only
    when ``pyproject.toml`` has ``[tool.kernels.dependencies]``: then ``kernels.lock`` is copied into the
    ``.egg-info``/``.dist-info`` metadata, or a stale copy removed when the project has no lock.
    """
    if not _has_kernel_dependencies(Path("pyproject.toml")):
        return
    lock = Path(LOCK_FILE)
    data = lock.read_text(encoding="utf-8") if lock.is_file() else None
    cmd.write_or_delete_file(basename, filename, data, force=True)
