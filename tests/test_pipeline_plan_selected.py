"""Planning explicitly selected variants (``kernel_builder.pipeline.plan.selected``): which variants an interpreter
serves itself (fast; planning in isolated environments and ``--offline`` are tested through the CLI in
test_pipeline_plan_candidates.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from cpu_projects import quick_project
from matrix_data import CPU_VARIANT
from stage_fixtures import CPU_213, CU130_213, load

from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment import isolated_envs, toolchain
from kernel_builder.pipeline.environment.toolchain import CudaToolkit
from kernel_builder.pipeline.plan import selected
from kernel_builder.pipeline.plan.selected import served, variant_name


def test_an_interpreter_serves_the_variant_of_its_torch(tmp_path: Path) -> None:
    project = load(quick_project(tmp_path / "kb-quick"))
    assert variant_name(CPU_213, None) == CPU_VARIANT
    assert variant_name(CU130_213, None) == "torch213-cxx11-cu130-x86_64-linux"
    assert served(project, CPU_213) == {CPU_VARIANT}
    assert served(project, None) == set()


# --- the host's nvcc of a cross-built cuda variant -----------------------------------------------------------


def toolkit(version: tuple[int, int], root: Path) -> CudaToolkit:
    return CudaToolkit(root / "bin" / "nvcc", version, root, f"release {version[0]}.{version[1]}")


SYSTEM = toolkit((13, 0), Path("/usr/local/cuda-13.0"))


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[object]:
    """The system has CUDA 13.0; NVIDIA's PyPI toolkit of another release comes from its own environment
    (stood in for: what was asked is recorded)."""
    calls: list[object] = []
    purelib = tmp_path / "toolkit-env" / "site-packages"

    def cuda_toolkit(where: Path | None = None, wanted: tuple[int, int] | None = None) -> CudaToolkit:
        calls.append(("cuda_toolkit", where, wanted))
        return SYSTEM if where is None else toolkit(wanted or (0, 0), where / "nvidia" / "cu13")

    def ensure_toolkit_env(cuda: tuple[int, int], **kwargs: object) -> Path:
        calls.append(("ensure_toolkit_env", cuda))
        return purelib

    monkeypatch.setattr(toolchain, "cuda_toolkit", cuda_toolkit)
    monkeypatch.setattr(isolated_envs, "ensure_toolkit_env", ensure_toolkit_env)
    return calls


def test_the_systems_nvcc_when_it_is_the_release(asked: list[object]) -> None:
    assert selected._host_nvcc((13, 0), selected.EnvironmentPolicy(), log=print) == SYSTEM.nvcc
    assert [c[0] for c in asked if isinstance(c, tuple)] == ["cuda_toolkit"]


def test_nvidias_pypi_toolkit_for_another_cuda_13_release(asked: list[object], tmp_path: Path) -> None:
    nvcc = selected._host_nvcc((13, 2), selected.EnvironmentPolicy(), log=print)
    assert nvcc == tmp_path / "toolkit-env" / "site-packages" / "nvidia" / "cu13" / "bin" / "nvcc"
    assert asked[1:] == [
        ("ensure_toolkit_env", (13, 2)),
        ("cuda_toolkit", tmp_path / "toolkit-env" / "site-packages", (13, 2)),
    ]


def test_no_pypi_compiler_for_cuda_12(asked: list[object]) -> None:
    with pytest.raises(
        BuildError,
        match=r"nvcc /usr/local/cuda-13\.0/bin/nvcc is CUDA 13\.0, but torch was built with CUDA 12\.6",
    ):
        selected._host_nvcc((12, 6), selected.EnvironmentPolicy(), log=print)
    assert not [c for c in asked if isinstance(c, tuple) and c[0] == "ensure_toolkit_env"]
