"""Whether a kernel layer class can stand in for a marked layer, and for which modes.

``kernelize`` binds the kernel layer's ``forward`` to the *existing* instance of the marked layer: the kernel
layer class itself is never instantiated. So it must not need a constructor, must not define members that
the instance would lack (its ``forward`` would look them up on the instance, and find the original layer's,
or nothing), and its ``forward`` must take the arguments the model passes to the original one.

Two optional class attributes declare what the kernel supports: ``has_backward`` (default true: the kernel
computes gradients) and ``can_torch_compile`` (default false: the kernel is not known to trace under
``torch.compile``).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from kernel_builder.layers.errors import IncompatibleLayerError
from kernel_builder.layers.marks import COPY_MEMBERS
from kernel_builder.layers.mode import Mode

if TYPE_CHECKING:
    from torch import nn

__all__ = ["DECLARATIONS", "check_layer_class", "unsupported_in"]

#: The only class attributes a kernel layer may add to ``nn.Module``'s (and a function's module class, which
#: ``FuncRepository`` gives, its copy support: :data:`~kernel_builder.layers.marks.COPY_MEMBERS`).
DECLARATIONS = frozenset({"can_torch_compile", "has_backward"})
_ALLOWED = DECLARATIONS | COPY_MEMBERS


def has_backward(layer: type[nn.Module]) -> bool:
    return bool(getattr(layer, "has_backward", True))


def can_torch_compile(layer: type[nn.Module]) -> bool:
    return bool(getattr(layer, "can_torch_compile", False))


def _module_members() -> frozenset[str]:
    # Not cached: torch.compile adds members to nn.Module itself (and patches its __init__) on first use.
    from torch import nn

    return frozenset(name for name, _ in inspect.getmembers(nn.Module))


def _describe(parameters: list[inspect.Parameter]) -> str:
    return str(inspect.Signature(parameters))


def check_layer_class(layer: object, original: type[nn.Module], *, subject: str) -> type[nn.Module]:
    """``layer`` itself when it can replace the forward of ``original``; otherwise
    :class:`IncompatibleLayerError` saying what to change. ``subject`` names the kernel layer, its
    repository and the layer name."""
    from torch import nn

    if not isinstance(layer, type) or not issubclass(layer, nn.Module):
        raise IncompatibleLayerError(f"{subject} is {layer!r}, not a torch.nn.Module subclass")
    if layer.__init__ is not nn.Module.__init__:
        raise IncompatibleLayerError(
            f"{subject} defines a constructor (__init__). Kernel layers are never instantiated: their "
            f"forward runs on the existing {original.__name__} instance, so they must not define __init__; "
            f"read the state you need from the attributes that {original.__name__} instances have."
        )
    extra = sorted({name for name, _ in inspect.getmembers(layer)} - _module_members() - _ALLOWED)
    if extra:
        raise IncompatibleLayerError(
            f"{subject} defines {', '.join(extra)}, which {original.__name__} instances do not have: its "
            f"forward runs bound to those instances, where such members are missing or mean something "
            f"else. Only forward, has_backward and can_torch_compile may be defined; move helpers to "
            f"module-level functions."
        )
    if layer.forward is nn.Module.forward:
        raise IncompatibleLayerError(f"{subject} defines no forward method")
    parameters = list(inspect.signature(layer.forward).parameters.values())
    expected = list(inspect.signature(original.forward).parameters.values())
    mismatch = len(parameters) != len(expected) or any(
        mine.kind != theirs.kind for mine, theirs in zip(parameters, expected)
    )
    if mismatch:
        raise IncompatibleLayerError(
            f"{subject}: forward{_describe(parameters)} does not match "
            f"{original.__qualname__}.forward{_describe(expected)}: it needs as many parameters, of the same "
            f"kinds (positional, keyword-only, *args, **kwargs), to be called as the original is"
        )
    return layer


def unsupported_in(layer: type[nn.Module], mode: Mode) -> str | None:
    """Why ``layer`` cannot serve ``mode`` (``None`` when it can)."""
    missing = []
    if Mode.TRAINING in mode and not has_backward(layer):
        missing.append("it declares has_backward = False")
    if Mode.TORCH_COMPILE in mode and not can_torch_compile(layer):
        missing.append("it does not declare can_torch_compile = True")
    return " and ".join(missing) or None
