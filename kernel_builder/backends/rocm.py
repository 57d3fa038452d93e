"""The rocm backend: validated in build.toml and loaded, not built by this kernel-builder yet.

Variants are named ``rocm<major><minor>`` and list ``gfx`` architectures, which the loader checks against the
visible GPUs' ``gcnArchName``.
"""

from kernel_builder.backends.registry import Backend

BACKEND = Backend(
    name="rocm",
    compute_prefix="rocm",
    kernel_sections=True,
    kernel_keys=("rocm-archs", "hip-flags"),
    source_suffixes=(".cu", ".hip"),
    in_matrix=True,
    cmake_define="ROCM_KERNEL",
    use_define="USE_ROCM=1",
    ships_triton=True,
    gpu_arch="gfx",
    noarch_arch_key="rocm-archs",
)
