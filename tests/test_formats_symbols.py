"""symbols.json: what a kernel module exports, and the checks on a file read back (it may come from the Hub)."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from kernel_builder.formats.symbols import module_symbols, read_symbols, symbols_json


def kernel_module(name: str, source: str) -> types.ModuleType:
    module = types.ModuleType(name)
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


LAYERS = """
import torch

class Fast(torch.nn.Module):
    has_backward = False
    def forward(self, x):
        return x

class Plain(torch.nn.Module):
    def forward(self, x):
        return x

class NotALayer:
    pass

helper = 3
"""


def test_functions_of_all_and_layers_with_declared_attributes() -> None:
    module = kernel_module("_k_cpu_1", "def b(x, y=1): return x\ndef a(x): return x\nCONSTANT = 1\n")
    setattr(module, "__all__", ["b", "a", "CONSTANT", "layers"])
    setattr(module, "layers", kernel_module("_k_cpu_1.layers", LAYERS))
    assert module_symbols(module) == {
        "schema_version": 1,
        "functions": [{"name": "a", "signature": "(x)"}, {"name": "b", "signature": "(x, y=1)"}],
        "layers": [
            {"name": "Fast", "attributes": {"has_backward": False, "can_torch_compile": None}},
            {"name": "Plain", "attributes": {"has_backward": None, "can_torch_compile": None}},
        ],
    }


def test_without_all_the_functions_defined_in_the_kernel() -> None:
    module = kernel_module(
        "_k_cpu_2", "from os.path import join\ndef mine(x): return x\ndef _private(): pass\n"
    )
    assert [entry["name"] for entry in module_symbols(module)["functions"]] == ["mine"]
    assert module_symbols(module)["layers"] == []


def test_the_file_is_stable_and_round_trips(tmp_path: Path) -> None:
    symbols = {"schema_version": 1, "functions": [{"name": "f", "signature": None}], "layers": []}
    path = tmp_path / "symbols.json"
    path.write_text(symbols_json(symbols))
    assert path.read_text() == symbols_json(json.loads(path.read_text()))
    assert read_symbols(path) == symbols


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("[1]", "unsupported symbols.json schema"),
        ('{"schema_version": 2, "functions": [], "layers": []}', "unsupported symbols.json schema"),
        (
            '{"schema_version": 1, "functions": [{"x": 1}], "layers": []}',
            "functions must be a list of objects",
        ),
        ('{"schema_version": 1, "functions": [], "layers": {}}', "layers must be a list of objects"),
        (
            '{"schema_version": 1, "functions": [], "layers": [{"name": "L", "attributes": {"has_backward": 1}}]}',
            "layer 'L': attributes must be true, false or null",
        ),
        ("{", "is not valid JSON"),
    ],
)
def test_invalid_files_name_the_problem(tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "symbols.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=fragment) as raised:
        read_symbols(path)
    assert str(path) in str(raised.value)
