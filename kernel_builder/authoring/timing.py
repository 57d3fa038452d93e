"""What both forms of ``kernel-builder bench`` share: the device, the timer, the statistics and the table layout.

The functions ``bench_*`` (:mod:`kernel_builder.authoring.bench`) and the ``Benchmark`` classes
(:mod:`kernel_builder.authoring.bench_classes`) are timed the same way, so their numbers compare:

- warm-up calls first;
- **L2 rotation**: a case that can make its inputs again gets enough distinct buffer sets that together they
  exceed twice the device's cache (a CUDA GPU's L2, the CPU's last-level cache), and the calls cycle through
  them, so a small input is not timed from a cache the previous call warmed;
- on a CUDA device, **CUDA events**; a call shorter than :data:`LAUNCH_BOUND_US` is launch-bound, so a batch
  of calls is captured in a **CUDA graph** and each sample is one replay divided by the batch (when capture
  fails, the same batch runs eagerly and the timing says why); longer calls are timed one by one;
- elsewhere the wall clock (``time.perf_counter``, after the device finishes its queued work): on the CPU, the
  "CPU timer";
- the median, the quartiles, the minimum and the maximum of the samples.

:func:`copy_ceiling` times ``out.copy_(x)`` the same way: the bandwidth an op that reads and writes every byte
once can hope for on this device.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "LAUNCH_BOUND_US",
    "Ceiling",
    "MAX_SETS",
    "Timing",
    "cache_bytes",
    "compile_reference",
    "copy_ceiling",
    "format_bytes",
    "format_time",
    "grouped_notes",
    "measure",
    "pick_device",
    "render_rows",
    "rotation_note",
    "rotation_sets",
    "tensor_bytes",
    "timer_name",
    "timing_cells",
    "TIMING_HEADERS",
]

#: A call (estimated from eager CUDA-event timings) shorter than this is launch-bound: it is timed in a graph.
LAUNCH_BOUND_US = 100.0
#: A graph replay lasts about this long: long enough that the events' resolution (~0.5 µs) does not matter.
GRAPH_BATCH_US = 2000.0
#: At most this many calls in one captured graph (unless the rotation needs more, one per buffer set).
MAX_GRAPH_CALLS = 1000
#: At most this many buffer sets; a case whose sets are so small that more would be needed is rotated short
#: of the target, and its timing says so.
MAX_SETS = 512


@dataclass
class Timing:
    """Microseconds per call: the median, quartiles, minimum and maximum of ``runs`` samples.

    A sample is one call, or one replay of a graph of ``calls`` calls divided by ``calls``. ``sets`` is the
    number of buffer sets the calls cycled through (1: no rotation); ``method`` says how it was timed, and
    ``note`` why not as planned (a graph capture that failed, a rotation short of its target).
    """

    median_us: float
    q1_us: float
    q3_us: float
    runs: int
    min_us: float | None = None
    max_us: float | None = None
    calls: int = 1
    sets: int = 1
    method: str = ""
    note: str = ""

    def gbps(self, nbytes: int | None) -> float | None:
        return None if not nbytes or self.median_us <= 0 else nbytes / (self.median_us * 1e-6) / 1e9

    def tflops(self, flops: int | None) -> float | None:
        return None if not flops or self.median_us <= 0 else flops / (self.median_us * 1e-6) / 1e12


def pick_device() -> str:
    """The device benchmarks run on: a CUDA (or ROCm) GPU, else an XPU, else Apple's MPS, else the CPU."""
    import torch

    if torch.cuda.is_available():
        return "cuda"
    xpu = getattr(torch, "xpu", None)
    if xpu is not None and xpu.is_available():
        return "xpu"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def timer_name(device: str) -> str:
    """How samples are taken on ``device``, for the output's header."""
    if device.startswith("cuda"):
        return "CUDA events"
    if device == "cpu":
        return "CPU timer"
    return f"wall clock after {device} synchronize"


def _cpu_cache_bytes(root: Path = Path("/sys/devices/system/cpu/cpu0/cache")) -> int | None:
    """The largest data or unified cache of CPU 0 (Linux sysfs), or ``None`` where it is not published."""
    sizes = []
    for index in root.glob("index*"):
        try:
            kind = (index / "type").read_text().strip()
            text = (index / "size").read_text().strip().upper()
        except OSError:
            continue
        if kind == "Instruction" or not text:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes) if sizes else None


def cache_bytes(device: str) -> int | None:
    """The cache a repeated call could be served from: a CUDA GPU's L2, the CPU's last-level cache."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size) or None
    if device == "cpu":
        return _cpu_cache_bytes()
    return None


def tensor_bytes(values: Any) -> int:
    """Bytes of the distinct tensor storages among ``values`` (a tensor, or a tuple, list or dict of them)."""
    import torch

    seen: dict[int, int] = {}

    def visit(value: Any) -> None:
        if isinstance(value, torch.Tensor):
            storage = value.untyped_storage()
            seen[storage.data_ptr()] = storage.nbytes()
        elif isinstance(value, (tuple, list)):
            for item in value:
                visit(item)
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)

    visit(values)
    return sum(seen.values())


def rotation_sets(footprint: int, cache: int | None) -> int:
    """How many buffer sets of ``footprint`` bytes exceed twice ``cache`` together (at most :data:`MAX_SETS`)."""
    if not cache or footprint <= 0:
        return 1
    return max(1, min(MAX_SETS, math.ceil(2 * cache / footprint)))


def rotation_note(count: int, footprint: int, cache: int | None) -> str:
    """``2 buffer sets of 32 MiB rotated (64 MiB, over 2x the 32 MiB cache)``, or why not."""
    if not cache:
        return "not rotated: the device's cache size is unknown"
    total = count * footprint
    if count == 1 and total >= 2 * cache:
        return f"one buffer set of {format_bytes(footprint)}, over 2x the {format_bytes(cache)} cache: not rotated"
    reach = "over" if total >= 2 * cache else f"capped at {MAX_SETS} sets, short of"
    return (f"{count} buffer set{'s' if count > 1 else ''} of {format_bytes(footprint)} rotated "
            f"({format_bytes(total)}, {reach} 2x the {format_bytes(cache)} cache)")  # fmt: skip


def failure_line(exc: BaseException) -> str:
    """One line for a failed call: its type and first line, and, when that line only introduces what follows (as
    ``torch.compile``'s ``backend='inductor' raised:`` does), the next line; then the innermost cause's first
    line, when the error has a cause."""
    lines = [part.strip() for part in f"{type(exc).__name__}: {exc}".splitlines() if part.strip()]
    cause = exc
    while cause.__cause__ is not None and cause.__cause__ is not cause:
        cause = cause.__cause__
    if cause is not exc:
        inner = f"{type(cause).__name__}: {cause}".strip().splitlines()[0]
        return f"{lines[0].rstrip(':')}: {inner}"
    return f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]


def compile_reference(reference: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.compile`` of the reference: the baseline of what the compiler fuses from the same torch code."""
    import torch

    return torch.compile(reference)


def _synchronizer(device: str) -> Callable[[], None]:
    """Waits for the device's queued work, so that the wall clock covers it (nothing to wait for on the CPU)."""
    import torch

    if device.startswith("cuda"):
        return torch.cuda.synchronize
    if device.startswith("xpu"):
        return torch.xpu.synchronize
    if device.startswith("mps"):
        return torch.mps.synchronize
    return lambda: None


def _summary(samples: list[float], **fields: Any) -> Timing:
    samples = sorted(samples)
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return Timing(statistics.median(samples), quartiles[0], quartiles[2], len(samples), min_us=samples[0],
                  max_us=samples[-1], **fields)  # fmt: skip


def _cycle(fns: Sequence[Callable[[], Any]], count: int, start: int = 0) -> None:
    for i in range(start, start + count):
        fns[i % len(fns)]()


def _wall_samples(fns: Sequence[Callable[[], Any]], device: str, runs: int) -> list[float]:
    synchronize = _synchronizer(device)
    samples = []
    for i in range(runs):
        synchronize()
        begin = time.perf_counter()
        fns[i % len(fns)]()
        synchronize()
        samples.append((time.perf_counter() - begin) * 1e6)
    return samples


def _cuda_samples(fn: Callable[[], Any], runs: int, per: int = 1) -> list[float]:
    """Microseconds per call of ``runs`` calls of ``fn`` (which makes ``per`` calls), each between two events."""
    import torch

    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))  # type: ignore[no-untyped-call]
              for _ in range(runs)]  # fmt: skip
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return [float(start.elapsed_time(end)) * 1e3 / per for start, end in events]


def _capture(fns: Sequence[Callable[[], Any]], calls: int) -> Callable[[], Any]:
    """A CUDA graph of ``calls`` calls cycling through ``fns``; its ``replay``. Raises when capture fails."""
    import torch

    stream = torch.cuda.Stream()  # type: ignore[no-untyped-call]
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        _cycle(fns, len(fns))  # first-call work (allocations, lazy init) outside the capture
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _cycle(fns, calls)
    return graph.replay


def _recover() -> None:
    """After a failed capture: wait for the device, and clear the error the capture left behind (it is not
    sticky, but the next check would report it)."""
    import torch

    for _ in range(2):
        try:
            torch.cuda.synchronize()
            return
        except RuntimeError:
            continue


def _measure_cuda(fns: Sequence[Callable[[], Any]], *, runs: int, graphs: bool) -> Timing:
    import torch

    sets = len(fns)
    # Eager estimate, one call per sample: decides whether the calls are launch-bound.
    estimate = statistics.median(_cuda_samples(lambda: _cycle(fns, 1), max(3, min(sets, 20))))
    if not graphs or estimate >= LAUNCH_BOUND_US:
        samples: list[float] = []
        for i in range(runs):  # each call alone, cycling through the sets
            samples += _cuda_samples(fns[i % sets], 1)
        return _summary(samples, sets=sets, method="CUDA events, one call each")
    calls = max(sets, min(MAX_GRAPH_CALLS, math.ceil(GRAPH_BATCH_US / max(estimate, 0.01))))
    try:
        replay = _capture(fns, calls)
        replay()
        torch.cuda.synchronize()
        return _summary(_cuda_samples(replay, runs, calls), calls=calls, sets=sets,
                        method=f"CUDA graph of {calls} calls")  # fmt: skip
    except Exception as exc:  # noqa: BLE001  (a capture the op does not support: time it eagerly, and say why)
        _recover()
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        samples = _cuda_samples(lambda: _cycle(fns, calls), runs, calls)
        return _summary(samples, calls=calls, sets=sets, method=f"eager batches of {calls} calls",
                        note=f"CUDA graph capture failed ({reason}); timed eagerly")  # fmt: skip


def measure(
    fn: Callable[[], Any] | Sequence[Callable[[], Any]],
    device: str,
    *,
    warmup: int,
    runs: int,
    graphs: bool = True,
) -> Timing:
    """Time ``fn``, or the calls of ``fn`` in turn when it is a sequence (one per buffer set).

    ``warmup`` untimed calls first (cycling through the sets), then ``runs`` samples (see the module docstring);
    ``graphs=False`` never captures a CUDA graph.
    """
    fns = [fn] if callable(fn) else list(fn)
    _cycle(fns, warmup)
    if device.startswith("cuda"):
        return _measure_cuda(fns, runs=runs, graphs=graphs)
    return _summary(_wall_samples(fns, device, runs), sets=len(fns), method=timer_name(device))


def copy_ceiling(device: str, *, warmup: int, runs: int) -> tuple[Timing, int, Callable[[], Any]]:
    """``out.copy_(x)`` of a float32 buffer (256 MiB on a GPU, 4 MiB elsewhere), rotated like any case:
    its timing, the bytes one copy moves (read plus write) and one copy, to profile."""
    import torch

    numel = (64 if device.startswith("cuda") else 1) * 1024 * 1024
    x = torch.empty(numel, device=device).uniform_()
    moved = 2 * x.nbytes
    sets = rotation_sets(moved, cache_bytes(device))
    pairs = [(x if i == 0 else x.clone(), torch.empty_like(x)) for i in range(sets)]
    fns = [lambda out=out, src=src: out.copy_(src) for src, out in pairs]
    return measure(fns, device, warmup=warmup, runs=runs), moved, fns[0]


def format_bytes(n: int) -> str:
    """``16 MiB``, ``512 KiB``, ``37 B``."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def format_time(timing: Timing | None) -> str:
    """``12.3 µs (±0.4)``: the median and half the interquartile range; ``-`` when nothing was timed."""
    if timing is None:
        return "-"
    return f"{timing.median_us:.1f} µs (±{(timing.q3_us - timing.q1_us) / 2:.1f})"


#: The columns :func:`timing_cells` fills.
TIMING_HEADERS = ("median", "min", "max", "GB/s", "% copy", "TFLOP/s", "timed as")


def _rate(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def timing_cells(
    timing: Timing | None, nbytes: int | None, flops: int | None, copy_gbps: float | None
) -> tuple[str, ...]:
    """One row's :data:`TIMING_HEADERS`: time, spread, rates (``-`` where undeclared) and how it was timed."""
    if timing is None:
        return ("-",) * len(TIMING_HEADERS)
    gbps = timing.gbps(nbytes)
    share = None if gbps is None or not copy_gbps else 100 * gbps / copy_gbps
    how = timing.method + (f", {timing.sets} sets" if timing.sets > 1 else "")
    return (format_time(timing), _rate(timing.min_us), _rate(timing.max_us), _rate(gbps), _rate(share, 0),
            _rate(timing.tflops(flops), 2), how)  # fmt: skip


def grouped_notes(notes: Sequence[tuple[str, str]]) -> list[str]:
    """``name: note`` lines, in order; the names that share one note share its line (``a, b: note``)."""
    names: dict[str, list[str]] = {}
    for name, note in notes:
        if name not in names.setdefault(note, []):
            names[note].append(name)
    return [f"{', '.join(who)}: {note}" for note, who in names.items()]


def render_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    """The rows as lines of left-aligned columns, two spaces apart (the first row is the header)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]


@dataclass
class Ceiling:
    """The device's measured copy bandwidth, ``out.copy_(x)``: the ceiling of an op that reads and writes every
    byte once. It is a row of the table and ``copy`` in the JSON."""

    timing: Timing
    bytes: int

    @property
    def gbps(self) -> float | None:
        return self.timing.gbps(self.bytes)

    @classmethod
    def measure(
        cls, device: str, *, warmup: int, runs: int, sides: list[tuple[str, Callable[[], Any]]] | None = None
    ) -> Ceiling:
        """Time the copy (see :func:`copy_ceiling`); ``sides`` collects one call of it, for ``--profile``."""
        timing, moved, fn = copy_ceiling(device, warmup=warmup, runs=runs)
        if sides is not None:
            sides.append(("copy ceiling: out.copy_(x)", fn))
        return cls(timing, moved)

    def row(self, columns: int) -> tuple[str, ...]:
        cells = ("copy", f"out.copy_(x), {format_bytes(self.bytes // 2)}",
                 *timing_cells(self.timing, self.bytes, None, self.gbps))  # fmt: skip
        return (*cells, *[""] * (columns - len(cells)))

    def to_json(self) -> dict[str, Any]:
        return {"copy": {"bytes": self.bytes, "gbps": self.gbps, "timing": asdict(self.timing)}}
