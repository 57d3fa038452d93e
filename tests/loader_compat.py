"""One loading script for two packages: ``python loader_compat.py PACKAGE CONFIG.json``.

PACKAGE is ``kernel_builder`` or ``kernels`` (upstream, the pinned 0.19.1); the script uses only the loading
functions and layer repositories both export, through ``K``. CONFIG is ``{"gpu": null | [major, minor], "cases":
[CASE, ...]}`` where each CASE is ``{"name": ..., "call": FUNCTION, "args": [...], "kwargs": {...}, "env":
{...}}``: ``env`` is set for that call alone (``LOCAL_KERNELS``, say); an argument ``{"path": P}`` is passed as
``Path(P)``; a FUNCTION ``Class.method`` constructs ``K.Class`` with the arguments and calls ``method()`` (a
layer repository's ``load``). The script prints one JSON object, case name → outcome, where an outcome is

- ``loaded:<TAG>``: the call returned a module; ``TAG`` is the module's ``TAG`` attribute, which every test
  kernel defines (so the two packages' different module names do not matter);
- ``layer:<TAG>``: the call returned a class (a layer repository's ``load``), defined by the kernel of that
  ``TAG`` (a function repository's class is named differently by each package);
- ``path:<name>``: the call returned a path (``install_kernel``), by its last component (the variant);
- ``True`` / ``False``: what ``has_kernel`` answered;
- ``error:<builtin>``: the call raised; ``<builtin>`` is the first builtin class in the exception's MRO (the
  type both packages promise), and the message is kept under ``messages`` for the assertion output.

With ``gpu`` set, Torch is made to report a CUDA 12.8 build with one visible device of that compute capability
before ``K`` is imported, so that the GPU-architecture check of either package runs on this CPU-only machine.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path
from typing import Any

PACKAGE, CONFIG = sys.argv[1], json.loads(Path(sys.argv[2]).read_text(encoding="utf-8"))


def fake_gpu(capability: list[int]) -> None:
    import torch

    major, minor = capability
    torch.version.cuda = "12.8"
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_capability = lambda device=None: (major, minor)
    torch.cuda.current_device = lambda: 0


def outcome(value: Any) -> str:
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
    try:
        args = [Path(arg["path"]) if isinstance(arg, dict) else arg for arg in case.get("args", [])]
        owner, _, method = case["call"].partition(".")
        called = getattr(K, owner)(*args, **case.get("kwargs", {}))
        return outcome(getattr(called, method)() if method else called)
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
K: Any = importlib.import_module(PACKAGE)


def main() -> None:
    results: dict[str, Any] = {}
    messages: dict[str, str] = {}
    for case in CONFIG["cases"]:
        results[case["name"]] = run(case, messages)
    print(json.dumps({"results": results, "messages": messages}, sort_keys=True))


if __name__ == "__main__":
    main()
