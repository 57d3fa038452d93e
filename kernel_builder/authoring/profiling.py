"""``kernel-builder bench --profile``: a ``torch.profiler`` trace of what was timed, and its costliest work.

Every timed side of every case (the kernel, the reference, the compiled reference, the copy) runs a few more
times under ``torch.profiler``, each inside a ``record_function`` span named after it, so the trace shows which
device kernels each side launched. The trace is written as Chrome trace JSON (open it in
https://ui.perfetto.dev or ``chrome://tracing``). The summary lists the device kernels with the most total
device time; without a GPU there are no device kernels, and it lists the CPU ops with the most self CPU time
instead, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["PROFILE_CALLS", "TOP", "Hot", "profile"]

#: Calls of each side under the profiler: enough to see every kernel, few enough for a small trace.
PROFILE_CALLS = 5
#: Rows of the summary.
TOP = 10


@dataclass(frozen=True)
class Hot:
    """One row of the summary: a device kernel (or a CPU op), how often it ran, its total and mean time."""

    name: str
    calls: int
    total_us: float
    mean_us: float


#: The name of the ``record_function`` span around each side's calls begins with this.
SPAN_PREFIX = "bench: "


def _device_kernels(events: Any) -> list[Hot]:
    rows = []
    for event in events:
        if getattr(event.device_type, "name", str(event.device_type)) == "CPU":
            continue
        total = float(getattr(event, "self_device_time_total", 0) or getattr(event, "device_time_total", 0))
        # A CUDA profile also records each of our spans as a GPU annotation covering the side's kernels: it is
        # not a kernel, and ranking it would count that time twice.
        if total > 0 and not event.key.startswith(SPAN_PREFIX):
            rows.append(Hot(event.key, event.count, total, total / max(event.count, 1)))
    return rows


def _cpu_ops(events: Any) -> list[Hot]:
    rows = []
    for event in events:
        total = float(event.self_cpu_time_total)
        # The spans around each side are ours, not work: leave them out of the ranking.
        if total > 0 and not event.key.startswith(SPAN_PREFIX):
            rows.append(Hot(event.key, event.count, total, total / max(event.count, 1)))
    return rows


def profile(
    sides: Sequence[tuple[str, Callable[[], Any]]],
    device: str,
    trace: Path,
    *,
    calls: int = PROFILE_CALLS,
    top: int = TOP,
) -> tuple[str, list[Hot]]:
    """Run each side ``calls`` times under the profiler, write the Chrome trace to ``trace``.

    Returns what the summary ranks (``"device kernels"`` or ``"CPU ops"``) and its ``top`` rows.
    """
    import torch
    from torch.profiler import ProfilerActivity, record_function

    cuda = device.startswith("cuda")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with torch.profiler.profile(activities=activities) as prof:
        for label, fn in sides:
            with record_function(f"{SPAN_PREFIX}{label}"):
                for _ in range(calls):
                    fn()
            if cuda:
                torch.cuda.synchronize()
    trace.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(trace))
    events = prof.key_averages()
    kind, rows = ("device kernels", _device_kernels(events)) if cuda else ("CPU ops", _cpu_ops(events))
    rows.sort(key=lambda hot: hot.total_us, reverse=True)
    return kind, rows[:top]


def render(kind: str, rows: Sequence[Hot], device: str, trace: Path) -> str:
    """The summary printed under the table."""
    if device.startswith("cuda"):
        title = f"top {kind} by total device time"
    else:
        title = f"top {kind} by self CPU time (no GPU: these are CPU ops, not device kernels)"
    lines = [f"profile: {trace} (Chrome trace JSON: open in https://ui.perfetto.dev or chrome://tracing)",
             f"{title}, {PROFILE_CALLS} calls of each side:"]  # fmt: skip
    if not rows:
        lines.append(f"  (none recorded{': is CUPTI available?' if device.startswith('cuda') else ''})")
    width = max((len(r.name[:70]) for r in rows), default=0)
    for r in rows:
        lines.append(f"  {r.name[:70].ljust(width)}  {r.calls:5d} calls  {r.total_us:10.1f} µs total  "
                     f"{r.mean_us:9.2f} µs each")  # fmt: skip
    return "\n".join(lines)
