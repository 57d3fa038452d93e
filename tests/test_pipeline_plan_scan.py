"""The plan's scan of a project's sources (``kernel_builder.pipeline.plan.scan``): one listing and one reading give
the same shipped files, hidden files, id inputs and unique id as the rules they come from, frozen at the time
of the scan."""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import pytest
from stage_fixtures import load, write_files

from kernel_builder.pipeline.plan.scan import scan_sources
from kernel_builder.pipeline.plan.sources import hidden_python_files, id_input_files, shipped_python_files
from kernel_builder.pipeline.plan.unique_id import compute_unique_id, id_text

BUILD_TOML = """\
[general]
name = "scanned"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp"]
pyext = ["py", "json"]

[kernel.scanned_cpu]
backend = "cpu"
depends = ["torch"]
src = ["scanned_cpu/scanned.cpp"]
"""

FILES: dict[str, str | bytes] = {
    "build.toml": BUILD_TOML,
    "torch-ext/torch_binding.cpp": "// binding\n",
    "scanned_cpu/scanned.cpp": "// kernel\n",
    "torch-ext/scanned/__init__.py": "from ._ops import ops\n",
    "torch-ext/scanned/_ops.py": "# the user's own: replaced\n",
    "torch-ext/scanned/.private.py": "HIDDEN = 1\n",
    "torch-ext/scanned/layers/__init__.py": "",
    "torch-ext/scanned/layers/tile.json": b'{"tile": 64}\n',
    "torch-ext/scanned/notes.txt": "not picked by the filter\n",
    "torch-ext/scanned/__pycache__/__init__.cpython-311.pyc": b"\x00",
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_files(tmp_path / "scanned", FILES)


def test_the_scan_agrees_with_the_rules_it_replaces(root: Path) -> None:
    project = load(root)
    scan = scan_sources(project)
    assert scan.package == "torch-ext/scanned"
    assert (
        list(scan.shipped)
        == shipped_python_files(project)
        == ["__init__.py", "layers/__init__.py", "layers/tile.json"]
    )
    assert list(scan.hidden) == hidden_python_files(project) == [".private.py"]
    assert scan.input_paths == id_input_files(project)
    for file in scan.inputs:
        info = (root / file.path).stat()
        assert file.sha256 == hashlib.sha256((root / file.path).read_bytes()).hexdigest(), file.path
        assert (file.size, file.mtime_ns) == (info.st_size, info.st_mtime_ns), file.path
    assert scan.id_text == id_text(project)
    assert scan.unique_id == compute_unique_id(project)
    assert scan_sources(project, "1.2.3").unique_id == compute_unique_id(project, "1.2.3") != scan.unique_id
    assert scan.user_ops
    assert dict(scan.contents) == {
        rel: (root / "torch-ext/scanned" / rel).read_bytes() for rel in shipped_python_files(project)
    }


def test_no_user_ops(root: Path) -> None:
    (root / "torch-ext/scanned/_ops.py").unlink()
    assert not scan_sources(load(root)).user_ops


def test_the_scan_is_frozen_at_the_time_it_was_taken(root: Path) -> None:
    """An edit after the scan (during a long compile) changes neither the scan nor what it would ship."""
    project = load(root)
    scan = scan_sources(project)
    before = dataclasses.replace(scan)
    init = root / "torch-ext/scanned/__init__.py"
    init.write_text("from ._ops import ops\nEDITED = True\n", encoding="utf-8")
    (root / "torch-ext/scanned/added.py").write_text("", encoding="utf-8")
    assert scan == before
    assert scan.contents["__init__.py"] == b"from ._ops import ops\n"
    assert "added.py" not in scan.shipped
    rescanned = scan_sources(project)
    assert rescanned.unique_id != scan.unique_id and "added.py" in rescanned.shipped
    with pytest.raises(dataclasses.FrozenInstanceError):
        scan.unique_id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        scan.contents["__init__.py"] = b""  # type: ignore[index]
