"""kernel_builder.authoring.bench: cases from benchmarks/ and from public functions, the table (fast, CPU); then
``kernel-builder bench`` on examples/relu built for the CPU, with ``--profile`` and ``--compare compile`` (slow)."""

from __future__ import annotations

import json
import shutil
import types
from pathlib import Path
from typing import Any

import pytest
from build_runs import CliRun, run_cli
from cpu_projects import built_example

torch = pytest.importorskip("torch")

from kernel_builder.authoring.bench import (  # noqa: E402  (after the skip: bench needs torch)
    Case,
    Result,
    _project_cases,
    _public_cases,
    render_table,
    run_cases,
)
from kernel_builder.authoring.timing import Timing  # noqa: E402


def fake_kernel() -> types.ModuleType:
    module = types.ModuleType("fake")
    module.relu = lambda x: torch.clamp(x, min=0)  # type: ignore[attr-defined]
    module.sigmoid = lambda x: x  # type: ignore[attr-defined]  # wrong on purpose
    module.needs_two = lambda x, y: x + y  # type: ignore[attr-defined]
    module.__all__ = ["relu", "sigmoid", "needs_two", "NotAFunction"]  # type: ignore[attr-defined]
    module.NotAFunction = int  # type: ignore[attr-defined]
    return module


@pytest.mark.slow
def test_public_functions_against_their_torch_namesakes() -> None:
    results = {r.name: r for r in run_cases(_public_cases(fake_kernel(), "cpu"), "cpu", warmup=1, runs=3)}
    # One case per size (1 MiB and 16 MiB of float32 on the CPU); a function that cannot be called once.
    assert set(results) == {"relu 1 MiB", "relu 16 MiB", "sigmoid 1 MiB", "sigmoid 16 MiB", "needs_two"}
    relu = results["relu 16 MiB"]
    assert relu.matches is True and relu.reference is not None and relu.kernel is not None
    assert relu.bytes == 2 * 16 * 1024 * 1024  # float32 in and out
    assert results["relu 1 MiB"].bytes == 2 * 1024 * 1024
    assert results["sigmoid 1 MiB"].matches is False
    assert "TypeError" in results["needs_two"].error
    table = render_table(list(results.values()), "cpu")
    assert "relu 1 MiB" in table and "NO" in table and "error: TypeError" in table


def test_project_benchmarks_are_collected(tmp_path: Path) -> None:
    (tmp_path / "benchmark.py").write_text(
        "import torch\n"
        "from kernel_builder.authoring.bench import Case\n\n"
        "def bench_double(kernel, device):\n"
        "    x = torch.ones(1000, device=device)\n"
        "    return Case(run=lambda: x * 2, reference=lambda: x + x, bytes=8000)\n\n"
        "def helper():\n    raise AssertionError('not a benchmark')\n"
    )
    (case,) = list(_project_cases(tmp_path, fake_kernel(), "cpu"))
    assert case.name == "double" and case.bytes == 8000
    (result,) = run_cases(iter([case]), "cpu", warmup=0, runs=2)
    assert result.matches is True and result.to_json()["kernel_gbps"] > 0


def test_a_benchmark_must_return_a_case(tmp_path: Path) -> None:
    (tmp_path / "benchmark.py").write_text("def bench_x(kernel, device):\n    return 3\n")
    with pytest.raises(TypeError, match="not kernel_builder.authoring.bench.Case"):
        list(_project_cases(tmp_path, fake_kernel(), "cpu"))


def test_result_json_has_rates() -> None:
    result = Result("x", kernel=Timing(10.0, 9.0, 11.0, 3), bytes=10_000)
    assert (
        result.to_json()["kernel_gbps"] == pytest.approx(1.0) and result.to_json()["reference_gbps"] is None
    )
    assert isinstance(Case(run=lambda: None).check, bool)


@pytest.mark.slow
def test_benchmarks_without_bench_functions_fall_back_to_public_ops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_builder.authoring import bench

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "benchmark.py").write_text("X = 1  # another convention\n")
    monkeypatch.setattr("kernel_builder.loader.get_local_kernel", lambda path: fake_kernel())
    monkeypatch.setattr("kernel_builder.loader.alias.expose_as", lambda module, name: None)
    report = tmp_path / "r.json"
    code = bench.main([str(tmp_path / "build"), str(tmp_path), "--package", "fake", "--runs", "2", "--warmup", "0",
                       "--json", str(report)])  # fmt: skip
    assert code == 1  # sigmoid does not match, needs_two cannot be called with one tensor
    assert "mode: public ops vs torch" in capsys.readouterr().out
    data = json.loads(report.read_text())
    assert [r["name"] for r in data["results"]] == ["relu 1 MiB", "relu 16 MiB", "sigmoid 1 MiB", "sigmoid 16 MiB",
                                                    "needs_two"]  # fmt: skip
    assert data["copy"]["gbps"] > 0 and data["copy"]["bytes"] == 2 * 4 * 1024 * 1024


@pytest.mark.slow
def test_public_ops_say_what_each_side_does() -> None:
    relus = [
        r for r in run_cases(_public_cases(fake_kernel(), "cpu"), "cpu", warmup=1, runs=3) if "relu" in r.name
    ]
    compares = "kernel.relu(x) vs torch.relu(x): the same input, each call allocating its result"
    assert [r.extra["compares"] for r in relus] == [compares, compares]
    assert relus[0].to_json()["extra"]["compares"] == compares
    # Cases that share a note share its line.
    assert f"relu 1 MiB, relu 16 MiB: {compares}" in render_table(relus, "cpu").splitlines()


def test_the_init_benchmark_compares_like_with_like(tmp_path: Path) -> None:
    """The benchmark `init` writes: the kernel allocates its result on every call, as the reference does (a
    preallocated `out` on one side only would time an allocation against none)."""
    from kernel_builder.cli import main

    assert main(["init", str(tmp_path / "k"), "--name", "my-relu", "--backends", "cpu"]) == 0
    outs: list[object] = []

    def relu(x: Any, out: Any = None) -> Any:
        outs.append(out)
        return torch.clamp(x, min=0) if out is None else torch.clamp(x, min=0, out=out)

    kernel = types.ModuleType("my_relu")
    kernel.relu = relu  # type: ignore[attr-defined]
    (case,) = _project_cases(tmp_path / "k" / "benchmarks", kernel, "cpu")
    assert case.inputs is not None  # so that `bench` can rotate buffer sets
    args = case.inputs()
    case.run(*args), case.run(*args)
    assert outs == [None, None]  # no preallocated output
    assert case.reference is not None and case.reference(*args) is not case.reference(*args)
    assert case.compares == "kernel.relu(x) vs torch.relu(x), each allocating its result"
    assert case.bytes == 2 * args[0].nbytes


# --- the command on examples/relu, built for the CPU (slow) ------------------------------------------------


def _bench_relu(
    factory: pytest.TempPathFactory, tmp_path: Path, *extra: str | Path
) -> tuple[CliRun, dict[str, Any]]:
    """``kernel-builder bench`` on the session's one CPU build of examples/relu (which it must not change)."""
    root = built_example("relu", factory).root
    report = tmp_path / "bench.json"
    run = run_cli(["bench", root, "--runs", "5", "--warmup", "2", "--json", report, *extra],
                  env={"PYTHONDONTWRITEBYTECODE": "1"}).check()  # fmt: skip
    return run, json.loads(report.read_text())


@pytest.mark.slow
def test_bench_relu_profile_compare_compile(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """``kernel-builder bench examples/relu --profile T --compare compile``: rates, rotation, the copy ceiling, the
    trace and the compiled reference (without a C++ compiler, inductor cannot compile on the CPU: that part is
    skipped, with the reason, after the rest is checked)."""
    trace = tmp_path / "trace.json"
    compiler = shutil.which("c++") or shutil.which("g++")
    run, data = _bench_relu(
        tmp_path_factory, tmp_path, "--profile", trace, *(["--compare", "compile"] if compiler else [])
    )
    lines = run.stdout.splitlines()
    assert any(line.startswith("timer: CPU timer (time.perf_counter; no GPU)") for line in lines), run.stdout
    header = next(line for line in lines if line.startswith("case "))
    for column in ("side", "median", "min", "max", "GB/s", "% copy", "TFLOP/s", "timed as", "vs reference"):
        assert f" {column} " in f" {header} ", header
    rows = [line.split() for line in lines if line.startswith(("relu ", "copy "))]
    assert {tuple(row[:4]) for row in rows} >= {("relu", "1", "MiB", "kernel"), ("relu", "16", "MiB", "reference"),
                                                ("copy", "out.copy_(x),", "4", "MiB")}  # fmt: skip
    # Each size: the kernel and torch.relu, agreeing; GB/s from the bytes moved (1 MiB read, 1 MiB written).
    small = {r["name"]: r for r in data["results"]}["relu 1 MiB"]
    assert small["matches"] is True and small["bytes"] == 2 << 20
    assert small["kernel_gbps"] == pytest.approx((2 << 20) / small["kernel"]["median_us"] / 1e3)
    assert small["kernel"]["min_us"] <= small["kernel"]["median_us"] <= small["kernel"]["max_us"]
    # 1 MiB fits the CPU's cache: the inputs rotate over as many sets as exceed twice the cache, and it says so.
    assert small["kernel"]["sets"] > 1 and small["kernel"]["method"] == "CPU timer"
    assert f"relu 1 MiB: {small['kernel']['sets']} buffer sets of 2 MiB rotated" in run.stdout
    assert data["copy"]["gbps"] > 0 and data["copy"]["bytes"] == 2 * (4 << 20)
    # --profile: a Chrome trace with a span per timed side, and the top ops (CPU ops here, said so).
    spans = {e["name"] for e in json.loads(trace.read_text())["traceEvents"]
             if str(e.get("name", "")).startswith("bench: ")}  # fmt: skip
    assert {
        "bench: relu 1 MiB: kernel",
        "bench: relu 16 MiB: reference",
        "bench: copy ceiling: out.copy_(x)",
    } <= spans
    assert f"profile: {trace} (Chrome trace JSON" in run.stdout
    title = "top CPU ops by self CPU time (no GPU: these are CPU ops, not device kernels)"
    assert title in run.stdout
    top = lines[next(i for i, line in enumerate(lines) if line.startswith(title)) + 1 :]
    assert top and any("relu" in line for line in top), run.stdout
    if not compiler:
        pytest.skip("torch.compile (inductor) needs a C++ compiler on the CPU; none on PATH")
    # --compare compile: a torch.compile(reference) row per size, timed like the others, and the comparison.
    compiled = [row for row in rows if row[3] == "torch.compile(reference)"]
    assert len(compiled) == 2 and all("µs" in row for row in compiled), run.stdout
    for result in data["results"]:
        assert (
            result["compile_error"] == ""
            and result["compiled"]["median_us"] > 0
            and result["compiled_gbps"] > 0
        )
    assert "bench: relu 1 MiB: torch.compile(reference)" in spans
    assert "relu 1 MiB: kernel " in run.stdout and "the speed of torch.compile(reference)" in run.stdout


#: Run in a fresh interpreter: inductor keeps what it learnt about the C++ compiler for the process, so a broken
#: compiler here would also break every later ``torch.compile`` of the test process.
NO_COMPILER = """
import json, sys
import torch, torch._inductor.config
from kernel_builder.authoring.bench import Case, render_table, run_cases

torch._inductor.config.cpp.cxx = ("/nonexistent/c++",)
x = torch.randn(1000)
case = Case(run=lambda: torch.relu(x), reference=lambda: torch.clamp(x, min=0), name="relu")
(result,) = run_cases(iter([case]), "cpu", warmup=1, runs=3, compile=True)
print(json.dumps({
    "compiled": result.compiled is not None, "compile_error": result.compile_error,
    "kernel": result.kernel is not None, "reference": result.reference is not None, "matches": result.matches,
    "error": result.error, "table": render_table([result], "cpu").splitlines(),
}))
"""


@pytest.mark.slow
def test_a_reference_that_cannot_be_compiled_is_reported_and_the_rest_still_timed() -> None:
    """Inductor without a working C++ compiler (as on a machine without one): the compiled row says it failed, a
    note gives the first line of inductor's error, and the kernel and reference are timed and compared."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", NO_COMPILER], capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["compiled"] is False and "No working C++ compiler" in result["compile_error"]
    assert result["kernel"] and result["reference"] and result["matches"] is True
    assert not result["error"]  # the compiled baseline is optional: the case did not fail
    table = result["table"]
    assert table[4].split()[:3] == ["relu", "torch.compile(reference)", "failed"]
    assert f"relu: torch.compile(reference) failed: {result['compile_error']}" in table
