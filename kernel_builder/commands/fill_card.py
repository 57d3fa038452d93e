"""``kernel-builder fill-card``: the kernel's CARD.md filled in (``kernel_builder.pipeline.card``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, load, log

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("fill-card", help=COMMANDS["fill-card"])
    add_path(parser)
    parser.add_argument(
        "output",
        nargs="?",
        default=None,
        metavar="OUTPUT",
        help="write the card to this file (default: print it)",
    )
    parser.add_argument(
        "--repo-id",
        metavar="ORG/NAME",
        help="the repository the card is for (default: [general.hub] repo-id)",
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from kernel_builder.errors import UsageError
    from kernel_builder.formats.identifiers import repo_id_problem
    from kernel_builder.pipeline.card import CARD_FILE, fill_project_card

    if args.repo_id is not None and (problem := repo_id_problem(args.repo_id)) is not None:
        raise UsageError(f"--repo-id {args.repo_id!r}: {problem}")
    project = load(args.path)
    filled = fill_project_card(project, repo_id=args.repo_id)
    if filled is None:
        raise UsageError(f"{project.root / CARD_FILE}: no such file: the kernel has no card to fill")
    if args.output is None:
        sys.stdout.write(filled)
        return 0
    output = Path(args.output)
    if output.is_dir():
        raise UsageError(f"{output}: it is a directory; give the file to write the card to")
    output.write_text(filled, encoding="utf-8")
    log(f"wrote {output}")
    return 0
