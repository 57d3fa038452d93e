"""One kernelize script for two packages: ``python kernelize_compat.py PACKAGE CONFIG.json``.

PACKAGE is ``kernel_builder`` or ``kernels`` (upstream); everything below uses only the layer API both export,
through ``K``. The script marks a small model's layers with ``K``'s decorators, then, for every source of
kernels (Hub repositories and local builds named in CONFIG), every mapping scenario, mode, device and
``use_fallback`` (``True``, ``False`` and three ``KernelizeFallback`` combinations), kernelizes a fresh model
under ``K.use_kernel_mapping(..., inherit_mapping=False)`` and records what happened to each marked layer:
``kernel:<kernel layer class>``, ``kernel`` (a marked function replaced), ``original``, or the builtin type
of the error kernelize raised. It prints one JSON object, case → outcome; ``tests/test_layers_compat.py``
runs it with both packages and compares the two objects. Where the mapping gives each layer the kernel layer
of its own name (scenario ``bare``), on the CPU, the model's output after kernelize is compared with its
output before (``outputs``: ``match`` or ``differ``).

CONFIG: ``{"sources": {"hub": {LAYER: REPO_ID, ...}, "local": {LAYER: PATH, ...}}, "extras": bool}``, where
LAYER is a kernel layer class name (``SiluAndMul``, ``GeluTanh``, ``ReLU``; ``*`` for any) and, with
``extras``, the kernels
also define the incompatible layers ``WithInit``, ``TwoInputs`` and ``KeywordOnly``. For CUDA and ROCm the GPU
capability is patched into each package's lookup, so that capability ranges are exercised on a CPU machine.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

PACKAGE, CONFIG = sys.argv[1], json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))
K: Any = importlib.import_module(PACKAGE)
Mode, Device, CUDAProperties, ROCMProperties = K.Mode, K.Device, K.CUDAProperties, K.ROCMProperties

capability = [0]  # the capability both packages see, set per case


def patch_capability() -> None:
    if PACKAGE == "kernels":
        repos: Any = importlib.import_module("kernels._internals.layer.repos")
        repos._find_capability = lambda device_index=None: capability[0]
    else:
        kernelizer: Any = importlib.import_module("kernel_builder.layers.kernelizer")
        kernelizer.gpu_capability = lambda index: capability[0]


# --- the model ----------------------------------------------------------------------------------------------


@K.use_kernel_forward_from_hub("SiluAndMul")
class SiluAndMul(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


@K.use_kernel_forward_from_hub("GeluTanh")
class GeluTanh(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x, approximate="tanh")


@K.use_kernel_forward_from_hub("ReLU")
class ReLU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


class Switchable(nn.Module):
    def __init__(self, enabled: bool) -> None:
        super().__init__()
        self.enabled = enabled

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


K.replace_kernel_forward_from_hub(Switchable, "ReLU", condition=lambda module: module.enabled)


@K.use_kernel_forward_from_hub("silu_and_mul")
def silu_and_mul(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


@K.use_kernelized_func(silu_and_mul)
class Head(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return silu_and_mul(x)


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = nn.Linear(8, 16)
        self.act = SiluAndMul()
        self.gelu = GeluTanh()
        self.relu = ReLU()
        self.on = Switchable(True)
        self.off = Switchable(False)
        self.plain = nn.GELU()
        self.head = Head()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = self.relu(self.gelu(self.act(self.up(x))))
        return self.head(self.plain(self.off(self.on(hidden))))


MARKED = ("act", "gelu", "relu", "on", "off", "plain", "head")


def outcome(module: nn.Module) -> str:
    function = getattr(module.forward, "__func__", None)
    if function is type(module).forward:
        return "original"
    if function is None:
        return "other"
    owner = function.__qualname__.rsplit(".", 1)[0]
    return f"kernel:{owner}" if "<locals>" not in owner else "kernel"


def func_outcome(model: Model) -> str:
    """What the model's own copy of the marked function runs (each model instance has its own)."""
    own = model.head.__dict__["_kernel_funcs"]["silu_and_mul"]
    return "original" if own.forward.__func__ is type(own).forward else "kernel"


def kernelized(model: Model) -> dict[str, str]:
    """What ``get_kernelized_layers`` reads back: each kernelized layer or function, by name, with the layer
    name of the repository it came from."""
    found = K.get_kernelized_layers(model)
    result = {name: repo_name(layer.repo) for name, layer in found.layers.items()}
    result.update({f"{module}:{func}": repo_name(f.repo) for (module, func), f in found.funcs.items()})
    return result


def repo_name(repo: Any) -> str:
    return str(getattr(repo, "layer_name", "?"))


# --- scenarios: layer name -> device -> repository or mode table --------------------------------------------


def scenarios(repo: Callable[[str], Any], extras: bool) -> dict[str, dict[str, Any]]:
    def cuda(low: int, high: int) -> Any:
        return Device(type="cuda", properties=CUDAProperties(min_capability=low, max_capability=high))

    def rocm(low: int, high: int) -> Any:
        return Device(type="rocm", properties=ROCMProperties(min_capability=low, max_capability=high))

    result = {
        "empty": {},
        "bare": {
            "SiluAndMul": {"cpu": repo("SiluAndMul"), "cuda": repo("SiluAndMul")},
            "GeluTanh": {"cpu": repo("GeluTanh")},
            "ReLU": {"cpu": repo("ReLU"), "cuda": repo("ReLU")},
            "silu_and_mul": {"cpu": repo("SiluAndMul")},
        },
        "mode-tables": {
            "SiluAndMul": {"cpu": {Mode.INFERENCE: repo("GeluTanh"), Mode.FALLBACK: repo("SiluAndMul")}},
            "GeluTanh": {
                "cpu": {Mode.INFERENCE | Mode.TORCH_COMPILE: repo("GeluTanh"), Mode.FALLBACK: repo("ReLU")}
            },
            "ReLU": {"cpu": {Mode.INFERENCE | Mode.TORCH_COMPILE: repo("SiluAndMul")}},
        },
        "training-tables": {
            "SiluAndMul": {"cpu": {Mode.TRAINING: repo("SiluAndMul"), Mode.INFERENCE: repo("GeluTanh")}},
        },
        # Each mode table leaves out the best entries of some modes, so that the fallback order shows.
        "order-a": {
            "SiluAndMul": {
                "cpu": {
                    Mode.INFERENCE | Mode.TORCH_COMPILE: repo("GeluTanh"),
                    Mode.TRAINING: repo("ReLU"),
                    Mode.TRAINING | Mode.TORCH_COMPILE: repo("SiluAndMul"),
                }
            }
        },
        "order-b": {
            "SiluAndMul": {
                "cpu": {Mode.TRAINING: repo("ReLU"), Mode.TRAINING | Mode.TORCH_COMPILE: repo("SiluAndMul")}
            }
        },
        "order-c": {
            "SiluAndMul": {
                "cpu": {Mode.TRAINING | Mode.TORCH_COMPILE: repo("SiluAndMul"), Mode.FALLBACK: repo("ReLU")}
            }
        },
        "order-d": {"SiluAndMul": {"cpu": {Mode.INFERENCE: repo("GeluTanh"), Mode.FALLBACK: repo("ReLU")}}},
        "training-no-backward": {"GeluTanh": {"cpu": {Mode.TRAINING: repo("GeluTanh")}}},
        "compile-entry": {"ReLU": {"cpu": {Mode.TRAINING | Mode.TORCH_COMPILE: repo("ReLU")}}},
        "capabilities": {
            "ReLU": {cuda(80, 89): repo("GeluTanh"), cuda(90, 90): repo("SiluAndMul"), "cuda": repo("ReLU")},
            "GeluTanh": {cuda(86, 100): repo("GeluTanh")},
            "SiluAndMul": {rocm(90, 95): repo("SiluAndMul"), "rocm": repo("GeluTanh")},
        },
        "devices": {
            "SiluAndMul": {"mps": repo("SiluAndMul"), "xpu": repo("GeluTanh")},
            "ReLU": {"rocm": repo("ReLU"), "xpu": repo("ReLU")},
        },
        "missing-layer": {"ReLU": {"cpu": repo("Missing")}},
    }
    if extras:
        for name in ("WithInit", "TwoInputs", "KeywordOnly"):
            result[f"incompatible-{name}"] = {"ReLU": {"cpu": repo(name)}}
    return result


MODES = {
    "inference": Mode.INFERENCE,
    "training": Mode.TRAINING,
    "inference+compile": Mode.INFERENCE | Mode.TORCH_COMPILE,
    "training+compile": Mode.TRAINING | Mode.TORCH_COMPILE,
}
DEVICES = [("cpu", 0), ("cuda", 75), ("cuda", 86), ("cuda", 90), ("rocm", 92), ("mps", 0), ("xpu", 0)]
_F = K.KernelizeFallback
FALLBACKS = {
    "true": True,
    "false": False,
    "no-layer": _F.NO_LAYER,  # raise for everything but an unmapped layer name
    "not-mode": _F.NO_LAYER | _F.NO_DEVICE | _F.NO_COMPATIBLE_PROPERTIES,  # raise for an unsupported mode
    "all": _F.ALL,
}


def repository_factory(kind: str, where: dict[str, str]) -> Callable[[str], Any]:
    def repo(layer_name: str) -> Any:
        source = where.get(layer_name) or where["*"]
        if kind == "hub":
            return K.LayerRepository(source, layer_name=layer_name, version=1, trust_remote_code=True)
        return K.LocalLayerRepository(Path(source), layer_name=layer_name)

    return repo


def run_case(
    mapping: dict[str, Any], mode: Any, device: str, use_fallback: Any, *, check_outputs: bool
) -> dict[str, str] | str:
    model = Model()
    x = torch.randn(3, 8)
    if check_outputs:
        with torch.no_grad():
            reference = model(x)
    try:
        with K.use_kernel_mapping(mapping, inherit_mapping=False):
            K.kernelize(model, mode=mode, device=device, use_fallback=use_fallback)
    except Exception as error:  # noqa: BLE001 - recorded: the builtin type both packages promise
        builtin = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
        return f"error:{builtin.__name__}"
    result = {name: outcome(getattr(model, name)) for name in MARKED}
    result["head:silu_and_mul"] = func_outcome(model)
    result["read-back"] = json.dumps(kernelized(model), sort_keys=True)
    if check_outputs:  # the layers are those of the model's own names: outputs must not change
        with torch.no_grad():
            close = torch.allclose(model(x), reference, rtol=1e-5, atol=1e-6)
        result["outputs"] = "match" if close else "differ"
    return result


def main() -> None:
    torch.set_num_threads(1)  # thousands of tiny forwards: threads only contend
    patch_capability()
    results: dict[str, Any] = {}
    for kind, where in CONFIG["sources"].items():
        for scenario, mapping in scenarios(
            repository_factory(kind, where), CONFIG.get("extras", False)
        ).items():
            for mode_name, mode in MODES.items():
                for device, value in DEVICES:
                    for fallback_name, use_fallback in FALLBACKS.items():
                        capability[0] = value
                        key = f"{kind}/{scenario}/{mode_name}/{device}{value or ''}/fallback={fallback_name}"
                        check = scenario == "bare" and device == "cpu" and Mode.TORCH_COMPILE not in mode
                        results[key] = run_case(mapping, mode, device, use_fallback, check_outputs=check)
    print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
