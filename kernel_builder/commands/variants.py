"""``kernel-builder variants``: a Hub kernel's build variants per version and which load here
(``kernel_builder.loader.variant_listing``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Literal

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, print_json_or_text

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def version_option(value: str) -> int | Literal["latest"]:
    """``--version``: a major version, or ``latest``."""
    if value == "latest":
        return "latest"
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a version number or 'latest', got {value!r}") from None
    if number < 0:
        raise argparse.ArgumentTypeError(f"expected a version number or 'latest', got {value!r}")
    return number


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("variants", help=COMMANDS["variants"])
    parser.add_argument("repo_id", metavar="REPO", help="Hub repository id (<org>/<name>)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--all-versions", action="store_true", help="every version (default: the newest only)")
    group.add_argument(
        "--version", type=version_option, metavar="N", help="one major version (branch vN), or 'latest'"
    )
    group.add_argument("--revision", metavar="R", help="a branch, tag or commit instead of a version")
    parser.add_argument("--only-compatible", action="store_true", help="only the variants that load here")
    parser.add_argument("--backend", help="judge the variants for this backend instead of the detected one")
    parser.add_argument("--json", action="store_true", help="print the variants and verdicts as JSON")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.loader.variant_listing import list_variants, render_variants

    listed = list_variants(
        args.repo_id,
        version=args.version,
        revision=args.revision,
        all_versions=args.all_versions,
        only_compatible=args.only_compatible,
        backend=args.backend,
    )
    print_json_or_text(
        args.json,
        lambda: {"repo_id": args.repo_id, "revisions": [revision.to_json() for revision in listed]},
        lambda: render_variants(listed, args.only_compatible),
    )
    return 0
