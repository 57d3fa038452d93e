"""kernel_builder.authoring.timing: the timer, the statistics and the table layout both bench modes share."""

from __future__ import annotations

import time

import pytest

from kernel_builder.authoring.timing import Timing, format_time, measure, pick_device, render_rows

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
