"""A source several kernel sections list is planned once, in a component of its own with what each of its
sections gives it (kernel_builder/pipeline/plan/shared_sources.py, docs/build-toml.md "Shared sources")."""

from __future__ import annotations

from pathlib import Path

import pytest
from shared_source_projects import shared_source_project
from stage_fixtures import CPU_213, CU130_213, fake_host, load
from test_collection import COLLECTION

from kernel_builder.pipeline.environment.interpreter import BuildInterpreter
from kernel_builder.pipeline.generate.cmake import component_target
from kernel_builder.pipeline.plan.components import Component
from kernel_builder.pipeline.plan.planner import VariantPlan, plan_build
from kernel_builder.pipeline.plan.shared_sources import share_sources


def _plan(root: Path, interpreter: BuildInterpreter, native: tuple[str, ...] | None = None) -> VariantPlan:
    [variant] = plan_build(load(root), interpreter, "0123456789", native_targets=native).variants
    return variant


@pytest.fixture(autouse=True)
def _host(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_host(monkeypatch)


def test_unshared_sections_are_left_as_they_are() -> None:
    components = (Component("a", ("a.cu",), cuda_flags=("-DA",)), Component("b", ("b.cu",)))
    assert share_sources(components) == components


def test_a_shared_file_gets_every_sections_flags_capabilities_and_includes() -> None:
    a = Component(
        "a", ("a.cu", "s.cu", "t.cu"), ("inc", "a"), ("-DX",), ("-Xptxas", "-v"), ("9.0a",), ("torch",)
    )
    b = Component("b", ("s.cu", "b.cu"), ("b", "inc"), (), ("-DB",), ("8.0", "9.0+PTX"), ("cutlass_4_0",))
    c = Component("c", ("c.cu", "t.cu"), archs=("12.0",))
    planned = share_sources((a, b, c))
    assert [p.name for p in planned] == ["a", "b", "a+b", "c", "a+c"]
    assert [p.sources for p in planned] == [("a.cu",), ("b.cu",), ("s.cu",), ("c.cu",), ("t.cu",)]
    shared = planned[2]
    assert shared.shared_by == ("a", "b")
    assert shared.include == ("inc", "a", "b")
    assert shared.cxx_flags == ("-DX",)
    assert shared.cuda_flags == (
        "-Xptxas",
        "-v",
        "-DB",
    )  # each section's, in order: a flag's value stays by it
    assert shared.archs == ("8.0", "9.0+PTX", "9.0a")
    assert shared.depends == ("torch", "cutlass_4_0")
    assert planned[4].archs == ("9.0a", "12.0")
    targets = [component_target(p) for p in planned]
    assert targets[:2] == ["kb_kernel_a", "kb_kernel_b"] and targets[2].startswith("kb_shared_")
    assert len(set(targets)) == 5


def test_the_cpu_fixture_compiles_its_shared_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = shared_source_project(tmp_path / "kb-shared")
    monkeypatch.chdir(tmp_path)
    plan = _plan(Path("kb-shared"), CPU_213)
    sources = [s for c in plan.components for s in c.sources]
    assert sources.count("csrc/shared.cpp") == 1
    [shared] = [c for c in plan.components if c.shared_by]
    assert (shared.shared_by, shared.cxx_flags) == (("twice_a", "twice_b"), ("-DKB_FROM_A", "-DKB_FROM_B"))
    assert root.is_dir()


def test_flash_mla_compiles_its_api_once_for_both_generations(monkeypatch: pytest.MonkeyPatch) -> None:
    """kernels-community's flash-mla: the SM100 section (10.0f, CUDA ≥ 12.9) and the SM90 one (9.0a,
    ``-DFLASH_MLA_SM90_ONLY``) both list the API and two decode helpers."""
    if not COLLECTION.is_dir():
        pytest.skip(f"{COLLECTION}: the kernels-community collection is not beside this checkout")
    monkeypatch.chdir(COLLECTION)
    plan = _plan(Path("flash-mla"), CU130_213)
    [shared] = [c for c in plan.components if c.shared_by]
    assert shared.shared_by == ("flash_mla_sm100", "flash_mla_sm90")
    assert shared.sources == (
        "csrc/api/api_impl.cu",
        "csrc/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu",
        "csrc/smxx/decode/combine/combine.cu",
    )
    assert shared.archs == ("9.0a", "10.0f")
    assert "-DFLASH_MLA_SM90_ONLY" in shared.cuda_flags
    assert "csrc/api" in shared.include and "csrc/sm90" in shared.include
    sources = [s for c in plan.components for s in c.sources]
    assert len(sources) == len(set(sources))
    native = _plan(Path("flash-mla"), CU130_213, native=("9.0",))
    [shared] = [c for c in native.components if c.shared_by]
    assert shared.archs == (
        "9.0a",
        "10.0f",
    )  # 10.0f: the SM100 section keeps its lowest so the extension links
