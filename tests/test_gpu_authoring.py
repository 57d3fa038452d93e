"""The authoring commands on a GPU (run on the GPU machine; skipped elsewhere with the reason):
``init --template cuda`` → ``kernel-builder test``, ``kernel-builder bench examples/relu``, and
``kernel_builder.load`` with ``arch="native"`` around an edit of the CUDA source.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from build_fixtures import copy_example, run_cli, run_python

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


def test_bench_examples_relu_reports_gbps_next_to_torch_relu(tmp_path: Path) -> None:
    root = copy_example("relu", tmp_path / "relu")
    report = tmp_path / "bench.json"
    run = run_cli(["bench", root, "--json", report]).check()
    print(run.stdout)  # the table, for the record (pytest -s)
    data = json.loads(report.read_text())
    assert data["device"] == "cuda" and data["source"] == "public ops vs torch"
    (relu,) = data["results"]
    assert relu["name"] == "relu" and relu["matches"] is True
    assert relu["kernel_gbps"] > 100 and relu["reference_gbps"] > 100
    assert "GB/s" in run.stdout and "relu" in run.stdout


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
