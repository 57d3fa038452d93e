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
- the median, the quartiles, the minimum and the maximum of the samples;
- for ``kernel-builder bench``, **rounds** (:class:`Rounds`): the samples come in rounds, the sides of a case
  taking turns, repeated until the round medians settle, or reported unstable with their spread; and a side
  whose GB/s exceeds the copy bandwidth is flagged implausible (:func:`implausible_note`).

:func:`copy_ceiling` times ``out.copy_(x)`` the same way: the bandwidth an op that reads and writes every byte
once can hope for on this device.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "BENCH_ROUNDS",
    "IMPLAUSIBLE_FACTOR",
    "LAUNCH_BOUND_US",
    "Ceiling",
    "MAX_SETS",
    "ONE_ROUND",
    "Rounds",
    "SideFailed",
    "Timing",
    "cache_bytes",
    "compile_reference",
    "copy_ceiling",
    "format_bytes",
    "format_time",
    "grouped_notes",
    "implausible_note",
    "measure",
    "measure_all",
    "pick_device",
    "render_rows",
    "rotation_note",
    "rotation_sets",
    "side_warnings",
    "tensor_bytes",
    "timer_name",
    "timing_cells",
    "TIMING_HEADERS",
    "unstable_note",
    "warning_lines",
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
    """Microseconds per call: the median, quartiles, minimum and maximum of ``runs`` samples (per round).

    A sample is one call, or one replay of a graph of ``calls`` calls divided by ``calls``. ``sets`` is the
    number of buffer sets the calls cycled through (1: no rotation); ``method`` says how it was timed, and
    ``note`` why not as planned (a graph capture that failed, a rotation short of its target).

    Taken in ``rounds`` (see :class:`Rounds`): ``round_medians_us`` are the medians of each round, ``spread``
    the relative spread ``(max - min) / median`` of those the verdict ``stable`` rests on (the last
    :attr:`Rounds.window` rounds when stable, all of them when not); the other fields summarise the samples of
    the stable window (of all rounds when unstable).
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
    rounds: int = 1
    samples: int | None = None  # the samples summarised (runs per round times the rounds kept)
    round_medians_us: list[float] = field(default_factory=list)
    spread: float | None = None  # relative spread of the round medians the verdict rests on
    stable: bool | None = None  # None: a single round, not judged

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


def _wall_samples(fns: Sequence[Callable[[], Any]], device: str, runs: int, start: int = 0) -> list[float]:
    synchronize = _synchronizer(device)
    samples = []
    for i in range(start, start + runs):
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


@dataclass
class _Sampler:
    """How one side is sampled, decided once: ``take(n)`` gives ``n`` more samples (µs per call), continuing the
    rotation where the previous round left it."""

    take: Callable[[int], list[float]]
    calls: int = 1
    method: str = ""
    note: str = ""


def _rotating(sample: Callable[[int, int], list[float]]) -> Callable[[int], list[float]]:
    """``take(n)`` over ``sample(n, start)``, each round starting where the last one stopped."""
    position = [0]

    def take(n: int) -> list[float]:
        samples = sample(n, position[0])
        position[0] += n
        return samples

    return take


def _cuda_sampler(fns: Sequence[Callable[[], Any]], *, graphs: bool) -> _Sampler:
    import torch

    sets = len(fns)
    # Eager estimate, one call per sample: decides whether the calls are launch-bound.
    estimate = statistics.median(_cuda_samples(lambda: _cycle(fns, 1), max(3, min(sets, 20))))
    if not graphs or estimate >= LAUNCH_BOUND_US:

        def each(n: int, start: int) -> list[float]:
            samples: list[float] = []
            for i in range(start, start + n):  # each call alone, cycling through the sets
                samples += _cuda_samples(fns[i % sets], 1)
            return samples

        return _Sampler(_rotating(each), method="CUDA events, one call each")
    calls = max(sets, min(MAX_GRAPH_CALLS, math.ceil(GRAPH_BATCH_US / max(estimate, 0.01))))
    try:
        replay = _capture(fns, calls)
        replay()
        torch.cuda.synchronize()
        return _Sampler(lambda n: _cuda_samples(replay, n, calls), calls, f"CUDA graph of {calls} calls")
    except Exception as exc:  # noqa: BLE001  (a capture the op does not support: time it eagerly, and say why)
        _recover()
        reason = f"{type(exc).__name__}: {exc}".splitlines()[0]
        return _Sampler(lambda n: _cuda_samples(lambda: _cycle(fns, calls), n, calls), calls,
                        f"eager batches of {calls} calls",
                        f"CUDA graph capture failed ({reason}); timed eagerly")  # fmt: skip


def _sampler(fns: Sequence[Callable[[], Any]], device: str, *, graphs: bool) -> _Sampler:
    if device.startswith("cuda"):
        return _cuda_sampler(fns, graphs=graphs)
    return _Sampler(
        _rotating(lambda n, start: _wall_samples(fns, device, n, start)), method=timer_name(device)
    )


#: Warm-up lasts at least this long (when any is asked for): the first calls fault pages in, fill caches and wake
#: the clock up, and a fixed count of fast calls is over before that settles.
WARMUP_S = 0.05


@dataclass(frozen=True)
class Rounds:
    """Repeat until stable: samples are taken in rounds of ``runs``; after at least ``window`` rounds, the timing
    is stable once the medians of the last ``window`` rounds lie within ``spread`` of each other (relative to
    their median). At most ``limit`` rounds; a timing still moving then is reported unstable, with its spread.

    Every side of a case takes its rounds in turn (kernel, reference, kernel, ...), so that a change in the
    machine's load (a neighbour's job, the clock) falls on both sides, not on one.
    """

    window: int = 3
    limit: int = 10
    spread: float = 0.05

    @property
    def warmup_s(self) -> float:
        """The warm-up's least duration: :data:`WARMUP_S` when timing in rounds, none for a single round."""
        return WARMUP_S if self.limit > 1 else 0.0


#: One round, no verdict: :func:`measure`'s default.
ONE_ROUND = Rounds(window=1, limit=1, spread=math.inf)
#: What ``kernel-builder bench`` uses.
BENCH_ROUNDS = Rounds()


def _relative_spread(medians: Sequence[float]) -> float:
    middle = statistics.median(medians)
    return (max(medians) - min(medians)) / middle if middle > 0 else 0.0


def _window_stable(medians: Sequence[float], rounds: Rounds) -> bool:
    return len(medians) >= rounds.window and _relative_spread(medians[-rounds.window :]) <= rounds.spread


class SideFailed(Exception):
    """A call of side ``index`` of :func:`measure_all` raised ``error`` (the sides are timed together, so the
    caller needs to know whose call it was)."""

    def __init__(self, index: int, error: BaseException) -> None:
        super().__init__(f"side {index}: {error}")
        self.index = index
        self.error = error


def _warm(fns: Sequence[Callable[[], Any]], device: str, warmup: int, warmup_s: float) -> None:
    """``warmup`` calls, then more (cycling through the sets) until ``warmup_s`` has passed since the first."""
    begin = time.perf_counter()
    _cycle(fns, warmup)
    if warmup <= 0 or warmup_s <= 0:
        return
    synchronize = _synchronizer(device)
    synchronize()
    done = warmup
    while time.perf_counter() - begin < warmup_s and done < 100 * warmup:
        fns[done % len(fns)]()
        synchronize()
        done += 1


def measure_all(
    sides: Sequence[Callable[[], Any] | Sequence[Callable[[], Any]]],
    device: str,
    *,
    warmup: int,
    runs: int,
    graphs: bool = True,
    rounds: Rounds = BENCH_ROUNDS,
    warmup_s: float = WARMUP_S,
) -> list[Timing]:
    """Time each side (a call, or one call per buffer set), the sides' rounds of ``runs`` samples interleaved,
    until every side is stable or ``rounds.limit`` rounds are done (see :class:`Rounds`).

    Raises :class:`SideFailed` when a call raises.
    """
    all_fns = [[fn] if callable(fn) else list(fn) for fn in sides]
    samplers = []
    for index, fns in enumerate(all_fns):
        try:
            _warm(fns, device, warmup, warmup_s)
            samplers.append(_sampler(fns, device, graphs=graphs))
        except Exception as exc:  # noqa: BLE001  (the caller reports it against the side)
            raise SideFailed(index, exc) from exc
    taken: list[list[list[float]]] = [[] for _ in samplers]
    for done in range(1, rounds.limit + 1):
        for index, sampler in enumerate(samplers):
            try:
                taken[index].append(sampler.take(runs))
            except Exception as exc:  # noqa: BLE001
                raise SideFailed(index, exc) from exc
        medians = [[statistics.median(r) for r in side] for side in taken]
        if done >= rounds.window and all(_window_stable(m, rounds) for m in medians):
            break
    return [
        _rounds_summary(side, sampler, len(fns), rounds)
        for side, sampler, fns in zip(taken, samplers, all_fns)
    ]


def _rounds_summary(taken: list[list[float]], sampler: _Sampler, sets: int, rounds: Rounds) -> Timing:
    medians = [statistics.median(r) for r in taken]
    judged = rounds.limit > 1
    stable = _window_stable(medians, rounds) if judged else None
    kept = taken[-rounds.window :] if stable else taken
    spread = _relative_spread(medians[-rounds.window :] if stable else medians) if judged else None
    samples = [s for r in kept for s in r]
    timing = _summary(samples, calls=sampler.calls, sets=sets, method=sampler.method, note=sampler.note,
                      rounds=len(taken), round_medians_us=medians if judged else [], spread=spread,
                      stable=stable)  # fmt: skip
    timing.samples, timing.runs = len(samples), len(taken[0])
    return timing


def measure(
    fn: Callable[[], Any] | Sequence[Callable[[], Any]],
    device: str,
    *,
    warmup: int,
    runs: int,
    graphs: bool = True,
    rounds: Rounds = ONE_ROUND,
    warmup_s: float = 0.0,
) -> Timing:
    """Time ``fn``, or the calls of ``fn`` in turn when it is a sequence (one per buffer set).

    ``warmup`` untimed calls first (cycling through the sets), then ``runs`` samples (see the module docstring),
    in one round unless ``rounds`` says otherwise; ``graphs=False`` never captures a CUDA graph.
    """
    try:
        (timing,) = measure_all([fn], device, warmup=warmup, runs=runs, graphs=graphs, rounds=rounds,
                                warmup_s=warmup_s)  # fmt: skip
    except SideFailed as failed:
        raise failed.error from None
    return timing


def unstable_note(timing: Timing) -> str:
    """Why a timing is not to be trusted as it stands: its round medians did not settle, or ``""``."""
    if timing.stable is not False or not timing.round_medians_us:
        return ""
    low, high = min(timing.round_medians_us), max(timing.round_medians_us)
    return (f"unstable: the medians of {timing.rounds} rounds of {timing.runs} samples "
            f"ranged {low:.1f}-{high:.1f} µs (spread {100 * (timing.spread or 0):.0f}%, over the "
            f"{100 * BENCH_ROUNDS.spread:.0f}% asked); the machine's load or clock changed while it ran: rerun on "
            "an idle machine, or with more --runs")  # fmt: skip


#: A side whose GB/s exceeds the measured copy bandwidth by this factor is flagged as implausible.
IMPLAUSIBLE_FACTOR = 1.2


def implausible_note(timing: Timing, nbytes: int | None, copy_gbps: float | None, *, rotated: bool) -> str:
    """Why a side's GB/s cannot be right, or ``""``: no op moves the bytes it declares faster than a plain copy
    moves them, so beyond :data:`IMPLAUSIBLE_FACTOR` times the copy bandwidth the time does not measure what the
    bytes say. ``rotated``: whether its inputs were cycled past the cache."""
    gbps = timing.gbps(nbytes)
    if gbps is None or not copy_gbps or gbps <= IMPLAUSIBLE_FACTOR * copy_gbps:
        return ""
    causes = (
        "its data were served from the cache: it has one buffer set, not rotated past the cache (give the Case "
        "inputs= so that bench rotates them)"
        if not rotated
        else "part of its data stayed in the cache (an output buffer the allocator hands back on every call, "
        "which rotating the inputs does not move), or the call did not do the work it declares: it returns a "
        "view, a cached or precomputed result, evaluates lazily, or returns before the device finishes"
    )
    return (f"implausible: {gbps:.1f} GB/s is {100 * gbps / copy_gbps:.0f}% of the measured copy bandwidth "
            f"({copy_gbps:.1f} GB/s), and no op moves its bytes faster than a copy. Likely {causes}; or bytes= "
            "overstates what one call moves; or the copy itself was timed slow (on a busy machine a pool of CPU "
            "threads waits for the one descheduled: compare with --threads 1)")  # fmt: skip


def side_warnings(
    sides: Sequence[tuple[str, Timing | None]], nbytes: int | None, copy_gbps: float | None, *, rotated: bool
) -> list[str]:
    """``side: note`` for each timed side that is implausible (:func:`implausible_note`) or unstable
    (:func:`unstable_note`)."""
    warnings = []
    for label, timing in sides:
        if timing is None:
            continue
        for note in (implausible_note(timing, nbytes, copy_gbps, rotated=rotated), unstable_note(timing)):
            if note:
                warnings.append(f"{label}: {note}")
    return warnings


def warning_lines(named: Sequence[tuple[str, Sequence[str]]], ceiling: Ceiling | None) -> list[str]:
    """``warning: case: side: ...`` for each warning, the copy ceiling's own instability included."""
    lines = [f"warning: {name}: {w}" for name, warnings in named for w in warnings]
    if ceiling is not None:
        lines += [f"warning: copy: {w}" for w in side_warnings([("out.copy_(x)", ceiling.timing)], None, None,
                                                                rotated=True)]  # fmt: skip
    return lines


def copy_ceiling(
    device: str, *, warmup: int, runs: int, rounds: Rounds = ONE_ROUND
) -> tuple[Timing, int, Callable[[], Any]]:
    """``out.copy_(x)`` of a float32 buffer (256 MiB on a GPU, 4 MiB elsewhere), rotated like any case:
    its timing, the bytes one copy moves (read plus write) and one copy, to profile."""
    import torch

    numel = (64 if device.startswith("cuda") else 1) * 1024 * 1024
    x = torch.empty(numel, device=device).uniform_()
    moved = 2 * x.nbytes
    sets = rotation_sets(moved, cache_bytes(device))
    pairs = [(x if i == 0 else x.clone(), torch.empty_like(x)) for i in range(sets)]
    fns = [lambda out=out, src=src: out.copy_(src) for src, out in pairs]
    return (
        measure(fns, device, warmup=warmup, runs=runs, rounds=rounds, warmup_s=rounds.warmup_s),
        moved,
        fns[0],
    )


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
    if timing.stable is not None:
        how += f", {timing.rounds} rounds" + ("" if timing.stable else " UNSTABLE")
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
        cls, device: str, *, warmup: int, runs: int, sides: list[tuple[str, Callable[[], Any]]] | None = None,
        rounds: Rounds = ONE_ROUND,
    ) -> Ceiling:  # fmt: skip
        """Time the copy (see :func:`copy_ceiling`); ``sides`` collects one call of it, for ``--profile``."""
        timing, moved, fn = copy_ceiling(device, warmup=warmup, runs=runs, rounds=rounds)
        if sides is not None:
            sides.append(("copy ceiling: out.copy_(x)", fn))
        return cls(timing, moved)

    def row(self, columns: int) -> tuple[str, ...]:
        cells = ("copy", f"out.copy_(x), {format_bytes(self.bytes // 2)}",
                 *timing_cells(self.timing, self.bytes, None, self.gbps))  # fmt: skip
        return (*cells, *[""] * (columns - len(cells)))

    def to_json(self) -> dict[str, Any]:
        return {"copy": {"bytes": self.bytes, "gbps": self.gbps, "timing": asdict(self.timing)}}
