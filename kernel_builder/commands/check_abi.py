"""``kernel-builder check-abi``: check built extensions (``kernel_builder.pipeline.check.abi.check_variants``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("check-abi", help=COMMANDS["check-abi"])
    add_path(parser, "PATH", "kernel root, its build/ or one variant", find_up=False)
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.pipeline.check.abi import check_variants

    report = check_variants(args.path)
    for line in report.lines():
        print(line)
    return 1 if report.violations else 0
