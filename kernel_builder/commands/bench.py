"""``kernel-builder bench``: build, then time the kernel's ops (``kernel_builder.authoring.bench.run_benchmarks``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, build_first
from kernel_builder.errors import UsageError

#: Where ``--profile`` without a path writes the trace, relative to the kernel directory (its state directory).
DEFAULT_TRACE = ".kernel-builder/bench-trace.json"

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser(
        "bench",
        help=COMMANDS["bench"],
        description="Build the variant for this environment, then run, the first that applies: the Benchmark "
        "classes of benchmarks/benchmark*.py (upstream's form: benchmark_<w> timed against verify_<w>, which must "
        "agree; exit status 1 when one does not), the functions bench_*(kernel, device) of benchmarks/*.py "
        "returning kernel_builder.authoring.bench.Case, or each public function against its torch namesake. "
        "CUDA events on a GPU (CUDA graphs for launch-bound calls, inputs rotated past the L2 cache), the CPU "
        "timer elsewhere; median, spread, min and max, speed-up, GB/s and TFLOP/s next to the measured copy "
        "bandwidth.",
    )
    add_path(parser)
    parser.add_argument(
        "--runs", type=int, default=100, metavar="N", help="timed runs per case or workload (default: 100)"
    )
    parser.add_argument(
        "--warmup", type=int, default=10, metavar="N", help="untimed runs first (default: 10)"
    )
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument(
        "--profile",
        nargs="?",
        const=DEFAULT_TRACE,
        metavar="TRACE",
        help="also run each timed side under torch.profiler, write a Chrome trace to TRACE (default: "
        f"{DEFAULT_TRACE} in the kernel directory) and print the top device kernels (CPU ops without a GPU)",
    )
    parser.add_argument(
        "--compare",
        action="append",
        choices=("compile",),
        default=[],
        help="add a baseline: compile = torch.compile of the reference, next to the kernel and the reference",
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kernel_builder.authoring.bench import run_benchmarks
    from kernel_builder.build.builder import BuildOptions

    if args.runs < 1 or args.warmup < 0:
        raise UsageError("--runs must be at least 1 and --warmup at least 0")
    project, status = build_first(args.path, BuildOptions(), command="bench")
    if status:
        return status
    json_file = Path(args.json).resolve() if args.json else None
    trace = None
    if args.profile is not None:
        trace = (
            project.root / DEFAULT_TRACE if args.profile == DEFAULT_TRACE else Path(args.profile).resolve()
        )
    return run_benchmarks(project, runs=args.runs, warmup=args.warmup, json_file=json_file, trace=trace,
                          compare=args.compare)  # fmt: skip
