"""The rocm backend: validated in build.toml and loaded, not built by this kernel-builder yet.

Variants are named ``rocm<major><minor>`` (``rocm714`` is 7.14; ``rocm-7.2`` in the new format), load on the same
major and a newer or equal minor (as CUDA's do), and list ``gfx`` architectures, which the loader checks against the
visible GPUs' ``gcnArchName``.
"""

from __future__ import annotations

from collections.abc import Callable

from kernel_builder.backends.registry import Backend, GpuArchs, TorchBuild


def _runs(device: str) -> Callable[[str], bool]:
    from kernel_builder.backends.gpu_archs import rocm_device_runs  # when first used, as in ``cuda``

    return lambda entry: rocm_device_runs(device, entry)


GPU = GpuArchs(
    kind="gfx",
    entry_valid=lambda entry: entry.split(":", 1)[0].startswith("gfx"),
    device_runs=_runs,
    describe_device=lambda device: f"architecture {device.split(':', 1)[0]}",
)

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
    # torch.version.hip: `7.1.25424-4179531dcd`, the build after a dash.
    torch_build=TorchBuild("hip", (r"([0-9]+)\.([0-9]+)(?:[.-]|$)",)),
    gpu=GPU,
    arch_key="rocm-archs",
    title="ROCm",
    abi_compatible_minor=True,  # kernels 0.19: a rocm71 variant loads on ROCm 7.2
)
