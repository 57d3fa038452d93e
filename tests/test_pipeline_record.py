"""The build record (``kernel_builder.pipeline.record``): which inputs decide a variant's output, and the record that
keeps them with the extension's digest and ABI findings between builds (fast: a quick project, planned for a
Torch this test never runs)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest
from build_runs import STATE_DIR
from cpu_projects import quick_project
from stage_fixtures import CPU_213, load

from kernel_builder.config.model import KernelProject
from kernel_builder.pipeline.check.abi import Violation
from kernel_builder.pipeline.options import BuildOptions
from kernel_builder.pipeline.plan.candidates import Selection
from kernel_builder.pipeline.plan.planner import VariantPlan, plan_build
from kernel_builder.pipeline.plan.scan import scan_sources
from kernel_builder.pipeline.record import NOT_INPUTS, Record, variant_inputs

NAME = "torch-cuda"


@pytest.fixture
def noarch(tmp_path: Path) -> tuple[KernelProject, VariantPlan]:
    """The quick project and its pure-Python ``torch-cuda`` variant (no interpreter or toolchain in its inputs)."""
    project = load(quick_project(tmp_path / "kb-quick"))
    plan = plan_build(project, CPU_213, "0123456789")
    return project, next(v for v in plan.variants if v.name == NAME)


def inputs(project: KernelProject, variant: VariantPlan, options: BuildOptions) -> dict[str, object]:
    return variant_inputs(scan_sources(project), variant, None, asdict(options))


def test_options_that_do_not_shape_the_output_are_no_inputs(
    noarch: tuple[KernelProject, VariantPlan],
) -> None:
    project, variant = noarch
    base = inputs(project, variant, BuildOptions())
    assert sorted(base) == ["id-inputs", "options", "plan", "tool"]  # noarch: no interpreter, no toolchain
    others = BuildOptions(verbose=True, jobs=3, import_check=False, strict_import=True, python="/x/python",
                          backend="cuda", selection=Selection(all_variants=True), refresh_envs=True, parallel=2,
                          werror=True, offline=True, compile_log=True)  # fmt: skip
    assert inputs(project, variant, others) == base
    assert {k for k, v in asdict(others).items() if v != asdict(BuildOptions())[k]} == set(NOT_INPUTS)
    assert inputs(project, variant, BuildOptions(build_type="Debug")) != base
    assert inputs(project, variant, BuildOptions(unique_id="abcdef0123")) != base


def test_id_inputs_are_inputs(noarch: tuple[KernelProject, VariantPlan]) -> None:
    project, variant = noarch
    before = inputs(project, variant, BuildOptions())
    init = project.root / "torch-ext" / "kb_quick" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")
    assert inputs(project, variant, BuildOptions())["id-inputs"] != before["id-inputs"]


def test_record_round_trip(tmp_path: Path) -> None:
    record = Record.read(tmp_path, NAME)
    assert record.path == tmp_path / STATE_DIR / NAME / "record.json"
    assert record.data is None and not record.matches({})
    record.save({"tool": "1"})
    again = Record.read(tmp_path, NAME)
    assert again.matches({"tool": "1"}) and not again.matches({"tool": "2"})
    assert json.loads(record.path.read_text(encoding="utf-8")) == {"inputs": {"tool": "1"}}
    assert [p.name for p in record.path.parent.iterdir()] == ["record.json"]  # no temporary left
    record.forget()
    assert not record.path.exists()
    record.forget()  # already gone: no error


def test_findings_belong_to_the_recorded_extension(tmp_path: Path) -> None:
    extension = tmp_path / "_kb.abi3.so"
    extension.write_bytes(b"first")
    found = [Violation("symbol-version", extension, "GLIBC_2.34 (memcpy)")]
    Record.read(tmp_path, NAME).save({"tool": "1"}, extension, found)
    record = Record.read(tmp_path, NAME)
    assert record.describes(extension)
    assert record.findings(extension) == found
    extension.write_bytes(b"relinked")
    assert not Record.read(tmp_path, NAME).describes(extension)


def test_record_without_findings_gets_them_added(tmp_path: Path) -> None:
    """A record written before findings were kept: no findings, until the build adds those it checks."""
    extension = tmp_path / "_kb.abi3.so"
    extension.write_bytes(b"so")
    record = Record.read(tmp_path, NAME)
    record.save({"tool": "1"}, extension, [])
    data = json.loads(record.path.read_text(encoding="utf-8"))
    del data["abi"]
    record.path.write_text(json.dumps(data), encoding="utf-8")
    old = Record.read(tmp_path, NAME)
    assert old.describes(extension) and old.findings(extension) is None
    old.add_findings([Violation("needed", extension, "libfoo.so")])
    new = Record.read(tmp_path, NAME)
    assert new.matches({"tool": "1"}) and new.findings(extension) == [
        Violation("needed", extension, "libfoo.so")
    ]


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '{"inputs": {}, "abi": [["kind"]]}'])
def test_damaged_records_count_as_none(tmp_path: Path, text: str) -> None:
    path = tmp_path / STATE_DIR / NAME / "record.json"
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    record = Record.read(tmp_path, NAME)
    assert not record.matches({"tool": "1"})
    assert record.findings(tmp_path / "x.so") is None
