"""Which CI runner builds a variant of each platform: the table that, with the variant matrix
(``formats/build-matrix.json``), gives ``kernel-builder matrix``, the workflows of docs/ci.md and ``init``, and the
"what builds it" of ``upload``'s completeness check (docs/ci.md).

Every Linux variant is compiled natively on a GitHub-hosted runner of its CPU: ``ubuntu-24.04`` for x86_64,
``ubuntu-24.04-arm`` for aarch64. Native rather than cross-compiled on x86_64: the runner needs no cross
toolchain and no target environment, installs the variant's own Torch and CUDA packages as an x86_64 runner
does, and its import check loads the built variant for real. Compiling needs no GPU on either.

Platforms without a runner here are built by other tools; the reason says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import kernel_builder.backends as backends

__all__ = ["NO_RUNNER", "RUNNERS", "Runner", "no_runner_reason", "runner_for"]


@dataclass(frozen=True)
class Runner:
    label: str
    """The GitHub-hosted runner label (one actionlint knows)."""
    cuda_repo: str
    """NVIDIA's apt repository for this CPU on that runner's Ubuntu, for CUDA releases PyPI does not publish."""


_NVIDIA_APT = "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2404"

#: ``<cpu>-<os>`` → the runner that builds its variants.
RUNNERS: dict[str, Runner] = {
    "x86_64-linux": Runner("ubuntu-24.04", f"{_NVIDIA_APT}/x86_64"),
    "aarch64-linux": Runner("ubuntu-24.04-arm", f"{_NVIDIA_APT}/sbsa"),
}

#: ``<os>`` → why no runner of this tool builds its variants.
NO_RUNNER: dict[str, str] = {
    "darwin": "kernel-builder builds Linux variants only: macOS variants (cpu, metal) need Apple's compilers and "
    "SDK on a macOS machine; build them with Hugging Face's kernel-builder (Nix on a macOS runner)",
}


def runner_for(backend: str, system: str | None) -> Runner | None:
    """The runner that builds the variant of ``backend`` for ``system`` (``None``: a pure-Python variant, built
    anywhere, so on the x86_64 runner), or ``None`` when this tool builds it on no runner."""
    if system is None:
        return RUNNERS["x86_64-linux"]
    if not backends.get(backend).buildable:
        return None
    return RUNNERS.get(system)


def no_runner_reason(backend: str, system: str | None) -> str:
    """Why :func:`runner_for` found no runner for this variant."""
    os_name = (system or "").partition("-")[2]
    if os_name in NO_RUNNER:
        return NO_RUNNER[os_name]
    if not backends.get(backend).buildable:
        return f"kernel-builder does not build {backend} variants (docs/backends.md)"
    return f"no runner of kernel-builder builds variants for {system}"
