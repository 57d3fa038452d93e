"""``kernel-builder lock``: pin a project's kernel dependencies (``kernel_builder.loader.lock.lock_project``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, print_error, print_warnings

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("lock", help=COMMANDS["lock"])
    add_path(parser, "PROJECT_DIR", "project directory", find_up=False)
    parser.add_argument("--trust-remote-code", action="store_true", help="skip the trusted-publisher check")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import warnings

    from kernel_builder.loader.lock import lock_project

    with warnings.catch_warnings(record=True) as caught:  # the library warns; the CLI shows them plainly
        warnings.simplefilter("always")
        report = lock_project(
            args.path, trust_remote_code=args.trust_remote_code, log=lambda line: print(line, file=sys.stderr)
        )
    print_warnings(caught)
    for repo_id, message in report.failures:
        print_error(f"{repo_id}: {message}")
    if report.failures:
        print(
            f"error: {report.path} was not written ({len(report.failures)} repo(s) failed)", file=sys.stderr
        )
        return 1
    print(f"wrote {report.path} ({len(report.entries)} kernel(s))")
    return 0
