"""``kernel-builder check-config``: validate build.toml and print a summary (``kernel_builder.config.load_project``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, print_diagnostics
from kernel_builder.errors import UsageError

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers
    from kernel_builder.config.model import KernelProject


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("check-config", help=COMMANDS["check-config"])
    add_path(parser)
    parser.add_argument("--werror", action="store_true", help="treat warnings as errors")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.config import load_project

    result = load_project(args.path)
    print_diagnostics(result.diagnostics)
    if args.werror and result.warnings:
        raise UsageError("warnings treated as errors (--werror)")
    print(describe_project(result.project))
    return 0


def describe_project(project: KernelProject) -> str:
    """The summary ``check-config`` prints for a valid project: what it is, what it builds, each kernel."""
    from kernel_builder import backends
    from kernel_builder.backends.noarch import noarch_name
    from kernel_builder.config.model import Torch, TorchNoarch

    config = project.config
    general = config.general
    lines = [
        f"{project.display_path}: ok (edition 5{f', read from legacy v{project.form} form' if project.form < 5 else ''})",
        f"  name:      {general.name} (Python package {general.py_name})",
        f"  version:   {general.version}",
        f"  license:   {general.license}",
        f"  framework: {config.framework.kind}",
        f"  backends:  {', '.join(general.backends)}",
    ]
    if isinstance(config.framework, TorchNoarch) and config.framework.cuda_capabilities:
        lines.append(f"  cuda-capabilities: {', '.join(config.framework.cuda_capabilities)}")
    if isinstance(config.framework, Torch):
        noarch = config.noarch_backends()
        if noarch:
            lines.append(f"  pure-Python variants: {', '.join(noarch_name(b) for b in noarch)}")
    if config.kernels:
        lines.append("  kernels:")
        width = max(len(k.name) for k in config.kernels)
        for kernel in config.kernels:
            detail = ""
            gpu_arch = backends.get(kernel.backend).gpu_arch
            if gpu_arch == "capability":
                caps = kernel.cuda_capabilities
                detail = (
                    f"capabilities: {', '.join(caps)}"
                    if caps
                    else "capabilities: default list of each CUDA version"
                )
                if kernel.cuda_minver:
                    detail += f"; CUDA >= {kernel.cuda_minver}"
            elif gpu_arch == "gfx":
                archs = kernel.rocm_archs
                detail = f"archs: {', '.join(archs)}" if archs else "archs: all supported"
            built = "" if kernel.backend in general.backends else "  (not built: backend not in backends)"
            lines.append(f"    {kernel.name:<{width}}  {kernel.backend:<5}  {detail}{built}".rstrip())
    else:
        lines.append("  kernels:   none")
    return "\n".join(lines)
