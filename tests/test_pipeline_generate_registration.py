"""``registration.h`` (``kernel_builder.pipeline.generate.registration``): the copy a build writes into the kernel tree
for sources that include it by relative path, and what it leaves alone (fast, real files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cpu_projects import quick_project
from stage_fixtures import load, write_files

from kernel_builder.pipeline.generate.registration import (
    is_generated,
    registration_header,
    write_kernel_tree_copy,
)
from kernel_builder.pipeline.state import KERNEL_TREE_COPY


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return quick_project(tmp_path / "kb-quick")


def test_copy_is_written_and_refreshed(root: Path) -> None:
    warnings: list[str] = []
    write_kernel_tree_copy(load(root), warnings.append)
    copy = root / KERNEL_TREE_COPY
    assert copy.read_text(encoding="utf-8") == registration_header() and is_generated(copy)
    copy.write_text(registration_header().splitlines()[0] + "\n// an older version\n", encoding="utf-8")
    write_kernel_tree_copy(load(root), warnings.append)
    assert copy.read_text(encoding="utf-8") == registration_header()
    assert warnings == []


def test_the_projects_own_header_is_left_with_a_warning(root: Path) -> None:
    own = "#pragma once\n// the project's own\n"
    write_files(root, {KERNEL_TREE_COPY: own})
    warnings: list[str] = []
    write_kernel_tree_copy(load(root), warnings.append)
    assert (root / KERNEL_TREE_COPY).read_text(encoding="utf-8") == own
    assert warnings == [
        "torch-ext/registration.h is the project's own: it shadows the generated registration.h"
    ]


def test_a_link_is_never_written_through(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.h"
    outside.write_text("// elsewhere\n", encoding="utf-8")
    os.symlink(outside, root / KERNEL_TREE_COPY)
    warnings: list[str] = []
    write_kernel_tree_copy(load(root), warnings.append)
    assert outside.read_text(encoding="utf-8") == "// elsewhere\n"
    assert warnings == [
        f"torch-ext/registration.h is a symlink (to {outside}): it is left as it is, and the generated "
        "registration.h is not written through it"
    ]


def test_pure_python_projects_get_no_copy(root: Path) -> None:
    toml = root / "build.toml"
    text = toml.read_text(encoding="utf-8")
    toml.write_text(
        text[: text.index("[kernel.quick]")], encoding="utf-8"
    )  # no kernel section: no AOT backend
    write_kernel_tree_copy(load(root), print)
    assert not (root / KERNEL_TREE_COPY).exists()
