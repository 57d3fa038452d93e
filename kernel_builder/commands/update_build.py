"""``kernel-builder update-build``: rewrite a legacy build.toml (``kernel_builder.config.update.update_build``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, print_diagnostics

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("update-build", help=COMMANDS["update-build"])
    add_path(parser)
    parser.add_argument(
        "--license", metavar="ID", help="SPDX license identifier to add when the file has none"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    mode.add_argument("--check", action="store_true", help="exit 1 if the file needs an update")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.config.update import update_build

    outcome = update_build(args.path, license_id=args.license, dry_run=args.dry_run, check=args.check)
    print_diagnostics(outcome.diagnostics)
    if outcome.output:
        print(outcome.output, end="" if outcome.output.endswith("\n") else "\n")
    return outcome.exit_code
