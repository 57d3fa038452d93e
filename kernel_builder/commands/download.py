"""``kernel-builder download``: fetch and verify the locked kernels (``kernel_builder.loader.download``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, print_error, print_warning, print_warnings

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("download", help=COMMANDS["download"])
    add_path(parser, "PROJECT_DIR", "project directory", find_up=False)
    parser.add_argument(
        "--all-variants", action="store_true", help="every locked variant, not only this machine's"
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import warnings

    from kernel_builder.loader.download import download_locked

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcomes = download_locked(
            args.path, all_variants=args.all_variants, log=lambda line: print(line, file=sys.stderr)
        )
    print_warnings(caught)
    for outcome in outcomes:
        if outcome.skipped is not None:
            print_warning(f"{outcome.repo_id} at {outcome.sha}: skipped: {outcome.skipped}")
        elif outcome.error is None:
            for variant, path in zip(outcome.variants, outcome.paths):
                print(f"{outcome.repo_id} {variant}: {path}")
        else:
            print_error(f"{outcome.repo_id} at {outcome.sha}: {outcome.error}")
    failed = sum(outcome.error is not None for outcome in outcomes)
    if failed:
        print_error(f"{failed} of {len(outcomes)} kernel(s) failed")
    return 1 if failed else 0
