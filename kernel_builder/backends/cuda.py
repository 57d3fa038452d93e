"""The cuda backend: ``.cu`` sources compiled by nvcc for a list of compute capabilities.

Variants are named ``cu<major><minor>``; the loader accepts one built for the same CUDA major and an older or
equal minor (CUDA's minor-version compatibility) and checks the visible GPUs' capabilities against the
variant's ``backend.archs``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernel_builder.backends.registry import Backend, GpuArchs, TorchBuild

# The capability rules (``gpu_archs``) are imported when first used: a warm ``get_kernel`` on a machine without a
# GPU, or a no-op build, never asks them (docs/performance.md).


def _runs(device: tuple[int, int]) -> Callable[[str], bool]:
    from kernel_builder.backends.gpu_archs import device_runs

    return lambda entry: device_runs(device, entry)


def _valid(entry: str) -> bool:
    from kernel_builder.backends.gpu_archs import CAPABILITY_RE

    return CAPABILITY_RE.fullmatch(entry) is not None


GPU = GpuArchs(
    kind="capability",
    entry_valid=_valid,
    device_runs=_runs,
    describe_device=lambda device: f"compute capability {device[0]}.{device[1]}",
)

BACKEND = Backend(
    name="cuda",
    compute_prefix="cu",
    kernel_sections=True,
    kernel_keys=("cuda-capabilities", "cuda-flags", "cuda-minver"),
    general_table=frozenset({"minver", "maxver", "python-depends", "kernel-depends"}),
    source_suffixes=(".cu",),
    in_matrix=True,
    pip_provisioned=True,
    buildable=True,
    cmake_define="CUDA_KERNEL",
    use_define="USE_CUDA=1",
    cmake_languages=("CXX", "CUDA"),
    torch_libraries=(
        r"libtorch_cuda\.so",
        r"libc10_cuda\.so",
        r"lib(cudart|cublas|cublasLt|cusparse|cusparseLt|cusolver|cufft|curand|nvrtc|nvrtc-builtins|nvToolsExt"
        r"|nvJitLink|cudnn\w*|nccl|cupti|cufile|nvshmem_host|nvperf_host)\.so(\.\d+)*",
    ),
    needs_nvcc=True,
    ships_triton=True,
    torch_build=TorchBuild("cuda"),
    cmake_fragment=Path(__file__).parent.parent / "cmake" / "cuda.cmake",
    cross_builds=True,
    gpu=GPU,
    arch_key="cuda-capabilities",
    title="CUDA",
    abi_compatible_minor=True,
)
