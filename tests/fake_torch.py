"""A stand-in for the ``torch`` module, for tests of backend detection and variant naming without Torch.

It has only the attributes that environment detection reads: ``__version__``, ``version.cuda``/``hip``/``xpu``,
``backends.mps.is_available()``, ``backends.tpu``, ``neuron``, ``compiled_with_cxx11_abi()`` and
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
    xpu: str | None = None,
    xpu_attribute: bool = True,
    mps: bool = False,
    tpu: bool = False,
    neuron: bool = False,
    privateuse1: str = "privateuseone",
    cxx11_abi: bool = True,
) -> SimpleNamespace:
    """A fake ``torch``; by default a CPU-only cxx11 build of ``version``."""
    version_module = SimpleNamespace(__version__=version, cuda=cuda, hip=hip)
    if xpu_attribute:
        version_module.xpu = xpu
    backends = SimpleNamespace(mps=SimpleNamespace(is_available=lambda: mps))
    if tpu:
        backends.tpu = SimpleNamespace()
    torch = SimpleNamespace(
        __version__=version,
        version=version_module,
        backends=backends,
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
