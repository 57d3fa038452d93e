"""``kernel-builder bench --plot FILE`` (kernel_builder.authoring.bench_plot): the results as a picture, drawn from
the ``--json`` report; matplotlib is the optional ``plot`` extra, and its absence is one clear error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from build_runs import run_cli
from cpu_projects import built_example

torch = pytest.importorskip("torch")
pytest.importorskip("matplotlib")

from kernel_builder.authoring import bench_plot  # noqa: E402
from kernel_builder.authoring.bench import Case, assess, run_cases  # noqa: E402
from kernel_builder.authoring.timing import Ceiling, Rounds  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
NUMEL = 1 << 20


def report(*, bytes_declared: bool) -> dict[str, Any]:
    """A report as the benchmark process writes it, from real timings: a real op, and one that does no work (so
    that one side is flagged)."""
    cached = torch.relu(torch.randn(NUMEL))
    nbytes = 2 * NUMEL * 4 if bytes_declared else None
    inputs = lambda: (torch.randn(NUMEL),)  # noqa: E731
    cases = [
        Case(
            run=lambda x: torch.clamp(x, min=0),
            reference=torch.relu,
            bytes=nbytes,
            inputs=inputs,
            name="clamp",
        ),
        Case(
            run=lambda x: cached,
            reference=torch.relu,
            bytes=nbytes,
            inputs=inputs,
            check=False,
            name="cached",
        ),
    ]
    results = run_cases(iter(cases), "cpu", warmup=1, runs=5, rounds=Rounds(limit=3))
    ceiling = Ceiling.measure("cpu", warmup=1, runs=5)
    assess(results, ceiling)
    return {"device": "cpu", "torch": torch.__version__, "threads": 1, **ceiling.to_json(),
            "results": [r.to_json() for r in results]}  # fmt: skip


@pytest.mark.slow
def test_plot_of_rates_with_the_copy_ceiling(tmp_path: Path) -> None:
    """With bytes declared: GB/s bars, the kernel's speed-up, the copy ceiling, and the flagged side hatched."""
    data = report(bytes_declared=True)
    png = bench_plot.draw(data, tmp_path / "bench.png")
    assert png.read_bytes().startswith(PNG) and png.stat().st_size > 10_000
    svg = bench_plot.draw(data, tmp_path / "bench.svg").read_text()
    clamp = {r["name"]: r for r in data["results"]}["clamp"]
    speedup = clamp["reference"]["median_us"] / clamp["kernel"]["median_us"]
    for text in ("GB/s (higher is better); whiskers: quartiles", f"copy ceiling {data['copy']['gbps']:.1f} GB/s",
                 f"{speedup:.2f}x vs reference", "flagged: see the warnings", "clamp", "cached",
                 "kernel-builder bench: cpu"):  # fmt: skip
        assert text in svg, text


def test_plot_of_times_without_bytes(tmp_path: Path) -> None:
    svg = bench_plot.draw(report(bytes_declared=False), tmp_path / "bench.svg").read_text()
    assert "median time, µs (shorter is better)" in svg and "copy ceiling" not in svg


def test_without_matplotlib_the_error_names_the_extra(tmp_path: Path) -> None:
    """Checked before anything is built: exit 2, one line naming the extra, no traceback."""
    run = run_cli(["bench", tmp_path / "nowhere", "--plot", tmp_path / "p.png"],
                  prelude="import sys\nsys.modules['matplotlib'] = None")  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert (
        "--plot draws with matplotlib, which is not installed: pip install 'kernel-builder[plot]'"
        in run.stderr
    )
    assert "Traceback" not in run.stderr and not (tmp_path / "p.png").exists()


@pytest.mark.slow
def test_bench_relu_plot(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> None:
    """``kernel-builder bench examples/relu --plot P --json J``: the picture of the run's own report."""
    root = built_example("relu", tmp_path_factory).root
    picture, data = tmp_path / "relu.png", tmp_path / "relu.json"
    run = run_cli(["bench", root, "--runs", "5", "--warmup", "1", "--json", data, "--plot", picture]).check()
    assert f"plot: {picture}" in run.stdout
    assert picture.read_bytes().startswith(PNG)
    assert {r["name"] for r in json.loads(data.read_text())["results"]} == {"relu 1 MiB", "relu 16 MiB"}
