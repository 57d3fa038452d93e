"""The xpu backend (Intel GPUs, SYCL): validated in build.toml and loaded, not built by this kernel-builder yet."""

from kernel_builder.backends.registry import MAJOR_MINOR, Backend, TorchBuild

BACKEND = Backend(
    name="xpu",
    compute_prefix="xpu",
    kernel_sections=True,
    kernel_keys=("sycl-flags",),
    general_table=frozenset({"python-depends", "kernel-depends"}),
    in_matrix=True,
    cmake_define="XPU_KERNEL",
    use_define="USE_XPU=1",
    ships_triton=True,
    # torch.version.xpu: `2025.3`, or the oneAPI release as digits, `20250300` (no dot anywhere).
    torch_build=TorchBuild("xpu", (MAJOR_MINOR, r"(?!.*\.)([0-9]{4})([0-9]{2})")),
)
