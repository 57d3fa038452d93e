"""``kernel-builder matrix``: the buildable variants as a GitHub Actions ``strategy.matrix`` (docs/ci.md).

Each entry is one CI job: the variant, the runner label, what the job must install itself and the exact
command that builds it. Compiling needs no GPU, so every Linux x86_64 variant runs on GitHub's standard
``ubuntu-24.04`` runner. The build environment brings the variant's Torch and, from CUDA 13 on, its CUDA
compiler from PyPI; NVIDIA publishes no CUDA 12 compiler on PyPI, so a CUDA 12.x job installs that release
itself (``toolkit: system``). Which variants appear does not depend on this machine's network or toolkits: a
runner has the network the build needs, and installs what its variant needs.
"""

from __future__ import annotations

import shlex
from typing import Any

import kernel_builder.backends as backends
from kernel_builder.build.plan.candidates import all_candidates
from kernel_builder.config.model import KernelProject

#: GitHub's standard hosted Linux x86_64 runner (the label actionlint knows).
RUNNER = "ubuntu-24.04"


def _toolkit(backend: str, version: tuple[int, ...] | None) -> tuple[str, str]:
    """(CUDA version, where its compiler comes from: ``pypi`` or ``system``; empty for other backends)."""
    if not backends.get(backend).needs_nvcc or version is None:
        return "", ""
    return f"{version[0]}.{version[1]}", "pypi" if version[0] >= 13 else "system"


def github_matrix(project: KernelProject, path: str = ".", *, required_only: bool = False) -> dict[str, Any]:
    include = []
    for candidate in all_candidates(project):
        # Cross variants depend on this machine's cross compiler; the runners for them are another matter.
        if not candidate.buildable or candidate.cross or (required_only and not candidate.required):
            continue
        version = candidate.entry.version if candidate.entry is not None else None
        cuda, toolkit = _toolkit(candidate.backend, version)
        include.append(
            {
                "variant": candidate.name,
                "backend": candidate.backend,
                "required": candidate.required,
                "runner": RUNNER,
                "cuda": cuda,
                "toolkit": toolkit,
                "command": f"kernel-builder build {shlex.quote(path)} --variant {candidate.name}",
            }
        )
    return {"include": include}
