"""The cuda backend: ``.cu`` sources compiled by nvcc for a list of compute capabilities.

Variants are named ``cu<major><minor>``; the loader accepts one built for the same CUDA major and an older or
equal minor (CUDA's minor-version compatibility) and checks the visible GPUs' capabilities against the
variant's ``backend.archs``.
"""

from kernel_builder.backends.registry import Backend

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
    needs_nvcc=True,
    ships_triton=True,
    gpu_arch="capability",
    noarch_arch_key="cuda-capabilities",
    abi_compatible_minor=True,
)
