"""``kernel-builder bench``: time a kernel's ops against a reference, the way its users would call them.

Three modes, the first that applies: the ``Benchmark`` classes of ``benchmarks/benchmark*.py`` (upstream's
form, run by :mod:`kernel_builder.authoring.bench_classes`); the functions ``bench_*(kernel, device)`` of
``benchmarks/*.py``, each returning a :class:`Case`; else one case per public function (``__all__``) that has
a namesake in ``torch`` or ``torch.nn.functional``, called on one large float tensor. Each case is warmed up,
then run many times (:mod:`kernel_builder.authoring.timing`: CUDA events on a GPU, the wall clock on the CPU).
The table shows the median and the interquartile spread, and GB/s where the case knows how many bytes one call
moves. See ``docs/cli.md``.

Benchmarks run in a fresh process (``python -m kernel_builder.authoring.bench``), like ``kernel-builder test``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Mapping
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
from kernel_builder.authoring.timing import Timing, format_time, measure, pick_device, render_rows

if TYPE_CHECKING:
    from kernel_builder.config.model import KernelProject

__all__ = ["Case", "Result", "measure", "render_table", "run_benchmarks"]


@dataclass
class Case:
    """One benchmark: ``run`` (the kernel) and optionally ``reference``, each called with no arguments.

    ``bytes`` is what one call reads and writes (for GB/s). ``check`` compares the two results (the default
    when both return tensors: ``torch.testing.assert_close``). ``compares`` says what each side does (printed
    under the table and kept in the JSON): a kernel writing into a preallocated ``out`` against a reference
    that allocates its result is not a like-for-like comparison, and the reader should see which it is.
    """

    run: Callable[[], Any]
    reference: Callable[[], Any] | None = None
    bytes: int | None = None
    check: bool = True
    name: str = ""
    compares: str = ""


@dataclass
class Result:
    name: str
    kernel: Timing | None = None
    reference: Timing | None = None
    bytes: int | None = None
    matches: bool | None = None
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["kernel_gbps"] = self.kernel.gbps(self.bytes) if self.kernel else None
        data["reference_gbps"] = self.reference.gbps(self.bytes) if self.reference else None
        return data


def _public_cases(kernel: ModuleType, device: str) -> Iterator[Case]:
    """Each public function with a torch namesake, on a 16 Mi (GPU) or 4 Mi (CPU) element float32 tensor."""
    import torch

    x = torch.randn((16 if device.startswith("cuda") else 4) * 1024 * 1024, device=device)
    for name in getattr(kernel, "__all__", ()):
        fn = getattr(kernel, name, None)
        if not callable(fn) or isinstance(fn, type):
            continue
        reference = getattr(torch, name, None) or getattr(torch.nn.functional, name, None)
        try:
            out = fn(x)
        except Exception as exc:  # noqa: BLE001  (a function that wants other arguments: report it, time nothing)
            yield Case(run=_raise(exc), name=name)
            continue
        elementwise = isinstance(out, torch.Tensor) and out.shape == x.shape
        yield Case(
            run=_call(fn, x),
            reference=_call(reference, x) if callable(reference) else None,
            bytes=x.nbytes + out.nbytes if elementwise else None,
            name=name,
            compares=_public_compares(name, reference),
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


def _call(fn: Callable[[Any], Any], x: Any) -> Callable[[], Any]:
    return lambda: fn(x)


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


def run_cases(cases: Iterator[Case], device: str, *, warmup: int, runs: int) -> list[Result]:
    results = []
    for case in cases:
        result = Result(case.name, bytes=case.bytes)
        if case.compares:
            result.extra["compares"] = case.compares
        try:
            result.kernel = measure(case.run, device, warmup=warmup, runs=runs)
            if case.reference is not None:
                result.reference = measure(case.reference, device, warmup=warmup, runs=runs)
                if case.check:
                    result.matches = _matches(case.run(), case.reference())
        except Exception as exc:  # noqa: BLE001  (one failing case is reported; the others still run)
            result.error = f"{type(exc).__name__}: {exc}".splitlines()[0]
        results.append(result)
    return results


def _fmt_gbps(timing: Timing | None, nbytes: int | None) -> str:
    gbps = timing.gbps(nbytes) if timing else None
    return "-" if gbps is None else f"{gbps:.1f}"


def render_table(results: list[Result], device: str) -> str:
    """The terminal table: one row per case, kernel next to reference."""
    rows = [("case", "kernel", "GB/s", "reference", "ref GB/s", "speedup", "matches")]
    for r in results:
        if r.error:
            rows.append((r.name, f"error: {r.error}", "", "", "", "", ""))
            continue
        speedup = (
            f"{r.reference.median_us / r.kernel.median_us:.2f}x"
            if r.kernel and r.reference and r.kernel.median_us > 0 else "-"
        )  # fmt: skip
        matches = "-" if r.matches is None else ("yes" if r.matches else "NO")
        rows.append((r.name, format_time(r.kernel), _fmt_gbps(r.kernel, r.bytes), format_time(r.reference),
                     _fmt_gbps(r.reference, r.bytes), speedup, matches))  # fmt: skip
    notes = [f"{r.name}: {r.extra['compares']}" for r in results if r.extra.get("compares")]
    return "\n".join([f"device: {device}", *render_rows(rows), *notes])


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
    args = parser.parse_args(argv)

    import torch

    from kernel_builder.loader.alias import load_as

    kernel = load_as(args.build_dir, args.package)
    device = pick_device()
    device_name = torch.cuda.get_device_name() if device == "cuda" else device
    header = {"device": device, "torch": torch.__version__}
    counts = f"{args.runs} runs after {args.warmup} warm-up"
    benchmarks = Path(args.root) / "benchmarks"
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
                workloads = run_classes(classes, kernel, device, warmup=args.warmup, runs=args.runs)
                print(bench_classes.render_table(workloads, device_name))
                _write_json(args.json_path, {**header, **bench_classes.report(workloads, notes)})
                return 1 if any(w.failed for w in workloads) else 0
        # Files of another convention (no bench_* functions) leave the list empty: then the public ops are timed.
        cases = list(_project_cases(benchmarks, kernel, device, loaded)) if benchmarks.is_dir() else []
    except BenchmarkFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    where = "benchmarks/" if cases else "public ops vs torch"
    results = run_cases(iter(cases) if cases else _public_cases(kernel, device), device, warmup=args.warmup,
                        runs=args.runs)  # fmt: skip
    mode = "functions bench_* of benchmarks/" if cases else "public ops vs torch"
    print(f"{args.package}: mode: {mode}, {counts}")
    print(render_table(results, device_name))
    _write_json(args.json_path, {**header, "source": where, "results": [r.to_json() for r in results]})
    return 1 if any(r.error for r in results) or any(r.matches is False for r in results) else 0


def _write_json(path: str | None, report: dict[str, Any]) -> None:
    if path:
        Path(path).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


def run_benchmarks(
    project: KernelProject, *, runs: int = 100, warmup: int = 10, json_file: Path | None = None
) -> int:
    """Time ``project``'s built variant in a fresh process (:func:`main`), as its users would load it.

    The variant must be built already (``build/``). Returns the benchmark process's exit status: 1 when a case
    failed or disagreed with its reference.
    """
    import subprocess

    from kernel_builder.authoring.devtest import pytest_environment

    argv = [sys.executable, "-m", "kernel_builder.authoring.bench", str(project.root / "build"), str(project.root),
            "--package", project.py_name, "--runs", str(runs), "--warmup", str(warmup)]  # fmt: skip
    if json_file is not None:
        argv += ["--json", str(json_file)]
    return subprocess.run(argv, cwd=project.root, env=pytest_environment(project), check=False).returncode


if __name__ == "__main__":  # pragma: no cover
    # Run as `python -m`, this file is `__main__`: use the importable module, whose `Case` benchmarks import.
    from kernel_builder.authoring.bench import main as _main

    sys.exit(_main())
