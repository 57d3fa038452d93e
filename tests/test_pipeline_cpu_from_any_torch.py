"""A CPU variant from a Torch built for another backend (docs/cross.md): examples/relu's CPU variant of Torch
2.14 built with the CUDA test interpreter (torch 2.14.1+cu130) links only Torch's CPU libraries, passes the
build's import check under that CUDA Torch, and says in its provenance which build it came from."""

from __future__ import annotations

import json
import subprocess

import pytest
from build_runs import cuda_python, run_cli
from cpu_projects import copy_example

from kernel_builder.pipeline.check.abi import read_elf

pytestmark = [pytest.mark.slow]

READ_VERSION = (
    "import importlib.util, pathlib, runpy\n"
    "(torch_dir,) = importlib.util.find_spec('torch').submodule_search_locations\n"
    "print(runpy.run_path(str(pathlib.Path(torch_dir) / 'version.py'))['__version__'])\n"
)


def test_relus_cpu_variant_from_the_cuda_torch(tmp_path_factory: pytest.TempPathFactory) -> None:
    python = cuda_python()
    if python is None:
        pytest.skip("no CUDA build interpreter (set KB_TEST_CUDA_PYTHON to a Python with torch+cu130)")
    root = copy_example("relu", tmp_path_factory.mktemp("cpu-from-cuda") / "relu")
    # torch.version is torch/version.py: run on its own, it gives the same __version__ without importing Torch.
    asked = subprocess.run(
        [python, "-c", READ_VERSION],
        capture_output=True,
        text=True,
        check=True,
    )
    version = asked.stdout.strip()
    variant = f"torch{''.join(version.split('+')[0].split('.')[:2])}-cxx11-cpu-x86_64-linux"
    run = run_cli(["build", root, "--python", python, "--variant", variant]).check()
    assert f"{variant}  built" in run.stdout
    assert "import check skipped" not in run.output  # it ran, under the CUDA torch
    (extension,) = (root / "build" / variant).glob("*.abi3.so")
    facts = read_elf(extension)
    assert facts.needed == (
        "libtorch.so", "libtorch_cpu.so", "libc10.so", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"
    )  # fmt: skip
    metadata = json.loads((root / "build" / variant / "metadata.json").read_text(encoding="utf-8"))
    assert metadata["provenance"]["torch"] == {"version": version}
    assert "+cu" in version
    check = run_cli(["check-abi", root / "build" / variant]).check()
    assert "no violations" in check.stdout
