"""``kernel-builder build``: build the kernel's variants into build/<variant>/ (``Builder.run``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import (
    add_common,
    add_path,
    arch_option,
    build_table,
    load,
    log,
    options_from,
    print_diagnostics,
    print_failures,
)
from kernel_builder.errors import UsageError

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers
    from kernel_builder.common.diagnostics import Diagnostic
    from kernel_builder.formats.metadata import ProvenanceEntry
    from kernel_builder.pipeline.builder import VariantResult


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("build", help=COMMANDS["build"])
    add_path(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME",
        help="build this candidate variant in its own environment (repeatable)",
    )
    which.add_argument("--required", action="store_true", help="build every required variant buildable here")
    which.add_argument("--all-variants", action="store_true", help="build every variant buildable here")
    parser.add_argument(
        "--refresh-envs", action="store_true", help="re-create the isolated build environments"
    )
    parser.add_argument(
        "--parallel", type=int, metavar="N", help="variants built at once (default: cores / 4)"
    )
    parser.add_argument(
        "--max-jobs",
        type=positive,
        metavar="N",
        help="the same as --parallel (Hugging Face's builder's name)",
    )
    parser.add_argument("--werror", action="store_true", help="treat ABI symbol-version warnings as errors")
    parser.add_argument("--backend", help="build only this backend's variants")
    parser.add_argument(
        "--arch",
        metavar="ARCH",
        help="native: only the visible GPU's capability; or capabilities such as 9.0 or 8.0,9.0a (neither is "
        "publishable without upload --allow-explicit-archs, native never)",
    )
    parser.add_argument("--unique-id", metavar="ID", help="override the content-derived op namespace id")
    parser.add_argument(
        "--offline",
        action="store_true",
        help="no network, no pip: build only what this environment's torch serves (Nix, air-gapped)",
    )
    parser.add_argument(
        "--provenance-commit",
        metavar="REV",
        help="record this full commit id in metadata.json instead of asking git (e.g. a flake's revision)",
    )
    parser.add_argument(
        "--provenance-dirty",
        action="store_true",
        help="with --provenance-commit: record that the sources differ from that commit",
    )
    parser.add_argument(
        "--build-type",
        default="Release",
        choices=["Release", "Debug", "RelWithDebInfo"],
        help="CMake build type (default: Release)",
    )
    parser.add_argument(
        "--debug-build",
        action="store_true",
        help="compile with debug information: -g, and -lineinfo for nvcc (keeps the optimisation level)",
    )
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="write the build report (variants, status, times, sizes, findings) to FILE",
    )
    parser.add_argument(
        "-j", "--jobs", type=int, metavar="N", help="parallel compile jobs (default: from MAX_JOBS or cores)"
    )
    parser.add_argument(
        "--cores", type=positive, metavar="N", help="the same as --jobs (Hugging Face's builder's name)"
    )
    parser.add_argument(
        "--nvcc-threads", type=int, metavar="N", help="nvcc --threads (default: from the arch count)"
    )
    parser.add_argument(
        "--python", metavar="PATH", help="build interpreter with the variant's torch (default: this one)"
    )
    parser.add_argument(
        "--no-import-check", action="store_true", help="skip loading each variant after assembly"
    )
    parser.add_argument(
        "--strict-import",
        action="store_true",
        help="fail the import check also when a third-party module is missing from the build interpreter",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="echo every command")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import time

    from kernel_builder.common.progress import progress_display
    from kernel_builder.pipeline.builder import Builder, BuildOptions
    from kernel_builder.pipeline.plan.candidates import Selection
    from kernel_builder.pipeline.plan.unique_id import check_unique_id

    started = time.monotonic()
    args.parallel = same_option(args, "parallel", "max_jobs")
    args.jobs = same_option(args, "jobs", "cores")
    if args.unique_id is not None:
        check_unique_id(args.unique_id)
    provenance = provenance_option(args.provenance_commit, args.provenance_dirty)
    args.arch = arch_option(args.arch)
    project = load(args.path)
    options = options_from(
        BuildOptions,
        args,
        import_check=not args.no_import_check,
        selection=Selection(tuple(args.variant), args.required, args.all_variants, args.backend),
        provenance=provenance,
    )
    # A live table on a terminal, the compiler's output printed above it; -v echoes commands whose output goes
    # straight to the terminal, which a live table would overwrite.
    with progress_display(log, live=not args.verbose) as progress:
        report = Builder(project, options, log=progress.log, progress=progress).run()
    print_diagnostics(report.diagnostics)
    print(build_table(report.results, time.monotonic() - started))
    print_failures(report.results)
    nothing = report.nothing_built_error(project)
    if nothing is not None:
        print(f"error: {nothing}", file=sys.stderr)
    if args.json:
        import json
        from pathlib import Path

        data = build_report_json(
            report.results, report.diagnostics, time.monotonic() - started, report.plan.unique_id, nothing
        )
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 1 if report.failed or nothing is not None else 0


def positive(text: str) -> int:
    """A count of at least 1 (``--max-jobs``, ``--cores``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give at least 1")
    return value


def same_option(args: argparse.Namespace, ours: str, alias: str) -> int | None:
    """The value of ``--<ours>`` or of its alias (Hugging Face's builder's name); both, differing, is an error."""
    mine: int | None = getattr(args, ours)
    theirs: int | None = getattr(args, alias)
    if mine is not None and theirs is not None and mine != theirs:
        flag = "--" + ours.replace("_", "-")
        other = "--" + alias.replace("_", "-")
        raise UsageError(f"{flag} {mine} and {other} {theirs} disagree: {other} is {flag}; give one")
    return mine if mine is not None else theirs


def provenance_option(commit: str | None, dirty: bool) -> ProvenanceEntry | None:
    """``--provenance-commit`` / ``--provenance-dirty``: the ``provenance.kernel`` that metadata.json records
    instead of git's answer."""
    if commit is None:
        if dirty:
            raise UsageError(
                "--provenance-dirty needs --provenance-commit (the commit the sources differ from)"
            )
        return None
    from kernel_builder.formats.identifiers import is_git_object_id
    from kernel_builder.formats.metadata import ProvenanceEntry

    if not (is_git_object_id(commit) and commit == commit.lower()):
        raise UsageError(
            f"--provenance-commit {commit!r} is not a full git commit id: expected 40 (or, for a SHA-256 "
            "repository, 64) lower-case hex digits, as `git rev-parse HEAD` prints them; the kernels loader "
            "refuses metadata with an abbreviated commit"
        )
    return ProvenanceEntry(commit=commit, dirty=dirty)


def build_report_json(
    results: Sequence[VariantResult],
    diagnostics: Sequence[Diagnostic],
    total: float,
    unique_id: str,
    nothing_built: str | None = None,
) -> dict[str, object]:
    """``build --json``: what ``build_table`` shows, plus the warnings (findings), for CI and tests;
    ``nothing_built`` is the error of a build that made no variant (``failed`` too)."""
    return {
        "unique_id": unique_id,
        "seconds": round(total, 3),
        "failed": nothing_built is not None or any(r.status == "failed" for r in results),
        "nothing_built": nothing_built,
        "variants": [
            {
                "name": r.name,
                "status": r.status,
                "seconds": round(r.seconds, 3),
                "size": r.size,
                "message": r.message or None,
            }
            for r in results
        ],
        "findings": [
            {
                "severity": d.severity.value,
                "message": d.message,
                "path": d.path,
                "line": d.line,
                "hint": d.hint,
            }
            for d in diagnostics
        ],
    }
