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
    LAUNCH_BOUND_US,
    TIMING_HEADERS,
    Ceiling,
    Timing,
    cache_bytes,
    compile_reference,
    failure_line,
    format_bytes,
    grouped_notes,
    measure,
    pick_device,
    render_rows,
    rotation_note,
    rotation_sets,
    tensor_bytes,
    timer_name,
    timing_cells,
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
) -> list[Result]:
    """Time each case (see :mod:`kernel_builder.authoring.timing`); with ``compile``, ``torch.compile`` of its
    reference too. ``sides`` collects a call of each timed side, for ``--profile``."""
    cache = cache_bytes(device)
    results = []
    for case in cases:
        result = Result(case.name, bytes=case.bytes, flops=case.flops)
        if case.compares:
            result.extra["compares"] = case.compares
        try:
            sets, result.extra["rotation"] = _buffer_sets(case, cache)
            kernel = _bind(case.run, sets)
            result.kernel = measure(kernel, device, warmup=warmup, runs=runs)
            _collect(sides, f"{case.name}: kernel", kernel)
            if case.reference is not None:
                reference = _bind(case.reference, sets)
                result.reference = measure(reference, device, warmup=warmup, runs=runs)
                _collect(sides, f"{case.name}: reference", reference)
                if case.check:
                    result.matches = _matches(kernel[0](), reference[0]())
                if compile:
                    _time_compiled(
                        result, case.reference, sets, device, warmup=warmup, runs=runs, sides=sides
                    )
        except Exception as exc:  # noqa: BLE001  (one failing case is reported; the others still run)
            result.error = failure_line(exc)
        results.append(result)
    return results


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
) -> None:
    """Compile the reference (at its first call) and time it; a failure is recorded, not raised: the compiled
    baseline is optional, and a machine without a working compiler still times the rest."""
    try:
        compiled = _bind(compile_reference(reference), sets)
        compiled[0]()  # compiles
        result.compiled = measure(compiled, device, warmup=warmup, runs=runs)
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
    return "\n".join([f"device: {device}", *render_rows(rows), *grouped_notes(notes)])


def main(argv: list[str] | None = None) -> int:
    """The benchmark process: ``python -m kernel_builder.authoring.bench BUILD_DIR PROJECT_ROOT [options]``.

    The mode: the ``Benchmark`` classes of ``benchmarks/benchmark*.py`` when there are any
    (:mod:`kernel_builder.authoring.bench_classes`), else the functions ``bench_*`` of ``benchmarks/*.py``, else
    the public functions against their torch namesakes.
    """
    parser = argparse.ArgumentParser(prog="python -m kernel_builder.authoring.bench")
    parser.add_argument("build_dir")
    parser.add_argument("root")
    parser.add_argument("--package", required=True)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--json", dest="json_path")
    parser.add_argument("--profile", dest="profile_path")
    parser.add_argument("--compare", action="append", choices=COMPARE, default=[])
    args = parser.parse_args(argv)

    import torch

    from kernel_builder.loader.alias import load_as

    kernel = load_as(args.build_dir, args.package)
    device = pick_device()
    device_name = torch.cuda.get_device_name() if device == "cuda" else device
    header = {"device": device, "torch": torch.__version__}
    counts = f"{args.runs} runs after {args.warmup} warm-up"
    compile_ = "compile" in args.compare
    sides: list[tuple[str, Callable[[], Any]]] | None = [] if args.profile_path else None
    benchmarks = Path(args.root) / "benchmarks"
    print(_timer_line(device))
    ceiling = Ceiling.measure(device, warmup=args.warmup, runs=args.runs, sides=sides)
    try:
        loaded = {}
        if benchmarks.is_dir():
            install_kernels_shim()  # files written for upstream import kernels.benchmark
            loaded = load_files(benchmarks)
            classes, notes = find_classes(loaded)
            if classes:
                print(f"{args.package}: mode: {bench_classes.SOURCE} of benchmarks/benchmark*.py, reference "
                      f"{bench_classes.REFERENCE}, {counts}")  # fmt: skip
                print("\n".join(f"note: {note}" for note in notes), end="\n" if notes else "")
                workloads = run_classes(classes, kernel, device, warmup=args.warmup, runs=args.runs,
                                        compile=compile_, sides=sides)  # fmt: skip
                print(bench_classes.render_table(workloads, device_name, ceiling))
                _profile(sides, device, args.profile_path)
                _write_json(args.json_path, {**header, **ceiling.to_json(),
                                             **bench_classes.report(workloads, notes)})  # fmt: skip
                return 1 if any(w.failed for w in workloads) else 0
        # Files of another convention (no bench_* functions) leave the list empty: then the public ops are timed.
        cases = list(_project_cases(benchmarks, kernel, device, loaded)) if benchmarks.is_dir() else []
    except BenchmarkFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    where = "benchmarks/" if cases else "public ops vs torch"
    results = run_cases(iter(cases) if cases else _public_cases(kernel, device), device, warmup=args.warmup,
                        runs=args.runs, compile=compile_, sides=sides)  # fmt: skip
    mode = "functions bench_* of benchmarks/" if cases else "public ops vs torch"
    print(f"{args.package}: mode: {mode}, {counts}")
    print(render_table(results, device_name, ceiling))
    _profile(sides, device, args.profile_path)
    _write_json(args.json_path, {**header, **ceiling.to_json(), "source": where,
                                 "results": [r.to_json() for r in results]})  # fmt: skip
    return 1 if any(r.error for r in results) or any(r.matches is False for r in results) else 0


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


def run_benchmarks(
    project: KernelProject,
    *,
    runs: int = 100,
    warmup: int = 10,
    json_file: Path | None = None,
    trace: Path | None = None,
    compare: Sequence[str] = (),
) -> int:
    """Time ``project``'s built variant in a fresh process (:func:`main`), as its users would load it.

    The variant must be built already (``build/``). ``trace``: profile each timed side and write the Chrome
    trace there; ``compare``: more baselines (``"compile"``). Returns the benchmark process's exit status: 1
    when a case failed or disagreed with its reference.
    """
    import subprocess

    from kernel_builder.authoring.devtest import pytest_environment

    argv = [sys.executable, "-m", "kernel_builder.authoring.bench", str(project.root / "build"), str(project.root),
            "--package", project.py_name, "--runs", str(runs), "--warmup", str(warmup)]  # fmt: skip
    if json_file is not None:
        argv += ["--json", str(json_file)]
    if trace is not None:
        argv += ["--profile", str(trace)]
    for baseline in compare:
        argv += ["--compare", baseline]
    return subprocess.run(argv, cwd=project.root, env=pytest_environment(project), check=False).returncode


if __name__ == "__main__":  # pragma: no cover
    # Run as `python -m`, this file is `__main__`: use the importable module, whose `Case` benchmarks import.
    from kernel_builder.authoring.bench import main as _main

    sys.exit(_main())
