"""One loading script for two packages: ``python loader_compat.py PACKAGE CONFIG.json``.

PACKAGE is ``kernel_builder`` or ``kernels`` (upstream's, whichever release the interpreter imports: 0.19.1 or,
through ``PYTHONPATH``, 0.17.2); the script uses only the loading functions and layer repositories both export,
through ``K``. CONFIG is ``{"gpu": null | [major, minor], "rocm": null | "7.2", "cann": null | "8.2.RC1", "tpu":
false, "cases": [CASE, ...]}`` where each CASE is ``{"name": ..., "call": FUNCTION, "args": [...], "kwargs":
{...}, "env": {...}}``: ``env`` is set for that call alone (``LOCAL_KERNELS``, say); an argument ``{"path": P}``
is passed as ``Path(P)``; a FUNCTION ``Class.method`` constructs ``K.Class`` with the arguments and calls
``method()`` (a layer repository's ``load``). The script prints one JSON object, case name → outcome, where an
outcome is

- ``loaded:<TAG>``: the call returned a module; ``TAG`` is the module's ``TAG`` attribute, which every test
  kernel defines (so the two packages' different module names do not matter);
- ``layer:<TAG>``: the call returned a class (a layer repository's ``load``), defined by the kernel of that
  ``TAG`` (a function repository's class is named differently by each package);
- ``path:<name>``: the call returned a path (``install_kernel``), by its last component (the variant);
- ``True`` / ``False``: what ``has_kernel`` answered;
- ``variants:<JSON>``: the call returned a list of decisions (``get_kernel_variants``): ``[decision class,
  variant structure]`` for each, by variant name (``variant_structure.structure``: the class of each part of
  ``decision.variant``, its versions, flags and ``variant_str``); the reasons of rejected variants are each
  package's own words, and are left out;
- ``error:<builtin>``: the call raised; ``<builtin>`` is the first builtin class in the exception's MRO (the
  type both packages promise), and the message is kept under ``messages`` for the assertion output.

With ``gpu`` set, Torch is made to report a CUDA 12.8 build with one visible device of that compute capability
before ``K`` is imported, so that the GPU-architecture check of either package runs on this CPU-only machine.
``rocm`` makes it a ROCm build of that version (``torch.version.hip`` and ``torch.version.rocm``), ``cann`` an
Ascend build (the ``npu`` privateuse1 backend, ``torch_npu``'s CANN version), ``tpu`` a host whose current
accelerator is a TPU: what both packages read to detect the environment. A CASE with ``"logs": true`` also
records whether the call logged a warning about the variant's signature (`` +signature-warning``).
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from variant_structure import structure

PACKAGE, CONFIG = sys.argv[1], json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))


def fake_gpu(capability: list[int]) -> None:
    import torch

    major, minor = capability
    torch.version.cuda = "12.8"
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.current_device = lambda: 0


def fake_rocm(version: str) -> None:
    import torch

    torch.version.cuda = None
    torch.version.hip = f"{version}.25424-4179531dcd"
    torch.version.rocm = f"{version}.0"


def fake_cann(version: str) -> None:
    import types

    import torch

    collect_env = types.ModuleType("torch_npu.utils.collect_env")
    collect_env.get_cann_version = lambda: version  # type: ignore[attr-defined]
    utils = types.ModuleType("torch_npu.utils")
    utils.collect_env = collect_env  # type: ignore[attr-defined]
    sys.modules.update({"torch_npu": types.ModuleType("torch_npu"), "torch_npu.utils": utils})
    sys.modules["torch_npu.utils.collect_env"] = collect_env
    torch._C._get_privateuse1_backend_name = lambda: "npu"


def fake_tpu() -> None:
    import types

    import torch

    tpu = types.SimpleNamespace(type="tpu")
    setattr(torch.accelerator, "current_accelerator", lambda *args, **kwargs: tpu)  # noqa: B010


class SignatureWarnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "signed" in record.getMessage():
            self.count += 1


SIGNATURE_WARNINGS = SignatureWarnings()
logging.getLogger().addHandler(SIGNATURE_WARNINGS)


def outcome(value: Any) -> str:
    if isinstance(value, list):
        decisions = sorted(value, key=lambda decision: decision.variant.variant_str)
        return "variants:" + json.dumps([[type(d).__name__, structure(d.variant)] for d in decisions])
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, os.PathLike):
        return f"path:{Path(value).name}"
    if isinstance(value, type):
        kernel = sys.modules[value.__module__.partition(".")[0]]
        return f"layer:{getattr(kernel, 'TAG', '?')}"
    return f"loaded:{getattr(value, 'TAG', '?')}"


def run(case: dict[str, Any], messages: dict[str, str]) -> str:
    saved = {name: os.environ.get(name) for name in case.get("env", {})}
    os.environ.update(case.get("env", {}))
    before = SIGNATURE_WARNINGS.count
    try:
        args = [Path(arg["path"]) if isinstance(arg, dict) else arg for arg in case.get("args", [])]
        owner, _, method = case["call"].partition(".")
        called = getattr(K, owner)(*args, **case.get("kwargs", {}))
        result = outcome(getattr(called, method)() if method else called)
        if case.get("logs") and SIGNATURE_WARNINGS.count > before:
            result += " +signature-warning"
        return result
    except Exception as error:  # noqa: BLE001 - recorded: the builtin type both packages promise
        builtin = next(c for c in type(error).__mro__ if c.__module__ == "builtins")
        messages[case["name"]] = f"{type(error).__name__}: {error}"
        return f"error:{builtin.__name__}"
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


if CONFIG.get("gpu"):
    fake_gpu(CONFIG["gpu"])
if CONFIG.get("rocm"):
    fake_rocm(CONFIG["rocm"])
if CONFIG.get("cann"):
    fake_cann(CONFIG["cann"])
if CONFIG.get("tpu"):
    fake_tpu()
K: Any = importlib.import_module(PACKAGE)


def main() -> None:
    results: dict[str, Any] = {}
    messages: dict[str, str] = {}
    for case in CONFIG["cases"]:
        results[case["name"]] = run(case, messages)
    print(json.dumps({"results": results, "messages": messages}, sort_keys=True))


if __name__ == "__main__":
    main()
