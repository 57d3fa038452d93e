"""The one load sequence (docs/loading.md, "The steps of a load"): a chosen variant checked, the kernel's
dependencies resolved, then its variant fetched and verified, then the dependencies and the kernel imported.

The beginning belongs to the source the variant comes from, which chooses it with the one chooser
(:func:`~kernel_builder.loader.choose.choose_variant`) and reads its ``metadata.json``: the Hub
(:mod:`~kernel_builder.loader.hub_steps`: trust, resolve, choose), the Hub cache alone
(:mod:`~kernel_builder.loader.warm`), a local build (:mod:`~kernel_builder.loader.local`), a lock
(:mod:`~kernel_builder.loader.locked`). Each hands it to :func:`locate`, which runs the checks every load runs
before anything but that metadata is fetched (the metadata agrees with the variant's name, the loader is new
enough for it, its Python dependencies are installed) and gives a :class:`Located`. :func:`load_located` then
runs the rest and imports; :func:`install_located` (``install_kernel``) stops before the import. A kernel's
dependencies come from the same kinds of sources, so a dependency loads exactly like a kernel.

The dependencies are resolved by what the caller passes (:class:`DependencyResolver`:
:class:`kernel_builder.loader.dependencies.Sources`), so this module never imports
:mod:`~kernel_builder.loader.dependencies`: a warm ``get_kernel`` of a kernel without any never needs it
(docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import NamedTuple, Protocol

from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.metadata import METADATA_FILE, Metadata
from kernel_builder.formats.variants import parse_variant
from kernel_builder.loader.errors import KernelIntegrityError
from kernel_builder.loader.importer import RepoInfo, check_python_dependencies, load_variant
from kernel_builder.loader.minver import check_kernels_minver
from kernel_builder.loader.resolve import metadata_disagreement

__all__ = [
    "DependencyResolver",
    "Located",
    "ResolvedDependencies",
    "check_agreement",
    "install_located",
    "load_located",
    "locate",
    "run_load",
]


class Located(NamedTuple):  # not a dataclass: cheaper to define, and every load imports this module
    """A variant chosen for this environment and checked, not fetched yet.

    ``metadata`` was read before anything else was downloaded; ``fetch`` downloads the variant (a no-op for a
    local one), verifies its digest and returns its directory and the metadata read there. ``label`` names it in
    messages; ``repo_info`` is the Hub repository and commit it comes from (``None`` for a local build).
    """

    label: str
    metadata: Metadata
    fetch: Callable[[], tuple[Path, Metadata]]
    repo_info: RepoInfo | None = None


class ResolvedDependencies(Protocol):
    """A kernel's resolved dependency tree (:class:`kernel_builder.loader.dependencies.DependencyTree`)."""

    def install(self) -> None: ...
    def load(self) -> dict[str, ModuleType]: ...


class DependencyResolver(Protocol):
    """Where a load's kernel dependencies are found (:class:`kernel_builder.loader.dependencies.Sources`)."""

    def resolve(self, root: str, depends: tuple[KernelDependency, ...]) -> ResolvedDependencies: ...


def check_agreement(label: str, variant: str | None, metadata: Metadata) -> None:
    """Refuse a variant whose ``metadata.json`` contradicts its directory name ``variant``
    (:func:`~kernel_builder.loader.resolve.metadata_disagreement`); a directory not named like a variant (a
    local copy, ``None``) has nothing to compare."""
    if variant is None:
        return
    try:
        parse_variant(variant)
    except ValueError:
        return
    problem = metadata_disagreement(variant, metadata)
    if problem is not None:
        raise ValueError(f"{label}: {problem}; refusing a variant whose metadata disagrees with its name")


def locate(
    label: str,
    variant: str | None,
    metadata: Metadata,
    fetch: Callable[[], tuple[Path, Metadata]],
    *,
    backend: str,
    repo_info: RepoInfo | None = None,
    python_dependencies: bool = True,
    loader_version: bool = True,
) -> Located:
    """The checks of every load on a chosen variant, before anything but its metadata is fetched: the metadata
    agrees with the name ``variant``; ``kernels-minver`` is not newer than this loader (``loader_version``;
    ``install_kernel`` skips it: what it downloads may be for another loader); every ``python-depends`` entry of
    ``backend`` is installed (``python_dependencies``). Returns the variant as the sequence takes it."""
    check_agreement(label, variant, metadata)
    if loader_version:
        check_kernels_minver(metadata, variant or label, label)
    if python_dependencies:
        check_python_dependencies(metadata, backend, label)
    return Located(label, metadata, fetch, repo_info)


def load_located(root: str, located: Located, sources: DependencyResolver | None) -> ModuleType:
    """Dependencies → fetch → verify → import. ``root`` names the kernel in dependency chains; ``sources`` finds
    its dependencies (``None``: it has none)."""
    return run_load(
        root, located.label, located.metadata.kernel_depends, located.fetch, located.repo_info, sources
    )


def _dependencies(
    root: str, depends: Sequence[KernelDependency], sources: DependencyResolver | None
) -> ResolvedDependencies | None:
    if not depends:
        return None
    if sources is None:
        raise ValueError(f"{root}: it has kernel dependencies, but this load has nowhere to find them")
    return sources.resolve(root, tuple(depends))


def run_load(
    root: str,
    label: str,
    depends: Sequence[KernelDependency],
    fetch: Callable[[], tuple[Path, Metadata]],
    repo_info: RepoInfo | None,
    sources: DependencyResolver | None,
) -> ModuleType:
    """:func:`load_located` for a variant whose ``kernel-depends`` are known apart from its metadata (a legacy
    locked variant without ``metadata.json`` depends on nothing). The verified metadata must list the same
    dependencies as were resolved."""
    tree = _dependencies(root, depends, sources)
    variant_dir, metadata = _fetch(label, depends, fetch)
    modules = {} if tree is None else tree.load()
    return load_variant(variant_dir, metadata=metadata, repo_info=repo_info, dependencies=modules)


def install_located(root: str, located: Located, sources: DependencyResolver | None) -> Path:
    """Dependencies → fetch → verify, and the dependencies fetched and verified too; nothing is imported.
    Returns the variant's directory."""
    tree = _dependencies(root, located.metadata.kernel_depends, sources)
    variant_dir, _ = _fetch(located.label, located.metadata.kernel_depends, located.fetch)
    if tree is not None:
        tree.install()
    return variant_dir


def _fetch(
    label: str, depends: Sequence[KernelDependency], fetch: Callable[[], tuple[Path, Metadata]]
) -> tuple[Path, Metadata]:
    variant_dir, metadata = fetch()
    if metadata.kernel_depends != tuple(depends):
        raise KernelIntegrityError(
            f"{label}: the verified {METADATA_FILE} lists other kernel-depends than the one read before; "
            f"refusing it"
        )
    return variant_dir, metadata
