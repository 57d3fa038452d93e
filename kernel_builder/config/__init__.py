"""Reading build.toml in every historical form into one typed model (configuration stage)."""

from kernel_builder.config.load import LoadResult, load_project, resolve_build_toml
from kernel_builder.config.model import (
    BuildConfig,
    General,
    Kernel,
    KernelProject,
    Torch,
    TorchNoarch,
    TvmFfi,
)

__all__ = [
    "BuildConfig",
    "General",
    "Kernel",
    "KernelProject",
    "LoadResult",
    "Torch",
    "TorchNoarch",
    "TvmFfi",
    "load_project",
    "resolve_build_toml",
]
