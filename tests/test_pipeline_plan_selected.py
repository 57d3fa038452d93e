"""Planning explicitly selected variants (``kernel_builder.pipeline.plan.selected``): which variants an interpreter
serves itself (fast; planning in isolated environments and ``--offline`` are tested through the CLI in
test_pipeline_plan_candidates.py)."""

from __future__ import annotations

from pathlib import Path

from cpu_projects import quick_project
from matrix_data import CPU_VARIANT
from stage_fixtures import CPU_213, CU130_213, load

from kernel_builder.pipeline.plan.selected import served, variant_name


def test_an_interpreter_serves_the_variant_of_its_torch(tmp_path: Path) -> None:
    project = load(quick_project(tmp_path / "kb-quick"))
    assert variant_name(CPU_213, None) == CPU_VARIANT
    assert variant_name(CU130_213, None) == "torch213-cxx11-cu130-x86_64-linux"
    assert served(project, CPU_213) == {CPU_VARIANT}
    assert served(project, None) == set()
