"""``kernel-builder check-config``: validate build.toml and print a summary (``kernel_builder.config.load_project``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, print_diagnostics
from kernel_builder.errors import UsageError

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("check-config", help=COMMANDS["check-config"])
    add_path(parser)
    parser.add_argument("--werror", action="store_true", help="treat warnings as errors")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.config import load_project
    from kernel_builder.config.summary import describe_project

    result = load_project(args.path)
    print_diagnostics(result.diagnostics)
    if args.werror and result.warnings:
        raise UsageError("warnings treated as errors (--werror)")
    print(describe_project(result.project))
    return 0
