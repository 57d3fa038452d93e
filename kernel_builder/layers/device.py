"""Devices in kernel mappings: a device type, and for CUDA and ROCm an optional range of capabilities.

A capability is ``major * 10 + minor`` (``80`` for an A100, ``90`` for an H100); on ROCm it is what Torch
reports for the GPU in the same form. Ranges are inclusive at both ends.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEVICE_TYPES", "CUDAProperties", "Device", "ROCMProperties", "check_device_type"]

#: Every device type a mapping or ``kernelize`` accepts.
DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "neuron", "npu", "rocm", "tpu", "xpu"})


def check_device_type(device_type: object) -> str:
    """``device_type`` itself when it is one of :data:`DEVICE_TYPES`; else ``ValueError`` listing them."""
    if not isinstance(device_type, str) or device_type not in DEVICE_TYPES:
        raise ValueError(
            f"unknown device type {device_type!r}: expected one of {', '.join(sorted(DEVICE_TYPES))}"
        )
    return device_type


@dataclass(frozen=True)
class _Capabilities:
    min_capability: int
    max_capability: int

    def __post_init__(self) -> None:
        kind = type(self).__name__
        for name in ("min_capability", "max_capability"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise TypeError(f"{kind}.{name} must be an int like 80 (capability 8.0), got {value!r}")
        if self.min_capability > self.max_capability:
            raise ValueError(
                f"{kind}: min_capability ({self.min_capability}) is greater than max_capability "
                f"({self.max_capability})"
            )


@dataclass(frozen=True)
class CUDAProperties(_Capabilities):
    """The CUDA capabilities a mapping entry applies to: ``min_capability`` to ``max_capability``."""


@dataclass(frozen=True)
class ROCMProperties(_Capabilities):
    """The ROCm GPU capabilities a mapping entry applies to, inclusive at both ends."""


_PROPERTIES_FOR = {CUDAProperties: "cuda", ROCMProperties: "rocm"}


@dataclass(frozen=True)
class Device:
    """A device type (``"cuda"``, ``"rocm"``, ``"cpu"``, ``"mps"``, ``"xpu"``, …) and, for ``cuda`` and
    ``rocm``, optional capability bounds; without them the entry applies to every GPU of that type."""

    type: str
    properties: CUDAProperties | ROCMProperties | None = None

    def __post_init__(self) -> None:
        check_device_type(self.type)
        if self.properties is None:
            return
        expected = _PROPERTIES_FOR.get(type(self.properties))
        if expected is None:
            raise TypeError(
                f"Device.properties must be CUDAProperties, ROCMProperties or None, got {self.properties!r}"
            )
        if self.type != expected:
            raise ValueError(
                f"{type(self.properties).__name__} applies to {expected!r} devices, not {self.type!r}"
            )

    @property
    def capability_range(self) -> tuple[int, int] | None:
        """``(min, max)`` of the properties, or ``None`` when the entry applies to every capability."""
        if self.properties is None:
            return None
        return (self.properties.min_capability, self.properties.max_capability)
