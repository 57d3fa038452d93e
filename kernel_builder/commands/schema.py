"""``kernel-builder schema``: print build.toml's JSON Schema (``kernel_builder.config.jsonschema``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("schema", help=COMMANDS["schema"])
    parser.add_argument("-o", "--output", metavar="FILE", help="write it to FILE instead of standard output")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from kernel_builder.config.jsonschema import build_toml_schema

    text = json.dumps(build_toml_schema(), indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0
