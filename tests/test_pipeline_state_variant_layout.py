"""A variant's state folders are named in one place, :class:`kernel_builder.pipeline.state.VariantState`."""

from __future__ import annotations

import re
from pathlib import Path

import kernel_builder
from kernel_builder.pipeline.state import STATE_DIR, VariantState

PACKAGE = Path(kernel_builder.__file__).parent
NAMES = ("project", "cmake-build", "stage", "build.log", "record.json")


def test_the_layout_of_one_variant(tmp_path: Path) -> None:
    layout = VariantState.of(tmp_path, "torch213-cxx11-cpu-x86_64-linux")
    folder = tmp_path / STATE_DIR / "torch213-cxx11-cpu-x86_64-linux"
    assert layout.folder == folder
    assert [layout.project, layout.cmake_build, layout.stage, layout.build_log, layout.record] == [
        folder / name for name in NAMES
    ]


def test_no_other_module_spells_the_variant_folders() -> None:
    """Outside state.py, a path joined with one of the names (``/ "stage"``) is a second spelling of the
    layout; docstrings and comments may mention them."""
    joined = re.compile(r'/\s*"(' + "|".join(re.escape(name) for name in NAMES) + r')"')
    found = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted((PACKAGE / "build").rglob("*.py"))
        if path.name != "state.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if joined.search(line)
    ]
    assert found == []
