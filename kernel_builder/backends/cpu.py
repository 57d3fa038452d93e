"""The cpu backend: plain C++ compiled with the host compiler; every environment can load it."""

from kernel_builder.backends.registry import Backend

BACKEND = Backend(
    name="cpu",
    kernel_sections=True,
    in_matrix=True,
    pip_provisioned=True,
    buildable=True,
    cmake_define="CPU_KERNEL",
    loads_everywhere=True,
    cross_builds=True,
)
