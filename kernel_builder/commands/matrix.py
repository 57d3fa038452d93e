"""``kernel-builder matrix``: a CI build matrix (``kernel_builder.pipeline.plan.github_matrix.github_matrix``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, load

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("matrix", help=COMMANDS["matrix"])
    add_path(parser, "DIR", "kernel directory or its build.toml")
    parser.add_argument("--format", choices=["github", "json"], default="github", help="output format")
    parser.add_argument("--required", action="store_true", help="only the required (release) set")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from kernel_builder.pipeline.plan.github_matrix import github_matrix

    matrix = github_matrix(load(args.path), args.path, required_only=args.required)
    print(json.dumps(matrix, indent=None if args.format == "github" else 2))
    return 0
