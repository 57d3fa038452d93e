"""``kernel-builder upload``: upload the built variants to the Hub (``kernel_builder.publish.upload.upload``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, log, options_from

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("upload", help=COMMANDS["upload"])
    add_path(parser, "KERNEL_DIR", "kernel directory")
    parser.add_argument(
        "--repo-id", metavar="ID", help="<org>/<name> (default: [general.hub] repo-id of build.toml)"
    )
    parser.add_argument(
        "--branch", metavar="B", help="target branch (default: [general.hub] branch, else v<version>)"
    )
    parser.add_argument("--private", action="store_true", help="create the repository as private")
    parser.add_argument("--repo-type", choices=["kernel", "model"], default="kernel", help="repository type")
    parser.add_argument("--create-pr", action="store_true", help="open pull requests instead of committing")
    parser.add_argument(
        "--dry-run", action="store_true",
        help="print what would change and what the checks found; write nothing (works offline)",
    )  # fmt: skip
    parser.add_argument(
        "--allow-abi-violations", action="store_true",
        help="upload variants that check-abi rejects (the card lists the violations)",
    )  # fmt: skip
    parser.add_argument(
        "--allow-explicit-archs", action="store_true",
        help="upload variants built with an explicit --arch list (only those capabilities)",
    )  # fmt: skip
    parser.add_argument(
        "--allow-incomplete", action="store_true",
        help="upload a release that lacks required variants (the card lists them)",
    )  # fmt: skip
    parser.add_argument("--output-json", metavar="PATH", help="write the outcome as JSON to PATH")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only warnings and errors")
    add_common(parser)
    parser.set_defaults(handler=run)


_SUMMARY = {
    "no_changes": "no changes: the Hub already has these files",
    "uploaded": "uploaded",
    "pull_request_created": "opened pull request(s)",
}


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from kernel_builder.publish.upload import UploadOptions, check_output_json, describe_plan, upload

    if args.output_json:
        check_output_json(Path(args.output_json))
    options = options_from(UploadOptions, args, kernel_dir=Path(args.path))
    result = upload(
        options,
        log=(lambda _line: None) if args.quiet else log,
        warn=lambda line: print(f"warning: {line}", file=sys.stderr, flush=True),
    )
    if args.dry_run:
        print("\n".join(["dry run: nothing was changed", *describe_plan(result.plan)]))
        if result.plan.refused is not None:  # the rehearsal fails as the upload would; the plan listed why
            lines = result.plan.refused.splitlines()
            print(f"error: {lines[0].rstrip(':')} (listed above)\n{lines[-1]}", file=sys.stderr)
    elif not args.quiet:
        print(f"{_SUMMARY[result.status]}: {result.plan.url}")
        for pr in result.pull_requests:
            print(f"  {pr.branch}: {pr.url}")
    if args.output_json:
        Path(args.output_json).write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
    return 1 if result.plan.refused is not None else 0
