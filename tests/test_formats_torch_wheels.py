"""The CUDA release a Torch wheel's ``Requires-Dist`` pins (kernel_builder/formats/torch_wheels.py)."""

from __future__ import annotations

from kernel_builder.formats.torch_wheels import LINUX, cuda_required

PYPI_2_15 = [
    "filelock",
    'cuda-toolkit[cublas,cudart,cufft]==13.2.2; platform_system == "Linux"',
    'nvidia-cudnn-cu13==9.26.0.51; platform_system == "Linux"',
    'optree>=0.13.0; extra == "optree"',
]


def test_the_cuda_runtime_names_the_release() -> None:
    assert cuda_required(PYPI_2_15, LINUX) == (13, 2)
    assert cuda_required(['nvidia-cuda-runtime-cu12==12.6.77; platform_system == "Linux"'], LINUX) == (12, 6)
    assert cuda_required(["nvidia-cuda-runtime==13.0.*"]) == (13, 0)
    assert cuda_required(["cuda-toolkit~=13.0.2"]) == (13, 0)
    # No CUDA runtime, or one that is not pinned: a CPU build.
    assert cuda_required(["filelock", "sympy>=1.13"]) is None
    assert cuda_required(["cuda-toolkit<14", "not a requirement ==="]) is None


def test_markers_are_read_for_the_machine_or_the_environment_given() -> None:
    """A Linux wheel's requirements read on macOS (a maintainer's laptop) still name its CUDA with LINUX."""
    darwin = {"platform_system": "Darwin", "sys_platform": "darwin"}
    assert cuda_required(PYPI_2_15, darwin) is None
    assert cuda_required(PYPI_2_15, {**darwin, **LINUX}) == (13, 2)
    # Requirements of an extra are not installed.
    assert cuda_required(['cuda-toolkit==13.2.2; extra == "cuda"'], LINUX) is None
