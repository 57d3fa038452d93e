"""The authoring commands on a GPU (run on the GPU machine; skipped elsewhere with the reason):
``init --template cuda`` → ``kernel-builder test``, ``kernel-builder bench examples/relu --profile --compare
compile`` (and the graph-capture fallback of its timer), and
``kernel_builder.load`` with ``arch="native"`` around an edit of the CUDA source.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from build_runs import run_cli, run_python
from cpu_projects import copy_example

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a visible CUDA GPU (run on the GPU machine)"
    ),
]


def test_init_cuda_template_then_test_passes(tmp_path: Path) -> None:
    root = tmp_path / "my-kernel"
    run_cli(["init", root, "--name", "my-kernel", "--org", "acme", "--template", "cuda"]).check()
    run = run_cli(["test", root, "--", "-q", "-p", "no:cacheprovider"], cwd=tmp_path).check()
    assert "22 passed" in run.stdout, run.output
    variants = [d.name for d in (root / "build").iterdir() if d.is_dir()]
    assert len(variants) == 1 and "-cu" in variants[0], variants


def test_bench_examples_relu_profile_compare_compile(tmp_path: Path) -> None:
    """``kernel-builder bench examples/relu --profile --compare compile`` on the GPU: per size, the kernel next to
    torch.relu and torch.compile(torch.relu) in GB/s, against the measured copy bandwidth; small inputs rotated
    past the L2 cache and replayed in a CUDA graph; a Chrome trace and the top device kernels."""
    root = copy_example("relu", tmp_path / "relu")
    report = tmp_path / "bench.json"
    trace = tmp_path / "trace.json"
    run = run_cli(["bench", root, "--profile", trace, "--compare", "compile", "--json", report]).check()
    print(run.stdout)  # the table, for the record (pytest -s)
    data = json.loads(report.read_text())
    assert data["device"] == "cuda" and data["source"] == "public ops vs torch"
    results = {r["name"]: r for r in data["results"]}
    assert sorted(results) == ["relu 1 GiB", "relu 1 MiB", "relu 64 MiB"]
    for r in results.values():
        assert r["matches"] is True and r["compile_error"] == "", r
        assert r["kernel_gbps"] > 0 and r["reference_gbps"] > 0 and r["compiled_gbps"] > 0
    assert data["copy"]["gbps"] > 500  # an H100 copies ~3 TB/s (read + write)
    large = results["relu 1 GiB"]
    assert large["kernel_gbps"] > 0.5 * data["copy"]["gbps"], large  # bandwidth-bound at 1 GiB
    assert large["kernel"]["method"] == "CUDA events, one call each"
    # 1 MiB: launch-bound, so a CUDA graph of a batch of calls; rotated over enough sets to exceed 2x the L2.
    small = results["relu 1 MiB"]
    assert small["kernel"]["method"].startswith("CUDA graph of "), small["kernel"]
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    assert small["kernel"]["sets"] * (2 << 20) >= 2 * l2
    assert f"relu 1 MiB: {small['kernel']['sets']} buffer sets of 2 MiB rotated" in run.stdout
    assert "timer: CUDA events" in run.stdout and "replay a CUDA graph" in run.stdout
    table_rows = [
        re.match(r"relu \d+ [MG]iB\s+torch\.compile\(reference\)\s", line) for line in run.stdout.splitlines()
    ]
    assert sum(row is not None for row in table_rows) == 3  # one row per size
    assert "the speed of torch.compile(reference)" in run.stdout
    # --profile: the trace, and the device kernels (the kernel's own among them).
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(str(e.get("name", "")).startswith("bench: relu 1 MiB: kernel") for e in events)
    lines = run.stdout.splitlines()
    start = next(
        i for i, line in enumerate(lines) if line.startswith("top device kernels by total device time")
    )
    top = lines[start + 1 : start + 11]
    assert top and any("relu" in line.lower() for line in top), run.stdout
    assert not any(line.strip().startswith("bench: ") for line in top), top  # our spans are not kernels


def test_a_call_that_cannot_be_captured_is_timed_eagerly_with_the_reason() -> None:
    from kernel_builder.authoring.timing import measure

    x = torch.ones(1024, device="cuda")

    def syncs() -> None:
        (x * 2).sum().item()  # a device-to-host read: not allowed while capturing a graph

    timing = measure(syncs, "cuda", warmup=2, runs=5)
    assert timing.method.startswith("eager batches of ") and "CUDA graph capture failed" in timing.note
    assert timing.median_us > 0 and timing.runs == 5
    # The device is usable afterwards: a capturable call gets its graph.
    assert measure(lambda: x.mul_(1.0), "cuda", warmup=2, runs=5).method.startswith("CUDA graph of ")


LOOP = """
import json, sys
from pathlib import Path

import torch
import kernel_builder

root = Path(sys.argv[1])
x = torch.tensor([-2.0, 3.0], device="cuda")
first = kernel_builder.load(root)
source = root / "my_kernel_cuda" / "relu.cu"
source.write_text(source.read_text().replace("acc_t(0) : v)", "acc_t(0) : v + acc_t(1))"))
second = kernel_builder.load(root)
meta = json.loads((root / "build" / next(p.name for p in (root / "build").iterdir() if "-cu" in p.name)
                   / "metadata.json").read_text())
print(json.dumps({"first": first.relu(x).tolist(), "second": second.relu(x).tolist(),
                  "first_again": first.relu(x).tolist(), "selection": meta.get("arch-selection")}))
"""


def test_load_native_arch_around_an_edit_of_the_cuda_source(tmp_path: Path) -> None:
    import sys

    root = tmp_path / "my-kernel"
    run_cli(["init", root, "--name", "my-kernel", "--template", "cuda"]).check()
    out = json.loads(run_python(Path(sys.executable), LOOP, root).strip().splitlines()[-1])
    assert out == {
        "first": [0.0, 3.0],
        "second": [0.0, 4.0],
        "first_again": [0.0, 3.0],
        "selection": "native",
    }
    shutil.rmtree(root)
