"""Importing a variant directory as a Python package, and the checks that come right before (docs/loading.md).

A kernel is imported under its unique ``metadata.id`` (never its plain name), so it cannot shadow an installed
package, its relative imports resolve to its own files, and two builds of one kernel load side by side. Every
load goes through :func:`load_variant` under one process-wide re-entrant lock and is recorded in a registry
that :func:`get_loaded_kernels` copies; the ``kernels`` package, if the process uses it too, gets the same
module for the same build (:mod:`kernel_builder.loader.share`). :func:`check_python_dependencies`
(docs/loading.md) and :func:`check_digest` (docs/loading.md) are shared by local, Hub and locked loads, which call them in their own order.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import re
import sys
import threading
import warnings
import zipfile
import zipimport
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import CodeType, ModuleType

import kernel_builder.backends as backends
from kernel_builder.common.env import env_flag
from kernel_builder.formats.dependencies import (
    PYTHON_DEPENDENCIES,
    PythonDependency,
    describe_packages,
    pip_install,
)
from kernel_builder.formats.files import skipped_directory
from kernel_builder.formats.identifiers import Oid
from kernel_builder.formats.metadata import METADATA_FILE, Metadata, read_metadata, verify_digest

if sys.version_info >= (3, 11):
    from importlib.resources.abc import TraversableResources
else:  # pragma: no cover - Python 3.10
    from importlib.abc import TraversableResources
from kernel_builder.loader.dependency_context import providing
from kernel_builder.loader.errors import KernelIntegrityError, MissingPythonDependencyError
from kernel_builder.loader.minver import check_kernels_minver
from kernel_builder.loader.share import share_with_kernels

__all__ = [
    "LoadedKernel",
    "RepoInfo",
    "check_digest",
    "check_python_dependencies",
    "get_loaded_kernels",
    "load_variant",
    "read_variant_metadata",
    "warn",
]

logger = logging.getLogger("kernel_builder")

#: ``signatures.REQUIRE_SIGNATURE``, named here so that a load with the policy unset does not import that module.
SIGNATURE_SWITCH = "KERNEL_BUILDER_REQUIRE_SIGNATURE"
#: ``signatures.BUNDLE_FILE``, for the same reason.
_BUNDLE = METADATA_FILE + ".sigstore"

_INIT = "__init__.py"
_PACKAGE = __name__.partition(".")[0]
_ID_SUFFIX_RE = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True, init=False)
class RepoInfo:
    """The Hub repository a kernel was downloaded from (after redirects) and the commit loaded: ``revision`` is
    an :class:`~kernel_builder.formats.identifiers.Oid` (a full git object id, and a ``str``), as in the
    ``kernels`` loader; a plain string is converted, and anything but a full id is a ``ValueError``."""

    repo_id: str
    revision: Oid

    def __init__(self, repo_id: str, revision: str) -> None:
        object.__setattr__(self, "repo_id", repo_id)
        object.__setattr__(self, "revision", revision if isinstance(revision, Oid) else Oid(revision))


@dataclass(frozen=True)
class LoadedKernel:
    """One imported kernel module; ``repo_info`` is ``None`` for local loads."""

    metadata: Metadata
    module: ModuleType
    repo_info: RepoInfo | None = None


_lock = threading.RLock()
_loaded: list[LoadedKernel] = []
_by_path: dict[str, LoadedKernel] = {}  # real path of a variant directory (or an alias of it) → its kernel
_origin: dict[str, str] = {}  # module id → real path it was first imported from


def get_loaded_kernels() -> list[LoadedKernel]:
    """Every kernel imported in this process, in load order, one entry per distinct module (a fresh list)."""
    with _lock:
        return list(_loaded)


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn`` attributed to the first frame outside ``kernel_builder`` (the user's call)."""
    frame = sys._getframe(1)
    level = 2
    while frame.f_back is not None and str(frame.f_globals.get("__name__", "")).partition(".")[0] == _PACKAGE:
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


# --- checks before import -----------------------------------------------------------------------------------


def check_python_dependencies(metadata: Metadata, backend: str, where: str | os.PathLike[str]) -> None:
    """Every ``python-depends`` entry must be known and, if it applies to ``backend``, importable (docs/loading.md).

    ``torch`` always passes; an entry of another backend's table is not needed here and is skipped. Raises
    ``ValueError`` for an unknown entry and :class:`MissingPythonDependencyError` (an ``ImportError``) naming
    every missing package and the one ``pip install`` command for them all.
    """
    spec = backends.by_alias(backend)
    backend = backend if spec is None else spec.name
    missing: list[PythonDependency] = []
    for name in metadata.python_depends:
        if name == "torch":
            continue
        dependency = PYTHON_DEPENDENCIES.get(name)
        if dependency is None:
            known = ", ".join(["torch", *PYTHON_DEPENDENCIES])
            raise ValueError(
                f"kernel {metadata.name} ({where}) depends on unknown Python package {name!r}; "
                f"known dependencies: {known}"
            )
        if dependency.level not in ("general", backend):
            logger.debug(
                "kernel %s: %s applies to %s only; not checked", metadata.name, name, dependency.level
            )
            continue
        if dependency.import_name is None or _importable(dependency.import_name):
            continue
        missing.append(dependency)
    if missing:
        verb, them = ("is", "it") if len(missing) == 1 else ("are", "them")
        raise MissingPythonDependencyError(
            f"kernel {metadata.name} ({where}) needs {describe_packages(missing)}, which {verb} not installed; "
            f"install {them} with: {pip_install(missing)}",
            missing,
        )


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # ValueError: in sys.modules without a __spec__
        return module in sys.modules


def check_digest(
    variant_dir: str | os.PathLike[str],
    metadata: Metadata,
    verify: bool | None,
    *,
    remedy: str | None = None,
) -> None:
    """Verify the variant directory against its digest (docs/loading.md) unless ``verify`` (or the env var) turns it off.

    ``verify=None`` follows ``KERNEL_BUILDER_VERIFY_DIGEST``. ``remedy`` says what to delete or rebuild (for a
    download, the cache folder); it defaults to rebuilding the directory. Raises :class:`KernelIntegrityError`
    listing every problem.
    """
    if verify is None:
        verify = env_flag("KERNEL_BUILDER_VERIFY_DIGEST", default=True)
    if not verify:
        logger.debug("%s: digest verification disabled", variant_dir)
        return
    problems = verify_digest(variant_dir, metadata)
    if not problems:
        return
    fix = remedy or f"rebuild or restore {variant_dir}"
    raise KernelIntegrityError(
        "\n".join(
            [
                f"the files of {variant_dir} do not match the digest in its {METADATA_FILE}:",
                *(f"  {problem}" for problem in problems),
                (
                    f"To fix it, {fix}. To load it anyway, pass verify_digest=False or set "
                    f"KERNEL_BUILDER_VERIFY_DIGEST=0."
                ),
            ]
        )
    )


# --- import -------------------------------------------------------------------------------------------------


def read_variant_metadata(variant_dir: str | os.PathLike[str]) -> Metadata:
    """Read a variant's ``metadata.json``; a legacy nested build without ``name`` takes its package's."""
    directory = Path(variant_dir)
    default_name = None
    if not (directory / _INIT).is_file():
        packages = sorted(
            entry.name
            for entry in directory.iterdir()
            if not skipped_directory(entry.name) and (entry / _INIT).is_file()
        )
        if len(packages) == 1:
            default_name = packages[0].replace("_", "-")
    return read_metadata(directory / METADATA_FILE, default_name=default_name)


def _find_package(directory: Path, metadata: Metadata) -> Path:
    """The package's ``__init__.py``: flat layout first, then the legacy ``<python_name>/`` subdirectory."""
    flat = directory / _INIT
    nested = directory / metadata.python_name / _INIT
    for init in (flat, nested):
        if init.is_file():
            return init
    raise FileNotFoundError(
        f"{directory}: no package __init__.py for kernel {metadata.name}; tried {flat} (flat layout) and "
        f"{nested} (legacy nested layout)"
    )


def _foreign_metadata(module: ModuleType) -> Metadata | None:
    """The metadata of a kernel module another loader imported, read from its variant directory."""
    file = getattr(module, "__file__", None)
    if not file:
        return None
    package = Path(file).parent
    for directory in (package, package.parent):
        try:
            return read_metadata(directory / METADATA_FILE)
        except (OSError, ValueError):
            continue
    return None


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles a kernel's ``.py`` files from their source on every import; never reads or writes bytecode.

    The digest covers sources, not ``__pycache__``: a ``.pyc`` beside them (stale, or planted in a shared
    cache) would run code nobody verified, and Python prefers it to the source. So it is never looked at.
    """

    def get_code(self, fullname: str) -> CodeType:
        path = self.get_filename(fullname)
        code: CodeType = self.source_to_code(self.get_data(path), path)
        return code


_LOADER_DETAILS: list[tuple[type, list[str]]] = [
    (_SourceOnlyLoader, importlib.machinery.SOURCE_SUFFIXES),
    (importlib.machinery.ExtensionFileLoader, importlib.machinery.EXTENSION_SUFFIXES),
]


class _KernelFinder:
    """Finds the submodules of imported kernels (``<id>.<name>``) with :class:`_SourceOnlyLoader`.

    First on ``sys.meta_path``; it answers only for names under a kernel id, so that no other finder (with
    its bytecode-only loader) is asked about them. A name it cannot find is not found at all.
    """

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        top, dot, _ = fullname.partition(".")
        if not dot or top not in self.ids:
            return None
        for entry in path or ():
            if os.path.isdir(entry):
                spec = importlib.machinery.FileFinder(entry, *_LOADER_DETAILS).find_spec(fullname, target)
            else:
                spec = _zip_find_spec(entry, fullname, target)
            if spec is not None:
                return spec
        raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)

    def invalidate_caches(self) -> None:
        pass


_finder = _KernelFinder()


def _zip_find_spec(
    entry: str, fullname: str, target: ModuleType | None
) -> importlib.machinery.ModuleSpec | None:
    """A submodule inside a ``zip`` build's archive (``<id>.zip`` or a folder in it), found by ``zipimport``: the
    archive is one file of the digest, so what it holds was verified with it."""
    try:
        importer = zipimport.zipimporter(entry)
    except zipimport.ZipImportError:
        return None
    return importer.find_spec(fullname, target)


class _ZipResources(TraversableResources):
    """``importlib.resources`` for a ``zip`` build's package: the files of its archive."""

    def __init__(self, archive: Path) -> None:
        self._archive = archive

    def files(self) -> zipfile.Path:
        return zipfile.Path(self._archive)


class _ZipPackageLoader(importlib.abc.Loader):
    """Runs the ``__init__`` of a ``zip`` build's archive (``build-layout: "zip"``, kernels 0.19) as the package,
    with the archive's files as its resources."""

    def __init__(self, archive: Path) -> None:
        self._archive = archive
        self._importer = zipimport.zipimporter(str(archive))

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        code = self._importer.get_code("__init__")
        exec(code, module.__dict__)  # noqa: S102 - importing the verified kernel is the point

    def get_source(self, fullname: str) -> str | None:
        return self._importer.get_source("__init__")

    def get_data(self, path: str) -> bytes:
        return self._importer.get_data(path)

    def get_resource_reader(self, fullname: str) -> _ZipResources:
        return _ZipResources(self._archive)


def _zip_spec(module_id: str, directory: Path) -> importlib.machinery.ModuleSpec:
    """The package of a ``zip`` build: ``<id>.zip`` in the variant directory, with submodules looked for in the
    directory first (compiled extensions beside the archive), then in the archive, as upstream does."""
    archive = directory / f"{module_id}.zip"
    if not archive.is_file():
        raise FileNotFoundError(
            f'{directory}: no package archive {archive.name} for a build-layout "zip" build (its id is {module_id})'
        )
    try:
        zipimport.zipimporter(str(archive)).find_spec("__init__")
    except zipimport.ZipImportError as error:
        raise ImportError(
            f"{archive}: not a zip archive Python can import from ({error})", name=module_id
        ) from None
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    _finder.ids.add(module_id)
    spec = importlib.machinery.ModuleSpec(
        module_id, _ZipPackageLoader(archive), origin=f"{archive}/__init__.py", is_package=True
    )
    spec.submodule_search_locations = [str(directory), str(archive)]
    spec.has_location = True
    return spec


def _source_only_spec(module_id: str, init: Path) -> importlib.machinery.ModuleSpec:
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    _finder.ids.add(module_id)
    loader = _SourceOnlyLoader(module_id, str(init))
    spec = importlib.util.spec_from_file_location(
        module_id, init, loader=loader, submodule_search_locations=[str(init.parent)]
    )
    assert spec is not None  # a location and a loader always give a spec
    return spec


@functools.cache
def _sigstore_installed() -> bool:
    try:
        return importlib.util.find_spec("sigstore") is not None
    except (ImportError, ValueError):
        return False


def _check_signature(directory: Path, metadata: Metadata, repo_info: RepoInfo) -> None:
    """Every Hub load (docs/security.md): with ``KERNEL_BUILDER_REQUIRE_SIGNATURE`` on, a variant whose signature
    does not verify is refused; otherwise, when ``sigstore`` is installed, its signature is checked and a
    failure (an unsigned variant included) is logged as a warning, as upstream's loader does since 0.18. Sigstore's
    modules are imported only for a variant that carries a bundle, or when the policy is asked for."""
    where = _where(directory, repo_info)
    if os.environ.get(SIGNATURE_SWITCH):
        from kernel_builder.loader.signatures import require_signature, required

        if required():
            require_signature(directory, metadata, where)
            return
    if not _sigstore_installed():
        return
    if not (directory / _BUNDLE).is_file():
        logger.warning("%s: not signed (no %s), so its integrity cannot be verified", where, _BUNDLE)
        return
    from kernel_builder.loader.signatures import check_signature

    check_signature(directory, metadata, where, repo_info.repo_id, repo_info.revision)


def _where(directory: Path, repo_info: RepoInfo | None) -> str:
    if repo_info is None:
        return str(directory)
    return f"{repo_info.repo_id} at {repo_info.revision}, build/{directory.name}"


def _check_module_id(module_id: str, metadata: Metadata, where: str) -> None:
    """The id must be this kernel's (``_<python_name>_...``) and, if not imported yet, no importable module's."""
    prefix = f"_{metadata.python_name}_"
    if not (module_id.startswith(prefix) and _ID_SUFFIX_RE.fullmatch(module_id[len(prefix) :])):
        raise ImportError(
            f"{where}: {METADATA_FILE} id {module_id!r} is not this kernel's module name (expected {prefix!r} "
            f"followed by letters, digits and '_'); refusing to import it",
            name=module_id,
        )
    if module_id in sys.modules:
        return  # the same-build check below decides
    try:
        spec = importlib.util.find_spec(module_id)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        origin = spec.origin or next(iter(spec.submodule_search_locations or ()), "unknown location")
        raise ImportError(
            f"{where}: {METADATA_FILE} id {module_id!r} is the name of an importable module ({origin}); "
            f"importing the kernel under it would shadow that module, so it is refused",
            name=module_id,
        )


def _legacy_id(metadata: Metadata, real_path: str) -> str:
    return f"_{metadata.python_name}_{hashlib.sha256(os.fsencode(real_path)).hexdigest()[:10]}"


def _forget(module_id: str) -> None:
    prefix = module_id + "."
    for name in [name for name in sys.modules if name == module_id or name.startswith(prefix)]:
        del sys.modules[name]


def load_variant(
    variant_dir: str | os.PathLike[str],
    *,
    metadata: Metadata | None = None,
    repo_info: RepoInfo | None = None,
    dependencies: Mapping[str, ModuleType] | None = None,
) -> ModuleType:
    """Import a variant directory (docs/loading.md) and register it; a directory already loaded gives the same module.

    ``metadata`` saves re-reading ``metadata.json``. ``dependencies`` (repository id → loaded module) are the
    kernel's ``kernel-depends``, which its code gets from ``get_kernel_dep`` while it is imported. A Hub download
    (``repo_info`` given) first passes the opt-in signature policy
    (:func:`~kernel_builder.loader.signatures.require_signature`): this is the one place every Hub load
    (``get_kernel``, the locked loads, ``kernelize``) goes through. Raises ``FileNotFoundError`` / ``ValueError`` for missing
    or invalid metadata or package, ``ImportError`` when the id is taken by a different build, and re-raises
    what the package's ``__init__`` raises (after removing the id and its submodules from ``sys.modules``).
    """
    directory = Path(variant_dir)
    real_path = os.path.realpath(directory)
    with _lock:
        known = _by_path.get(real_path)
        if known is not None:
            return known.module
        metadata = _checked_metadata(directory, metadata, repo_info)
        init = None if metadata.build_layout == "zip" else _find_package(directory, metadata)
        metadata = _with_module_id(directory, real_path, metadata)
        assert metadata.id is not None
        _check_module_id(metadata.id, metadata, _where(directory, repo_info))
        existing = sys.modules.get(metadata.id)
        if existing is not None:
            return _reuse_loaded(existing, directory, real_path, metadata, repo_info)
        return _import_new(directory, real_path, init, metadata, repo_info, dependencies)


def _checked_metadata(directory: Path, metadata: Metadata | None, repo_info: RepoInfo | None) -> Metadata:
    """The variant's metadata once the checks that come before any import have passed: the loader is new
    enough, a Hub download's signature passes the policy, and a build from uncommitted sources is named."""
    if metadata is None:
        metadata = read_variant_metadata(directory)
    check_kernels_minver(metadata, directory.name, _where(directory, repo_info))
    if repo_info is not None:
        _check_signature(directory, metadata, repo_info)
    dirty = metadata.provenance.dirty_parts if metadata.provenance is not None else ()
    if dirty:
        keys = " and ".join(f"provenance.{part}.dirty" for part in dirty)
        warn(
            f"kernel {metadata.name} at {directory} was built from uncommitted changes ({keys}); "
            f"its id does not identify its sources"
        )
    return metadata


def _with_module_id(directory: Path, real_path: str, metadata: Metadata) -> Metadata:
    """``metadata`` with the module id the variant is imported under: its own ``id``, or for a build by an older
    tool (no id) one derived from its name and path, with a warning. A zip build cannot do without one."""
    if metadata.id is not None:
        return metadata
    if metadata.build_layout == "zip":
        raise ValueError(
            f"{directory / METADATA_FILE}: a build-layout \"zip\" build needs an 'id' (its archive is <id>.zip)"
        )
    module_id = _legacy_id(metadata, real_path)
    warn(
        f"{directory / METADATA_FILE} has no 'id' (a build by an older tool); loading kernel "
        f"{metadata.name} as module {module_id!r}. Rebuild it to get a stable id."
    )
    return replace(metadata, id=module_id)


def _reuse_loaded(
    existing: ModuleType, directory: Path, real_path: str, metadata: Metadata, repo_info: RepoInfo | None
) -> ModuleType:
    """The module already in ``sys.modules`` under the variant's id, when it is the same build (same digest),
    whether this loader or another (the `kernels` package) imported it; otherwise ``ImportError``: two builds
    cannot share one op namespace."""
    module_id = metadata.id
    assert module_id is not None
    origin = _origin.get(module_id)
    owner = _by_path.get(origin) if origin is not None else None
    if owner is not None and owner.module is existing:
        if metadata.digest is not None and metadata.digest == owner.metadata.digest:
            _by_path[real_path] = owner
            logger.debug("%s: same build as %s (module %s); reusing it", directory, origin, module_id)
            return existing
        other = origin
    else:
        # Loaded by someone else (e.g. the `kernels` package): the same build if its variant directory
        # carries the same digest.
        other = getattr(existing, "__file__", None) or repr(existing)
        foreign = _foreign_metadata(existing)
        if metadata.digest is not None and foreign is not None and foreign.digest == metadata.digest:
            _record(LoadedKernel(metadata, existing, repo_info), real_path, first=False)
            logger.debug("%s: same build as the loaded module %s; reusing it", directory, module_id)
            return existing
    raise ImportError(
        f"cannot import {directory} as module {module_id!r}: {other} is already loaded under that id "
        f"and is not the same build (their digests differ). Two builds cannot share one op "
        f"namespace; restart the process to switch builds.",
        name=module_id,
        path=str(directory),
    )


def _import_new(
    directory: Path,
    real_path: str,
    init: Path | None,
    metadata: Metadata,
    repo_info: RepoInfo | None,
    dependencies: Mapping[str, ModuleType] | None,
) -> ModuleType:
    """Import the variant's package (``init``, its ``__init__.py``; ``None`` for a zip build's ``<id>.zip``) under
    its id with its kernel dependencies provided, and register it; on failure nothing of it stays in
    ``sys.modules``."""
    module_id = metadata.id
    assert module_id is not None
    spec = _zip_spec(module_id, directory) if init is None else _source_only_spec(module_id, init)
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_id] = module
    try:
        declared = [dependency.repo_id for dependency in metadata.kernel_depends]
        with providing(f"{metadata.name} ({_where(directory, repo_info)})", dependencies or {}, declared):
            spec.loader.exec_module(module)
    except BaseException as error:
        _forget(module_id)
        _finder.ids.discard(module_id)
        add_note = getattr(error, "add_note", None)  # Python 3.11+
        if add_note is not None:
            add_note(f"while importing kernel {metadata.name} from {directory} as module {module_id!r}")
        raise
    _record(LoadedKernel(metadata, module, repo_info), real_path, first=True)
    logger.debug("imported kernel %s from %s as module %s", metadata.name, directory, module_id)
    return module


def _record(kernel: LoadedKernel, real_path: str, *, first: bool) -> None:
    """Register a loaded kernel under its variant path (and, when this loader imported it first, as the origin
    of its id), and let the `kernels` package find it."""
    module_id = kernel.metadata.id
    assert module_id is not None
    _loaded.append(kernel)
    _by_path[real_path] = kernel
    if first:
        _origin[module_id] = real_path
    else:
        _origin.setdefault(module_id, real_path)
    share_with_kernels(_module_for_variant, _variant_for_id)


def _module_for_variant(variant_dir: Path) -> ModuleType | None:
    """The module this loader imported for the build in ``variant_dir``: the same id and digest (the same
    directory, or a copy), still in ``sys.modules`` under its id; ``None`` otherwise (and for a build without
    an id or a digest). What the ``kernels`` package gets instead of importing it again
    (:mod:`kernel_builder.loader.share`)."""
    try:
        metadata = read_variant_metadata(variant_dir)
    except (OSError, ValueError):
        return None
    if metadata.id is None or metadata.digest is None:
        return None
    with _lock:
        for kernel in _loaded:
            if (
                kernel.metadata.id == metadata.id
                and kernel.metadata.digest == metadata.digest
                and sys.modules.get(metadata.id) is kernel.module
            ):
                return kernel.module
    return None


def _variant_for_id(module_id: str) -> Path | None:
    """The variant directory this loader imported the module ``module_id`` from, while that module is still the
    one in ``sys.modules``; ``None`` otherwise. What the ``kernels`` package (0.18 and later) compares a build it
    is asked to load with, instead of failing on a module it did not import (:mod:`kernel_builder.loader.share`)."""
    with _lock:
        origin = _origin.get(module_id)
        owner = _by_path.get(origin) if origin is not None else None
        if owner is None or origin is None or sys.modules.get(module_id) is not owner.module:
            return None
        return Path(origin)
