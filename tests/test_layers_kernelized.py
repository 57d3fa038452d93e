"""``get_kernelized_layers``: what ``kernelize`` did, read back from the model as it is now."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from layers_fixtures import ReLU, fresh_layers, silu_and_mul, write_kernel  # noqa: F401  (fixture)
from torch import nn

from kernel_builder.layers import (
    KernelizedFunc,
    KernelizedLayer,
    KernelizedLayers,
    LocalFuncRepository,
    LocalLayerRepository,
    Mode,
    get_kernelized_layers,
    kernelize,
    use_kernel_mapping,
    use_kernelized_func,
)

pytestmark = pytest.mark.usefixtures("fresh_layers")


@use_kernelized_func(silu_and_mul)
class Head(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gated: torch.Tensor = silu_and_mul(x)
        return gated


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = ReLU()
        self.inner = nn.Sequential(ReLU(), Head())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.inner(self.first(x))
        return out


def test_layers_and_functions_with_their_repositories(tmp_path: Path) -> None:
    root = write_kernel(tmp_path / "activation")
    relu = LocalLayerRepository(root, layer_name="ReLU")
    func = LocalFuncRepository(root, func_name="silu_and_mul")
    model = Model()
    assert get_kernelized_layers(model) == KernelizedLayers()  # nothing kernelized yet

    with use_kernel_mapping({"ReLU": {"cpu": relu}, "silu_and_mul": {"cpu": func}}):
        kernelize(model, mode=Mode.INFERENCE, device="cpu")
    found = get_kernelized_layers(model)
    assert found.layers == {
        "first": KernelizedLayer(model.first, relu),
        "inner.0": KernelizedLayer(model.inner[0], relu),
    }
    own = model.inner[1].__dict__["_kernel_funcs"]["silu_and_mul"]
    assert found.funcs == {("inner.1", "silu_and_mul"): KernelizedFunc(own, func)}

    # Kernelized again for a mode the ReLU kernel does not serve (it is not declared compilable, the
    # function is): read back as the model is now.
    with use_kernel_mapping({"ReLU": {"cpu": relu}, "silu_and_mul": {"cpu": func}}):
        kernelize(model, mode=Mode.INFERENCE | Mode.TORCH_COMPILE, device="cpu")
    found = get_kernelized_layers(model)
    assert (found.layers, list(found.funcs)) == ({}, [("inner.1", "silu_and_mul")])
    with use_kernel_mapping({}, inherit_mapping=False):
        kernelize(model, mode=Mode.INFERENCE, device="cpu")
    assert get_kernelized_layers(model) == KernelizedLayers()


def test_the_results_are_values() -> None:
    """Frozen dataclasses with fresh dicts each: two results never share their mappings."""
    first, second = KernelizedLayers(), KernelizedLayers()
    first.layers["x"] = KernelizedLayer(nn.ReLU(), LocalLayerRepository("/k", layer_name="ReLU"))
    assert second.layers == {}
    with pytest.raises(AttributeError):
        first.layers = {}  # type: ignore[misc]
