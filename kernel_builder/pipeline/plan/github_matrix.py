"""``kernel-builder matrix``: the buildable variants as a GitHub Actions ``strategy.matrix`` (docs/ci.md).

Each entry is one CI job: the variant, its system, the runner label, what the job must install itself and the
exact command that builds it. The runner comes from the table of :mod:`.runners` (``ubuntu-24.04`` for x86_64,
``ubuntu-24.04-arm`` for aarch64: compiling needs no GPU); a variant whose platform has no runner there
(macOS, and backends this tool does not build) is left out. The build environment brings the variant's Torch
and, from CUDA 13 on, its CUDA compiler from PyPI; NVIDIA publishes no CUDA 12 compiler on PyPI, so a CUDA 12.x
job installs that release itself from NVIDIA's apt repository for its CPU (``toolkit: system``, ``cuda_repo``).
Which variants appear depends neither on this machine's platform nor on its network or toolkits: a runner has
the network the build needs, and installs what its variant needs.
"""

from __future__ import annotations

import shlex
from typing import Any

import kernel_builder.backends as backends
from kernel_builder.config.model import KernelProject
from kernel_builder.pipeline.plan.candidates import all_candidates
from kernel_builder.pipeline.plan.runners import runner_for


def _toolkit(backend: str, version: tuple[int, ...] | None) -> tuple[str, str]:
    """(CUDA version, where its compiler comes from: ``pypi`` or ``system``; empty for other backends)."""
    if not backends.get(backend).needs_nvcc or version is None:
        return "", ""
    return f"{version[0]}.{version[1]}", "pypi" if version[0] >= 13 else "system"


def github_matrix(project: KernelProject, path: str = ".", *, required_only: bool = False) -> dict[str, Any]:
    include = []
    for candidate in all_candidates(project):
        runner = runner_for(candidate.backend, candidate.system)
        if runner is None or (required_only and not candidate.required):
            continue
        if candidate.reason is not None and candidate.reason.startswith("[kernel."):
            continue  # an optional entry the kernels' capabilities rule out (E20): no runner builds it either
        version = candidate.entry.version if candidate.entry is not None else None
        cuda, toolkit = _toolkit(candidate.backend, version)
        include.append(
            {
                "variant": candidate.name,
                "backend": candidate.backend,
                "system": candidate.system or "",
                "required": candidate.required,
                "runner": runner.label,
                "cuda": cuda,
                "toolkit": toolkit,
                "cuda_repo": runner.cuda_repo if toolkit == "system" else "",
                "command": f"kernel-builder build {shlex.quote(path)} --variant {candidate.name}",
            }
        )
    return {"include": include}
