"""The generate stage of a compiled variant (``kernel_builder.pipeline.generate.project``): ``build`` gives the
generated project the build interpreter's Python headers, checked here, instead of running CMake's FindPython
(a dozen interpreter starts, most of a configure); ``generate`` keeps FindPython."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from cpu_projects import quick_project
from matrix_data import CPU_VARIANT
from stage_fixtures import load

from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, quick_probe
from kernel_builder.pipeline.generate.project import write_variant_project
from kernel_builder.pipeline.options import BuildOptions
from kernel_builder.pipeline.plan.planner import VariantPlan, plan_build


def _variant(root: Path) -> tuple[KernelProject, VariantPlan, BuildInterpreter]:
    project = load(root)
    interpreter = quick_probe()
    (plan,) = [v for v in plan_build(project, interpreter, "0123456789").variants if v.name == CPU_VARIANT]
    return project, plan, interpreter


def test_build_names_the_python_headers(tmp_path: Path) -> None:
    project, plan, interpreter = _variant(quick_project(tmp_path / "kb-quick"))
    out = tmp_path / "project"
    write_variant_project(project, plan, interpreter, out, BuildOptions(), print, python_headers=True)
    text = (out / "CMakeLists.txt").read_text(encoding="utf-8")
    assert f'set(KB_PYTHON_INCLUDE_DIR "{interpreter.python_include}")' in text
    assert text.index("KB_PYTHON_INCLUDE_DIR") < text.index("kb_find_torch()")
    # Without it (`kernel-builder generate`), the project finds Python itself.
    write_variant_project(project, plan, interpreter, out, BuildOptions(), print)
    assert "KB_PYTHON_INCLUDE_DIR" not in (out / "CMakeLists.txt").read_text(encoding="utf-8")


def test_missing_python_headers_are_named(tmp_path: Path) -> None:
    project, plan, interpreter = _variant(quick_project(tmp_path / "kb-quick"))
    headless = dataclasses.replace(interpreter, python_include=tmp_path / "no-include")
    with pytest.raises(BuildError, match=r"has no Python headers \(.*/no-include/Python.h is missing\)"):
        write_variant_project(
            project, plan, headless, tmp_path / "project", BuildOptions(), print, python_headers=True
        )
