"""``kernelize``: decide, for every marked layer of a model, whether its forward becomes a kernel layer's.

For each marked layer (and each marked function a module lists), in order: the mapping in effect is looked
up by layer name, device type and (CUDA, ROCm) capability; a repository is selected by mode
(:data:`~kernel_builder.layers.mode.MODE_FALLBACK_ORDER`); it is loaded once per process and its layer
class checked against the marked class (:mod:`~kernel_builder.layers.checks`); the layer must support the
requested mode. As in the ``kernels`` loader since 0.19, the mode an entry was registered for is not checked
against the layer: an entry registered for training whose layer has no backward serves inference, and falls
back or raises for training like any other. Any "no" keeps the layer's own forward when ``use_fallback``
allows that case and raises otherwise, so every problem surfaces here and never in the middle of a forward
pass. The repository whose layer replaced a forward is recorded on the module, where
:func:`~kernel_builder.layers.kernelized.get_kernelized_layers` reads it back.

Every decision is a :class:`KernelizeDecision`; :func:`kernelize_report` returns them and :func:`kernelize`
logs them on the ``kernel_builder.layers`` logger (each at DEBUG, a summary at INFO).
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import MethodType
from typing import TYPE_CHECKING, Any

from kernel_builder.common.env import env_flag
from kernel_builder.layers.checks import check_layer_class, unsupported_in
from kernel_builder.layers.device import check_device_type
from kernel_builder.layers.errors import KernelizeError, KernelLoadError
from kernel_builder.layers.mapping import (
    KernelMapping,
    MappingMiss,
    RepositoryProtocol,
    current_mapping,
    select_repository,
)
from kernel_builder.layers.marks import FUNCS_ATTRIBUTE, REPO_ATTRIBUTE
from kernel_builder.layers.mode import KernelizeFallback, Mode, check_kernelize_mode

if TYPE_CHECKING:
    import torch
    from torch import nn

__all__ = ["DISABLE_VARIABLE", "KernelizeDecision", "gpu_capability", "kernelize", "kernelize_report"]

logger = logging.getLogger("kernel_builder.layers")

#: Set to 1 to make ``kernelize`` keep every layer's own forward (and undo earlier replacements).
DISABLE_VARIABLE = "DISABLE_KERNEL_MAPPING"

KERNEL = "kernel"
ORIGINAL = "original"
SKIPPED = "skipped"


@dataclass(frozen=True)
class KernelizeDecision:
    """What ``kernelize`` did with one marked layer, and why.

    ``module`` is the layer's path in the model (``""`` for the model itself; ``path:name`` for a marked
    function listed by the module at ``path``). ``outcome`` is ``"kernel"`` (forward replaced),
    ``"original"`` (its own forward kept or restored) or ``"skipped"`` (its condition said no; forward not
    touched). ``repository`` and ``registered_mode`` name the mapping entry used, when one was; ``repo`` is
    that repository itself, when its kernel layer replaced the forward.
    """

    module: str
    layer_name: str
    outcome: str
    reason: str
    repository: str | None = None
    registered_mode: Mode | None = None
    layer: type[nn.Module] | None = field(default=None, repr=False, compare=False)
    repo: RepositoryProtocol | None = field(default=None, repr=False, compare=False)

    def __str__(self) -> str:
        source = f" ({self.repository})" if self.repository else ""
        return f"{self.module or '<model>'} [{self.layer_name}]: {self.outcome}{source}: {self.reason}"


# --- devices ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Target:
    type: str
    index: int | None = None


def gpu_capability(index: int | None) -> int:
    """The CUDA/ROCm capability of GPU ``index`` (the current one for ``None``) as ``major * 10 + minor``."""
    import torch

    major, minor = torch.cuda.get_device_capability(index)
    return int(major) * 10 + int(minor)


def _refine(device_type: str) -> str:
    """Torch calls ROCm GPUs ``cuda``; mappings tell the two apart. For a device given as a string, the string
    is the mapping's device type as written (``"cuda"`` stays ``cuda``, as in the ``kernels`` loader)."""
    if device_type == "cuda":
        import torch

        if getattr(torch.version, "hip", None):
            return "rocm"
    return device_type


def _target(model: nn.Module, device: str | torch.device | None) -> _Target:
    if device is None:
        tensors = itertools.chain(model.parameters(), model.buffers())
        first = next(tensors, None)
        if first is None:
            raise ValueError(
                "kernelize cannot tell the model's device (it has no parameters or buffers): pass device=, "
                "e.g. device='cuda'"
            )
        return _Target(_refine(first.device.type), first.device.index)
    if isinstance(device, str):
        kind, _, index = device.partition(":")
        if index and not index.isdigit():
            raise ValueError(f"invalid device {device!r}: expected a device type like 'cuda' or 'cuda:0'")
        return _Target(check_device_type(kind), int(index) if index else None)
    device_type = getattr(device, "type", None)
    if not isinstance(device_type, str):
        raise TypeError(f"device must be a device type string, a torch.device or None, got {device!r}")
    return _Target(_refine(check_device_type(device_type)), getattr(device, "index", None))


# --- loading, once per repository ---------------------------------------------------------------------------

_lock = threading.RLock()
_loaded: dict[RepositoryProtocol, type[nn.Module]] = {}
_checked: set[tuple[RepositoryProtocol, type[nn.Module]]] = set()
_kernel_forwards: set[Callable[..., Any]] = set()


def _load(repository: RepositoryProtocol) -> type[nn.Module]:
    with _lock:
        try:
            return _loaded[repository]
        except KeyError:
            pass
        except TypeError:  # an unhashable repository of the caller's own: load it every time
            return repository.load()
        layer = repository.load()
        _loaded[repository] = layer
        return layer


def _check(
    layer: object, repository: RepositoryProtocol, original: type[nn.Module], subject: str
) -> type[nn.Module]:
    key = (repository, original)
    with _lock:
        try:
            if key in _checked:
                return layer  # type: ignore[return-value]
        except TypeError:
            return check_layer_class(layer, original, subject=subject)
        checked = check_layer_class(layer, original, subject=subject)
        _checked.add(key)
        _kernel_forwards.add(checked.forward)
        return checked


# --- one run ------------------------------------------------------------------------------------------------


@dataclass
class _Run:
    mapping: KernelMapping
    mode: Mode
    target: _Target
    allowed: KernelizeFallback
    disabled: bool
    _capability: int | None = None

    def capability(self) -> int:
        if self._capability is None:
            self._capability = gpu_capability(self.target.index)
        return self._capability

    def fallback(
        self,
        case: KernelizeFallback,
        path: str,
        layer_name: str,
        reason: str,
        *,
        repository: str | None = None,
        registered_mode: Mode | None = None,
    ) -> KernelizeDecision:
        """Keep the original forward if ``use_fallback`` allows ``case``; else :class:`KernelizeError`."""
        if case not in self.allowed:
            assert case.name is not None
            source = f" from {repository}" if repository else ""
            raise KernelizeError(
                f"kernelize: layer {layer_name!r} (module {path or '<model>'}) gets no kernel{source}: "
                f"{reason}. "
                f"use_fallback does not include KernelizeFallback.{case.name}, so this is an error; allow it "
                f"(use_fallback=True) to keep the layer's own forward."
            )
        return KernelizeDecision(path, layer_name, ORIGINAL, reason, repository, registered_mode)


def _decide(run: _Run, module: nn.Module, path: str) -> KernelizeDecision:
    cls = type(module)
    layer_name: str = cls.kernel_layer_name  # type: ignore[attr-defined]
    condition = getattr(cls, "kernel_condition", None)
    if condition is not None and not condition(module):
        return KernelizeDecision(path, layer_name, SKIPPED, "its kernel_condition is false for this instance")
    if run.disabled:
        return KernelizeDecision(path, layer_name, ORIGINAL, f"{DISABLE_VARIABLE} is set")
    device = run.target.type
    hit = run.mapping.lookup(layer_name, device, run.capability)
    if isinstance(hit, MappingMiss):
        return run.fallback(KernelizeFallback[hit.kind], path, layer_name, hit.detail)
    selected = select_repository(hit.modes, run.mode)
    if selected is None:
        registered = ", ".join(str(m) for m in hit.modes) or "no modes"
        return run.fallback(
            KernelizeFallback.NO_COMPATIBLE_MODE,
            path,
            layer_name,
            f"the {hit.entry} entry has {registered}, none of which serves {run.mode}",
        )
    registered_mode, repository = selected
    source = str(repository)
    try:
        loaded = _load(repository)
    except FileNotFoundError as error:
        reason = f"{source} could not be loaded: {error}"
        if KernelizeFallback.CANNOT_LOAD not in run.allowed:
            raise KernelLoadError(
                f"kernelize: layer {layer_name!r} (module {path or '<model>'}): {reason}. Pass "
                f"use_fallback=KernelizeFallback.ALL to keep the layer's own forward when a kernel cannot "
                f"load."
            ) from error
        return KernelizeDecision(path, layer_name, ORIGINAL, reason, source, registered_mode)
    name = getattr(loaded, "__qualname__", loaded)
    subject = f"kernel layer {name!r} from {source} (mapped to layer {layer_name!r})"
    layer = _check(loaded, repository, cls, subject)
    unsupported = unsupported_in(layer, run.mode)
    if unsupported is not None:
        return run.fallback(
            KernelizeFallback.NO_COMPATIBLE_MODE,
            path,
            layer_name,
            f"the kernel layer does not support {run.mode}: {unsupported}",
            repository=source,
            registered_mode=registered_mode,
        )
    reason = f"the {hit.entry} entry, registered for {registered_mode}, serves {run.mode}"
    return KernelizeDecision(path, layer_name, KERNEL, reason, source, registered_mode, layer, repository)


def _apply(module: nn.Module, decision: KernelizeDecision) -> None:
    """Put the decided forward in place, and record (or forget) the repository it came from."""
    if decision.outcome == KERNEL:
        assert decision.layer is not None
        module.forward = MethodType(decision.layer.forward, module)
        module.__dict__[REPO_ATTRIBUTE] = decision.repo
    elif decision.outcome == ORIGINAL:
        installed = module.__dict__.get("forward")
        # Undo only a replacement kernelize made; a forward someone else set on the instance stays.
        if isinstance(installed, MethodType) and installed.__func__ in _kernel_forwards:
            del module.__dict__["forward"]
        module.__dict__.pop(REPO_ATTRIBUTE, None)


def _marked(model: nn.Module) -> Iterator[tuple[str, nn.Module]]:
    """Every marked layer, and every marked function a module lists, once each, in module order."""
    seen: set[int] = set()
    for path, module in model.named_modules():
        listed: dict[str, nn.Module] = module.__dict__.get(FUNCS_ATTRIBUTE) or {}
        for key, func in listed.items():
            if id(func) not in seen and isinstance(getattr(type(func), "kernel_layer_name", None), str):
                seen.add(id(func))
                yield f"{path}:{key}", func
        if id(module) not in seen and isinstance(getattr(type(module), "kernel_layer_name", None), str):
            seen.add(id(module))
            yield path, module


def _fallbacks(use_fallback: object) -> KernelizeFallback:
    if isinstance(use_fallback, KernelizeFallback):
        return use_fallback
    if isinstance(use_fallback, bool):
        return KernelizeFallback.DEFAULT if use_fallback else KernelizeFallback.NONE
    raise TypeError(f"use_fallback must be a bool or a KernelizeFallback, got {use_fallback!r}")


def kernelize_report(
    model: nn.Module,
    *,
    mode: Mode,
    device: str | torch.device | None = None,
    use_fallback: bool | KernelizeFallback = True,
    dry_run: bool = False,
) -> list[KernelizeDecision]:
    """:func:`kernelize`, returning its decisions; with ``dry_run=True`` the model is left as it is (kernels
    are still loaded and checked, so the same errors are raised)."""
    from torch import nn

    if not isinstance(model, nn.Module):
        raise TypeError(f"kernelize takes a torch.nn.Module, got {type(model).__name__}")
    run = _Run(
        mapping=current_mapping(),
        mode=check_kernelize_mode(mode),
        target=_target(model, device),
        allowed=_fallbacks(use_fallback),
        disabled=env_flag(DISABLE_VARIABLE),
    )
    # Decide everything first: an error leaves the model as it was.
    decided = [(module, _decide(run, module, path)) for path, module in _marked(model)]
    if not dry_run:
        for module, decision in decided:
            _apply(module, decision)
    decisions = [decision for _, decision in decided]
    for decision in decisions:
        logger.debug("kernelize(%s, %s): %s", run.mode, run.target.type, decision)
    kernels = sum(decision.outcome == KERNEL for decision in decisions)
    logger.info(
        "kernelize(%s, %s)%s: %d of %d marked layers use kernels",
        run.mode,
        run.target.type,
        " (dry run)" if dry_run else "",
        kernels,
        len(decisions),
    )
    return decisions


def kernelize(
    model: nn.Module,
    *,
    mode: Mode,
    device: str | torch.device | None = None,
    use_fallback: bool | KernelizeFallback = True,
) -> nn.Module:
    """Replace the ``forward`` of each marked layer of ``model`` for which the mapping in effect names a
    kernel layer that suits the device, ``mode`` and this environment; return ``model``.

    ``device`` defaults to the device of the model's first parameter. ``use_fallback`` says when a layer may
    keep its own forward (``True``: whenever no mapping entry applies or the kernel does not support the
    mode; ``False``: never). Running it again re-decides every marked layer, so it is idempotent and can
    switch a model to another mode or mapping. Decisions are logged on ``kernel_builder.layers`` (DEBUG);
    :func:`kernelize_report` returns them.
    """
    kernelize_report(model, mode=mode, device=device, use_fallback=use_fallback)
    return model
