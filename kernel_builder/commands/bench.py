"""``kernel-builder bench``: build, then time the kernel's ops (``kernel_builder.authoring.bench.run_benchmarks``);
or, given a Hub kernel ``ORG/NAME`` and a release, fetch it through the loader and run its benchmark classes
(``kernel_builder.authoring.bench_hub``)."""

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
        "timer elsewhere, with the CPU threads pinned; the kernel and its reference take turns in rounds until "
        "their medians settle; median, spread, min and max, speed-up, GB/s and TFLOP/s next to the measured copy "
        "bandwidth; warnings for unstable timings and for rates beyond the copy bandwidth. With ORG/NAME and a "
        "release (--version N, --revision REV, ORG/NAME@vN or ORG/NAME@REV), benchmark that published kernel "
        "instead: downloaded and verified as get_kernel does, its benchmarks/benchmark*.py run against it.",
    )
    add_path(parser, "PATH | ORG/NAME[@REV]", "kernel directory or its build.toml, or a Hub kernel")
    parser.add_argument(
        "--version",
        type=int,
        metavar="N",
        help="with ORG/NAME: benchmark release N (branch vN) of the Hub kernel",
    )
    parser.add_argument(
        "--revision",
        metavar="REV",
        help="with ORG/NAME: benchmark the Hub kernel at this branch, tag or commit",
    )
    parser.add_argument(
        "--trust-remote-code",
        action="store_true",
        help="with ORG/NAME: skip the trusted-publisher check (the kernel and its benchmark files run here)",
    )
    parser.add_argument(
        "--runs", type=int, default=100, metavar="N", help="timed runs per round of each case or workload "
        "(default: 100)"
    )  # fmt: skip
    parser.add_argument(
        "--warmup", type=int, default=10, metavar="N", help="untimed runs first (default: 10)"
    )
    parser.add_argument(
        "--threads", type=int, default=0, metavar="N",
        help="torch's CPU threads, pinned for the run (default: 1, which repeats from run to run)",
    )  # fmt: skip
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    parser.add_argument(
        "--plot",
        metavar="FILE",
        help="also draw the results as a picture (PNG, SVG or PDF by the suffix): GB/s or time per case, kernel "
        "vs reference; needs the plot extra (pip install 'kernel-builder[plot]')",
    )
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

    from kernel_builder.authoring.bench import BenchOptions, run_benchmarks
    from kernel_builder.authoring.bench_hub import looks_like_release, parse_release, run_hub_benchmarks

    if args.runs < 1 or args.warmup < 0 or args.threads < 0:
        raise UsageError("--runs must be at least 1, --warmup and --threads at least 0")
    if args.plot:
        from kernel_builder.authoring.bench_plot import require

        require()  # before any build or download
    json_file = Path(args.json).resolve() if args.json else None
    plot = Path(args.plot).resolve() if args.plot else None
    if looks_like_release(args.path, args.version, args.revision):
        release = parse_release(args.path, args.version, args.revision)
        trace = Path(args.profile).resolve() if args.profile is not None else None  # no project: from here
        options = BenchOptions(
            args.runs, args.warmup, args.threads, json_file, plot, trace, tuple(args.compare)
        )
        return run_hub_benchmarks(release, options, trust_remote_code=args.trust_remote_code)
    if args.trust_remote_code:
        raise UsageError(
            "--trust-remote-code applies to a Hub kernel (ORG/NAME with a release), not a directory"
        )
    from kernel_builder.pipeline.builder import BuildOptions

    project, status = build_first(args.path, BuildOptions(), command="bench")
    if status:
        return status
    trace = None
    if args.profile is not None:
        trace = (
            project.root / DEFAULT_TRACE if args.profile == DEFAULT_TRACE else Path(args.profile).resolve()
        )
    return run_benchmarks(project, runs=args.runs, warmup=args.warmup, json_file=json_file, trace=trace,
                          compare=args.compare, threads=args.threads, plot=plot)  # fmt: skip
