"""``kernel-builder bench``: time a kernel's ops against a reference, the way its users would call them.

Three modes, the first that applies: the ``Benchmark`` classes of ``benchmarks/benchmark*.py`` (upstream's
form, run by :mod:`kernel_builder.authoring.bench_classes`); the functions ``bench_*(kernel, device)`` of
``benchmarks/*.py``, each returning a :class:`Case`; else one case per public function (``__all__``) that has
a namesake in ``torch`` or ``torch.nn.functional``, per input size. Every side (kernel, reference, and with
``--compare compile`` ``torch.compile`` of the reference) is timed by :mod:`kernel_builder.authoring.timing`:
CUDA events with CUDA graphs for launch-bound calls and inputs rotated past the L2 on a GPU, the CPU timer
elsewhere. The table shows the median, spread, minimum and maximum, GB/s and TFLOP/s where the case declares
its bytes and FLOPs, and the device's measured copy bandwidth as the ceiling; ``--profile`` adds a
``torch.profiler`` trace (:mod:`kernel_builder.authoring.profiling`). See ``docs/cli.md``.

Benchmarks run in a fresh process (``python -m kernel_builder.authoring.bench``), like ``kernel-builder test``.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from kernel_builder.authoring import bench_classes
from kernel_builder.authoring.bench_classes import (
    BenchmarkFileError,
    find_classes,
    install_kernels_shim,
    load_files,
    run_classes,
)
from kernel_builder.authoring.timing import (
    BENCH_ROUNDS,
    LAUNCH_BOUND_US,
    TIMING_HEADERS,
    WARMUP_S,
    Ceiling,
    Rounds,
    SideFailed,
    Timing,
    cache_bytes,
    compile_reference,
    failure_line,
    format_bytes,
    grouped_notes,
    measure,
    measure_all,
    pick_device,
    render_rows,
    rotation_note,
    rotation_sets,
    side_warnings,
    tensor_bytes,
    timer_name,
    timing_cells,
    warning_lines,
)

if TYPE_CHECKING:
    from kernel_builder.config.model import KernelProject

__all__ = ["Case", "Result", "measure", "render_table", "run_benchmarks"]


@dataclass
class Case:
    """One benchmark: ``run`` (the kernel) and optionally ``reference``.

    ``inputs``, when given, makes one set of arguments (a tuple: the input tensors, and any preallocated
    output); ``run`` and ``reference`` are then called with them (``run(*inputs())``), and the runner makes
    enough sets that together they exceed twice the device's cache, cycling through them so that a small case
    is not timed from the cache. Without ``inputs``, both are called with no arguments, on one set.

    ``bytes`` is what one call must read and write (for GB/s), ``flops`` its floating-point operations (for
    TFLOP/s). ``check`` compares the two results (the default when both return tensors:
    ``torch.testing.assert_close``). ``compares`` says what each side does (printed under the table and kept in
    the JSON): a kernel writing into a preallocated ``out`` against a reference that allocates its result is not
    a like-for-like comparison, and the reader should see which it is.
    """

    run: Callable[..., Any]
    reference: Callable[..., Any] | None = None
    bytes: int | None = None
    check: bool = True
    name: str = ""
    compares: str = ""
    flops: int | None = None
    inputs: Callable[[], Sequence[Any]] | None = None


@dataclass
class Result:
    name: str
    kernel: Timing | None = None
    reference: Timing | None = None
    bytes: int | None = None
    matches: bool | None = None
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    flops: int | None = None
    compiled: Timing | None = None  # torch.compile(reference), with --compare compile
    compile_error: str = ""
    rotated: bool = False  # inputs cycled past the cache (or larger than it)
    warnings: list[str] = field(default_factory=list)  # implausible or unstable sides (see assess)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        for side in ("kernel", "reference", "compiled"):
            timing: Timing | None = getattr(self, side)
            data[f"{side}_gbps"] = timing.gbps(self.bytes) if timing else None
            data[f"{side}_tflops"] = timing.tflops(self.flops) if timing else None
        return data


#: The float32 input sizes of the public-ops mode: launch-bound and cache-sized first, bandwidth-bound last.
PUBLIC_SIZES = {"cuda": (1 << 20, 64 << 20, 1 << 30), "other": (1 << 20, 16 << 20)}


def _public_cases(kernel: ModuleType, device: str) -> Iterator[Case]:
    """Each public function with a torch namesake, on float32 tensors of each of :data:`PUBLIC_SIZES` (1 MiB,
    64 MiB and 1 GiB on a GPU; 1 MiB and 16 MiB elsewhere): one case per function and size."""
    import torch

    def inputs_of(numel: int) -> Callable[[], tuple[Any, ...]]:
        return lambda: (torch.randn(numel, device=device),)

    sizes = PUBLIC_SIZES["cuda" if device.startswith("cuda") else "other"]
    for name in getattr(kernel, "__all__", ()):
        fn = getattr(kernel, name, None)
        if not callable(fn) or isinstance(fn, type):
            continue
        reference = getattr(torch, name, None) or getattr(torch.nn.functional, name, None)
        for size in sizes:
            inputs = inputs_of(size // 4)
            (x,) = inputs()
            try:
                out = fn(x)
            except Exception as exc:  # noqa: BLE001  (a function that wants other arguments: report it, time nothing)
                yield Case(run=_raise(exc), name=name)
                break
            elementwise = isinstance(out, torch.Tensor) and out.shape == x.shape
            del out, x
            yield Case(
                run=fn,
                reference=reference if callable(reference) else None,
                bytes=2 * size if elementwise else None,
                name=f"{name} {format_bytes(size)}",
                compares=_public_compares(name, reference),
                inputs=inputs,
            )


def _public_compares(name: str, reference: Any) -> str:
    """What the public-ops timing compares: both sides are called alike, ``f(x)``, each allocating its result."""
    if not callable(reference):
        return f"kernel.{name}(x) alone (torch has no {name} to compare with)"
    where = (
        "torch"
        if reference.__module__ in (None, "torch") or not reference.__module__
        else reference.__module__
    )
    return f"kernel.{name}(x) vs {where}.{name}(x): the same input, each call allocating its result"


def _raise(exc: Exception) -> Callable[[], Any]:
    def fail() -> Any:
        raise exc

    return fail


def _project_cases(
    directory: Path, kernel: ModuleType, device: str, loaded: Mapping[Path, ModuleType] | None = None
) -> Iterator[Case]:
    """The cases of the functions ``bench_*`` of ``directory/*.py`` (the modules in ``loaded`` are not rerun)."""
    for path, module in load_files(directory, "*.py", loaded=loaded).items():
        for attr in sorted(a for a in vars(module) if a.startswith("bench_")):
            case = getattr(module, attr)(kernel, device)
            if not isinstance(case, Case):
                raise TypeError(
                    f"{path.name}:{attr} returned {type(case).__name__}, not kernel_builder.authoring.bench.Case"
                )
            case.name = case.name or attr[len("bench_") :]
            yield case


def _matches(a: Any, b: Any) -> bool | None:
    import torch

    if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
        return None
    try:
        torch.testing.assert_close(a, b, equal_nan=True)
    except AssertionError:
        return False
    return True


def _bind(fn: Callable[..., Any], sets: Sequence[Sequence[Any]] | None) -> list[Callable[[], Any]]:
    """``fn`` called with each buffer set in turn (or alone, without sets)."""
    if sets is None:
        return [fn]
    return [functools.partial(fn, *args) for args in sets]


def _buffer_sets(case: Case, cache: int | None) -> tuple[list[tuple[Any, ...]] | None, str]:
    """The case's buffer sets for L2 rotation, and the note saying how many and why."""
    if case.inputs is None:
        return None, "one buffer set (the Case has no inputs=): small inputs may be timed from the cache"
    first = tuple(case.inputs())
    footprint = max(tensor_bytes(first), case.bytes or 0)
    count = rotation_sets(footprint, cache)
    sets = [first, *(tuple(case.inputs()) for _ in range(count - 1))]
    return sets, rotation_note(count, footprint, cache)


def run_cases(
    cases: Iterator[Case],
    device: str,
    *,
    warmup: int,
    runs: int,
    compile: bool = False,
    sides: list[tuple[str, Callable[[], Any]]] | None = None,
    rounds: Rounds = BENCH_ROUNDS,
) -> list[Result]:
    """Time each case (see :mod:`kernel_builder.authoring.timing`): the kernel and the reference taking turns,
    in ``rounds``; with ``compile``, ``torch.compile`` of its reference too. ``sides`` collects a call of each
    timed side, for ``--profile``."""
    cache = cache_bytes(device)
    results = []
    for case in cases:
        result = Result(case.name, bytes=case.bytes, flops=case.flops, rotated=case.inputs is not None)
        if case.compares:
            result.extra["compares"] = case.compares
        try:
            sets, result.extra["rotation"] = _buffer_sets(case, cache)
            kernel = _bind(case.run, sets)
            both = [kernel] if case.reference is None else [kernel, _bind(case.reference, sets)]
            try:
                timings = measure_all(both, device, warmup=warmup, runs=runs, rounds=rounds,
                                      warmup_s=rounds.warmup_s)  # fmt: skip
            except SideFailed as failed:
                raise failed.error from None
            result.kernel = timings[0]
            _collect(sides, f"{case.name}: kernel", kernel)
            if case.reference is not None:
                reference = both[1]
                result.reference = timings[1]
                _collect(sides, f"{case.name}: reference", reference)
                if case.check:
                    result.matches = _matches(kernel[0](), reference[0]())
                if compile:
                    _time_compiled(result, case.reference, sets, device, warmup=warmup, runs=runs, sides=sides,
                                   rounds=rounds)  # fmt: skip
        except Exception as exc:  # noqa: BLE001  (one failing case is reported; the others still run)
            result.error = failure_line(exc)
        results.append(result)
    return results


def assess(results: Sequence[Result], ceiling: Ceiling | None) -> None:
    """Fill each result's ``warnings``: sides faster than the copy ceiling allows, and sides whose rounds did
    not settle."""
    copy_gbps = ceiling.gbps if ceiling else None
    for r in results:
        sides = [("kernel", r.kernel), ("reference", r.reference), ("torch.compile(reference)", r.compiled)]
        r.warnings = side_warnings(sides, r.bytes, copy_gbps, rotated=r.rotated)


def _collect(
    sides: list[tuple[str, Callable[[], Any]]] | None, label: str, fns: list[Callable[[], Any]]
) -> None:
    if sides is not None:
        sides.append((label, fns[0]))


def _time_compiled(
    result: Result,
    reference: Callable[..., Any],
    sets: Sequence[Sequence[Any]] | None,
    device: str,
    *,
    warmup: int,
    runs: int,
    sides: list[tuple[str, Callable[[], Any]]] | None,
    rounds: Rounds = BENCH_ROUNDS,
) -> None:
    """Compile the reference (at its first call) and time it; a failure is recorded, not raised: the compiled
    baseline is optional, and a machine without a working compiler still times the rest."""
    try:
        compiled = _bind(compile_reference(reference), sets)
        compiled[0]()  # compiles
        result.compiled = measure(compiled, device, warmup=warmup, runs=runs, rounds=rounds,
                                  warmup_s=rounds.warmup_s)  # fmt: skip
    except Exception as exc:  # noqa: BLE001  (inductor's errors are many kinds; report the first line)
        result.compile_error = failure_line(exc)
        return
    _collect(sides, f"{result.name}: torch.compile(reference)", compiled)


def _speedup(reference: Timing | None, side: Timing | None) -> str:
    if reference is None or side is None or side.median_us <= 0:
        return "-"
    return f"{reference.median_us / side.median_us:.2f}x"


HEADERS = ("case", "side", *TIMING_HEADERS, "vs reference", "matches")


def render_table(results: list[Result], device: str, ceiling: Ceiling | None = None) -> str:
    """The terminal table: one row per timed side of each case (kernel, reference, compiled reference), and the
    copy ceiling; notes under it."""
    copy_gbps = ceiling.gbps if ceiling else None
    rows: list[tuple[str, ...]] = [HEADERS]
    notes: list[tuple[str, str]] = []
    for r in results:
        if r.error:
            rows.append((r.name, f"error: {r.error}", *[""] * (len(HEADERS) - 2)))
            continue
        matches = "-" if r.matches is None else ("yes" if r.matches else "NO")
        rows.append((r.name, "kernel", *timing_cells(r.kernel, r.bytes, r.flops, copy_gbps),
                     _speedup(r.reference, r.kernel), matches))  # fmt: skip
        if r.reference is not None:
            rows.append((r.name, "reference", *timing_cells(r.reference, r.bytes, r.flops, copy_gbps), "1.00x",
                         ""))  # fmt: skip
        if r.compiled is not None:
            rows.append((r.name, "torch.compile(reference)", *timing_cells(r.compiled, r.bytes, r.flops, copy_gbps),
                         _speedup(r.reference, r.compiled), ""))  # fmt: skip
            notes.append(
                (r.name, f"kernel {_speedup(r.compiled, r.kernel)} the speed of torch.compile(reference)")
            )
        elif r.compile_error:
            rows.append(
                (r.name, "torch.compile(reference)", "failed (see below)", *[""] * (len(HEADERS) - 3))
            )
            notes.append((r.name, f"torch.compile(reference) failed: {r.compile_error}"))
        notes += [(r.name, r.extra[key]) for key in ("compares", "rotation") if r.extra.get(key)]
        notes += [(r.name, t.note) for t in (r.kernel, r.reference, r.compiled) if t is not None and t.note]
    if ceiling is not None:
        rows.append(ceiling.row(len(HEADERS)))
    return "\n".join([f"device: {device}", *render_rows(rows), *grouped_notes(notes),
                      *warning_lines([(r.name, r.warnings) for r in results], ceiling)])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """The benchmark process: ``python -m kernel_builder.authoring.bench KERNEL ROOT [options]``.

    ``KERNEL`` is a local build (a project's ``build/``), or with ``--hub`` a Hub kernel ``ORG/NAME@COMMIT``
    loaded by :func:`kernel_builder.get_kernel` (its checks: trust, digest); ``ROOT`` holds ``benchmarks/``.
    The mode: the ``Benchmark`` classes of ``benchmarks/benchmark*.py`` when there are any
    (:mod:`kernel_builder.authoring.bench_classes`), else (not for a Hub kernel) the functions ``bench_*`` of
    ``benchmarks/*.py``, else the public functions against their torch namesakes.
    """
    parser = argparse.ArgumentParser(prog="python -m kernel_builder.authoring.bench")
    parser.add_argument("kernel")
    parser.add_argument("root")
    parser.add_argument("--package")
    parser.add_argument("--hub", action="store_true")
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--plot", dest="plot_path")
    parser.add_argument("--profile", dest="profile_path")
    parser.add_argument("--compare", action="append", choices=COMPARE, default=[])
    args = parser.parse_args(argv)

    threads = pin_threads(args.threads)
    import torch

    kernel = _load_kernel(args)
    name = args.kernel if args.hub else args.package
    device = pick_device()
    device_name = torch.cuda.get_device_name() if device == "cuda" else device
    header: dict[str, Any] = {"device": device, "torch": torch.__version__, "threads": threads}
    if args.hub:
        header["kernel"] = args.kernel  # ORG/NAME@COMMIT
    counts = (f"rounds of {args.runs} runs after {args.warmup} warm-up (at least {WARMUP_S * 1e3:g} ms), until the "
              f"medians of {BENCH_ROUNDS.window} rounds agree within {100 * BENCH_ROUNDS.spread:g}% (at most "
              f"{BENCH_ROUNDS.limit})")  # fmt: skip
    compile_ = "compile" in args.compare
    sides: list[tuple[str, Callable[[], Any]]] | None = [] if args.profile_path else None
    benchmarks = Path(args.root) / "benchmarks"
    print(_timer_line(device))
    print(_threads_line(device, threads))
    busy = busy_note()
    if busy:
        print(f"warning: {busy}")
        header["busy"] = busy
    ceiling = Ceiling.measure(device, warmup=args.warmup, runs=args.runs, sides=sides, rounds=BENCH_ROUNDS)
    try:
        loaded = {}
        if benchmarks.is_dir():
            install_kernels_shim()  # files written for upstream import kernels.benchmark
            loaded = load_files(benchmarks)
            classes, notes = find_classes(loaded)
            if classes:
                print(f"{name}: mode: {bench_classes.SOURCE} of benchmarks/benchmark*.py, reference "
                      f"{bench_classes.REFERENCE}, {counts}")  # fmt: skip
                print("\n".join(f"note: {note}" for note in notes), end="\n" if notes else "")
                workloads = run_classes(classes, kernel, device, warmup=args.warmup, runs=args.runs,
                                        compile=compile_, sides=sides)  # fmt: skip
                bench_classes.assess(workloads, ceiling)
                print(bench_classes.render_table(workloads, device_name, ceiling))
                _profile(sides, device, args.profile_path)
                _report(args, {**header, **ceiling.to_json(), **bench_classes.report(workloads, notes)})
                return 1 if any(w.failed for w in workloads) else 0
        if args.hub:
            print(f"error: {args.kernel} has no Benchmark classes in benchmarks/benchmark*.py to run",
                  file=sys.stderr)  # fmt: skip
            return 1
        # Files of another convention (no bench_* functions) leave the list empty: then the public ops are timed.
        cases = list(_project_cases(benchmarks, kernel, device, loaded)) if benchmarks.is_dir() else []
    except BenchmarkFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    where = "benchmarks/" if cases else "public ops vs torch"
    results = run_cases(iter(cases) if cases else _public_cases(kernel, device), device, warmup=args.warmup,
                        runs=args.runs, compile=compile_, sides=sides)  # fmt: skip
    assess(results, ceiling)
    mode = "functions bench_* of benchmarks/" if cases else "public ops vs torch"
    print(f"{name}: mode: {mode}, {counts}")
    print(render_table(results, device_name, ceiling))
    _profile(sides, device, args.profile_path)
    _report(args, {**header, **ceiling.to_json(), "source": where, "results": [r.to_json() for r in results]})
    return 1 if any(r.error for r in results) or any(r.matches is False for r in results) else 0


def _load_kernel(args: argparse.Namespace) -> ModuleType:
    """The kernel under test: a local build exposed under its package name, or a Hub kernel at a commit."""
    if args.hub:
        import kernel_builder

        repo_id, _, sha = args.kernel.partition("@")
        return kernel_builder.get_kernel(repo_id, revision=sha, trust_remote_code=args.trust_remote_code)
    from kernel_builder.loader.alias import load_as

    return load_as(args.kernel, args.package)


def _report(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Write the ``--json`` report and draw the ``--plot`` picture of it."""
    _write_json(args.json_path, report)
    if args.plot_path:
        from kernel_builder.authoring import bench_plot

        bench_plot.draw(report, Path(args.plot_path))
        print(f"plot: {args.plot_path}")


#: torch's CPU threads when ``--threads`` is not given: one. A benchmark is a comparison, and on one thread it
#: repeats from run to run; a thread pool's barrier waits for whichever thread another process has descheduled
#: (on a loaded 2-CPU machine, torch.relu of 16 MiB took a median 12-24 ms on 2 threads, 4-6 ms on one).
#: ``--threads N`` times a pool of N.
DEFAULT_THREADS = 1

#: The variables that size the CPU thread pools of torch's libraries, read when torch loads.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity), where the system says; else the CPU count."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def pin_threads(threads: int) -> int:
    """Fix torch's CPU threads to ``threads`` (0: :data:`DEFAULT_THREADS`), the same in every run; returns it.

    The thread variables are set too where torch is not loaded yet (the benchmark process's parent sets them
    for it), so that the pools torch's libraries start have that size.
    """
    count = threads or DEFAULT_THREADS
    if "torch" not in sys.modules:
        for variable in THREAD_VARIABLES:
            os.environ[variable] = str(count)
    import torch

    torch.set_num_threads(count)
    try:
        torch.set_num_interop_threads(1)  # benchmarks call ops one at a time
    except RuntimeError:  # the inter-op pool had started already (torch was imported and used earlier)
        pass
    return count


def busy_note() -> str:
    """A warning when the machine was busy as the run began (its 1-minute load average above its CPUs), else
    ``""``: other processes then take turns with the benchmark, and its timings vary with them."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return ""
    cpus = os.cpu_count() or 1
    if load <= cpus:
        return ""
    return (f"the machine is busy: load average {load:.1f} on {cpus} CPUs; other processes share the CPUs with "
            "the benchmark, so its timings vary with their load: compare runs made on an idle machine")  # fmt: skip


def _threads_line(device: str, threads: int) -> str:
    where = "" if device == "cpu" else " (the host side of the calls)"
    return (f"threads: {threads} CPU thread{'s' if threads > 1 else ''}{where}, pinned: torch.set_num_threads("
            f"{threads}), OMP_NUM_THREADS={threads}; this machine has {cpu_count()} CPUs; --threads N to change")  # fmt: skip


#: The baselines ``--compare`` can add.
COMPARE = ("compile",)


def _timer_line(device: str) -> str:
    """How this run times: the timer, graphs for launch-bound calls on CUDA, the cache inputs rotate past."""
    cache = cache_bytes(device)
    where = "L2" if device.startswith("cuda") else "last-level cache"
    how = " (time.perf_counter; no GPU)" if device == "cpu" else ""
    parts = [f"timer: {timer_name(device)}{how}"]
    if device.startswith("cuda"):
        parts.append(f"calls under {LAUNCH_BOUND_US:g} µs replay a CUDA graph of a batch of calls")
    parts.append(f"{where} {format_bytes(cache)}: inputs rotated over buffer sets totalling over 2x it"
                 if cache else "cache size unknown: inputs not rotated")  # fmt: skip
    return "; ".join(parts)


def _profile(sides: list[tuple[str, Callable[[], Any]]] | None, device: str, path: str | None) -> None:
    if sides is None or not path:
        return
    from kernel_builder.authoring import profiling

    kind, rows = profiling.profile(sides, device, Path(path))
    print(profiling.render(kind, rows, device, Path(path)))


def _write_json(path: str | None, report: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


@dataclass(frozen=True)
class BenchOptions:
    """What ``kernel-builder bench`` asks of the benchmark process (see :func:`main`).

    ``threads``: torch's CPU threads (0: :data:`DEFAULT_THREADS`); ``json_file``: the report;
    ``plot``: its picture (:mod:`kernel_builder.authoring.bench_plot`); ``trace``: profile each timed side
    and write the Chrome trace there; ``compare``: more baselines (``"compile"``).
    """

    runs: int = 100
    warmup: int = 10
    threads: int = 0
    json_file: Path | None = None
    plot: Path | None = None
    trace: Path | None = None
    compare: Sequence[str] = ()

    def argv(self) -> list[str]:
        argv = ["--runs", str(self.runs), "--warmup", str(self.warmup), "--threads", str(self.threads)]
        for flag, path in (("--json", self.json_file), ("--plot", self.plot), ("--profile", self.trace)):
            if path is not None:
                argv += [flag, str(path)]
        for baseline in self.compare:
            argv += ["--compare", baseline]
        return argv

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` with the thread variables pinned, so that the pools torch's libraries start have that size."""
        threads = str(self.threads or DEFAULT_THREADS)
        return {**base, **dict.fromkeys(THREAD_VARIABLES, threads)}


def run_benchmarks(
    project: KernelProject,
    *,
    runs: int = 100,
    warmup: int = 10,
    json_file: Path | None = None,
    trace: Path | None = None,
    compare: Sequence[str] = (),
    threads: int = 0,
    plot: Path | None = None,
) -> int:
    """Time ``project``'s built variant in a fresh process (:func:`main`), as its users would load it.

    The variant must be built already (``build/``). The options are :class:`BenchOptions`'. Returns the
    benchmark process's exit status: 1 when a case failed or disagreed with its reference.
    """
    import subprocess

    from kernel_builder.authoring.devtest import pytest_environment

    options = BenchOptions(runs, warmup, threads, json_file, plot, trace, tuple(compare))
    argv = [sys.executable, "-m", "kernel_builder.authoring.bench", str(project.root / "build"), str(project.root),
            "--package", project.py_name, *options.argv()]  # fmt: skip
    env = options.environment(pytest_environment(project))
    return subprocess.run(argv, cwd=project.root, env=env, check=False).returncode


if __name__ == "__main__":  # pragma: no cover
    # Run as `python -m`, this file is `__main__`: use the importable module, whose `Case` benchmarks import.
    from kernel_builder.authoring.bench import main as _main

    sys.exit(_main())
