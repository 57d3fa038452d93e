"""The xpu backend (Intel GPUs, SYCL): validated in build.toml and loaded, not built by this kernel-builder yet."""

from kernel_builder.backends.registry import Backend

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
)
