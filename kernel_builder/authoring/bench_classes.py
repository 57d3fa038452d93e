"""``kernel-builder bench`` for ``Benchmark`` classes: the benchmark files of upstream's ``kernels benchmark``.

Every ``benchmarks/benchmark*.py`` (in name order) is loaded; each subclass of ``Benchmark`` defined there
(ours, :class:`kernel_builder.Benchmark`, or upstream's ``kernels.benchmark.Benchmark``) is a group of
workloads, one per ``benchmark_<w>`` method, classes and methods in name order. A workload gets a fresh
instance with ``kernel`` and ``device`` set, the torch and :mod:`random` seeds when ``seed`` is set, then
``setup_<w>`` (or ``setup``). ``benchmark_<w>`` runs once and ``self.out`` is compared with what
``verify_<w>`` returns, within upstream's tolerance (``torch.allclose`` with ``atol`` 1e-2, ``rtol`` 1e-5);
then more instances are set up for the L2 rotation, and ``benchmark_<w>`` is timed across them, and
``verify_<w>`` too: it is the reference of the speed-up, as upstream's ``Ref`` column. The setup may declare
``self.bytes`` and ``self.flops`` for GB/s and TFLOP/s. Unlike upstream, a failed workload does not stop the others; each is reported, and the exit
status says whether any failed. See ``docs/cli.md``.

Files written for upstream import ``kernels.benchmark``; where the ``kernels`` package is not installed,
:func:`install_kernels_shim` makes that import give our class, in the benchmark process only.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import random
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from kernel_builder.authoring.benchmark import Benchmark
from kernel_builder.authoring.timing import (
    BENCH_ROUNDS,
    TIMING_HEADERS,
    Ceiling,
    Rounds,
    SideFailed,
    Timing,
    cache_bytes,
    compile_reference,
    failure_line,
    measure,
    measure_all,
    render_rows,
    rotation_note,
    rotation_sets,
    side_warnings,
    tensor_bytes,
    timing_cells,
    warning_lines,
)
from kernel_builder.errors import KernelBuilderError

__all__ = [
    "ATOL",
    "RTOL",
    "BenchmarkFileError",
    "Check",
    "WorkloadResult",
    "compare",
    "find_classes",
    "install_kernels_shim",
    "load_files",
    "render_table",
    "run_classes",
    "workloads_of",
]

#: The tolerance of upstream's runner: ``torch.allclose(out, expected, atol=1e-2)`` (its default ``rtol``).
ATOL = 1e-2
RTOL = 1e-5

#: How the report names this mode and the reference of the speed-up.
SOURCE = "Benchmark classes"
REFERENCE = "verify_<workload>"

_MODULE_PREFIX = "_kb_bench_"


# --- the kernels.benchmark shim ---------------------------------------------------------------------------


def _kernels_installed() -> bool:
    try:
        return importlib.util.find_spec("kernels") is not None
    except (ImportError, ValueError):  # an import blocker, or a half-initialized module of that name
        return False


def _missing_kernels_name(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(f"module 'kernels' has no attribute {name!r}")
    raise ImportError(
        f"kernels.{name}: the kernels package is not installed; kernel-builder bench provides only "
        "kernels.Benchmark and kernels.benchmark.Benchmark without it (pip install kernels for the rest)"
    )


def kernels_shim_modules() -> tuple[ModuleType, ModuleType]:
    """Stand-ins for ``kernels`` and ``kernels.benchmark`` whose ``Benchmark`` is :class:`kernel_builder.Benchmark`."""
    package = ModuleType("kernels", "Stand-in of the kernels package inside `kernel-builder bench`.")
    submodule = ModuleType(
        "kernels.benchmark", "Stand-in of kernels.benchmark inside `kernel-builder bench`."
    )
    submodule.__dict__.update(Benchmark=Benchmark, __all__=["Benchmark"])
    # `__path__` makes it a package (so `kernels.benchmark` is its submodule); other names fail with a message.
    package.__dict__.update(Benchmark=Benchmark, benchmark=submodule, __path__=[],
                            __getattr__=_missing_kernels_name)  # fmt: skip
    return package, submodule


def install_kernels_shim() -> bool:
    """Where ``kernels`` cannot be imported, register the stand-ins in ``sys.modules``; True when it did.

    Called by the benchmark process only, before it loads the benchmark files: no other process sees them.
    """
    if "kernels" in sys.modules or _kernels_installed():
        return False
    package, submodule = kernels_shim_modules()
    sys.modules["kernels"] = package
    sys.modules["kernels.benchmark"] = submodule
    return True


def benchmark_bases() -> tuple[type, ...]:
    """Our ``Benchmark``, and upstream's when a benchmark file imported it (a subclass needs that import)."""
    upstream = getattr(sys.modules.get("kernels.benchmark"), "Benchmark", None)
    if isinstance(upstream, type) and upstream is not Benchmark:
        return (Benchmark, upstream)
    return (Benchmark,)


# --- discovery --------------------------------------------------------------------------------------------


class BenchmarkFileError(KernelBuilderError):
    """A benchmark file that could not be loaded; the message names the file and line (exit 1)."""


def _where(exc: BaseException, path: Path) -> str:
    """``benchmark.py:12: NameError: ...``: the deepest line of ``path`` in the traceback, and the error."""
    path = path.resolve()
    line = exc.lineno if isinstance(exc, SyntaxError) and Path(exc.filename or "").resolve() == path else None
    for frame in traceback.extract_tb(exc.__traceback__):
        if Path(frame.filename).resolve() == path:
            line = frame.lineno
    message = f"{type(exc).__name__}: {exc}".splitlines()[0]
    return f"{path.name}:{line}: {message}" if line else f"{path.name}: {message}"


def load_files(
    directory: Path, pattern: str = "benchmark*.py", *, loaded: Mapping[Path, ModuleType] | None = None
) -> dict[Path, ModuleType]:
    """Import each file of ``directory`` that matches ``pattern``, in name order, under a private module name;
    a file in ``loaded`` is not run again (its module is reused).

    Raises :class:`BenchmarkFileError` naming the file (and line) that failed.
    """
    modules = {}
    for path in sorted(directory.glob(pattern)):
        if loaded is not None and path in loaded:
            modules[path] = loaded[path]
            continue
        name = _MODULE_PREFIX + "".join(c if c.isalnum() else "_" for c in path.stem)
        spec = importlib.util.spec_from_file_location(name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look classes up by their module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001  (any error of the user's file becomes one message)
            del sys.modules[name]
            raise BenchmarkFileError(f"benchmarks/{_where(exc, path)}") from exc
        modules[path] = module
    return modules


def workloads_of(cls: type) -> list[str]:
    """The workload names of a class: its methods ``benchmark_<name>``, in name order."""
    return [
        name[len("benchmark_") :]
        for name in sorted(dir(cls))
        if name.startswith("benchmark_") and len(name) > len("benchmark_") and callable(getattr(cls, name))
    ]


def find_classes(modules: Mapping[Path, ModuleType]) -> tuple[list[tuple[Path, type]], list[str]]:
    """The ``Benchmark`` subclasses each file defines (not those it imports), and notes on what is skipped:
    classes without ``benchmark_*`` methods, and files without a class."""
    bases = benchmark_bases()
    found: list[tuple[Path, type]] = []
    notes: list[str] = []
    for path, module in modules.items():
        classes = [
            obj
            for _, obj in sorted(vars(module).items())
            if isinstance(obj, type) and issubclass(obj, bases) and obj not in bases
            and obj.__module__ == module.__name__
        ]  # fmt: skip
        if not classes:
            notes.append(f"benchmarks/{path.name} defines no Benchmark subclass: skipped")
        for cls in classes:
            if workloads_of(cls):
                found.append((path, cls))
            else:
                notes.append(f"{path.name}: {cls.__name__} has no benchmark_* method: skipped")
    return found, notes


# --- running ----------------------------------------------------------------------------------------------


@dataclass
class Check:
    """``self.out`` against ``verify_<w>``'s tensor: within tolerance or not, the largest absolute difference
    (``inf`` where NaN or infinity differ), and why they could not be compared."""

    verified: bool
    max_abs_error: float | None = None
    problem: str = ""


def _describe(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"{str(value.dtype).removeprefix('torch.')} {list(value.shape)} on {value.device}"
    return type(value).__name__


def compare(out: Any, expected: Any, workload: str) -> Check:
    """Upstream's verdict (``torch.allclose``, :data:`ATOL`, :data:`RTOL`, NaN never equal) and the largest error."""
    import torch

    if not isinstance(out, torch.Tensor):
        return Check(False, problem=f"self.out is {_describe(out)}, not a tensor: setup or benchmark_{workload} "
                                    "must set it")  # fmt: skip
    if not isinstance(expected, torch.Tensor):
        return Check(False, problem=f"verify_{workload} returned {_describe(expected)}, not a tensor")
    try:
        verified = bool(torch.allclose(out, expected, rtol=RTOL, atol=ATOL))
    except RuntimeError as exc:  # dtypes, shapes or devices that torch cannot compare
        reason = str(exc).splitlines()[0]
        return Check(False, problem=f"cannot compare self.out ({_describe(out)}) with verify_{workload}'s "
                                    f"result ({_describe(expected)}): {reason}")  # fmt: skip
    wide = torch.complex128 if out.is_complex() or expected.is_complex() else torch.float64
    a, b = out.detach().to(wide), expected.detach().to(wide)
    # Equal values (infinities included) differ by 0; NaN anywhere else counts as an infinite error.
    diff = torch.where(a == b, torch.zeros((), dtype=torch.float64, device=a.device), (a - b).abs())
    if diff.numel() == 0:
        return Check(verified, 0.0)
    largest = float(torch.nan_to_num(diff, nan=math.inf).max())
    return Check(verified, largest)


@dataclass
class WorkloadResult:
    """One workload's outcome: timings of ``benchmark_<w>`` and of its reference ``verify_<w>`` (and, with
    ``--compare compile``, of ``torch.compile(verify_<w>)``), the check, and the bytes and FLOPs the setup
    declared (``self.bytes``, ``self.flops``)."""

    name: str  # Class.workload
    file: str
    kernel: Timing | None = None
    reference: Timing | None = None
    verified: bool | None = None  # None: no verify_<w>
    max_abs_error: float | None = None
    error: str = ""
    bytes: int | None = None
    flops: int | None = None
    compiled: Timing | None = None
    compile_error: str = ""
    rotation: str = ""
    rotated: bool = False  # instances cycled past the cache
    warnings: list[str] = field(default_factory=list)  # implausible or unstable sides (see assess)

    @property
    def speedup(self) -> float | None:
        if self.kernel is None or self.reference is None or self.kernel.median_us <= 0:
            return None
        return self.reference.median_us / self.kernel.median_us

    @property
    def failed(self) -> bool:
        return bool(self.error) or self.verified is False

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["speedup"] = self.speedup
        for side in ("kernel", "reference", "compiled"):
            timing: Timing | None = getattr(self, side)
            data[f"{side}_gbps"] = timing.gbps(self.bytes) if timing else None
            data[f"{side}_tflops"] = timing.tflops(self.flops) if timing else None
        if self.max_abs_error is not None and not math.isfinite(self.max_abs_error):
            data["max_abs_error"] = None  # JSON has no infinity; `error` says why
        return data


def _seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)  # every device's generator, CUDA's included
    random.seed(seed)


def _step(result: WorkloadResult, path: Path, what: str, fn: Callable[[], Any]) -> tuple[bool, Any]:
    """Run one step of a workload; an exception is recorded in ``result`` (first error wins)."""
    try:
        return True, fn()
    except Exception as exc:  # noqa: BLE001  (a failing workload is reported; the others still run)
        result.error = result.error or f"{what}: {_where(exc, path)}"
        return False, None


def _instance(cls: type, workload: str, kernel: Any, device: str) -> tuple[Any, Callable[[], Any]]:
    """A new instance with ``kernel`` and ``device`` set and the seeds planted; its setup, not yet called."""
    instance = cls()
    instance.kernel = kernel
    instance.device = device
    if instance.seed is not None:
        _seed(instance.seed)
    return instance, getattr(instance, f"setup_{workload}", None) or instance.setup


def _declared(instance: Any, attr: str) -> int | None:
    """``self.bytes`` or ``self.flops`` as the setup left it: a positive int, else ``None``."""
    value = getattr(instance, attr, None)
    return (
        int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None
    )


def _rotation(
    result: WorkloadResult, path: Path, cls: type, workload: str, first: Any, kernel: Any, device: str,
    rotate: bool,
) -> list[Any]:  # fmt: skip
    """``first`` and enough more instances, each set up, that their tensors exceed twice the device's cache."""
    cache = cache_bytes(device) if rotate else None
    footprint = max(tensor_bytes(vars(first)), result.bytes or 0)
    count = rotation_sets(footprint, cache)
    result.rotation = rotation_note(count, footprint, cache) if rotate else "not rotated"
    instances = [first]
    for _ in range(count - 1):
        ok, made = _step(result, path, f"{cls.__name__}()", lambda: _instance(cls, workload, kernel, device))
        if not ok or not _step(result, path, made[1].__name__, made[1])[0]:
            break
        instances.append(made[0])
    return instances


def run_workload(
    path: Path, cls: type, workload: str, kernel: Any, device: str, *, warmup: int, runs: int,
    compile: bool = False, sides: list[tuple[str, Callable[[], Any]]] | None = None, rotate: bool = True,
    rounds: Rounds = BENCH_ROUNDS,
) -> WorkloadResult:  # fmt: skip
    """Set up, check and time one workload (the order of upstream's runner; see the module docstring).

    With ``rotate``, more instances are set up after the check, so that the timed calls cycle through buffers
    that exceed the device's cache together (see :mod:`kernel_builder.authoring.timing`).
    """
    result = WorkloadResult(f"{cls.__name__}.{workload}", path.name)
    ok, made = _step(result, path, f"{cls.__name__}()", lambda: _instance(cls, workload, kernel, device))
    if not ok:
        return result
    instance, setup = made
    run = getattr(instance, f"benchmark_{workload}")
    verify = getattr(instance, f"verify_{workload}", None)
    if not _step(result, path, setup.__name__, setup)[0] or not _step(result, path, run.__name__, run)[0]:
        return result
    result.bytes, result.flops = _declared(instance, "bytes"), _declared(instance, "flops")
    if verify is not None:
        ok, expected = _step(result, path, verify.__name__, verify)
        check = compare(instance.out, expected, workload) if ok else Check(False)
        result.verified, result.max_abs_error = check.verified, check.max_abs_error
        if check.problem:
            result.error = result.error or check.problem
        elif check.max_abs_error is not None and not math.isfinite(check.max_abs_error):
            result.error = "NaN or infinity where self.out and the reference differ"
    instances = _rotation(result, path, cls, workload, instance, kernel, device, rotate)
    result.rotated = rotate
    timed = [[getattr(i, f"benchmark_{workload}") for i in instances]]
    names = [run.__name__]
    if verify is not None and not result.error:  # the reference takes turns with the kernel
        timed.append([getattr(i, f"verify_{workload}") for i in instances])
        names.append(verify.__name__)
    try:
        timings = measure_all(timed, device, warmup=warmup, runs=runs, rounds=rounds,
                              warmup_s=rounds.warmup_s)  # fmt: skip
    except SideFailed as failed:
        result.error = result.error or f"{names[failed.index]}: {_where(failed.error, path)}"
        return result
    result.kernel = timings[0]
    if sides is not None:
        sides.append((f"{result.name}: kernel", run))
    if verify is not None and len(timings) > 1:
        result.reference = timings[1]
        if sides is not None:
            sides.append((f"{result.name}: reference", verify))
        if compile:
            _time_compiled(result, getattr(cls, f"verify_{workload}"), instances, device, warmup=warmup,
                           runs=runs, sides=sides, rounds=rounds)  # fmt: skip
    return result


def _time_compiled(
    result: WorkloadResult, verify: Callable[[Any], Any], instances: list[Any], device: str, *, warmup: int,
    runs: int, sides: list[tuple[str, Callable[[], Any]]] | None, rounds: Rounds = BENCH_ROUNDS,
) -> None:  # fmt: skip
    """``torch.compile`` of the class's ``verify_<w>``, called with each instance (the instance is an argument,
    so the rotation does not recompile it); a failure is recorded, not raised."""
    try:
        compiled = compile_reference(verify)
        calls = [functools.partial(compiled, i) for i in instances]
        calls[0]()  # compiles
        result.compiled = measure(calls, device, warmup=warmup, runs=runs, rounds=rounds,
                                  warmup_s=rounds.warmup_s)  # fmt: skip
    except Exception as exc:  # noqa: BLE001  (inductor's errors are many kinds; report the first line)
        result.compile_error = failure_line(exc)
        return
    if sides is not None:
        sides.append((f"{result.name}: torch.compile(verify_<w>)", calls[0]))


def run_classes(
    classes: Iterable[tuple[Path, type]], kernel: Any, device: str, *, warmup: int, runs: int,
    compile: bool = False, sides: list[tuple[str, Callable[[], Any]]] | None = None, rotate: bool = True,
    rounds: Rounds = BENCH_ROUNDS,
) -> list[WorkloadResult]:  # fmt: skip
    """Every workload of every class, in order."""
    return [
        run_workload(
            path,
            cls,
            workload,
            kernel,
            device,
            warmup=warmup,
            runs=runs,
            compile=compile,
            sides=sides,
            rotate=rotate,
            rounds=rounds,
        )  # fmt: skip
        for path, cls in classes
        for workload in workloads_of(cls)
    ]


# --- report -----------------------------------------------------------------------------------------------


def _format_error(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _speedup(reference: Timing | None, side: Timing | None) -> str:
    if reference is None or side is None or side.median_us <= 0:
        return "-"
    return f"{reference.median_us / side.median_us:.2f}x"


HEADERS = ("workload", "side", *TIMING_HEADERS, "vs reference", "verified", "max abs error")


def render_table(results: list[WorkloadResult], device: str, ceiling: Ceiling | None = None) -> str:
    """One row per timed side of a workload (``benchmark_<w>``, ``verify_<w>`` and ``torch.compile`` of it):
    time, spread, rates and speed-up; the kernel's row also says whether it was verified, and the largest error.
    Then the copy ceiling, and notes."""
    copy_gbps = ceiling.gbps if ceiling else None
    rows: list[tuple[str, ...]] = [HEADERS]
    notes = []
    for r in results:
        verified = "-" if r.verified is None else ("yes" if r.verified else "NO")
        rows.append((r.name, "kernel", *timing_cells(r.kernel, r.bytes, r.flops, copy_gbps),
                     _speedup(r.reference, r.kernel), verified, _format_error(r.max_abs_error)))  # fmt: skip
        if r.reference is not None:
            rows.append((r.name, REFERENCE, *timing_cells(r.reference, r.bytes, r.flops, copy_gbps), "1.00x",
                         "", ""))  # fmt: skip
        if r.compiled is not None:
            rows.append((r.name, f"torch.compile({REFERENCE})",
                         *timing_cells(r.compiled, r.bytes, r.flops, copy_gbps), _speedup(r.reference, r.compiled),
                         "", ""))  # fmt: skip
            notes.append(f"{r.name}: kernel {_speedup(r.compiled, r.kernel)} the speed of torch.compile("
                         f"{REFERENCE})")  # fmt: skip
        elif r.compile_error:
            notes.append(f"{r.name}: torch.compile({REFERENCE}) failed: {r.compile_error}")
        if r.rotation:
            notes.append(f"{r.name}: {r.rotation}")
        notes += [
            f"{r.name}: {t.note}" for t in (r.kernel, r.reference, r.compiled) if t is not None and t.note
        ]
    if ceiling is not None:
        rows.append(ceiling.row(len(HEADERS)))
    lines = [f"device: {device}", *render_rows(rows)]
    lines += [f"{r.name}: error: {r.error}" for r in results if r.error]
    lines += notes
    lines.append(f"verified: torch.allclose(self.out, verify_<workload>(), atol={ATOL:g}, rtol={RTOL:g}); "
                 "-: no verify_<workload>")  # fmt: skip
    lines += warning_lines([(r.name, r.warnings) for r in results], ceiling)
    return "\n".join(lines)


def assess(results: Iterable[WorkloadResult], ceiling: Ceiling | None) -> None:
    """Fill each result's ``warnings``: sides faster than the copy ceiling allows (with ``self.bytes``), and
    sides whose rounds did not settle."""
    copy_gbps = ceiling.gbps if ceiling else None
    for r in results:
        sides = [("kernel", r.kernel), (REFERENCE, r.reference), (f"torch.compile({REFERENCE})", r.compiled)]
        r.warnings = side_warnings(sides, r.bytes, copy_gbps, rotated=r.rotated)


def report(results: list[WorkloadResult], notes: list[str]) -> dict[str, Any]:
    """The ``--json`` fields of this mode (the caller adds the device and torch)."""
    return {
        "source": SOURCE,
        "reference": REFERENCE,
        "tolerance": {"atol": ATOL, "rtol": RTOL},
        "skipped": notes,
        "results": [r.to_json() for r in results],
    }
