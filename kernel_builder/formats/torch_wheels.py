"""What a Torch wheel's metadata says about its build: the CUDA release an untagged (PyPI) wheel is built for.

PyPI's Torch wheels carry no local version tag (``2.15.0``, not ``2.15.0+cu132``); their flavour shows only in
what they require: NVIDIA's CUDA runtime of one release (``cuda-toolkit[...]==13.2.2`` since CUDA 13,
``nvidia-cuda-runtime-cu12==12.6.77`` before). Both the build environment (which flavour a wheel found by pip
is) and the matrix update (which flavour PyPI serves for a new release) read it here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from packaging.requirements import InvalidRequirement, Requirement

__all__ = ["LINUX", "cuda_required"]

_CUDA_RUNTIME = re.compile(r"^(nvidia-cuda-runtime(-cu(\d+))?|cuda-toolkit)$")

#: The marker environment of a Linux machine: what decides a Linux wheel's requirements wherever they are read.
LINUX: Mapping[str, str] = {"platform_system": "Linux", "sys_platform": "linux", "os_name": "posix"}


def cuda_required(
    requires_dist: Iterable[str], environment: Mapping[str, str] | None = None
) -> tuple[int, int] | None:
    """The CUDA ``(major, minor)`` whose runtime these ``Requires-Dist`` lines pin, or ``None`` (a CPU build).

    Markers are evaluated for this machine, or, with ``environment``, with those values overriding its own
    (:data:`LINUX`: a Linux wheel's requirements read on another OS); extras are not installed."""
    context = {"extra": "", **(environment or {})}
    for text in requires_dist:
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        if requirement.marker is not None and not requirement.marker.evaluate(context):
            continue
        if not _CUDA_RUNTIME.match(requirement.name):
            continue
        for spec in requirement.specifier:
            match = re.match(r"(\d+)\.(\d+)", spec.version)
            if spec.operator in ("==", "~=", ">=") and match:
                return int(match[1]), int(match[2])
    return None
