"""The xpu backend (Intel GPUs, SYCL): validated in build.toml and loaded, not built by this kernel-builder yet."""

from kernel_builder.backends.registry import Backend, TorchBuild

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
    # torch.version.xpu: `2025.3`, or the oneAPI release as digits, `20250300`. Read as `kernels` 0.19 reads it:
    # the first four characters are the major version and the sixth is the minor one.
    torch_build=TorchBuild("xpu", (r"([0-9]{4}).([0-9])",)),
)
