"""Facts about the running environment, and the one backend-detection function.

The loader judges variant directories against an :class:`Environment` record, and the build tool names the
running environment's variant from one (``kernel_builder.formats.variants.variant_for_environment``). Detection is kept
apart from its uses so that tests can hand in records of machines they do not run on.

:func:`detect_backend` is the only detection order of the running Torch's backend (docs/loading.md); the
build, which reads a Torch's ``version.py`` without importing it, asks the backend registry
(``kernel_builder.backends.torch_build_of``), which ``tests/test_backends.py`` holds to the same answers. The
generator of the noarch ``_ops.py`` embeds its source verbatim, and that file cannot import ``kernel_builder``;
the function therefore uses nothing but its argument and builtins, keeps its annotations as strings (never
evaluated, so valid on Python 3.9; this module has no ``from __future__ import annotations`` for that reason),
and sticks to Python 3.9 syntax.

Torch is optional: nothing here imports it at module import time, so the CLI starts without it.
"""

import ctypes
import importlib
import importlib.util
import platform
import re
import sys
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Environment",
    "detect_backend",
    "detect_environment",
    "normalize_cpu",
]

_CPU_ALIASES = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}

_MAJOR_MINOR = re.compile(r"^([0-9]+)\.([0-9]+)")


def normalize_cpu(machine: str) -> str:
    """Map a machine name (``platform.machine()``) to a variant CPU name: ``x86_64`` or ``aarch64``.

    ``x86_64``, ``amd64`` and ``AMD64`` give ``x86_64``; ``aarch64``, ``arm64`` and ``ARM64`` give ``aarch64``.
    Raises ``ValueError`` for any other machine.
    """
    cpu = _CPU_ALIASES.get(machine.lower())
    if cpu is None:
        raise ValueError(f"unsupported CPU {machine!r}: variants exist for x86_64 and aarch64 only")
    return cpu


def host_cpu_os() -> tuple[str, str]:
    """This host's CPU and OS as variant names spell them: ``x86_64`` or ``aarch64`` (any other machine in lower
    case, for messages) and ``platform.system().lower()`` (``linux``, ``darwin``, ...).

    The one reading of the host: the running environment (:func:`detect_environment`), the build interpreter's
    variant and the plan's ``<cpu>-<os>`` all come from here, so they cannot disagree.
    """
    machine = platform.machine()
    try:
        cpu = normalize_cpu(machine)
    except ValueError:
        cpu = machine.lower()
    return cpu, platform.system().lower()


def detect_backend(torch_module: "Any") -> "tuple[str, tuple[int, int] | None]":
    """Return the compute backend of a Torch module and its version ``(major, minor)``, if it has one.

    First match wins, as in upstream ``kernels`` 0.19: ``tpu`` (``torch.accelerator.current_accelerator()`` is a
    TPU), ``neuron`` (``torch`` has ``neuron``), ``cuda`` (``torch.version.cuda``, the version Torch was built
    with), ``rocm`` (``torch.version.hip`` set; the version is ``torch.version.rocm``'s, else ``hip``'s, before any
    ``-``: the two differ from ROCm 10), ``metal`` (MPS available), ``xpu`` (``torch.version.xpu``: its first four
    characters and its sixth, ``"20250300"`` gives 2025.3), ``cann`` (privateuse1 backend named ``npu``; its
    version comes from ``torch_npu``, which this function does not import), else ``cpu``. A version that cannot
    be read gives ``None``.
    """

    # Self-contained on purpose: this source is copied into generated _ops.py files.
    def major_minor(text: "str") -> "tuple[int, int] | None":
        parts = text.strip().split(".")
        if (
            len(parts) < 2
            or not (parts[0] + parts[1]).isascii()
            or not parts[0].isdigit()
            or not parts[1].isdigit()
        ):
            return None
        return int(parts[0]), int(parts[1])

    accelerator = getattr(torch_module, "accelerator", None)
    current_accelerator = getattr(accelerator, "current_accelerator", None)
    if current_accelerator is not None:
        try:
            device = current_accelerator()
        except Exception:  # noqa: BLE001 - a broken accelerator runtime is no TPU
            device = None
        if getattr(device, "type", None) == "tpu":
            return "tpu", None
    if hasattr(torch_module, "neuron"):
        return "neuron", None

    version = getattr(torch_module, "version", None)
    cuda = getattr(version, "cuda", None)
    if cuda:
        return "cuda", major_minor(str(cuda))
    hip = getattr(version, "hip", None)
    if hip:
        rocm = getattr(version, "rocm", None) or hip
        return "rocm", major_minor(str(rocm).split("-")[0])

    backends = getattr(torch_module, "backends", None)
    mps = getattr(backends, "mps", None)
    mps_available = getattr(mps, "is_available", None)
    if mps_available is not None and mps_available():
        return "metal", None

    xpu = getattr(version, "xpu", None)
    if xpu:
        xpu_text = str(xpu).strip()
        return "xpu", major_minor(xpu_text[0:4] + "." + xpu_text[5:6])

    c_module = getattr(torch_module, "_C", None)
    privateuse1_name = getattr(c_module, "_get_privateuse1_backend_name", None)
    if privateuse1_name is not None and privateuse1_name() == "npu":
        return "cann", None

    return "cpu", None


def _current_python() -> tuple[int, int]:
    return sys.version_info.major, sys.version_info.minor


@dataclass(frozen=True, kw_only=True)
class Environment:
    """What the loader and the build tool need to know about the running environment (docs/loading.md)."""

    cpu: str
    """``x86_64`` or ``aarch64`` when known (normalised), otherwise ``platform.machine()`` in lower case."""
    os: str
    """``platform.system().lower()``: ``linux``, ``darwin``, ``windows``, …"""
    torch_version: tuple[int, int] | None
    """Torch ``(major, minor)`` with any local suffix dropped; ``None`` without Torch."""
    cxx11_abi: bool | None
    """``torch.compiled_with_cxx11_abi()`` on Linux; ``None`` elsewhere and without Torch."""
    backend: str
    """``cpu``, ``cuda``, ``rocm``, ``xpu``, ``metal``, ``neuron``, ``tpu`` or ``cann`` (:func:`detect_backend`)."""
    backend_version: tuple[int, int] | None
    """The backend's ``(major, minor)``, ``None`` for backends without one or when it is unknown."""
    macos_version: tuple[int, int] | None = None
    """macOS ``(major, minor)`` on macOS, else ``None``."""
    free_threaded: bool = False
    """Whether CPython is a free-threaded build (``Py_GIL_DISABLED``); see ``python_version``."""
    python_version: tuple[int, int] = field(default_factory=_current_python)
    """The interpreter's ``(major, minor)``: a compiled variant names the oldest it loads in; free-threaded builds
    load ``abi3t`` variants only (CPython 3.15 or later)."""
    tvm_ffi_version: tuple[int, int] | None = None
    """``tvm_ffi`` ``(major, minor)`` if it imports, else ``None``."""
    mlx: bool = False
    """Whether the ``mlx`` package is installed (``mlx-<backend>`` noarch variants need it)."""


def _parse_major_minor(text: str) -> tuple[int, int] | None:
    match = _MAJOR_MINOR.match(text.strip())
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2))


def _cudart_version() -> tuple[int, int] | None:
    """The CUDA runtime version from a loadable ``cudart`` library, or ``None``; never raises."""
    if sys.platform == "win32":
        names = ["cudart64_13.dll", "cudart64_12.dll", "cudart64_110.dll"]
    else:
        names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"]
    for name in names:
        try:
            library = ctypes.CDLL(name)
            value = ctypes.c_int(0)
            status = library.cudaRuntimeGetVersion(ctypes.byref(value))
        except (OSError, AttributeError):
            continue
        if status == 0 and value.value > 0:
            # cudaRuntimeGetVersion encodes 12.6 as 12060.
            return value.value // 1000, (value.value % 1000) // 10
    return None


def _import_optional(name: str) -> Any:
    """The module ``name``, or ``None`` when it is not installed. Other import failures propagate."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _tvm_ffi_version() -> tuple[int, int] | None:
    tvm_ffi = _import_optional("tvm_ffi")
    if tvm_ffi is None:
        return None
    return _parse_major_minor(str(getattr(tvm_ffi, "__version__", "")))


def _free_threaded() -> bool:
    """Whether this is a free-threaded build (``Py_GIL_DISABLED``). Where Python has ``sys.abiflags`` (POSIX),
    its ``t`` says so without importing ``sysconfig`` and its build data (a warm ``get_kernel`` pays for every
    import); elsewhere ``sysconfig`` answers."""
    abiflags = getattr(sys, "abiflags", None)
    if isinstance(abiflags, str):
        return "t" in abiflags
    import sysconfig

    return bool(sysconfig.get_config_var("Py_GIL_DISABLED"))


def _cann_version() -> tuple[int, int] | None:
    """CANN's version as upstream reads it: ``torch_npu``'s ``get_cann_version()``, its first and third characters
    (``"8.2.RC1"`` → 8.2); ``None`` when ``torch_npu`` cannot tell."""
    try:
        collect_env = importlib.import_module("torch_npu.utils.collect_env")
        text = str(collect_env.get_cann_version())
    except Exception:  # noqa: BLE001 - an unreadable version leaves compiled cann variants unchosen, nothing else
        return None
    return _parse_major_minor(text[0:1] + "." + text[2:3])


def _has_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return name in sys.modules


def _mlx_metal() -> bool:
    """Without Torch: whether MLX runs on Metal here (upstream's fallback after the CUDA runtime)."""
    mlx_core = _import_optional("mlx.core")
    metal = getattr(mlx_core, "metal", None)
    available = getattr(metal, "is_available", None)
    try:
        return bool(available()) if available is not None else False
    except Exception:  # noqa: BLE001
        return False


def detect_environment() -> Environment:
    """Detect the running environment. Imports Torch (if installed) and ``tvm_ffi`` (if installed).

    Without Torch the backend is CUDA when a ``cudart`` library can be loaded (its runtime version), else Metal
    when MLX runs on it, else CPU.
    """
    cpu, os_name = host_cpu_os()

    macos_version = _parse_major_minor(platform.mac_ver()[0]) if os_name == "darwin" else None

    torch: Any = _import_optional("torch")
    torch_version: tuple[int, int] | None = None
    cxx11_abi: bool | None = None
    backend_version: tuple[int, int] | None
    mlx = _has_module("mlx")
    if torch is None:
        backend_version = _cudart_version()
        backend = "cpu" if backend_version is None else "cuda"
        if backend == "cpu" and mlx and _mlx_metal():
            backend = "metal"
    else:
        torch_version = _parse_major_minor(str(torch.__version__).split("+")[0])
        if os_name == "linux":
            compiled_with_cxx11_abi = getattr(torch, "compiled_with_cxx11_abi", None)
            if compiled_with_cxx11_abi is not None:
                cxx11_abi = bool(compiled_with_cxx11_abi())
        backend, backend_version = detect_backend(torch)
        if backend == "cann" and backend_version is None:
            backend_version = _cann_version()

    return Environment(
        cpu=cpu,
        os=os_name,
        torch_version=torch_version,
        cxx11_abi=cxx11_abi,
        backend=backend,
        backend_version=backend_version,
        macos_version=macos_version,
        free_threaded=_free_threaded(),
        python_version=_current_python(),
        tvm_ffi_version=_tvm_ffi_version(),
        mlx=mlx,
    )
