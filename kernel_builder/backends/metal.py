"""The metal backend (Apple GPUs): validated in build.toml and loaded, not built by this kernel-builder yet.

Its variants load on macOS 26 or later only.
"""

from kernel_builder.backends.registry import Backend

BACKEND = Backend(
    name="metal",
    kernel_sections=True,
    source_suffixes=(".mm", ".metal", ".m"),
    in_matrix=True,
    cmake_define="METAL_KERNEL",
    min_macos=(26, 0),
)
