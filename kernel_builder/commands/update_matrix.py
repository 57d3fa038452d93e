"""``kernel-builder update-matrix``: add a Torch release to the variant matrix, from PyPI's metadata
(``kernel_builder.formats.torch_release``; who runs it and when: docs/variant-matrix.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers
    from kernel_builder.formats.torch_release import Proposal, ReleaseFacts

PYPI_TORCH = "https://pypi.org/pypi/torch"
"""PyPI's JSON API for torch: ``<it>/json`` for the project, ``<it>/<version>/json`` for one release."""


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("update-matrix", help=COMMANDS["update-matrix"])
    parser.add_argument("torch", metavar="TORCH", help="the Torch release to add, major.minor (2.16)")
    parser.add_argument(
        "--cuda", metavar="VERSIONS",
        help="the CUDA flavours PyTorch publishes for it, from its release notes (13.0,13.2); PyPI's is always "
        "added (default: those of the previous release)",
    )  # fmt: skip
    parser.add_argument("--write", action="store_true", help="write the proposed matrix to the matrix file")
    parser.add_argument(
        "--matrix", metavar="FILE", help="the matrix file (default: this kernel-builder's build-matrix.json)"
    )
    parser.add_argument(
        "--pypi-json",
        metavar="FILE",
        help=f"PyPI's answer read from FILE instead of {PYPI_TORCH}/json (offline)",
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def _minor(text: str, what: str) -> tuple[int, int]:
    from kernel_builder.errors import UsageError

    parts = text.split(".")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise UsageError(f"{what} {text!r}: expected major.minor, such as 2.16 or 13.2")
    return int(parts[0]), int(parts[1])


def _fetch(url: str) -> dict[str, Any]:
    """PyPI's JSON answer at ``url`` (fetched as pip fetches: its certificate bundle, a URL's credentials); a
    failure is the command's error, with what to do."""
    import json
    import urllib.error

    from kernel_builder.errors import BuildError
    from kernel_builder.pipeline.environment.wheel_index import read_url

    try:
        data: dict[str, Any] = json.loads(read_url(url, "application/json"))
        return data
    except (urllib.error.URLError, OSError, ValueError) as error:
        reason = getattr(error, "reason", error)
        raise BuildError(
            f"cannot read PyPI's metadata of torch ({url}): {reason}; check the network, or pass --pypi-json FILE "
            "with a saved answer"
        ) from None


def _facts(
    args: argparse.Namespace, minor: tuple[int, int]
) -> tuple[ReleaseFacts, dict[tuple[int, int], str]]:
    """The release's facts and PyPI's newest patch of every minor, from the file or from PyPI (asking for the
    release's own answer where the project's describes a newer release)."""
    import json

    from kernel_builder.errors import UsageError
    from kernel_builder.formats.torch_release import newest_patches, release_facts

    if args.pypi_json:
        try:
            project = json.loads(Path(args.pypi_json).read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise UsageError(f"{args.pypi_json}: not PyPI's JSON answer ({error})") from None
    else:
        project = _fetch(f"{PYPI_TORCH}/json")
    patches = newest_patches(project)
    release = None
    if not args.pypi_json and minor in patches and project.get("info", {}).get("version") != patches[minor]:
        release = _fetch(f"{PYPI_TORCH}/{patches[minor]}/json")
    return release_facts(project, minor, release), patches


def run(args: argparse.Namespace) -> int:
    import json

    from kernel_builder.formats.matrix import PACKAGED_MATRIX, parse_matrix_text
    from kernel_builder.formats.torch_release import format_matrix, propose

    minor = _minor(args.torch, "TORCH")
    cudas = [_minor(v.strip(), "--cuda") for v in args.cuda.split(",")] if args.cuda else None
    path = Path(args.matrix) if args.matrix else PACKAGED_MATRIX
    original = path.read_text(encoding="utf-8")
    parse_matrix_text(original, str(path))  # a valid matrix to start from
    facts, patches = _facts(args, minor)
    proposal = propose(json.loads(original), facts, patches, cudas)
    text = format_matrix(proposal.data)
    parse_matrix_text(text, str(path))  # what would be written is a valid matrix too
    print(report(facts, proposal))
    if args.write:
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}; record the facts above in the notes of kernel_builder/formats/matrix.py")
    else:
        print(f"nothing written: run again with --write to write {path}")
    return 0


def report(facts: ReleaseFacts, proposal: Proposal) -> str:
    """What the proposal adds and changes, and where each new fact comes from."""
    import json

    torch = f"{facts.minor[0]}.{facts.minor[1]}"
    lines = [f"entries of torch {torch} (torch {facts.version} on PyPI):"]
    lines += [f"    {json.dumps(e)}" for e in proposal.data["entries"] if e["torch"] == torch]
    lines.append("changes to the other entries:" if proposal.changes else "no changes to the other entries")
    lines += [f"    {what} ({n} {'entry' if n == 1 else 'entries'})" for what, n in proposal.changes.items()]
    lines.append("where the new facts come from:")
    lines += [f"    - {note}" for note in proposal.notes]
    return "\n".join(lines)
