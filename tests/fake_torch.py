"""A stand-in for the ``torch`` module, for tests of backend detection and variant naming without Torch.

It has only the attributes that environment detection reads (ours and upstream ``kernels`` 0.19's):
``__version__``, ``version.cuda``/``hip``/``rocm``/``xpu``, ``accelerator.current_accelerator()``,
``backends.mps.is_available()``, ``neuron``, ``compiled_with_cxx11_abi()`` and
``_C._get_privateuse1_backend_name()``.
"""

from __future__ import annotations

import platform
import sys
from types import SimpleNamespace

import pytest


def make_fake_torch(
    version: str = "2.12.0",
    *,
    cuda: str | None = None,
    hip: str | None = None,
    rocm: str | None = None,
    xpu: str | None = None,
    xpu_attribute: bool = True,
    mps: bool = False,
    tpu: bool = False,
    neuron: bool = False,
    privateuse1: str = "privateuseone",
    cxx11_abi: bool = True,
) -> SimpleNamespace:
    """A fake ``torch``; by default a CPU-only cxx11 build of ``version``. ``tpu``: the current accelerator is a
    TPU (``torch.accelerator``, as torch_tpu makes it); ``rocm``: ``torch.version.rocm`` (Torch 2.10+)."""
    version_module = SimpleNamespace(__version__=version, cuda=cuda, hip=hip)
    if rocm is not None:
        version_module.rocm = rocm
    if xpu_attribute:
        version_module.xpu = xpu
    backends = SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps))
    device = SimpleNamespace(type="tpu") if tpu else None
    torch = SimpleNamespace(
        __version__=version,
        version=version_module,
        backends=backends,
        accelerator=SimpleNamespace(current_accelerator=lambda: device),
        compiled_with_cxx11_abi=lambda: cxx11_abi,
        _C=SimpleNamespace(_get_privateuse1_backend_name=lambda: privateuse1),
    )
    if neuron:
        torch.neuron = SimpleNamespace()
    return torch


def install_fake_torch(
    monkeypatch: pytest.MonkeyPatch,
    torch: SimpleNamespace | None,
    *,
    machine: str = "x86_64",
    system: str = "Linux",
    mac_version: str = "",
) -> None:
    """Make ``import torch`` give ``torch`` (``None``: Torch is not installed) on a faked machine and OS."""
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "tvm_ffi", None)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(platform, "system", lambda: system)
    monkeypatch.setattr(platform, "mac_ver", lambda: (mac_version, ("", "", ""), ""))
