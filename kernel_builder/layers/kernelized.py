"""Reading back what ``kernelize`` did to a model: which marked layers and functions run a kernel, and from
which repository (``get_kernelized_layers``, the ``kernels`` loader's API since 0.18).

``kernelize`` records the repository on each module whose forward it replaced
(:data:`~kernel_builder.layers.marks.REPO_ATTRIBUTE`, in the instance's ``__dict__``) and forgets it when it
puts the original forward back, so the answer is the model as it is now: kernelized again for another mode or
device, it reports the new choices. The attribute names are the ``kernels`` loader's, so a model kernelized
by either package reads back the same with either.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernel_builder.layers.mapping import RepositoryProtocol
from kernel_builder.layers.marks import FUNCS_ATTRIBUTE, REPO_ATTRIBUTE

if TYPE_CHECKING:
    from torch import nn

__all__ = ["KernelizedFunc", "KernelizedLayer", "KernelizedLayers", "get_kernelized_layers"]


@dataclass(frozen=True)
class KernelizedLayer:
    """A marked layer whose forward is a kernel layer's now, and the repository that kernel came from."""

    module: nn.Module
    repo: RepositoryProtocol


@dataclass(frozen=True)
class KernelizedFunc:
    """A marked function (its module, as a model instance's own copy) that runs a kernel now, and the
    repository that kernel came from."""

    module: nn.Module
    repo: RepositoryProtocol


@dataclass(frozen=True)
class KernelizedLayers:
    """What :func:`get_kernelized_layers` found: ``layers`` by module name (as ``named_modules`` gives it,
    ``""`` for the model itself), ``funcs`` by (name of the module that lists the function, layer name of the
    function)."""

    layers: dict[str, KernelizedLayer] = field(default_factory=dict)
    funcs: dict[tuple[str, str], KernelizedFunc] = field(default_factory=dict)


def get_kernelized_layers(model: nn.Module) -> KernelizedLayers:
    """The layers and functions of ``model`` that run a kernel after ``kernelize``, each with its repository.

    Functions listed with ``use_kernelized_func`` are not submodules, so they are looked up in each module's
    list of them; a layer or function that kept (or got back) its own forward is not reported.
    """
    found = KernelizedLayers()
    for name, module in model.named_modules():
        repo = module.__dict__.get(REPO_ATTRIBUTE)
        if repo is not None:
            found.layers[name] = KernelizedLayer(module, repo)
        listed = module.__dict__.get(FUNCS_ATTRIBUTE) or {}
        for func_name, func in listed.items():
            func_repo = getattr(func, "__dict__", {}).get(REPO_ATTRIBUTE)
            if func_repo is not None:
                found.funcs[(name, func_name)] = KernelizedFunc(func, func_repo)
    return found
