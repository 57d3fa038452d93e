"""kernel_builder.authoring.timing: the timer, the statistics and the table layout both bench modes share."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from kernel_builder.authoring.timing import (
    MAX_SETS,
    TIMING_HEADERS,
    Ceiling,
    Timing,
    _cpu_cache_bytes,
    failure_line,
    format_time,
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

torch = pytest.importorskip("torch")


def test_measure_counts_runs_and_orders_quartiles() -> None:
    calls = []
    timing = measure(lambda: calls.append(1), "cpu", warmup=3, runs=20)
    assert len(calls) == 23 and timing.runs == 20
    assert 0 <= timing.q1_us <= timing.median_us <= timing.q3_us


def test_measure_times_each_call() -> None:
    timing = measure(lambda: time.sleep(0.002), "cpu", warmup=0, runs=3)
    assert timing.median_us >= 2000 and timing.runs == 3


def test_gbps_from_bytes_and_median() -> None:
    assert Timing(median_us=1000.0, q1_us=900.0, q3_us=1100.0, runs=5).gbps(2_000_000) == pytest.approx(2.0)
    assert Timing(1000.0, 900.0, 1100.0, 5).gbps(None) is None


def test_format_time_is_median_and_half_the_interquartile_range() -> None:
    assert format_time(Timing(12.34, 10.0, 11.0 + 3.0, 4)) == "12.3 µs (±2.0)"
    assert format_time(None) == "-"


def test_rows_are_aligned_columns() -> None:
    assert render_rows([("a", "bb", "c"), ("ccc", "d", "")]) == ["a    bb  c", "ccc  d"]


def test_the_device_is_cuda_with_a_gpu_else_the_cpu() -> None:
    # The test machines are Linux: neither an XPU nor Apple's MPS.
    assert pick_device() == ("cuda" if torch.cuda.is_available() else "cpu")


def test_a_sequence_of_calls_is_cycled_through_one_per_sample() -> None:
    calls: list[int] = []
    fns = [lambda i=i: calls.append(i) for i in range(3)]
    timing = measure(fns, "cpu", warmup=2, runs=5)
    assert calls == [0, 1, 0, 1, 2, 0, 1]  # 2 warm-up calls, then 5 timed ones, each the next set
    assert (timing.sets, timing.calls, timing.runs) == (3, 1, 5) and timing.method == "CPU timer"


def test_min_and_max_bracket_the_quartiles() -> None:
    timing = measure(lambda: time.sleep(0.0005), "cpu", warmup=0, runs=9)
    assert timing.min_us is not None and timing.max_us is not None
    assert timing.min_us <= timing.q1_us <= timing.median_us <= timing.q3_us <= timing.max_us


@pytest.mark.parametrize(
    ("footprint", "cache", "sets"),
    [
        (2 << 20, 50 << 20, 50),  # 1 MiB in + 1 MiB out on an H100 (50 MiB L2): 100 MiB over 50 sets
        (3 << 20, 50 << 20, 34),  # rounded up: the sets together exceed twice the cache
        (128 << 20, 50 << 20, 1),  # already larger: nothing to rotate
        (16, 50 << 20, MAX_SETS),  # tiny: capped
        (2 << 20, None, 1),  # cache unknown
    ],
)
def test_rotation_exceeds_twice_the_cache(footprint: int, cache: int | None, sets: int) -> None:
    assert rotation_sets(footprint, cache) == sets


def test_rotation_note_says_how_many_sets_and_why() -> None:
    assert (
        rotation_note(50, 2 << 20, 50 << 20)
        == "50 buffer sets of 2 MiB rotated (100 MiB, over 2x the 50 MiB cache)"
    )
    assert (
        rotation_note(1, 128 << 20, 50 << 20)
        == "one buffer set of 128 MiB, over 2x the 50 MiB cache: not rotated"
    )
    assert rotation_note(MAX_SETS, 16, 50 << 20).endswith(
        f"capped at {MAX_SETS} sets, short of 2x the 50 MiB cache)"
    )
    assert rotation_note(1, 16, None) == "not rotated: the device's cache size is unknown"


def test_cpu_cache_is_the_largest_data_or_unified_cache(tmp_path: Path) -> None:
    for index, (kind, size) in enumerate([("Data", "48K"), ("Instruction", "64M"), ("Unified", "2048K"),
                                           ("Unified", "36M")]):  # fmt: skip
        (tmp_path / f"index{index}").mkdir()
        (tmp_path / f"index{index}" / "type").write_text(kind + "\n")
        (tmp_path / f"index{index}" / "size").write_text(size + "\n")
    assert _cpu_cache_bytes(tmp_path) == 36 << 20
    assert _cpu_cache_bytes(tmp_path / "missing") is None


def test_tensor_bytes_counts_each_storage_once() -> None:
    x = torch.empty(1024)
    y = torch.empty(10, dtype=torch.float64)
    assert tensor_bytes((x, x[:10], [y, {"again": x}], 3, "text")) == 4096 + 80


def test_rates_and_cells() -> None:
    timing = Timing(2.0, 1.5, 2.5, 10, min_us=1.0, max_us=4.0, sets=50, method="CUDA graph of 500 calls")
    assert timing.gbps(4_000_000) == pytest.approx(2000.0) and timing.tflops(6_000_000) == pytest.approx(3.0)
    assert timing.tflops(None) is None
    cells = dict(zip(TIMING_HEADERS, timing_cells(timing, 4_000_000, 6_000_000, copy_gbps=2500.0)))
    assert cells == {"median": "2.0 µs (±0.5)", "min": "1.0", "max": "4.0", "GB/s": "2000.0", "% copy": "80",
                     "TFLOP/s": "3.00", "timed as": "CUDA graph of 500 calls, 50 sets"}  # fmt: skip
    assert timing_cells(timing, None, None, None)[3:6] == ("-", "-", "-")
    assert timing_cells(None, 1, 1, 1.0) == ("-",) * len(TIMING_HEADERS)


def test_notes_that_say_the_same_share_a_line() -> None:
    notes = [("a", "same"), ("b", "other"), ("c", "same"), ("a", "same")]
    assert grouped_notes(notes) == ["a, c: same", "b: other"]


def test_the_copy_ceiling_is_a_row_and_json() -> None:
    sides: list[tuple[str, Any]] = []
    ceiling = Ceiling.measure("cpu", warmup=1, runs=3, sides=sides)
    assert ceiling.bytes == 2 * 4 * 1024 * 1024 and ceiling.gbps is not None and ceiling.gbps > 0
    row = ceiling.row(12)
    assert len(row) == 12 and row[:2] == ("copy", "out.copy_(x), 4 MiB") and row[6] == "100"  # % of itself
    assert [label for label, _ in sides] == ["copy ceiling: out.copy_(x)"]
    data = ceiling.to_json()["copy"]
    assert data["bytes"] == ceiling.bytes and data["timing"]["runs"] == 3


def test_the_timer_is_named() -> None:
    assert timer_name("cpu") == "CPU timer" and timer_name("cuda") == "CUDA events"


def test_a_failure_that_only_introduces_its_cause_names_the_cause() -> None:
    try:
        try:
            raise OSError("c++: not found")
        except OSError as inner:
            raise RuntimeError("backend='inductor' raised:\n(long text)") from inner
    except RuntimeError as outer:
        assert failure_line(outer) == "RuntimeError: backend='inductor' raised: OSError: c++: not found"
    assert failure_line(ValueError("bad\nmore")) == "ValueError: bad"
    # torch.compile's BackendCompilerFailed has no __cause__: its message's second line says what went wrong
    assert failure_line(RuntimeError("backend='inductor' raised:\nInvalidCxxCompiler: no compiler\n")) == (
        "RuntimeError: backend='inductor' raised: InvalidCxxCompiler: no compiler"
    )
