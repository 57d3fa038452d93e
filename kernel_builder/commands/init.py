"""``kernel-builder init``: create a new kernel project (``kernel_builder.authoring.scaffold.init_project``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("init", help=COMMANDS["init"])
    parser.add_argument(
        "path", nargs="?", default=None, metavar="PATH", help="directory to create (default: ./NAME)"
    )
    parser.add_argument(
        "--name",
        required=True,
        metavar="NAME|OWNER/NAME",
        help="kernel name: lowercase letters, digits and `-`; OWNER/NAME also sets --org",
    )
    parser.add_argument("--org", help="Hub organisation or user; the repo id becomes ORG/NAME")
    parser.add_argument(
        "--backends",
        nargs="+",
        metavar="BACKEND",
        help="cuda and/or cpu, comma- or space-separated: cuda,cpu or cuda cpu (default: from the template)",
    )
    parser.add_argument(
        "--template", choices=["cuda", "cpu", "triton"], help="cuda (also builds cpu), cpu, or triton"
    )
    parser.add_argument(
        "--license", metavar="ID", default="Apache-2.0", help="SPDX license identifier (default: Apache-2.0)"
    )
    parser.add_argument(
        "--force", "--overwrite", dest="force", action="store_true", help="overwrite files that already exist"
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kernel_builder.authoring.scaffold import (
        InitOptions,
        check_name,
        init_project,
        next_steps,
        parse_backends,
        split_name,
    )

    name, org = split_name(args.name, args.org)
    check_name(name)
    options = InitOptions(
        name=name,
        org=org,
        backends=parse_backends(",".join(args.backends)) if args.backends else None,
        template=args.template,
        license=args.license,
        force=args.force,
    )
    root = Path(args.path if args.path is not None else name)
    print(next_steps(root, init_project(root, options)))
    return 0
