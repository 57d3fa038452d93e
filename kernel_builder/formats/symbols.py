"""``symbols.json``: a variant's public API, written at build time so that it can be described without
importing the kernel (``kernel-builder describe-api``, upstream's ``kernels describe-api``; docs/layout.md).

The builder writes it from the kernel as its import check loaded it (:func:`module_symbols`, in the build
interpreter), before the variant's digest is computed, so the digest covers it. The format is the one upstream's
``kernels`` loader (0.19) reads: ``schema_version`` 1; ``functions``, each ``{"name": ...}`` (we add its
``signature``, which that reader ignores); ``layers``, each ``{"name": ..., "attributes": {"has_backward": ...,
"can_torch_compile": ...}}`` where an attribute the layer class does not declare is ``null`` (unknown).

The public functions are the names the kernel's ``__init__`` lists in ``__all__`` (other than ``layers``) that
are functions, or, without ``__all__``, its public functions defined in the kernel itself; the layers are the
``torch.nn.Module`` classes of its ``layers`` module (those its ``__all__`` lists, when it has one). Reading
(:func:`read_symbols`) checks the shape the same way upstream does, since the file comes from the Hub.
"""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = [
    "LAYER_ATTRIBUTES",
    "SCHEMA_VERSION",
    "SYMBOLS_FILE",
    "module_symbols",
    "read_symbols",
    "symbols_json",
]

SYMBOLS_FILE = "symbols.json"
SCHEMA_VERSION = 1
#: The class attributes a kernel layer declares about itself (docs/kernelize.md), reported for each layer.
LAYER_ATTRIBUTES = ("has_backward", "can_torch_compile")
#: Far more than a kernel's API; a larger file from the Hub is refused before it is parsed.
_MAX_BYTES = 4 << 20


def _public_names(module: ModuleType) -> list[str] | None:
    exported = getattr(module, "__all__", None)
    if isinstance(exported, (list, tuple)) and all(isinstance(name, str) for name in exported):
        return list(exported)
    return None


def _signature(func: Any) -> str | None:
    try:
        return str(inspect.signature(func))
    except (TypeError, ValueError):  # some builtins and extension functions have none
        return None


def _is_function(value: object) -> bool:
    return callable(value) and not inspect.isclass(value) and not inspect.ismodule(value)


def _functions(module: ModuleType) -> list[dict[str, Any]]:
    names = _public_names(module)
    if names is None:
        prefix = module.__name__
        names = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and _is_function(value)
            and str(getattr(value, "__module__", "")).partition(".")[0] == prefix
        ]
    found = []
    for name in names:
        value = getattr(module, name, None)
        if name != "layers" and _is_function(value):
            found.append({"name": name, "signature": _signature(value)})
    return sorted(found, key=lambda entry: entry["name"])


def _layers(module: ModuleType) -> list[dict[str, Any]]:
    layers = getattr(module, "layers", None)
    if not inspect.ismodule(layers):
        return []
    from torch import nn

    names = _public_names(layers)
    if names is None:
        names = [name for name in vars(layers) if not name.startswith("_")]
    found = []
    for name in names:
        value = getattr(layers, name, None)
        if inspect.isclass(value) and issubclass(value, nn.Module):
            attributes = {}
            for attribute in LAYER_ATTRIBUTES:
                declared = getattr(value, attribute, None)
                attributes[attribute] = declared if isinstance(declared, bool) else None
            found.append({"name": name, "attributes": attributes})
    return sorted(found, key=lambda entry: entry["name"])


def module_symbols(module: ModuleType) -> dict[str, Any]:
    """The ``symbols.json`` content of an imported kernel module."""
    return {"schema_version": SCHEMA_VERSION, "functions": _functions(module), "layers": _layers(module)}


def symbols_json(symbols: dict[str, Any]) -> str:
    """The file's text: stable (sorted keys, two-space indent, a final newline), so a rebuild writes the same
    bytes."""
    return json.dumps(symbols, indent=2, sort_keys=True) + "\n"


def read_symbols(path: Path) -> dict[str, Any]:
    """``path`` parsed and checked; ``ValueError`` naming the file and what is wrong otherwise (``OSError`` when it
    cannot be read)."""
    if path.stat().st_size > _MAX_BYTES:
        raise ValueError(f"{path} is larger than {_MAX_BYTES} bytes; refusing to read it")
    try:
        symbols = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(symbols, dict) or symbols.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(f"{path}: unsupported symbols.json schema; expected schema_version {SCHEMA_VERSION}")
    for group in ("functions", "layers"):
        entries = symbols.get(group)
        if not isinstance(entries, list) or not all(
            isinstance(entry, dict) and isinstance(entry.get("name"), str) for entry in entries
        ):
            raise ValueError(f"{path}: {group} must be a list of objects, each with a string name")
    for layer in symbols["layers"]:
        attributes = layer.get("attributes")
        if not isinstance(attributes, dict) or not all(
            value is None or isinstance(value, bool) for value in attributes.values()
        ):
            raise ValueError(f"{path}: layer {layer['name']!r}: attributes must be true, false or null")
    return symbols
