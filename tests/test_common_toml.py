"""Reading TOML (kernel_builder.common.toml): one reader and one error type for every TOML file."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel_builder.common import toml


def test_loads_returns_the_table() -> None:
    assert toml.loads('a = 1\n[t]\nb = ["x"]\n') == {"a": 1, "t": {"b": ["x"]}}


def test_invalid_toml_raises_the_one_error_type_with_its_position() -> None:
    with pytest.raises(toml.TOMLDecodeError, match=r"line 2"):
        toml.loads("a = 1\nb = \n")


def test_read_toml_reads_utf8(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_bytes('name = "café"\n'.encode())
    assert toml.read_toml(path) == {"name": "café"}


def test_read_toml_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        toml.read_toml(tmp_path / "missing.toml")
    latin = tmp_path / "latin.toml"
    latin.write_bytes(b'name = "caf\xe9"\n')
    with pytest.raises(UnicodeDecodeError):
        toml.read_toml(latin)
