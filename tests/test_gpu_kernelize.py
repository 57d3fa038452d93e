"""kernelize on a CUDA GPU with examples/activation's layers (run on the GPU machine; skipped elsewhere).

The kernel is examples/activation built for the running torch: the build named by ``KB_GPU_ACTIVATION_ROOT``
(a kernel root with ``build/``, made before the run), or a copy of the example built here with
``--arch native``. It is published to the Hub double and mapped both through ``LayerRepository`` and through
``LocalLayerRepository``; the kernelized model must match the original in eager mode and under
``torch.compile`` (inductor, one graph) in ``Mode.INFERENCE | Mode.TORCH_COMPILE``.
"""

from __future__ import annotations

import os
import shutil
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer, files_from_directory

from kernel_builder.cli import main

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not torch.cuda.is_available(), reason="needs a visible CUDA GPU (run on the GPU machine)"
    ),
]

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "activation"
REPO_ID = "kernel-builder-examples/activation"
TOLERANCES = {
    torch.float32: {"rtol": 1e-5, "atol": 1e-5},
    torch.float16: {"rtol": 2e-3, "atol": 2e-3},
    torch.bfloat16: {"rtol": 1.6e-2, "atol": 1.6e-2},
}


@pytest.fixture(scope="module")
def built_activation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    given = os.environ.get("KB_GPU_ACTIVATION_ROOT")
    if given:
        return Path(given)
    root = tmp_path_factory.mktemp("gpu") / "activation"
    shutil.copytree(
        EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".kernel-builder", "registration.h")
    )
    assert main(["build", str(root), "--backend", "cuda", "--arch", "native"]) == 0
    return root


@pytest.fixture
def quiet() -> Iterator[None]:
    # The loader is not reset between tests: a compiled kernel's ops are registered once per process, and
    # importing the same build again (from the Hub double's cache, then from build/) reuses the first import.
    torch._dynamo.reset()
    with warnings.catch_warnings():
        # Builds of a work tree are "dirty"; inductor gives advice (e.g. to enable TF32 matmuls).
        warnings.simplefilter("ignore", UserWarning)
        yield


def marked_model(dtype: Any) -> Any:
    from torch import nn
    from torch.nn import functional as F

    from kernel_builder import use_kernel_forward_from_hub

    @use_kernel_forward_from_hub("SiluAndMul")
    class SiluAndMul(nn.Module):
        def forward(self, x: Any) -> Any:
            d = x.shape[-1] // 2
            return F.silu(x[..., :d]) * x[..., d:]

    @use_kernel_forward_from_hub("GeluTanh")
    class GeluTanh(nn.Module):
        def forward(self, x: Any) -> Any:
            return F.gelu(x, approximate="tanh")

    torch.manual_seed(0)
    layers = [nn.Linear(256, 1024), SiluAndMul(), nn.Linear(512, 512), GeluTanh(), nn.Linear(512, 64)]
    return nn.Sequential(*layers).to(device="cuda", dtype=dtype)


def repositories(kind: str, root: Path, hub: HubServer) -> dict[str, Any]:
    from kernel_builder import LayerRepository, LocalLayerRepository

    if kind == "local":
        return {
            name: LocalLayerRepository(root / "build", layer_name=name) for name in ("SiluAndMul", "GeluTanh")
        }
    variants = [d for d in (root / "build").iterdir() if "-cu" in d.name]
    assert len(variants) == 1, variants
    hub.add_organization("kernel-builder-examples", trusted=True)
    hub.create_repo(REPO_ID)
    hub.create_branch(REPO_ID, "v1")
    hub.commit(REPO_ID, files_from_directory(variants[0], prefix=f"build/{variants[0].name}"), branch="v1")
    return {name: LayerRepository(REPO_ID, layer_name=name, version=1) for name in ("SiluAndMul", "GeluTanh")}


@pytest.mark.parametrize("kind", ["hub", "local"])
def test_kernelized_model_matches_on_cuda(
    built_activation: Path, hub: HubServer, quiet: None, kind: str
) -> None:
    from kernel_builder import Mode, kernelize, use_kernel_mapping

    mapping = {
        name: {"cuda": repository} for name, repository in repositories(kind, built_activation, hub).items()
    }
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        model = marked_model(dtype)
        x = torch.randn(4, 33, 256, device="cuda", dtype=dtype)
        with torch.no_grad():
            reference = model(x)
            with use_kernel_mapping(mapping, inherit_mapping=False):
                kernelize(model, mode=Mode.INFERENCE, use_fallback=False)  # the device is the parameters'
            assert model[1].forward.__func__.__module__.endswith(".layers"), model[1].forward
            assert model[3].forward.__func__.__qualname__ == "GeluTanh.forward"
            torch.testing.assert_close(model(x), reference, **TOLERANCES[dtype])

    with use_kernel_mapping(mapping, inherit_mapping=False):
        kernelize(model, mode=Mode.TRAINING)  # the example's ops have no backward: the originals come back
    assert "forward" not in model[1].__dict__ and "forward" not in model[3].__dict__


def test_kernelized_model_under_torch_compile_on_cuda(
    built_activation: Path, hub: HubServer, quiet: None
) -> None:
    from kernel_builder import Mode, kernelize, use_kernel_mapping

    mapping = {
        name: {"cuda": repository} for name, repository in repositories("hub", built_activation, hub).items()
    }
    for dtype in (torch.float32, torch.bfloat16):
        torch._dynamo.reset()
        model = marked_model(dtype)
        x = torch.randn(8, 256, device="cuda", dtype=dtype)
        with torch.no_grad():
            reference = model(x)
            with use_kernel_mapping(mapping, inherit_mapping=False):
                kernelize(model, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, use_fallback=False)
            assert "forward" in model[1].__dict__ and "forward" in model[3].__dict__
            compiled = torch.compile(model, fullgraph=True)  # inductor; one graph, or it raises
            torch.testing.assert_close(compiled(x), reference, **TOLERANCES[dtype])
            torch.testing.assert_close(compiled(x * 2), model(x * 2), **TOLERANCES[dtype])
