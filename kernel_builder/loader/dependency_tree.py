"""``kernel-builder info --dep-tree``: the kernel dependencies of the variant that loads here, resolved as a load
resolves them, shown as a tree (as upstream's ``kernels info --dep-tree``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from kernel_builder.errors import UsageError
from kernel_builder.loader.describe import FAILURES, KernelInfo, as_command_error

__all__ = ["render_tree", "with_dependency_tree"]


def with_dependency_tree(info: KernelInfo, backend: str | None = None) -> KernelInfo:
    """``info`` with the whole dependency tree of the variant that loads here, each dependency found, judged and
    its ``metadata.json`` read exactly as a load would (``LOCAL_KERNELS``, then the Hub), with no trust gate:
    nothing is imported. Raises :class:`~kernel_builder.errors.UsageError` when no variant loads here, and what
    resolving a dependency raises (a cycle, a missing repository or version)."""
    from kernel_builder.loader.dependencies import resolve_dependencies
    from kernel_builder.loader.local import dependency_sources

    if info.loads is None or info.metadata is None:
        raise UsageError(
            f"{info.repo_id or info.path}: no variant loads here, so it has no dependency tree here; "
            "`info` without --dep-tree lists why each variant is refused"
        )
    root = info.repo_id or info.path or info.metadata.name
    try:
        tree = resolve_dependencies(
            root, info.metadata.kernel_depends, dependency_sources(backend, trust_remote_code=True)
        )
    except FAILURES as error:
        raise as_command_error(error) from None

    def nested(nodes: Sequence[Any]) -> dict[str, Any]:
        ordered = sorted(nodes, key=lambda node: str(node.dependency.repo_id))
        return {node.dependency.repo_id: nested(node.children) for node in ordered}

    return replace(info, dependency_tree=nested(tree.nodes))


def render_tree(root: str, tree: dict[str, Any]) -> list[str]:
    """``root`` and its dependencies below it, one per line, drawn with ``|--``, a backquote and ``--`` (the
    last child) and ``|``."""
    lines = [root]

    def draw(branch: dict[str, Any], prefix: str) -> None:
        for index, (repo_id, children) in enumerate(branch.items()):
            last = index == len(branch) - 1
            lines.append(f"{prefix}{'`-- ' if last else '|-- '}{repo_id}")
            draw(children, prefix + ("    " if last else "|   "))

    draw(tree, "")
    return lines
