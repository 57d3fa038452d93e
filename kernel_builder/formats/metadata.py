"""``metadata.json`` of a variant directory: one typed record that is both written and read, and its digest.

One module for both sides, so the two can never disagree on a key, on which files count or on how a value is
spelled: the builder fills a :class:`Metadata` and writes :meth:`Metadata.to_json` (docs/layout.md), with the
``digest`` of :func:`digest_files`; the loader reads the file back with :func:`read_metadata` /
:meth:`Metadata.from_json` and checks the files with :func:`verify_digest` (docs/loading.md). Reading is strict
about what it knows (kebab-case keys, every bad field reported with the file's path and the field's key path)
and ignores keys it does not know, as the ``kernels`` loader does.
"""

from __future__ import annotations

import json
import keyword
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import kernel_builder.backends as backends
from kernel_builder.common.safe_fs import TreeScan, UnsafeFileError, read_bounded
from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.files import digest_value, file_hashes, is_variant_file, scan_variant
from kernel_builder.formats.identifiers import (
    is_git_object_id,
    is_kernel_name,
    repo_id_problem,
    revision_problem,
)
from kernel_builder.formats.loader_features import LoaderFeature, features_of, kernels_minver

if TYPE_CHECKING:
    from kernel_builder.formats.variants import Variant

__all__ = [
    "AGNOSTIC",
    "BUILD_LAYOUTS",
    "DIGEST_ALGORITHMS",
    "Digest",
    "KernelDependency",
    "Metadata",
    "Provenance",
    "ProvenanceEntry",
    "digest_files",
    "digest_problems",
    "read_metadata",
    "verify_digest",
]

logger = logging.getLogger("kernel_builder")

METADATA_FILE = "metadata.json"
#: ``backend.type`` of a build for no backend in particular (kernels 0.19): read as ``backend_type=None``.
AGNOSTIC = "agnostic"
#: ``build-layout`` values (kernels 0.19): the package's files in the variant directory, or ``<id>.zip`` there.
BUILD_LAYOUTS = ("files", "zip")
#: Far above any real metadata.json (its digest lists one line per shipped file).
METADATA_LIMIT = 16 << 20
DIGEST_ALGORITHMS = ("sha256", "sha512")

# Top-level files that are not part of the digest: the metadata itself and its (future) signature.
_UNDIGESTED_TOP_LEVEL = frozenset({METADATA_FILE, METADATA_FILE + ".sigstore"})


@dataclass(frozen=True)
class Digest:
    """``digest``: the algorithm and, per relative path, the padded base64 of the file's raw digest."""

    algorithm: str
    files: Mapping[str, str] = field(hash=False)

    def to_dict(self) -> dict[str, Any]:
        """The ``digest`` object: ``algorithm``, then ``files`` in path order."""
        return {"algorithm": self.algorithm, "files": {path: self.files[path] for path in sorted(self.files)}}


@dataclass(frozen=True)
class ProvenanceEntry:
    """What one part of ``provenance`` (``kernel`` or ``kernel-builder``) says about its sources.

    The build's view of the kernel's sources is one of these too: ``commit`` (a full git object id) and
    ``dirty``, from git or from ``--provenance-commit`` / ``--provenance-dirty``.
    """

    version: str | None = None
    commit: str | None = None
    dirty: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: ``version``, ``commit``, ``dirty``, each only when known."""
        entry = {"version": self.version, "commit": self.commit, "dirty": self.dirty}
        return {key: value for key, value in entry.items() if value is not None}


@dataclass(frozen=True)
class Provenance:
    """``provenance``: where a build came from, the kernel's sources and the tool that built it.

    A legacy flat ``{"sha"|"commit", "dirty"}`` object is read as the ``kernel`` part.
    """

    kernel: ProvenanceEntry | None = None
    kernel_builder: ProvenanceEntry | None = None
    #: The Torch a compiled variant was built against: its ``version`` names the build (``2.13.0+cu130``), which
    #: for a CPU variant may be another backend's (docs/cross.md).
    torch: ProvenanceEntry | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON object: ``kernel-builder`` first, then ``kernel``, then ``torch``, each only when known."""
        parts = {"kernel-builder": self.kernel_builder, "kernel": self.kernel, "torch": self.torch}
        return {key: entry.to_dict() for key, entry in parts.items() if entry is not None}

    @property
    def dirty_parts(self) -> tuple[str, ...]:
        """The keys (``kernel``, ``kernel-builder``) whose ``dirty`` is true."""
        parts = (("kernel", self.kernel), ("kernel-builder", self.kernel_builder))
        return tuple(key for key, entry in parts if entry is not None and entry.dirty)


@dataclass(frozen=True, kw_only=True)
class Metadata:
    """A parsed ``metadata.json`` (docs/loading.md); keyword-only, in the file's key order.

    ``id`` is ``None`` only for legacy builds that predate it; the importer then derives one
    (``_<python_name>_<hash>``) and the :class:`~kernel_builder.loader.LoadedKernel` it registers carries that
    id.
    """

    name: str
    id: str | None
    version: int | None = None
    license: str | None = None
    upstream: str | None = None
    source: str | None = None
    python_depends: tuple[str, ...]
    kernel_depends: tuple[KernelDependency, ...] = ()
    #: ``backend.type``: a registered backend's name; ``None`` for a backend-agnostic build (``"agnostic"``); any
    #: other word is kept as written (a newer builder's backend): :attr:`backend_known` says which. As in
    #: upstream's reader, it is no error until something needs the backend.
    backend_type: str | None
    #: ``backend.archs``; ``None`` when absent, and for an agnostic or unknown backend (as upstream reads them).
    backend_archs: tuple[str, ...] | None = None
    arch_selection: str | None = None
    digest: Digest | None = None
    provenance: Provenance | None = None
    #: ``kernels-minver``: the oldest ``kernels`` loader release that can load this build (major, minor, patch).
    kernels_minver: tuple[int, int, int] | None = None
    #: ``build-layout``: ``files`` (the package's files in the variant directory) or ``zip`` (the package in
    #: ``<id>.zip`` there, imported through ``zipimport``; kernels 0.19).
    build_layout: str = "files"

    @property
    def backend_known(self) -> bool:
        """Whether ``backend.type`` is agnostic or a backend this loader knows."""
        return self.backend_type is None or backends.find(self.backend_type) is not None

    @property
    def python_name(self) -> str:
        """The kernel name as a Python identifier (``fused-gelu`` → ``fused_gelu``)."""
        return self.name.replace("-", "_")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in the file's order (docs/layout.md).

        ``python-depends``, ``kernel-depends`` and ``backend`` are always written; every other key only when it
        has a value, so what :meth:`from_json` reads back is this record again.
        """
        data: dict[str, Any] = {"name": self.name}
        minver = None if self.kernels_minver is None else ".".join(str(part) for part in self.kernels_minver)
        layout = None if self.build_layout == "files" else self.build_layout
        optional = {
            "id": self.id,
            "version": self.version,
            "kernels-minver": minver,
            "build-layout": layout,
            "license": self.license,
        }
        optional.update(upstream=self.upstream, source=self.source)
        data.update((key, value) for key, value in optional.items() if value is not None)
        data["python-depends"] = list(self.python_depends)
        data["kernel-depends"] = [_kernel_dependency_dict(dep) for dep in self.kernel_depends]
        backend: dict[str, Any] = {"type": AGNOSTIC if self.backend_type is None else self.backend_type}
        if self.backend_archs is not None:
            backend["archs"] = list(self.backend_archs)
        data["backend"] = backend
        if self.arch_selection is not None:
            data["arch-selection"] = self.arch_selection
        if self.digest is not None:
            data["digest"] = self.digest.to_dict()
        if self.provenance is not None:
            data["provenance"] = self.provenance.to_dict()
        return data

    def to_json(self) -> str:
        """The text of ``metadata.json``: UTF-8 JSON, 2-space indentation, a trailing newline."""
        return json.dumps(self.to_dict(), indent=2) + "\n"

    @classmethod
    def from_json(cls, data: bytes | str, file: Path, *, default_name: str | None = None) -> Metadata:
        """Parse the text (or bytes) of ``file`` (which names it in errors); :func:`read_metadata` reads the file.

        A signature check parses exactly the bytes it verified with this, never a second read of the file.
        ``default_name`` stands in for a missing ``name``. Raises ``ValueError`` naming the file, the field and
        the reason when it is not valid metadata.
        """
        return _parse(data.encode("utf-8") if isinstance(data, str) else data, file, default_name)


def _kernel_dependency_dict(dep: KernelDependency) -> dict[str, Any]:
    """One ``kernel-depends`` entry: ``repo-id``, then ``version`` or ``revision``."""
    if dep.version is not None:
        return {"repo-id": dep.repo_id, "version": dep.version}
    return {"repo-id": dep.repo_id, "revision": dep.revision}


class _Fields:
    """Typed access to one JSON object, raising ``ValueError`` that names the file and the key path."""

    def __init__(self, path: Path, data: Mapping[str, Any], prefix: str = "") -> None:
        self.path = path
        self.data = data
        self.prefix = prefix

    def error(self, key: str, reason: str) -> ValueError:
        return ValueError(f"{self.path}: invalid field '{self.prefix}{key}': {reason}")

    def missing(self, key: str) -> ValueError:
        return ValueError(f"{self.path}: missing required field '{self.prefix}{key}'")

    def get(self, key: str, kind: type, what: str, *, required: bool = False) -> Any:
        if key not in self.data:
            if required:
                raise self.missing(key)
            return None
        value = self.data[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(key, f"expected {what}, got {json.dumps(value)}")
        return value

    def string(self, key: str, *, required: bool = False) -> str | None:
        value: str | None = self.get(key, str, "a string", required=required)
        return value

    def strings(self, key: str, *, required: bool = False) -> tuple[str, ...] | None:
        values = self.get(key, list, "a list of strings", required=required)
        if values is None:
            return None
        for index, item in enumerate(values):
            if not isinstance(item, str):
                raise self.error(f"{key}[{index}]", f"expected a string, got {json.dumps(item)}")
        return tuple(values)

    def table(self, key: str, *, required: bool = False) -> _Fields | None:
        value = self.get(key, dict, "an object", required=required)
        if value is None:
            return None
        return _Fields(self.path, value, f"{self.prefix}{key}.")


def _parse_kernel_depends(fields: _Fields) -> tuple[KernelDependency, ...]:
    entries = fields.get("kernel-depends", list, "a list of objects")
    if entries is None:
        return ()
    result = []
    for index, entry in enumerate(entries):
        key = f"kernel-depends[{index}]"
        if not isinstance(entry, dict):
            raise fields.error(key, f"expected an object, got {json.dumps(entry)}")
        item = _Fields(fields.path, entry, f"{fields.prefix}{key}.")
        repo_id = item.string("repo-id", required=True)
        version: int | None = item.get("version", int, "an integer")
        revision = item.string("revision")
        if (version is None) == (revision is None):
            raise fields.error(key, "expected exactly one of 'version' and 'revision'")
        problem = repo_id_problem(repo_id) or (None if revision is None else revision_problem(revision))
        if problem is not None:
            raise fields.error(key, problem)
        assert repo_id is not None
        result.append(KernelDependency(repo_id, version, revision))
    return tuple(result)


def _digest_path_problem(relpath: str) -> str | None:
    """Why a ``digest.files`` key is not a plain relative path inside the variant, or ``None``.

    Keys are ``/``-separated paths relative to the variant directory. Anything else (absolute, ``..``, empty or
    ``.`` components, backslashes, control characters) could only point outside it or at nothing: such metadata
    is refused outright rather than skipped like a hidden file.
    """
    if not relpath:
        return "an empty path"
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in relpath):
        return "a path with a control character"
    if "\\" in relpath:
        return "a path with a backslash (keys are '/'-separated)"
    if relpath.startswith("/") or (len(relpath) > 1 and relpath[1] == ":"):
        return "an absolute path"
    parts = relpath.split("/")
    if ".." in parts:
        return "a path that leaves the variant directory ('..')"
    if any(part in ("", ".") for part in parts):
        return "a path with an empty or '.' component"
    return None


def _parse_digest(fields: _Fields) -> Digest | None:
    table = fields.table("digest")
    if table is None:
        return None
    algorithm = table.string("algorithm", required=True)
    files = table.get("files", dict, "an object mapping relative paths to base64 digests", required=True)
    for relpath, value in files.items():
        problem = _digest_path_problem(relpath)
        if problem is not None:
            raise table.error(
                f"files.{json.dumps(relpath)}",
                f"{problem}; a digest lists only files inside its own variant directory, so this metadata.json is "
                f"refused",
            )
        if not isinstance(value, str):
            raise table.error(f"files.{relpath}", f"expected a base64 string, got {json.dumps(value)}")
    assert algorithm is not None
    return Digest(algorithm, MappingProxyType(dict(files)))


def _parse_provenance_entry(table: _Fields) -> ProvenanceEntry:
    key = "commit" if "commit" in table.data else "sha"  # legacy alias
    commit = table.string(key)
    if commit is not None and not is_git_object_id(commit):
        raise table.error(
            key, f"expected a full git commit id (40 or 64 hexadecimal digits), got {json.dumps(commit)}"
        )
    dirty: bool | None = table.get("dirty", bool, "true or false")
    return ProvenanceEntry(version=table.string("version"), commit=commit, dirty=dirty)


def _parse_provenance(fields: _Fields) -> Provenance | None:
    table = fields.table("provenance")
    if table is None:
        return None
    kernel = table.table("kernel")
    builder = table.table("kernel-builder")
    torch = table.table("torch")
    if kernel is None and builder is None and any(key in table.data for key in ("commit", "sha", "dirty")):
        return Provenance(kernel=_parse_provenance_entry(table))
    return Provenance(
        kernel=None if kernel is None else _parse_provenance_entry(kernel),
        kernel_builder=None if builder is None else _parse_provenance_entry(builder),
        torch=None if torch is None else _parse_provenance_entry(torch),
    )


def _parse_kernels_minver(fields: _Fields) -> tuple[int, int, int] | None:
    """``kernels-minver``: ``"X.Y.Z"``, three non-negative integers, as upstream's parser demands (``null``, as
    there, is the same as no key)."""
    if fields.data.get("kernels-minver") is None:
        return None
    text = fields.string("kernels-minver")
    assert text is not None
    parts = text.split(".")
    if len(parts) != 3 or not all(part.isascii() and part.isdigit() for part in parts):
        raise fields.error(
            "kernels-minver", f"expected a version X.Y.Z of three numbers, got {json.dumps(text)}"
        )
    major, minor, patch = (int(part) for part in parts)
    return (major, minor, patch)


def read_metadata(path: str | os.PathLike[str], *, default_name: str | None = None) -> Metadata:
    """Parse a ``metadata.json`` file (or the one inside the directory ``path``).

    ``default_name`` stands in for a missing ``name`` (a legacy nested build names its kernel by its package
    directory). Raises ``FileNotFoundError`` naming the path when the file is missing and ``ValueError``
    naming the path, the field and the reason when it is not valid.
    """
    file = Path(path)
    if file.is_dir():
        file = file / METADATA_FILE
    try:
        data = read_bounded(file, METADATA_LIMIT)
    except FileNotFoundError:
        raise FileNotFoundError(f"{file}: {METADATA_FILE} not found") from None
    except UnsafeFileError as error:
        raise ValueError(f"{file}: cannot be read: {error}") from None
    return Metadata.from_json(data, file, default_name=default_name)


def _parse(data: bytes, file: Path, default_name: str | None) -> Metadata:
    """:meth:`Metadata.from_json`."""
    if len(data) > METADATA_LIMIT:
        raise ValueError(f"{file}: cannot be read: it is larger than {METADATA_LIMIT} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{file}: not valid UTF-8 ({error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{file}: not valid JSON: {error}") from None
    except RecursionError:
        raise ValueError(f"{file}: not valid metadata: nested too deeply") from None
    if not isinstance(data, dict):  # a ValueError like every other invalid metadata (docs/loading.md)
        raise ValueError(  # noqa: TRY004
            f"{file}: expected a JSON object at the top level, got {type(data).__name__}"
        )
    fields = _Fields(file, data)

    name = fields.string("name", required=default_name is None) or default_name
    assert name is not None
    if not is_kernel_name(name):
        raise fields.error(
            "name",
            f"{name!r} is not a kernel name (lower-case letters, digits and '-', starting with a letter, "
            f"not ending with '-')",
        )
    kernel_id = fields.string("id")
    if kernel_id is not None and (not kernel_id.isidentifier() or keyword.iskeyword(kernel_id)):
        raise fields.error("id", f"{kernel_id!r} is not a Python identifier")
    python_depends = fields.strings("python-depends", required=True)
    assert python_depends is not None
    backend = fields.table("backend", required=True)
    assert backend is not None
    backend_type = backend.string("type", required=True)
    assert backend_type is not None
    archs: tuple[str, ...] | None = None
    if backend_type == AGNOSTIC:
        backend_type = None  # as upstream: a backend-agnostic build's other backend fields are not read
    elif (
        backends.find(backend_type) is not None
    ):  # an unknown backend's neither (nothing here can judge them)
        archs = backend.strings("archs")
    layout = "files" if "build-layout" not in fields.data else fields.string("build-layout")
    if layout not in BUILD_LAYOUTS:
        raise fields.error(
            "build-layout", f"expected one of {', '.join(BUILD_LAYOUTS)}, got {json.dumps(layout)}"
        )
    assert layout is not None
    version: int | None = fields.get("version", int, "an integer")
    return Metadata(
        name=name,
        id=kernel_id,
        python_depends=python_depends,
        backend_type=backend_type,
        version=version,
        license=fields.string("license"),
        upstream=fields.string("upstream"),
        source=fields.string("source"),
        kernel_depends=_parse_kernel_depends(fields),
        backend_archs=archs,
        digest=_parse_digest(fields),
        provenance=_parse_provenance(fields),
        arch_selection=fields.string("arch-selection"),
        kernels_minver=_parse_kernels_minver(fields),
        build_layout=layout,
    )


# --- digest -------------------------------------------------------------------------------------------------


def _scan(variant_dir: Path) -> TreeScan:
    """The files that count for the digest: the variant files (docs/layout.md) but the top-level metadata files;
    directory symlinks and special files are reported, not entered."""
    scan = scan_variant(variant_dir)
    for name in _UNDIGESTED_TOP_LEVEL:
        scan.files.pop(name, None)
    return scan


def _refused(scan: TreeScan) -> dict[str, str]:
    """Entries a variant directory must not have, by path: directory links, special files, unlistable dirs."""
    refused = {relpath: "a symlink to a directory (not followed)" for relpath in scan.directory_links}
    refused.update(scan.special)
    refused.update({relpath: f"unreadable directory ({why})" for relpath, why in scan.unreadable.items()})
    return refused


def _hash_file(path: Path, algorithm: str) -> str:
    return digest_value(file_hashes(path, algorithm)[algorithm])


def digest_files(variant_dir: str | os.PathLike[str], algorithm: str = "sha256") -> dict[str, str]:
    """The ``digest.files`` mapping of a variant directory, sorted by path.

    Covers every variant file (:func:`~kernel_builder.formats.files.is_variant_file`: no bytecode, no hidden
    path; a symlink to a file counts as that file) except the top-level ``metadata.json`` and
    ``metadata.json.sigstore``. A symlink to a
    directory or a special file (FIFO, device) raises ``ValueError``: a variant directory holds neither. Keys use
    ``/``; values are the standard padded base64 of the raw digest. ``algorithm`` is ``sha256`` or ``sha512``.
    """
    if algorithm not in DIGEST_ALGORITHMS:
        raise ValueError(
            f"unsupported digest algorithm {algorithm!r} (expected {' or '.join(DIGEST_ALGORITHMS)})"
        )
    scan = _scan(Path(variant_dir))
    refused = _refused(scan)
    if refused:
        listed = ", ".join(f"{relpath} ({why})" for relpath, why in sorted(refused.items()))
        raise ValueError(f"{variant_dir}: cannot digest {listed}")
    return {relpath: _hash_file(scan.files[relpath], algorithm) for relpath in sorted(scan.files)}


_verified: set[tuple[str, str, frozenset[tuple[str, str]]]] = set()
_verified_lock = threading.Lock()


def digest_problems(
    digest: Digest,
    present: Mapping[str, Path],
    *,
    refused: Mapping[str, str] | None = None,
    where: str = "in the directory",
) -> list[str]:
    """``present`` (relative path → file) against ``digest``: the problems, one line each, empty when it matches.

    ``unsupported algorithm`` first, then per path in order ``missing`` (listed, absent), ``unknown`` (present,
    not listed), ``mismatch``, or why a ``refused`` entry must not be there at all. Only variant files count
    (docs/layout.md): an entry the rule leaves out (a hidden file an older build listed) is not checked.
    ``where`` says where the files are (``in the directory``, ``uploaded``).
    """
    supported = digest.algorithm in DIGEST_ALGORITHMS
    problems: list[str] = []
    if not supported:
        problems.append(
            f"unsupported algorithm {digest.algorithm!r} (expected {' or '.join(DIGEST_ALGORITHMS)})"
        )
    refused = refused or {}
    listed = {relpath: value for relpath, value in digest.files.items() if is_variant_file(relpath)}
    for relpath in sorted(set(present) | set(listed) | set(refused)):
        if relpath in refused:
            problems.append(f"{relpath}: {refused[relpath]}")
        elif relpath not in present:
            problems.append(f"{relpath}: missing (listed in the digest, not {where})")
        elif relpath not in listed:
            problems.append(f"{relpath}: unknown ({where}, not listed in the digest)")
        elif supported:
            try:
                actual = _hash_file(present[relpath], digest.algorithm)
            except OSError as error:
                problems.append(f"{relpath}: unreadable ({error.strerror or error})")
                continue
            if actual != listed[relpath]:
                problems.append(
                    f"{relpath}: mismatch ({digest.algorithm} is {actual}, digest lists {listed[relpath]})"
                )
    return problems


def verify_digest(variant_dir: str | os.PathLike[str], metadata: Metadata) -> list[str]:
    """Check a variant directory against its metadata's ``digest``; return the problems, empty when it passes.

    The problems are :func:`digest_problems`'s, with what is wrong with an entry that must not be there at all
    (a symlink to a directory, which is never entered; a FIFO or device, which is never opened). Files that are
    not variant files (bytecode, hidden paths) are not looked at. Without a ``digest`` nothing is checked. A
    pass is remembered for the process per real path (and digest), so later loads of the same directory are
    free.
    """
    digest = metadata.digest
    if digest is None:
        logger.debug("%s: metadata.json has no digest; files not verified", variant_dir)
        return []
    key = (os.path.realpath(variant_dir), digest.algorithm, frozenset(digest.files.items()))
    with _verified_lock:
        if key in _verified:
            return []
    scan = _scan(Path(variant_dir))
    problems = digest_problems(digest, scan.files, refused=_refused(scan))
    if not problems:
        with _verified_lock:
            _verified.add(key)
    return problems


#: The oldest ``kernels`` release that loads the current build layout (what upstream's builder writes for every
#: build), and the first that resolves ``kernel-depends``; every feature's release is in ``loader_features``.
KERNELS_VERSION_BASELINE = LoaderFeature.LAYOUT.first_release
KERNELS_VERSION_KERNEL_DEPENDS = LoaderFeature.KERNEL_DEPENDS.first_release


def required_kernels_version(
    kernel_depends: tuple[KernelDependency, ...], variant: Variant | None = None
) -> tuple[int, int, int]:
    """``kernels-minver`` for a build: the oldest ``kernels`` loader that has every feature the build relies on
    (``variant``'s name format, its kernel dependencies: :func:`~kernel_builder.formats.loader_features.
    features_of`), so an older one refuses it with a clear message rather than failing inside the kernel's
    import."""
    return kernels_minver(features_of(variant, kernel_depends))
