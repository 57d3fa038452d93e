"""``kernel-builder matrix``: the buildable variants as a GitHub Actions ``strategy.matrix``.

Each entry is one CI job: the variant, a runner label hint and the exact command that builds it. Compiling
needs no GPU, so every Linux x86_64 variant runs on an ordinary x86_64 runner; CUDA variants get a hint for
a larger one because nvcc dominates the time.
"""

from __future__ import annotations

import shlex
from typing import Any

from .candidates import all_candidates
from .config.model import KernelProject

RUNNER = "ubuntu-latest"
LARGE_RUNNER = "ubuntu-latest-8-cores"


def github_matrix(project: KernelProject, path: str = ".") -> dict[str, Any]:
    include = []
    for candidate in all_candidates(project):
        if not candidate.buildable:
            continue
        include.append(
            {
                "variant": candidate.name,
                "backend": candidate.backend,
                "required": candidate.required,
                "runner": LARGE_RUNNER if candidate.backend == "cuda" else RUNNER,
                "command": f"kernel-builder build {shlex.quote(path)} --variant {candidate.name}",
            }
        )
    return {"include": include}
