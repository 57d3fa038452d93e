"""The content id behind every op namespace (docs/layout.md)."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from stage_fixtures import load, write_files

import kernel_builder
from kernel_builder.errors import UsageError
from kernel_builder.pipeline.plan.sources import id_input_files, shipped_python_files
from kernel_builder.pipeline.plan.unique_id import check_unique_id, compute_unique_id, id_text, ops_name

BUILD_TOML = """\
[general]
name = "golden"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]
pyext = ["py", "json"]

[kernel.golden_cpu]
backend = "cpu"
depends = ["torch"]
src = ["golden_cpu/golden.cpp", "golden_cpu/golden.h"]

[kernel.golden_cuda]
backend = "cuda"
depends = ["torch"]
src = ["golden_cuda/golden.cu"]

# Never built here (rocm is not in `backends`), but its sources are id inputs all the same.
[kernel.golden_rocm]
backend = "rocm"
depends = ["torch"]
src = ["golden_rocm/golden.hip"]
"""

FILES: dict[str, str | bytes] = {
    "build.toml": BUILD_TOML,
    "torch-ext/torch_binding.cpp": '#include "torch_binding.h"\n',
    "torch-ext/torch_binding.h": "#pragma once\n",
    "golden_cpu/golden.cpp": '#include "golden.h"\n',
    "golden_cpu/golden.h": "#pragma once\n",
    "golden_cuda/golden.cu": "__global__ void k() {}\n",
    "golden_rocm/golden.hip": "// hip\n",
    "torch-ext/golden/__init__.py": "from ._ops import ops\n",
    "torch-ext/golden/layers/__init__.py": "",
    "torch-ext/golden/config.json": '{"tile": 64}\n',
    # Not id inputs: unshipped files, caches, the generated _ops.py, unlisted headers, other files.
    "torch-ext/golden/notes.txt": "not shipped\n",
    "torch-ext/golden/types.pyi": "not shipped: pyext replaces the default list\n",
    "torch-ext/golden/_ops.py": "ops = None\n",
    "torch-ext/golden/__pycache__/__init__.cpython-311.pyc": b"\x00cache",
    "torch-ext/golden/layers/__pycache__/__init__.cpython-311.pyc": b"\x00cache",
    "torch-ext/golden/layers/stale.pyc": b"\x00stale",
    "golden_cpu/unlisted.h": "#pragma once\n",
    "README.md": "# golden\n",
}

INPUTS = [
    "build.toml",
    "golden_cpu/golden.cpp",
    "golden_cpu/golden.h",
    "golden_cuda/golden.cu",
    "golden_rocm/golden.hip",
    "torch-ext/golden/__init__.py",
    "torch-ext/golden/config.json",
    "torch-ext/golden/layers/__init__.py",
    "torch-ext/torch_binding.cpp",
    "torch-ext/torch_binding.h",
]

#: The id of the fixture for tool version "1.2.3", computed once and frozen: it must never change by accident.
GOLDEN_ID = "d51f0b3fb1"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return write_files(tmp_path / "golden", FILES)


def unique_id(root: Path, version: str = "1.2.3") -> str:
    return compute_unique_id(load(root), tool_version=version)


def test_inputs_are_the_listed_and_shipped_files(root: Path) -> None:
    project = load(root)
    assert id_input_files(project) == INPUTS
    assert shipped_python_files(project) == ["__init__.py", "config.json", "layers/__init__.py"]


def test_canonical_text_follows_the_spec(root: Path) -> None:
    lines = ["kernel-builder-unique-id 1\n", "generator 1.2.3\n"]
    for rel in sorted(INPUTS, key=lambda p: p.encode()):
        lines.append(f"{hashlib.sha256((root / rel).read_bytes()).hexdigest()} {rel}\n")
    text = "".join(lines)
    project = load(root)
    assert id_text(project, "1.2.3") == text
    assert compute_unique_id(project, "1.2.3") == hashlib.sha256(text.encode()).hexdigest()[:10]


def test_golden_value(root: Path) -> None:
    assert unique_id(root) == GOLDEN_ID


def test_default_version_is_the_tool_version(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = load(root)
    assert compute_unique_id(project) == compute_unique_id(project, kernel_builder.__version__)
    monkeypatch.setattr(kernel_builder, "__version__", "1.2.3")
    assert compute_unique_id(project) == GOLDEN_ID


def test_unchanged_by_mtime(root: Path) -> None:
    for path in root.rglob("*"):
        os.utime(path, (1_000_000, 1_000_000))
    assert unique_id(root) == GOLDEN_ID


def test_unchanged_by_moving_the_tree(root: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "deeper" / "renamed"
    moved.parent.mkdir(parents=True)
    shutil.move(root, moved)
    assert unique_id(moved) == GOLDEN_ID


def test_changes_with_the_tool_version(root: Path) -> None:
    assert unique_id(root, "1.2.4") != GOLDEN_ID


@pytest.mark.parametrize(
    "rel",
    [
        "build.toml",
        "torch-ext/torch_binding.cpp",
        "golden_cpu/golden.cpp",
        "golden_cpu/golden.h",  # a listed header
        "golden_cuda/golden.cu",
        "golden_rocm/golden.hip",  # a section this host never builds
        "torch-ext/golden/__init__.py",
        "torch-ext/golden/layers/__init__.py",
        "torch-ext/golden/config.json",  # a shipped data file (pyext)
    ],
)
def test_changes_with_an_input(root: Path, rel: str) -> None:
    with (root / rel).open("a", encoding="utf-8") as f:
        f.write("\n# one more line\n")
    assert unique_id(root) != GOLDEN_ID


def test_changes_with_a_new_shipped_file(root: Path) -> None:
    write_files(root, {"torch-ext/golden/layers/extra.py": ""})
    assert unique_id(root) != GOLDEN_ID


@pytest.mark.parametrize(
    "rel",
    [
        "torch-ext/golden/notes.txt",
        "torch-ext/golden/types.pyi",
        "torch-ext/golden/_ops.py",
        "torch-ext/golden/__pycache__/__init__.cpython-311.pyc",
        "torch-ext/golden/layers/__pycache__/__init__.cpython-311.pyc",
        "torch-ext/golden/layers/stale.pyc",
        "golden_cpu/unlisted.h",
        "README.md",
    ],
)
def test_ignores_files_that_are_not_inputs(root: Path, rel: str) -> None:
    with (root / rel).open("ab") as f:
        f.write(b"changed")
    assert unique_id(root) == GOLDEN_ID


def test_ignores_new_unshipped_files_and_caches(root: Path) -> None:
    write_files(
        root,
        {
            "torch-ext/golden/more.txt": "x",
            "torch-ext/golden/layers/__pycache__/extra.py": "x = 1\n",  # a .py inside a cache is not shipped
            "torch-ext/golden/layers/extra.cpython-311.pyc": b"\x00",
            "golden_cuda/unlisted.cuh": "x",
            "build/torch-cpu/__init__.py": "",
        },
    )
    assert unique_id(root) == GOLDEN_ID


def test_nested_ops_py_is_shipped_and_hashed(root: Path) -> None:
    """Only the top-level _ops.py is the generated one; a nested module of that name is the user's."""
    write_files(root, {"torch-ext/golden/layers/_ops.py": ""})
    assert "torch-ext/golden/layers/_ops.py" in id_input_files(load(root))
    assert unique_id(root) != GOLDEN_ID


def test_symlinked_files_and_directories_are_followed(root: Path, tmp_path: Path) -> None:
    shared = write_files(tmp_path / "shared", {"helpers/__init__.py": "X = 1\n", "blob.json": "{}\n"})
    (root / "torch-ext/golden/helpers").symlink_to(shared / "helpers")
    (root / "torch-ext/golden/blob.json").symlink_to(shared / "blob.json")
    (root / "torch-ext/golden/layers/up").symlink_to(root / "torch-ext/golden")  # a cycle: not walked again
    assert shipped_python_files(load(root)) == [
        "__init__.py",
        "blob.json",
        "config.json",
        "helpers/__init__.py",
        "layers/__init__.py",
    ]
    before = unique_id(root)
    (shared / "helpers/__init__.py").write_text("X = 2\n", encoding="utf-8")
    assert unique_id(root) != before


# --- --unique-id and the ops name -------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["a", "abc_123", "ABC", "_", "x" * 40, "2be8ff4f2e"])
def test_unique_id_override_accepted(value: str) -> None:
    assert check_unique_id(value) == value


def test_unique_id_with_dash_gets_the_underscore_hint() -> None:
    with pytest.raises(UsageError) as info:
        check_unique_id("a-b")
    assert str(info.value) == (
        "--unique-id 'a-b' is invalid: use 1 to 40 letters, digits or `_` (use `_` instead of `-`)"
    )
    assert info.value.exit_code == 2


@pytest.mark.parametrize("value", ["", "x" * 41, "a.b", "a b", "ä", "a\n"])
def test_unique_id_override_rejected(value: str) -> None:
    with pytest.raises(UsageError) as info:
        check_unique_id(value)
    assert str(info.value) == f"--unique-id {value!r} is invalid: use 1 to 40 letters, digits or `_`"


@pytest.mark.parametrize(
    ("py_name", "backend", "uid", "expected"),
    [
        ("fused_gelu", "cuda", "3f9a0c2b7d", "_fused_gelu_cuda_3f9a0c2b7d"),
        ("relu", "cpu", "abc", "_relu_cpu_abc"),
        ("relu", "cann", "abc", "_relu_cann_abc"),
        ("My_Kernel", "rocm", "x_1", "_My_Kernel_rocm_x_1"),
    ],
)
def test_ops_name(py_name: str, backend: str, uid: str, expected: str) -> None:
    assert ops_name(py_name, backend, uid) == expected
    assert expected.isidentifier()


def test_ops_name_must_be_an_identifier() -> None:
    with pytest.raises(UsageError) as info:
        ops_name("relu", "cpu", "a-b")
    assert str(info.value) == "op namespace '_relu_cpu_a-b' is not a valid Python identifier"
