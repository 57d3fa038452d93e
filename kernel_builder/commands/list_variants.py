"""``kernel-builder list-variants``: the project's candidate variants (``kernel_builder.pipeline.plan.listing``)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, load

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers
    from kernel_builder.pipeline.plan.candidates import Candidate


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("list-variants", help=COMMANDS["list-variants"])
    add_path(parser)
    parser.add_argument("--json", action="store_true", help="print the candidates as a JSON list")
    parser.add_argument(
        "--arch",
        action="store_true",
        help="only the variants for this machine's CPU and OS (x86_64-linux, ...), not the pure-Python ones",
    )
    parser.add_argument(
        "--no-probe", action="store_true",
        help="only what this kernel-builder can build on this platform: do not read pip's indexes for whether each "
        "variant's Torch build can be installed here, nor look for its CUDA compiler",
    )  # fmt: skip
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.commands._shared import log
    from kernel_builder.common.progress import progress_display
    from kernel_builder.pipeline.plan.listing import list_variants

    project = load(args.path)
    # Probing reads torch's listing from each index and looks for CUDA compilers: say what runs, and how long.
    start = time.monotonic()
    with progress_display(log) as progress:
        candidates = list_variants(project, probe=not args.no_probe, progress=progress)
    if args.arch:
        from kernel_builder.pipeline.plan.planner import host_system

        candidates = [c for c in candidates if c.system == host_system()]
    if not args.no_probe:
        log(f"probed {len(candidates)} candidates in {time.monotonic() - start:.1f} s")
        warn_if_matrix_stale()
    if args.json:
        import json

        print(json.dumps(variants_json(candidates), indent=2))
    else:
        import shutil
        import sys

        from kernel_builder.common.terminal import is_terminal

        # On a terminal, the reasons wrap at its width under their column; piped, each row is one line.
        width = shutil.get_terminal_size().columns if is_terminal(sys.stdout) else None
        print(variants_table(candidates, width=width))
    return 0


def warn_if_matrix_stale() -> None:
    """Say once when this environment's Torch is newer than every release the variant matrix knows: its rows
    are missing from the table because the tool's data, not the kernel, is behind."""
    from kernel_builder.commands._shared import print_diagnostics
    from kernel_builder.errors import BuildError
    from kernel_builder.formats.matrix import stale_notice
    from kernel_builder.pipeline.environment.interpreter import quick_probe

    try:
        torch_version = quick_probe().torch_version
    except BuildError:  # no torch here: nothing is newer
        return
    notice = stale_notice(torch_version)
    if notice is not None:
        print_diagnostics([notice])


#: The narrowest the reason column gets when wrapped; a narrower terminal wraps the reasons past its edge.
MIN_REASON_WIDTH = 30


def variants_table(candidates: Sequence[Candidate], *, width: int | None = None) -> str:
    """``list-variants``: every candidate, required or optional, and buildable here or why not.

    Variant names are never cut (they are what ``--variant`` takes); with ``width``, the reason is wrapped to
    fit, its further lines indented under the first."""
    import textwrap

    rows = [("variant", "required", "buildable here")]
    for c in candidates:
        rows.append(
            (
                c.name,
                "required" if c.required else "optional",
                _buildable(c) if c.buildable else f"no: {c.reason}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    indent = widths[0] + widths[1] + 4
    lines = []
    for name, need, buildable in rows:
        head = f"{name.ljust(widths[0])}  {need.ljust(widths[1])}  "
        if width is None or indent + len(buildable) <= width:
            lines.append(head + buildable)
            continue
        wrapped = textwrap.wrap(buildable, max(MIN_REASON_WIDTH, width - indent), break_on_hyphens=False)
        lines.append(head + wrapped[0])
        lines.extend(" " * indent + more for more in wrapped[1:])
    return "\n".join(lines)


def _buildable(candidate: Candidate) -> str:
    """How a buildable candidate is built: ``yes``, or ``yes (cross: …)`` for another system's variant."""
    if not candidate.cross:
        return "yes"
    from kernel_builder.pipeline.plan.planner import host_system

    return f"yes (cross: {candidate.system} from {host_system()}, docs/cross.md)"


def variants_json(candidates: Sequence[Candidate]) -> list[dict[str, Any]]:
    """``list-variants --json``: the table's facts, one object per candidate; ``system`` is null for noarch
    variants and ``reason`` null for buildable ones. The Nix lib's tests compare their names with these."""
    return [
        {
            "variant": c.name,
            "backend": c.backend,
            "system": c.system,
            "required": c.required,
            "buildable": c.buildable,
            "reason": c.reason,
            "cross": c.cross,
        }
        for c in candidates
    ]
