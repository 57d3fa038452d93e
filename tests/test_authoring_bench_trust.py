"""A bench you can trust: rounds until the medians settle (else a warning with the spread), a warning for a rate
beyond the measured copy bandwidth (and why), pinned threads (kernel_builder.authoring.bench and .timing).

No assertion here rests on how fast this machine is: the implausible case does no work at all, and the unstable
one sleeps whole milliseconds in every other round."""

from __future__ import annotations

import json
import random
import time
import types
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from kernel_builder.authoring.bench import (  # noqa: E402  (after the skip: bench needs torch)
    BenchOptions,
    Case,
    assess,
    main,
    render_table,
    run_cases,
)
from kernel_builder.authoring.timing import (  # noqa: E402
    IMPLAUSIBLE_FACTOR,
    Ceiling,
    Rounds,
    Timing,
    implausible_note,
    measure_all,
    unstable_note,
)

NUMEL = 1 << 20  # 4 MiB of float32


def ceiling() -> Ceiling:
    return Ceiling.measure("cpu", warmup=1, runs=5)


def test_a_kernel_that_does_no_work_is_flagged_implausible() -> None:
    """The "kernel" returns a result it computed once: no call reads or writes the 8 MiB it declares, so its GB/s
    is far beyond any copy, and bench says so, naming the likely causes."""
    cached = torch.relu(torch.randn(NUMEL))
    case = Case(
        run=lambda x: cached,
        reference=lambda x: torch.relu(x),
        bytes=2 * NUMEL * 4,
        inputs=lambda: (torch.randn(NUMEL),),
        check=False,
        name="cached",
    )
    (result,) = run_cases(iter([case]), "cpu", warmup=2, runs=10, rounds=Rounds(limit=3))
    copy = ceiling()
    assess([result], copy)
    kernel_warnings = [w for w in result.warnings if w.startswith("kernel: implausible: ")]
    assert len(kernel_warnings) == 1, result.warnings
    (warning,) = kernel_warnings
    assert (
        "of the measured copy bandwidth" in warning and "no op moves its bytes faster than a copy" in warning
    )
    # Its inputs rotate past the cache, so the cause left is a call that does not do the work it declares.
    assert "returns a view, a cached or precomputed result, evaluates lazily" in warning
    table = render_table([result], "cpu", copy)
    assert f"warning: cached: {warning}" in table.splitlines()
    assert result.to_json()["warnings"] == result.warnings


def test_the_cause_named_depends_on_the_rotation() -> None:
    """Without rotation the likely cause is the cache; a rate within the factor of the copy is not flagged."""
    fast = Timing(median_us=1.0, q1_us=1.0, q3_us=1.0, runs=3)
    nbytes = 100_000  # 100 GB/s at 1 µs
    unrotated = implausible_note(fast, nbytes, copy_gbps=10.0, rotated=False)
    assert unrotated.startswith("implausible: 100.0 GB/s is 1000% of the measured copy bandwidth (10.0 GB/s)")
    assert "served from the cache" in unrotated and "inputs=" in unrotated
    assert "did not do the work" in implausible_note(fast, nbytes, copy_gbps=10.0, rotated=True)
    assert implausible_note(fast, nbytes, copy_gbps=100.0 / IMPLAUSIBLE_FACTOR, rotated=False) == ""
    assert implausible_note(fast, None, copy_gbps=10.0, rotated=False) == ""  # no bytes declared: no rate


def test_a_timing_that_does_not_settle_is_flagged_unstable() -> None:
    """Injected variance: every call of the kernel's odd rounds sleeps 1-3 ms (random), the even ones do not. Its
    round medians never agree, so after the last round it is reported unstable, with the range and the spread;
    the reference, timed in turns with it, is not what is flagged."""
    rng = random.Random(0)
    calls = {"n": 0}
    runs = 8

    def jittery(x: Any) -> Any:
        calls["n"] += 1
        if (calls["n"] // runs) % 2:  # warm-up aside, alternate rounds
            time.sleep(rng.uniform(0.001, 0.003))
        return x

    case = Case(run=jittery, reference=lambda x: x, inputs=lambda: (torch.zeros(4),), name="jitter")
    rounds = Rounds(window=3, limit=5, spread=0.05)
    (result,) = run_cases(iter([case]), "cpu", warmup=0, runs=runs, rounds=rounds)
    assert result.kernel is not None and result.kernel.stable is False
    assert result.kernel.rounds == 5 and len(result.kernel.round_medians_us) == 5
    assert result.kernel.spread is not None and result.kernel.spread > 0.05
    assess([result], None)
    (warning,) = [w for w in result.warnings if w.startswith("kernel: ")]
    assert warning.startswith("kernel: unstable: the medians of 5 rounds of 8 samples ranged ")
    assert "rerun on an idle machine" in warning
    table = render_table([result], "cpu")
    assert "5 rounds UNSTABLE" in table and f"warning: jitter: {warning}" in table


def test_sides_take_turns_and_stop_once_settled() -> None:
    """The sides' rounds interleave (kernel, reference, kernel, ...), and a side whose every call takes the same
    time settles after the window: no more rounds than that."""
    order: list[str] = []

    def side(name: str) -> Any:
        return lambda: order.append(name)

    rounds = Rounds(window=3, limit=10, spread=float("inf"))  # any spread settles: stop after the window
    kernel, reference = measure_all(
        [side("k"), side("r")], "cpu", warmup=1, runs=2, rounds=rounds, warmup_s=0
    )
    assert order == ["k", "r", *(["k", "k", "r", "r"] * 3)]
    assert (kernel.rounds, reference.rounds) == (3, 3) and kernel.stable is True
    assert (kernel.runs, kernel.samples) == (2, 6)  # runs per round; the samples of the three rounds
    assert unstable_note(kernel) == ""


def test_threads_are_pinned_and_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """The benchmark process pins torch's CPU threads (1 unless --threads says otherwise) and says so; the JSON
    keeps the count. The parent passes the thread variables to the process it starts."""
    module = types.ModuleType("fake")
    module.relu = lambda x: torch.clamp(x, min=0)  # type: ignore[attr-defined]
    module.__all__ = ["relu"]  # type: ignore[attr-defined]
    monkeypatch.setattr("kernel_builder.loader.get_local_kernel", lambda path: module)
    monkeypatch.setattr("kernel_builder.loader.alias.expose_as", lambda module, name: None)
    before = torch.get_num_threads()
    report = tmp_path / "r.json"
    try:
        code = main([str(tmp_path / "build"), str(tmp_path), "--package", "fake", "--runs", "2", "--warmup", "0",
                     "--threads", "1", "--json", str(report)])  # fmt: skip
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    assert code == 0
    out = capsys.readouterr().out
    assert "threads: 1 CPU thread, pinned: torch.set_num_threads(1), OMP_NUM_THREADS=1" in out
    data = json.loads(report.read_text())
    assert data["threads"] == 1
    assert all(r["kernel"]["rounds"] >= 3 and r["kernel"]["stable"] is not None for r in data["results"])
    env = BenchOptions(threads=3).environment({"PATH": "/bin"})
    assert env == {"PATH": "/bin", "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "3"}
    assert BenchOptions().environment({})["OMP_NUM_THREADS"] == "1"


def test_a_busy_machine_is_said_to_be(monkeypatch: pytest.MonkeyPatch) -> None:
    """A load average above the CPUs as the run begins: a warning, since other processes then share the CPUs."""
    import os

    from kernel_builder.authoring.bench import busy_note

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (9.5, 8.0, 4.0))
    assert busy_note().startswith("the machine is busy: load average 9.5 on 2 CPUs")
    monkeypatch.setattr(os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    assert busy_note() == ""
