"""Kernel mappings: layer name → device → mode → repository, and the lookup ``kernelize`` makes in them.

The mapping in effect lives in a context variable. Its default is one process-wide mapping that
:func:`register_kernel_mapping` extends in place; :func:`use_kernel_mapping` swaps in a copy (or an empty
mapping) for the duration of a ``with`` block, so a library can kernelize with its own choices without
touching the application's.

Registering replaces, per layer name and device, the whole mode table of an entry with the same capability
range (for devices without ranges: the one entry). For ``cuda`` and ``rocm`` the entry whose range contains
the GPU's capability and is narrowest wins; between equally narrow ranges, the one registered last.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

from kernel_builder.layers.device import Device, check_device_type
from kernel_builder.layers.mode import MODE_FALLBACK_ORDER, Mode

if TYPE_CHECKING:
    from torch import nn

__all__ = [
    "CAPABILITY_DEVICES",
    "KernelMapping",
    "MappingMiss",
    "MappingSpec",
    "RepositoryProtocol",
    "current_mapping",
    "register_kernel_mapping",
    "select_repository",
    "use_kernel_mapping",
]

logger = logging.getLogger("kernel_builder.layers")

#: Device types whose mapping entries may carry a capability range.
CAPABILITY_DEVICES = frozenset({"cuda", "rocm"})
_EVERY_CAPABILITY = (0, sys.maxsize)
_MAPPING_MODES = frozenset(MODE_FALLBACK_ORDER) | {Mode.FALLBACK}


class RepositoryProtocol(Protocol):
    """Anything a mapping can name: it loads one kernel layer class."""

    def load(self) -> type[nn.Module]: ...


#: What :func:`register_kernel_mapping` takes: layer name → device → a repository (registered as
#: ``Mode.FALLBACK``) or a table mode → repository.
MappingSpec = Mapping[str, Mapping[str | Device, RepositoryProtocol | Mapping[Mode, RepositoryProtocol]]]


@dataclass
class _Entry:
    low: int
    high: int
    modes: dict[Mode, RepositoryProtocol]
    order: int

    @property
    def label(self) -> str:
        if (self.low, self.high) == _EVERY_CAPABILITY:
            return "any capability"
        return f"capability {self.low}-{self.high}"


@dataclass(frozen=True)
class MappingMiss:
    """Why a lookup found nothing: ``kind`` names the :class:`KernelizeFallback` case, ``detail`` explains."""

    kind: str  # "NO_LAYER", "NO_DEVICE" or "NO_COMPATIBLE_PROPERTIES"
    detail: str


@dataclass(frozen=True)
class MappingHit:
    """The mode table that applies to a layer on a device, and which entry it came from."""

    modes: Mapping[Mode, RepositoryProtocol]
    entry: str  # e.g. "cuda, capability 80-89"


@dataclass
class KernelMapping:
    """One mapping: per layer name and device type, the registered entries (in registration order)."""

    _layers: dict[str, dict[str, list[_Entry]]] = field(default_factory=dict)
    _counter: int = 0

    def copy(self) -> KernelMapping:
        """An independent copy of the tables; the repositories themselves are shared (they are immutable)."""
        layers = {
            name: {device: [_Entry(e.low, e.high, dict(e.modes), e.order) for e in entries]
                   for device, entries in devices.items()}
            for name, devices in self._layers.items()
        }  # fmt: skip
        return KernelMapping(layers, self._counter)

    def clear(self) -> None:
        self._layers.clear()

    def add(self, layer_name: str, device: Device, modes: dict[Mode, RepositoryProtocol]) -> None:
        low, high = device.capability_range or _EVERY_CAPABILITY
        entries = self._layers.setdefault(layer_name, {}).setdefault(device.type, [])
        self._counter += 1
        entry = _Entry(low, high, modes, self._counter)
        for index, existing in enumerate(entries):
            if (existing.low, existing.high) == (low, high):
                entries[index] = entry
                return
        entries.append(entry)

    def lookup(
        self, layer_name: str, device_type: str, capability: Callable[[], int]
    ) -> MappingHit | MappingMiss:
        """The mode table for ``layer_name`` on ``device_type``; ``capability()`` is called for CUDA/ROCm
        only, and only when the layer has entries for that device."""
        devices = self._layers.get(layer_name)
        if devices is None:
            return MappingMiss("NO_LAYER", f"the kernel mapping has no entry for layer name {layer_name!r}")
        entries = devices.get(device_type)
        if not entries:
            registered = ", ".join(sorted(devices)) or "none"
            return MappingMiss(
                "NO_DEVICE", f"layer {layer_name!r} is mapped for {registered}, not for {device_type!r}"
            )
        if device_type not in CAPABILITY_DEVICES:
            return MappingHit(entries[-1].modes, device_type)
        value = capability()
        matching = [e for e in entries if e.low <= value <= e.high]
        if not matching:
            ranges = "; ".join(e.label for e in entries)
            return MappingMiss(
                "NO_COMPATIBLE_PROPERTIES",
                f"layer {layer_name!r} is mapped for {device_type} {ranges}, not for this GPU's "
                f"capability {value}",
            )
        best = min(matching, key=lambda e: (e.high - e.low, -e.order))
        return MappingHit(best.modes, f"{device_type}, {best.label}")


def select_repository(
    modes: Mapping[Mode, RepositoryProtocol], mode: Mode
) -> tuple[Mode, RepositoryProtocol] | None:
    """The first registered mode in :data:`MODE_FALLBACK_ORDER` for ``mode``, with its repository."""
    for candidate in MODE_FALLBACK_ORDER[mode]:
        repository = modes.get(candidate)
        if repository is not None:
            return candidate, repository
    return None


_global_mapping = KernelMapping()
_current: ContextVar[KernelMapping] = ContextVar("kernel_builder_kernel_mapping", default=_global_mapping)


def current_mapping() -> KernelMapping:
    """The mapping in effect here: the innermost :func:`use_kernel_mapping`, else the process-wide one."""
    return _current.get()


def _modes_of(layer_name: str, device: Device, value: object) -> dict[Mode, RepositoryProtocol]:
    where = f"kernel mapping for layer {layer_name!r}, device {device.type!r}"
    if isinstance(value, Mapping):
        modes: dict[Mode, RepositoryProtocol] = {}
        for mode, repository in value.items():
            if not isinstance(mode, Mode):
                raise TypeError(f"{where}: keys of a mode table must be Mode values, got {mode!r}")
            if mode not in _MAPPING_MODES:
                logger.warning(
                    "%s: no kernelize mode ever selects an entry registered for %s; use Mode.INFERENCE or "
                    "Mode.TRAINING (optionally | Mode.TORCH_COMPILE), or Mode.FALLBACK",
                    where,
                    mode,
                )
            modes[mode] = _check_repository(where, repository)
        return modes
    return {Mode.FALLBACK: _check_repository(where, value)}


def _check_repository(where: str, value: object) -> RepositoryProtocol:
    if not callable(getattr(value, "load", None)):
        raise TypeError(
            f"{where}: {value!r} is not a repository (LayerRepository, LocalLayerRepository, "
            f"LockedLayerRepository, or anything with a load() method returning a layer class)"
        )
    return value  # type: ignore[return-value]


_Staged = list[tuple[str, Device, dict[Mode, RepositoryProtocol]]]


def _stage(mapping: MappingSpec) -> _Staged:
    """Validate ``mapping`` whole before anything changes, so that an error leaves the mapping as it was."""
    if not isinstance(mapping, Mapping):
        raise TypeError(f"a kernel mapping is a dict layer name -> device -> repository, got {mapping!r}")
    staged: _Staged = []
    for layer_name, devices in mapping.items():
        if not isinstance(layer_name, str) or not layer_name:
            raise TypeError(
                f"kernel mapping keys must be layer names (non-empty strings), got {layer_name!r}"
            )
        if not isinstance(devices, Mapping):
            raise TypeError(
                f"kernel mapping for layer {layer_name!r} must be a dict device -> repository, "
                f"got {devices!r}"
            )
        for key, value in devices.items():
            if isinstance(key, Device):
                device = key
            elif isinstance(key, str):
                device = Device(type=check_device_type(key))
            else:
                raise TypeError(
                    f"kernel mapping for layer {layer_name!r}: devices are device type names or Device, "
                    f"got {key!r}"
                )
            staged.append((layer_name, device, _modes_of(layer_name, device, value)))
    return staged


def _add(target: KernelMapping, staged: _Staged) -> None:
    for layer_name, device, modes in staged:
        target.add(layer_name, device, modes)


def register_kernel_mapping(mapping: MappingSpec, inherit_mapping: bool = True) -> None:
    """Add ``mapping`` to the mapping in effect (see the module docstring for what replaces what).

    ``inherit_mapping=False`` empties the mapping in effect first. Inside :func:`use_kernel_mapping` this
    changes that block's mapping only.
    """
    staged = _stage(mapping)
    target = current_mapping()
    if not inherit_mapping:
        target.clear()
    _add(target, staged)


class _MappingScope:
    """The context manager :func:`use_kernel_mapping` returns; reusable, and nestable."""

    def __init__(self, mapping: MappingSpec, inherit_mapping: bool) -> None:
        self._mapping = mapping
        self._inherit = inherit_mapping
        self._tokens: list[Token[KernelMapping]] = []

    def __enter__(self) -> None:
        staged = _stage(self._mapping)
        scoped = current_mapping().copy() if self._inherit else KernelMapping()
        _add(scoped, staged)
        self._tokens.append(_current.set(scoped))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        _current.reset(self._tokens.pop())


def use_kernel_mapping(mapping: MappingSpec, *, inherit_mapping: bool = True) -> _MappingScope:
    """A context manager in which ``mapping`` is added to (``inherit_mapping=True``) or replaces the
    mapping in effect; on exit the previous mapping is back, whatever was registered inside."""
    return _MappingScope(mapping, inherit_mapping)
