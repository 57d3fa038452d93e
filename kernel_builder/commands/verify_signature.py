"""``kernel-builder verify-signature``: check a Hub kernel's Sigstore signature and files
(``kernel_builder.loader.describe`` over ``kernel_builder.loader.signatures``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, print_error
from kernel_builder.commands.info import add_revision

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("verify-signature", help=COMMANDS["verify-signature"])
    parser.add_argument("repo_id", metavar="REPO", help="Hub repository id (<org>/<name>)")
    parser.add_argument(
        "positional_version", nargs="?", type=int, metavar="VERSION",
        help="the major version, as upstream's `kernels verify-signature REPO VERSION` takes it",
    )  # fmt: skip
    add_revision(parser)
    parser.add_argument("--all-variants", action="store_true", help="every variant, not only this machine's")
    parser.add_argument(
        "--identity", action="append", metavar="WORKFLOW_URI",
        help="accept signatures by this GitHub Actions workflow "
        "(https://github.com/<owner>/<repo>/.github/workflows/<file>.yml@<ref>; repeatable); "
        "replaces KERNEL_BUILDER_SIGNERS and the default kernels-community workflows",
    )  # fmt: skip
    parser.add_argument(
        "--filter-unsigned", action="store_true", help="skip unsigned variants instead of failing"
    )
    parser.add_argument(
        "--filter-no-digest", action="store_true",
        help="skip variants whose signed metadata.json has no digest instead of failing",
    )  # fmt: skip
    parser.add_argument("--backend", help="choose the variant for this backend instead of the detected one")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.errors import UsageError
    from kernel_builder.loader.describe import verify_signatures
    from kernel_builder.loader.signatures import parse_signer, signers_from_env

    version = args.version
    if args.positional_version is not None:
        if version is not None or args.revision is not None:
            raise UsageError("give the version once: VERSION, --version or --revision")
        version = args.positional_version
    if args.identity:
        signers = tuple(parse_signer(uri, origin="--identity") for uri in args.identity)
    else:
        signers = signers_from_env()
    label, outcomes = verify_signatures(
        args.repo_id,
        signers,
        version=version,
        revision=args.revision,
        all_variants=args.all_variants,
        backend=args.backend,
    )
    print(f"{label}:", file=sys.stderr)
    failed = 0
    for outcome in outcomes:
        status = outcome.check.status
        if (status == "unsigned" and args.filter_unsigned) or (
            status == "no-digest" and args.filter_no_digest
        ):
            print(f"skipped {outcome.variant}: {outcome.check.describe()}")
        elif outcome.check.ok:
            print(f"verified {outcome.variant}: {outcome.check.describe()}; every file matches its digest")
        else:
            failed += 1
            print_error(f"{outcome.variant}: {outcome.check.describe()}")
    if failed:
        print_error(f"{failed} of {len(outcomes)} variant(s) failed verification")
    return 1 if failed else 0
