"""``kernels.lock``: the lock-file formats, the ``git_lfs_concat`` variant hash, and shipping the lock (docs/loading.md).

A lock pins kernels to commits. The format written is the ``kernels`` loader's (0.17): a list of
``{"dependency": {"repo-id", "version" | "revision"}, "lock": {"commit"}}`` entries, one per kernel of the
project's whole kernel-dependency tree. The older format (``{"repo_id", "sha", "variants"}``, with a hash of
each variant's files) is still read, and its hashes still checked. This module only knows the formats and the
hash; it makes no Hub request, so the locked loader, the ``lock``/``download`` commands and the setuptools hook
below share it without pulling in ``huggingface_hub``.

A lock file is read like any file someone else controls: a regular file of bounded size, nesting and
duplicates refused, every value checked before it names a repository, a commit or a cache folder.
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
from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded
from kernel_builder.errors import ConfigError
from kernel_builder.formats.files import is_variant_file
from kernel_builder.formats.identifiers import is_repo_id, repo_id_problem, revision_problem
from kernel_builder.formats.variants import parse_variant

__all__ = [
    "HASH_TYPE",
    "LOCK_FILE",
    "LOCK_LIMIT",
    "LockEntry",
    "LockFileError",
    "LockedVariant",
    "egg_info_writer",
    "find_dependency",
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
#: A lock entry takes about 150 bytes (an older-format one, ~100 per variant): 2 MiB is thousands of kernels.
LOCK_LIMIT = 2 << 20
_HASH_RE = re.compile(r"sha256-[0-9a-f]{64}")
_OBJECT_ID_RE = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_COMMIT_RE = re.compile(r"[0-9a-fA-F]{40}")
#: The most a version number may be: the ``kernels`` loader reads it as an unsigned 64-bit integer.
MAX_VERSION = 2**64 - 1


class LockFileError(ConfigError, ValueError):
    """A lock file that cannot be used: unreadable, not a regular file, too large or too deep, or invalid.

    A :class:`~kernel_builder.errors.ConfigError` (exit 2) and a ``ValueError`` (what upstream's loader raises
    for a lock it cannot parse); ``str()`` names the file and what is wrong.
    """


@dataclass(frozen=True)
class LockedVariant:
    """One variant's entry in an older-format lock: ``"sha256-<hex>"`` and how it was computed."""

    hash: str
    hash_type: str = HASH_TYPE


@dataclass(frozen=True)
class LockEntry:
    """One locked kernel: the repository and the commit it is pinned to.

    ``version`` / ``revision``: the dependency it was locked for (``kernels`` format; exactly one is set).
    ``legacy``: read from the older format, whose ``variants`` (name → hash) are the only variants the lock
    covers; and whose ``redirected_from`` is the id the project asked for before a redirect (lookups match
    either id).
    """

    repo_id: str
    sha: str
    version: int | None = None
    revision: str | None = None
    variants: Mapping[str, LockedVariant] = field(default_factory=dict, hash=False, compare=False)
    redirected_from: str | None = None
    legacy: bool = False

    def matches(self, repo_id: str) -> bool:
        return repo_id in (self.repo_id, self.redirected_from)

    def pins(self, repo_id: str, version: int | None, revision: str | None) -> bool:
        """Whether this entry locks the dependency ``repo_id`` at ``version`` / ``revision``; an older-format
        entry records no dependency and pins whatever version of its repository was asked for."""
        if not self.matches(repo_id):
            return False
        return self.legacy or (self.version, self.revision) == (version, revision)

    @property
    def label(self) -> str:
        """``org/relu v1``, ``org/relu@main`` (or ``org/relu`` for an older-format entry), for messages."""
        if self.version is not None:
            return f"{self.repo_id} v{self.version}"
        if self.revision is not None:
            return f"{self.repo_id}@{self.revision}"
        return self.repo_id

    def sort_key(self) -> tuple[str, int, int, str]:
        """The ``kernels`` loader's order: by repo id, versions (ascending) before revisions (by name)."""
        if self.version is not None:
            return (self.repo_id, 0, self.version, "")
        return (self.repo_id, 1 if self.revision is not None else 2, 0, self.revision or "")


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


# --- writing (docs/loading.md) -----------------------------------------------------------------------------------------


def render_lock(entries: Iterable[LockEntry]) -> str:
    """The lock file's text in the ``kernels`` format, byte for byte what ``kernels lock`` writes for the same
    locks: entries in the ``kernels`` loader's order (:meth:`LockEntry.sort_key`), 2-space indentation, no final
    newline. Every entry needs a ``version`` or a ``revision``."""
    data: list[dict[str, Any]] = []
    for entry in sorted(entries, key=LockEntry.sort_key):
        dependency: dict[str, Any] = {"repo-id": entry.repo_id}
        if entry.version is not None:
            dependency["version"] = entry.version
        elif entry.revision is not None:
            dependency["revision"] = entry.revision
        else:
            raise ValueError(f"{entry.repo_id}: a lock entry needs the version or revision it was locked for")
        data.append({"dependency": dependency, "lock": {"commit": entry.sha}})
    return json.dumps(data, indent=2, ensure_ascii=False)


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


# --- reading (docs/loading.md) -----------------------------------------------------------------------------------------


def _invalid(source: str, where: str, reason: str) -> LockFileError:
    return LockFileError(
        f"{source}: invalid lock file: {where}: {reason}; re-create it with `kernel-builder lock`"
    )


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _commit(source: str, where: str, value: object) -> str:
    if not isinstance(value, str) or not _COMMIT_RE.fullmatch(value):
        raise _invalid(source, where, f"expected a 40-hex commit SHA, got {json.dumps(value)}")
    return value.lower()


def _unknown_keys(source: str, where: str, item: Mapping[str, object], allowed: tuple[str, ...]) -> None:
    unknown = sorted(set(item) - set(allowed))
    if unknown:
        expected = ", ".join(f"'{key}'" for key in allowed)
        raise _invalid(
            source,
            where,
            f"unknown key {json.dumps(unknown[0])} (expected {expected}; the kernels loader refuses any other)",
        )


def _parse_dependency(source: str, where: str, value: object) -> tuple[str, int | None, str | None]:
    if not isinstance(value, dict):
        raise _invalid(source, where, f"expected an object, got {json.dumps(value)[:80]}")
    _unknown_keys(source, where, value, ("repo-id", "version", "revision"))
    repo_id = value.get("repo-id")
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise _invalid(
            source, f"{where}.repo-id", f"expected '<org>/<name>' ({problem}), got {json.dumps(repo_id)}"
        )
    assert isinstance(repo_id, str)
    version, revision = value.get("version"), value.get("revision")
    if ("version" in value) == ("revision" in value):
        raise _invalid(source, f"{where} ({repo_id})", "expected exactly one of 'version' and 'revision'")
    if "version" in value:
        if isinstance(version, bool) or not isinstance(version, int) or not 0 <= version <= MAX_VERSION:
            raise _invalid(
                source,
                f"{where}.version ({repo_id})",
                f"expected a major version >= 0, got {json.dumps(version)}",
            )
        return repo_id, version, None
    problem = revision_problem(revision)
    if problem is not None:
        raise _invalid(
            source, f"{where}.revision ({repo_id})", f"expected a branch, tag or commit ({problem})"
        )
    assert isinstance(revision, str)
    return repo_id, None, revision


def _parse_entry(source: str, index: int, item: dict[str, Any]) -> LockEntry:
    where = f"entry {index}"
    _unknown_keys(source, where, item, ("dependency", "lock"))
    for key in ("dependency", "lock"):
        if key not in item:
            raise _invalid(
                source, where, f'missing \'{key}\' (an entry is {{"dependency": ..., "lock": ...}})'
            )
    repo_id, version, revision = _parse_dependency(source, f"{where}.dependency", item["dependency"])
    lock = item["lock"]
    if not isinstance(lock, dict):
        raise _invalid(
            source, f"{where}.lock ({repo_id})", f"expected an object, got {json.dumps(lock)[:80]}"
        )
    _unknown_keys(source, f"{where}.lock ({repo_id})", lock, ("commit",))
    sha = _commit(source, f"{where}.lock.commit ({repo_id})", lock.get("commit"))
    return LockEntry(repo_id, sha, version, revision)


def _parse_legacy_entry(source: str, index: int, item: dict[str, Any]) -> LockEntry:
    where = f"entry {index}"
    repo_id, sha, variants = item.get("repo_id"), item.get("sha"), item.get("variants")
    redirected = item.get("redirected_from")
    if not isinstance(repo_id, str) or not is_repo_id(repo_id):
        raise _invalid(source, f"{where}.repo_id", f"expected '<org>/<name>', got {json.dumps(repo_id)}")
    where = repo_id
    if not isinstance(sha, str) or not _COMMIT_RE.fullmatch(sha):
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
    return LockEntry(
        repo_id, sha.lower(), variants=MappingProxyType(parsed), redirected_from=redirected, legacy=True
    )


def _is_legacy(item: Mapping[str, object]) -> bool:
    return "dependency" not in item and "lock" not in item and ("repo_id" in item or "sha" in item)


def parse_lock(text: str, source: str = LOCK_FILE) -> list[LockEntry]:
    """Parse a lock file's text, in either format; :class:`LockFileError` naming ``source`` and the bad entry.

    The ``kernels`` format is read as strictly as the ``kernels`` loader reads it (an unknown key is refused,
    so that what passes here passes there too); the older format ignores unknown keys, as it always did. Both
    refuse a key given twice in one object, two entries for the same dependency (same repo id and version or
    revision; in the older format, the same repo id), a file that mixes the formats, and nesting deeper than
    the JSON reader can follow.
    """
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except _DuplicateKey as error:
        raise _invalid(
            source, "duplicate key", f"{json.dumps(str(error))} appears twice in one object"
        ) from None
    except json.JSONDecodeError as error:
        raise _invalid(source, "not JSON", str(error)) from None
    except RecursionError:
        raise _invalid(
            source, "not a lock", "nested too deeply (a lock file nests four levels at most)"
        ) from None
    if not isinstance(data, list):
        raise _invalid(source, "top level", "expected a list of entries")
    entries: list[LockEntry] = []
    seen: dict[tuple[str, int | None, str | None], int] = {}
    formats: set[bool] = set()
    for index, item in enumerate(data):
        if not isinstance(item, dict):
            raise _invalid(source, f"entry {index}", "expected an object")
        legacy = _is_legacy(item)
        formats.add(legacy)
        if len(formats) > 1:
            raise _invalid(
                source,
                f"entry {index}",
                "the file mixes the kernels format ('dependency'/'lock') and the older one ('repo_id'/'sha')",
            )
        entry = _parse_legacy_entry(source, index, item) if legacy else _parse_entry(source, index, item)
        key = (entry.repo_id, entry.version, entry.revision)
        if key in seen:
            raise _invalid(
                source, f"entry {index}", f"{entry.label} is locked twice (also entry {seen[key]})"
            )
        seen[key] = index
        entries.append(entry)
    return entries


def read_lock(path: str | os.PathLike[str]) -> list[LockEntry]:
    """Read and parse a lock file: a regular file of at most :data:`LOCK_LIMIT` bytes, in UTF-8.

    ``FileNotFoundError`` when it does not exist; :class:`LockFileError` naming it for anything else (a FIFO,
    a directory, a device, too large, unreadable, not UTF-8, invalid).
    """
    file = Path(path)
    try:
        data = read_bounded(file, LOCK_LIMIT)
    except FileNotFoundError:
        raise
    except UnsafeFileError as error:
        raise LockFileError(f"{file}: cannot be read as a lock file: {error}") from None
    except OSError as error:
        raise LockFileError(f"{file}: cannot be read: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise LockFileError(f"{file}: invalid lock file: not UTF-8 ({error})") from None
    return parse_lock(text, str(file))


def find_entry(entries: Iterable[LockEntry], repo_id: str) -> LockEntry | None:
    """The entry a locked load of ``repo_id`` uses, or ``None``.

    As the ``kernels`` loader: the first entry of the repository in the loader's order (its lowest locked
    version) when the lock pins it more than once; an older-format entry also matches the id it was
    redirected from.
    """
    matching = [entry for entry in entries if entry.matches(repo_id)]
    return min(matching, key=LockEntry.sort_key) if matching else None


def find_dependency(
    entries: Iterable[LockEntry], repo_id: str, version: int | None, revision: str | None
) -> LockEntry | None:
    """The entry that pins the kernel dependency ``repo_id`` at ``version`` / ``revision`` (a
    ``kernel-depends`` entry of a variant's ``metadata.json``), or ``None``."""
    return next((entry for entry in entries if entry.pins(repo_id, version, revision)), None)


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
    when ``pyproject.toml`` has ``[tool.kernels.dependencies]``: then ``kernels.lock`` is checked and copied
    into the ``.egg-info``/``.dist-info`` metadata, or a stale copy removed when the project has no lock. An
    invalid lock stops the build (:class:`LockFileError`) rather than ship.
    """
    if not _has_kernel_dependencies(Path("pyproject.toml")):
        return
    lock = Path(LOCK_FILE)
    data: str | None = None
    if os.path.lexists(lock):
        read_lock(lock)
        data = read_bounded(lock, LOCK_LIMIT).decode("utf-8")
    cmd.write_or_delete_file(basename, filename, data, force=True)
