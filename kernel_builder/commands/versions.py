"""``kernel-builder versions``: a Hub kernel's ``v<N>`` branches (``kernel_builder.loader.describe``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("versions", help=COMMANDS["versions"])
    parser.add_argument("repo_id", metavar="REPO", help="Hub repository id (<org>/<name>)")
    parser.add_argument("--backend", help="judge the variants for this backend instead of the detected one")
    parser.add_argument("--json", action="store_true", help="print the versions as a JSON list")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.loader.describe import kernel_versions

    versions = kernel_versions(args.repo_id, backend=args.backend)
    if args.json:
        import json

        rows = [
            {
                "version": v.version,
                "branch": f"v{v.version}",
                "commit": v.sha,
                "latest": v.latest,
                "loads": v.variant,
            }
            for v in versions
        ]
        print(json.dumps(rows, indent=2))
        return 0
    if not versions:
        print(f"{args.repo_id} has no version branches (v<N>)", file=sys.stderr)
        return 0
    for v in versions:
        latest = "  (latest)" if v.latest else ""
        loads = v.variant or "no variant for this machine"
        print(f"v{v.version}  {v.sha}{latest}\n  loads here: {loads}")
    return 0
