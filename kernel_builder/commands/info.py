"""``kernel-builder info``: a Hub kernel's variants and what this machine would load
(``kernel_builder.loader.describe``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, print_json_or_text

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers
    from kernel_builder.loader.describe import KernelInfo, VariantInfo


def add_revision(parser: argparse.ArgumentParser) -> None:
    """``--version N`` or ``--revision R`` (neither: the newest version branch, else ``main``)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--version", type=int, metavar="N", help="the major version (branch vN); default: the newest"
    )
    group.add_argument("--revision", metavar="R", help="a branch, tag or commit instead of a version")


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("info", help=COMMANDS["info"])
    parser.add_argument(
        "repo_id", metavar="REPO",
        help="Hub repository id (<org>/<name>), or a local kernel directory or its build/",
    )  # fmt: skip
    add_revision(parser)
    parser.add_argument("--backend", help="judge the variants for this backend instead of the detected one")
    parser.add_argument(
        "--verify", action="store_true",
        help="also verify each signed variant's metadata.json against its Sigstore bundle (needs sigstore)",
    )  # fmt: skip
    parser.add_argument(
        "--dep-tree", action="store_true",
        help="also resolve the kernel dependencies of the variant that loads here, recursively, and show them as a tree",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print the description as JSON")
    add_common(parser)
    parser.set_defaults(handler=run)


def _dependency(dep: object) -> str:
    repo_id, version, revision = (getattr(dep, key) for key in ("repo_id", "version", "revision"))
    return f"{repo_id} v{version}" if version is not None else f"{repo_id}@{revision}"


def _variant_lines(variant: VariantInfo) -> list[str]:
    verdict = {
        "preferred": "loads here",
        "compatible": "compatible (not preferred)",
        "rejected": f"not here: {variant.reason}",
    }[variant.verdict]
    digest = {True: "yes", False: "no", None: "-"}[variant.digest]
    signature = variant.signature + (f" ({variant.signature_detail})" if variant.signature_detail else "")
    depends = ", ".join(_dependency(dep) for dep in variant.kernel_depends) or "-"
    lines = [
        f"{variant.name}: {verdict}",
        f"  built by: kernel-builder {variant.builder_version}"
        if variant.builder_version
        else "  built by: -",
        f"  digest: {digest}",
        f"  signature: {signature}",
        f"  kernel dependencies: {depends}",
    ]
    if variant.metadata_problem:
        lines.append(f"  metadata: {variant.metadata_problem}")
    return lines


def render(info: KernelInfo) -> str:
    """The human-readable description: the kernel, the environment, then one block per variant."""
    ref = f" ({info.ref})" if info.ref else ""
    meta = info.metadata
    if info.path is not None:
        lines = [f"path: {info.path}"]
    else:
        lines = [f"repository: {info.repo_id}", f"revision: {info.sha}{ref}"]
    if meta is not None:
        lines += [
            f"name: {meta.name}",
            f"version: {meta.version if meta.version is not None else '-'}",
            f"license: {meta.license or '-'}",
            f"python dependencies: {', '.join(meta.python_depends) or '-'}",
        ]
    lines += [
        f"environment: {info.environment}",
        f"loads here: {info.loads or 'no variant for this machine'}",
    ]
    if info.dependency_tree is not None:
        from kernel_builder.loader.dependency_tree import render_tree

        root = info.repo_id or info.path or "-"
        lines += [
            "kernel dependencies:",
            *(render_tree(root, info.dependency_tree) if info.dependency_tree else ["-"]),
        ]
    lines.append("")
    if not info.variants:
        lines.append("no build variants")
    for variant in info.variants:
        lines += _variant_lines(variant)
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    import os

    from kernel_builder.errors import UsageError
    from kernel_builder.loader.describe import describe_kernel, describe_local
    from kernel_builder.loader.signatures import signers_from_env

    signers = signers_from_env() if args.verify else None
    if os.path.isdir(args.repo_id):  # a local build, as upstream's `kernels info PATH`
        if args.version is not None or args.revision is not None:
            raise UsageError(
                f"{args.repo_id} is a local directory: --version and --revision apply to Hub repos"
            )
        info = describe_local(args.repo_id, backend=args.backend, signers=signers)
    else:
        info = describe_kernel(
            args.repo_id, version=args.version, revision=args.revision, backend=args.backend, signers=signers
        )
    if args.dep_tree:
        from kernel_builder.loader.dependency_tree import with_dependency_tree

        info = with_dependency_tree(info, args.backend)
    print_json_or_text(args.json, info.to_json, lambda: render(info))
    return 0
