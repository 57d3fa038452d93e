"""Tests that need a visible CUDA GPU (run on the GPU machine; skipped elsewhere with the reason).

The kernel under test is examples/relu built for the running torch: either a build named by
``KB_GPU_KERNEL_ROOT`` (made before the test run, e.g. with the full default capability list), or a copy of
the example built here with ``--arch native``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from cuda_projects import lambda_project
from hub_server import HubServer, files_from_directory

from kernel_builder.cli import main

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a visible CUDA GPU (run on the GPU machine)"
    ),
]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "relu"
REPO_ID = "kernel-builder-examples/relu"


def _cuda_variant(root: Path) -> Path:
    found = [d for d in (root / "build").iterdir() if "-cu" in d.name]
    assert len(found) == 1, f"expected one CUDA variant in {root / 'build'}, found {[d.name for d in found]}"
    return found[0]


@pytest.fixture(scope="module")
def built_relu(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("KB_GPU_KERNEL_ROOT")
    if given:
        return Path(given)
    root = tmp_path_factory.mktemp("gpu") / "relu"
    shutil.copytree(
        EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".kernel-builder", "registration.h")
    )
    assert main(["build", str(root), "--backend", "cuda", "--arch", "native"]) == 0
    return root


@pytest.fixture
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # builds of a work tree are "dirty"
        yield


def test_relu_uploaded_to_hub_double_loads_with_get_kernel_and_runs(
    built_relu: Path, hub: HubServer, quiet: None
) -> None:
    import kernel_builder

    variant = _cuda_variant(built_relu)
    hub.add_organization("kernel-builder-examples", trusted=True)
    hub.create_repo(REPO_ID)
    hub.create_branch(REPO_ID, "v1")
    hub.commit(REPO_ID, files_from_directory(variant, prefix=f"build/{variant.name}"), branch="v1")

    relu = kernel_builder.get_kernel(REPO_ID, version=1)
    info = kernel_builder.get_loaded_kernels()[-1]
    assert info.repo_info is not None and info.repo_info.revision == hub.resolve(REPO_ID, "v1")
    for shape in [(1,), (1000,), (1025,), (3, 257), (64, 4097), (0,)]:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            x = torch.randn(shape, device="cuda", dtype=dtype)
            assert torch.equal(relu.relu(x), torch.relu(x)), (shape, dtype)


def _native_build(root: Path, capabilities: str | None) -> dict[str, object]:
    text = (EXAMPLE / "build.toml").read_text()
    if capabilities is not None:
        text = text.replace(
            'src = ["relu_cuda/relu.cu"]', f'src = ["relu_cuda/relu.cu"]\ncuda-capabilities = {capabilities}'
        )
    shutil.copytree(
        EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".kernel-builder", "registration.h")
    )
    (root / "build.toml").write_text(text)
    assert main(["build", str(root), "--backend", "cuda", "--arch", "native", "--no-import-check"]) == 0
    data: dict[str, object] = json.loads((_cuda_variant(root) / "metadata.json").read_text())
    return data


@pytest.mark.parametrize(("requested", "expected"), [(None, ["9.0"]), ('["8.0", "9.0a"]', ["9.0a"])])
def test_arch_native_on_h100(tmp_path: Path, requested: str | None, expected: list[str]) -> None:
    if torch.cuda.get_device_capability(0) != (9, 0):
        pytest.skip("the expected archs are those of an H100 (9.0)")
    metadata = _native_build(tmp_path / "relu", requested)
    assert metadata["backend"] == {"type": "cuda", "archs": expected}
    assert metadata["arch-selection"] == "native"


def test_relu_build_is_manylinux_clean(built_relu: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The build this machine loads and runs above passes check-abi: manylinux_2_28 symbol versions, abi3, only
    Torch's and the C/C++ runtime's libraries (docs/manylinux.md)."""
    variant = _cuda_variant(built_relu)
    assert main(["check-abi", str(variant)]) == 0
    assert capsys.readouterr().out == "checked 1 extension(s): no violations\n"


def test_noop_arch_native_rebuild_takes_under_a_second(tmp_path: Path) -> None:
    """The issue's acceptance: a no-op ``--arch native`` rebuild of examples/relu, the whole command, < 1 s. The
    GPU probe (which imports Torch) is cached per GPU and driver, and the up-to-date check needs nothing else slow.
    """
    root = tmp_path / "relu"
    shutil.copytree(
        EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".kernel-builder", "registration.h")
    )
    argv = [
        sys.executable,
        "-m",
        "kernel_builder",
        "build",
        str(root),
        "--backend",
        "cuda",
        "--arch",
        "native",
    ]
    built = subprocess.run(
        argv, capture_output=True, text=True, check=False
    )  # probes the GPU, caches the answer
    assert built.returncode == 0, built.stdout + built.stderr
    start = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - start
    print(f"[timing] no-op --arch native rebuild of examples/relu (whole command): {seconds:.2f} s")
    assert result.returncode == 0, result.stdout + result.stderr
    assert " up to date " in result.stdout, result.stdout
    assert seconds < 1.0


def test_extended_lambda_kernel_builds_and_runs(tmp_path: Path) -> None:
    """A kernel with a __device__ lambda in an AT_DISPATCH-style dispatch and a constexpr host function used in
    device code builds (Torch's --expt-extended-lambda and --expt-relaxed-constexpr) and computes i * 2 + 1."""
    import kernel_builder

    major, minor = torch.cuda.get_device_capability()
    native = f"{major}.{minor}"
    root = lambda_project(tmp_path / "kb-lambda", binding=True, capabilities=(native,))
    assert main(["build", str(root), "--arch", "native"]) == 0
    kernel = kernel_builder.get_local_kernel(root)
    for dtype in (torch.float32, torch.float64):
        for n in (0, 1, 127, 128, 1000, 100_003):
            out = torch.empty(n, device="cuda", dtype=dtype)
            kernel.fill(out)
            torch.cuda.synchronize()
            expected = torch.arange(n, device="cuda", dtype=dtype) * 2 + 1
            assert torch.equal(out, expected), (dtype, n)
