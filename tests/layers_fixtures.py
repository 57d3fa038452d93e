"""Helpers for the kernelize tests: pure-Python kernels with ``layers`` modules, published as local builds or
to the Hub double, and a small model whose layers are marked by the package under test.

The kernels are noarch variants (``torch-cpu``, ``torch-cuda``) written by ``write_variant``, so either loader
(ours or upstream's ``kernels``) picks ``torch-cpu`` on this CPU machine. Their layers count their calls in
``CALLS`` (a module-level Counter of the kernel's ``layers`` module), which proves that kernel code ran.

``run_compat_script`` runs ``kernelize_compat.py`` with one package (ours or upstream's) in a fresh
interpreter; ``differences`` lists where two of its results disagree.

``reset_layers`` forgets what the layer API cached (loaded layer classes, checked pairs, the process-wide
mapping) and what the loader imported, so each test starts from a fresh process state.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
import warm_python
from hub_server import HubServer, files_from_directory
from loader_fixtures import reset_loader, write_variant
from torch import nn
from upstream_kernels import loader_child_env

from kernel_builder.layers import kernelizer, mapping, use_kernel_forward_from_hub, use_kernelized_func

#: The noarch variants of the test kernels; ``torch-cpu`` is the one this machine loads.
VARIANTS = ("torch-cpu", "torch-cuda")
ORG = "kb-layers"
KERNEL_REPO = f"{ORG}/activation"
NO_LAYERS_REPO = f"{ORG}/no-layers"

LAYERS = '''
import collections

import torch
import torch.nn.functional as F
from torch import nn

CALLS = collections.Counter()


class SiluAndMul(nn.Module):
    """Differentiable and traceable: serves every mode."""

    has_backward = True
    can_torch_compile = True

    def forward(self, x):
        CALLS["SiluAndMul"] += 1
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


class GeluTanh(nn.Module):
    """Declares no backward: Mode.TRAINING keeps the original forward."""

    has_backward = False
    can_torch_compile = True

    def forward(self, x):
        CALLS["GeluTanh"] += 1
        return F.gelu(x, approximate="tanh")


class ReLU(nn.Module):
    """Declares nothing: has a backward (the default), not known to compile (the default)."""

    def forward(self, x):
        CALLS["ReLU"] += 1
        return torch.relu(x)


class WithInit(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return x


class WithHelper(nn.Module):
    def helper(self, x):
        return x

    def forward(self, x):
        return self.helper(x)


class TwoInputs(nn.Module):
    def forward(self, x, y):
        return x + y


class KeywordOnly(nn.Module):
    def forward(self, *, x):
        return x
'''

INIT = """
import torch.nn.functional as F

from . import layers


def silu_and_mul(x):
    layers.CALLS["silu_and_mul"] += 1
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


silu_and_mul.can_torch_compile = True
"""

NO_LAYERS_INIT = "def identity(x):\n    return x\n"


def write_kernel(
    root: Path,
    *,
    name: str = "activation",
    layers: bool = True,
    tag: str = "",
    variants: Sequence[str] = VARIANTS,
) -> Path:
    """A kernel root with ``build/<variant>`` for each of ``variants`` (noarch variant names); returns
    ``root``."""
    files = {"__init__.py": INIT, "layers/__init__.py": LAYERS} if layers else {"__init__.py": NO_LAYERS_INIT}
    for variant in variants:
        kernel_id = f"_{name.replace('-', '_')}_{tag}{variant.replace('-', '_')}_0123456789"
        write_variant(
            root / "build" / variant, name=name, kernel_id=kernel_id, backend=variant[6:], files=files
        )
    return root


def publish_kernel(hub: HubServer, tmp_path: Path, repo_id: str = KERNEL_REPO, *, layers: bool = True) -> str:
    """Publish a test kernel on branch ``v1`` of ``repo_id`` (its organization untrusted); its commit."""
    organization = repo_id.split("/")[0]
    hub.add_organization(organization, trusted=False)
    hub.create_repo(repo_id, repo_type="kernel")
    hub.create_branch(repo_id, "v1")
    name = repo_id.split("/")[1]
    root = write_kernel(tmp_path / f"publish-{name}", name=name, layers=layers, tag="hub_")
    return hub.commit(repo_id, files_from_directory(root / "build", "build"), branch="v1", repo_type="kernel")


def reset_layers() -> None:
    """Forget loaded kernels, cached layer classes and checks, and the process-wide mapping."""
    with kernelizer._lock:
        kernelizer._loaded.clear()
        kernelizer._checked.clear()
        kernelizer._kernel_forwards.clear()
    mapping._global_mapping.clear()
    reset_loader()


@pytest.fixture
def fresh_layers() -> Iterator[None]:
    reset_layers()
    yield
    reset_layers()


def calls_of(defined: Any) -> Any:
    """The ``CALLS`` counter of the kernel whose module defines ``defined`` (a layer class, a function)."""
    import sys

    module = sys.modules[defined.__module__]
    return module.CALLS if hasattr(module, "CALLS") else module.layers.CALLS


# --- the marked layers of the tests' models, as a modelling library marks them ---------------------------


@use_kernel_forward_from_hub("SiluAndMul")
class SiluAndMul(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


@use_kernel_forward_from_hub("GeluTanh")
class GeluTanh(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


@use_kernel_forward_from_hub("ReLU")
class ReLU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


@use_kernel_forward_from_hub("silu_and_mul")
def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


@use_kernelized_func(silu_and_mul)
class GatedHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gated: torch.Tensor = silu_and_mul(self.proj(x))
        return gated


# --- the compatibility script ------------------------------------------------------------------------------

SCRIPT = Path(__file__).resolve().parent / "kernelize_compat.py"


def run_compat_script(package: str, config: dict[str, Any], work: Path) -> dict[str, Any]:
    """Run the script with ``package`` in a fresh interpreter, with its own kernel cache; its JSON result."""
    pytest.importorskip(package)
    work.mkdir(parents=True, exist_ok=True)
    config_file = work / "config.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    env = loader_child_env(work / "cache", drop=("DISABLE_KERNEL_MAPPING",))
    result = warm_python.run(
        [sys.executable, str(SCRIPT), package, str(config_file)],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"{package}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    decisions: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return decisions


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    return [
        f"{key}: kernel_builder {ours.get(key)!r}, kernels {theirs.get(key)!r}"
        for key in sorted(set(ours) | set(theirs))
        if ours.get(key) != theirs.get(key)
    ]
