"""The end of every load, written once (docs/loading.md, "The steps of a load"): the kernel's dependencies
resolved, then its variant fetched and verified, then the dependencies and the kernel imported.

The beginning belongs to the source the variant comes from, which gives a
:class:`~kernel_builder.loader.dependencies.Located` (the variant chosen and checked, its ``metadata.json``
read, nothing else fetched): the Hub (:func:`~kernel_builder.loader.hub_steps.choose_variant`: trust, resolve,
choose), a local build (:mod:`~kernel_builder.loader.local`), a lock (:mod:`~kernel_builder.loader.locked`).
The kernel's dependencies come from the same kind of sources, so a dependency loads exactly like a kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.metadata import METADATA_FILE, Metadata
from kernel_builder.loader.dependencies import Located, Source, resolve_dependencies
from kernel_builder.loader.errors import KernelIntegrityError
from kernel_builder.loader.importer import RepoInfo, load_variant

__all__ = ["install_located", "load_located", "run_load"]


def load_located(root: str, located: Located, sources: Sequence[Source]) -> ModuleType:
    """Dependencies → fetch → verify → import. ``root`` names the kernel in dependency chains."""
    return run_load(
        root, located.label, located.metadata.kernel_depends, located.fetch, located.repo_info, sources
    )


def run_load(
    root: str,
    label: str,
    depends: Sequence[KernelDependency],
    fetch: Callable[[], tuple[Path, Metadata]],
    repo_info: RepoInfo | None,
    sources: Sequence[Source],
) -> ModuleType:
    """:func:`load_located` for a variant whose ``kernel-depends`` are known apart from its metadata (a legacy
    locked variant without ``metadata.json`` depends on nothing). The verified metadata must list the same
    dependencies as were resolved."""
    tree = resolve_dependencies(root, tuple(depends), sources)
    variant_dir, metadata = fetch()
    if metadata.kernel_depends != tuple(depends):
        raise KernelIntegrityError(
            f"{label}: the verified {METADATA_FILE} lists other kernel-depends than the one read before; "
            f"refusing it"
        )
    return load_variant(variant_dir, metadata=metadata, repo_info=repo_info, dependencies=tree.load())


def install_located(root: str, located: Located, sources: Sequence[Source]) -> Path:
    """Dependencies → fetch → verify, and the dependencies fetched and verified too; nothing is imported.
    Returns the variant's directory."""
    tree = resolve_dependencies(root, located.metadata.kernel_depends, sources)
    variant_dir, _ = located.fetch()
    tree.install()
    return variant_dir
