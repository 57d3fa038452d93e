"""What both forms of ``kernel-builder bench`` share: the device, the timer, the statistics and the table layout.

The functions ``bench_*`` (:mod:`kernel_builder.authoring.bench`) and the ``Benchmark`` classes
(:mod:`kernel_builder.authoring.bench_classes`) are timed the same way, so their numbers compare: warm-up
calls first, then each call timed alone, CUDA events on a CUDA device and the wall clock elsewhere (after the
device finishes its queued work), reported as the median and the interquartile range.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Timing", "format_time", "measure", "pick_device", "render_rows"]


@dataclass
class Timing:
    """Microseconds of ``runs`` timed calls: the median and the first and third quartiles."""

    median_us: float
    q1_us: float
    q3_us: float
    runs: int

    def gbps(self, nbytes: int | None) -> float | None:
        return None if not nbytes or self.median_us <= 0 else nbytes / (self.median_us * 1e-6) / 1e9


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


def _synchronizer(device: str) -> Callable[[], None]:
    """Waits for the device's queued work, so that the wall clock covers it (nothing to wait for on the CPU)."""
    import torch

    if device.startswith("xpu"):
        return torch.xpu.synchronize
    if device.startswith("mps"):
        return torch.mps.synchronize
    return lambda: None


def _timer(device: str) -> Callable[[Callable[[], Any]], float]:
    """Seconds of one call: CUDA events around it on a CUDA device, the wall clock elsewhere."""
    import torch

    if device.startswith("cuda"):

        def cuda_time(fn: Callable[[], Any]) -> float:
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            start.record()
            fn()
            end.record()
            end.synchronize()
            return float(start.elapsed_time(end)) / 1e3

        return cuda_time

    synchronize = _synchronizer(device)

    def wall_time(fn: Callable[[], Any]) -> float:
        synchronize()
        begin = time.perf_counter()
        fn()
        synchronize()
        return time.perf_counter() - begin

    return wall_time


def measure(fn: Callable[[], Any], device: str, *, warmup: int, runs: int) -> Timing:
    """Call ``fn`` ``warmup`` times untimed, then ``runs`` times, each timed alone."""
    timer = _timer(device)
    for _ in range(warmup):
        fn()
    samples = sorted(timer(fn) * 1e6 for _ in range(runs))
    quartiles = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return Timing(statistics.median(samples), quartiles[0], quartiles[2], runs)


def format_time(timing: Timing | None) -> str:
    """``12.3 µs (±0.4)``: the median and half the interquartile range; ``-`` when nothing was timed."""
    if timing is None:
        return "-"
    return f"{timing.median_us:.1f} µs (±{(timing.q3_us - timing.q1_us) / 2:.1f})"


def render_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    """The rows as lines of left-aligned columns, two spaces apart (the first row is the header)."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
