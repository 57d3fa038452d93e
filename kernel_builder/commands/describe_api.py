"""``kernel-builder describe-api``: a kernel's public functions and layers from its ``symbols.json``, without
importing it (``kernel_builder.loader.describe_api``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, print_json_or_text

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("describe-api", help=COMMANDS["describe-api"])
    parser.add_argument(
        "kernel",
        metavar="KERNEL",
        help="Hub repository id (<org>/<name>), or a local kernel directory or its build/",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--version", type=int, metavar="N", help="the major version (Hub only; default: the newest)"
    )
    group.add_argument("--revision", metavar="R", help="a branch, tag or commit (Hub only)")
    parser.add_argument(
        "--json", action="store_true", help="print the whole symbols.json, and where it was read"
    )
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="describe a kernel of an untrusted publisher (Hub only)",
    )
    parser.add_argument("--backend", help="describe the variant for this backend instead of the detected one")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.loader.describe_api import describe_api, render_api

    description = describe_api(
        args.kernel,
        version=args.version,
        revision=args.revision,
        trust_remote_code=args.trust_remote_code,
        backend=args.backend,
    )
    print_json_or_text(args.json, description.to_json, lambda: render_api(description), ensure_ascii=False)
    return 0
