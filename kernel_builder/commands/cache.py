"""``kernel-builder cache ls``: the kernels in the local cache (``kernel_builder.loader.cache_listing``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, print_json_or_text

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers
    from kernel_builder.loader.cache_listing import CacheListing

HEADERS = ("ID", "SIZE", "LAST_ACCESSED", "LAST_MODIFIED", "VERSION", "VARIANTS")


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("cache", help=COMMANDS["cache"])
    actions = parser.add_subparsers(dest="cache_command", metavar="ACTION", required=True)
    ls = actions.add_parser("ls", help="list the cached kernel versions and their build variants")
    ls.add_argument("--cache-dir", metavar="DIR", help="the cache to list (default: the one loads use)")
    ls.add_argument("--json", action="store_true", help="print the listing as JSON")
    ls.add_argument("--show-warnings", action="store_true", help="name each cache entry the scan skipped")
    ls.add_argument("--no-truncate", action="store_true", help="accepted for upstream's CLI; nothing is cut")
    add_common(ls)
    add_common(parser)
    parser.set_defaults(handler=run)


def _size(value: float) -> str:
    for unit in ("B", "K", "M", "G", "T"):
        if value < 1000 or unit == "T":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1000
    raise AssertionError("unreachable")


def _when(timestamp: float) -> str:
    import time

    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def render(listing: CacheListing) -> str:
    """One row per cached version (its first variant), then one row per further variant, in columns."""
    rows: list[tuple[str, ...]] = []
    for kernel in listing.kernels:
        for version in kernel.versions:
            first = version.variants[0] if version.variants else "-"
            when = (_when(version.last_accessed), _when(version.last_modified))
            rows.append(
                (
                    f"{kernel.repo_type}/{kernel.repo_id}",
                    _size(version.size_on_disk),
                    *when,
                    version.version,
                    first,
                )
            )
            rows += [("", "", "", "", "", variant) for variant in version.variants[1:]]
    if not rows:
        return f"No cached kernel versions found in {listing.cache_dir}."
    widths = [max(len(row[i]) for row in (HEADERS, *rows)) for i in range(len(HEADERS))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in (HEADERS, *rows)
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.loader.cache_listing import list_cache

    listing = list_cache(args.cache_dir)
    print_json_or_text(args.json, listing.to_json, lambda: render(listing))
    if listing.warnings:
        if args.show_warnings:
            for warning in listing.warnings:
                print(f"warning: {warning}", file=sys.stderr)
        else:
            print(
                f"warning: {len(listing.warnings)} cache entries are inconsistent and were skipped; "
                "--show-warnings names them",
                file=sys.stderr,
            )
    return 0
