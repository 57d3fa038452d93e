"""The CUDA tests' build interpreter, made by kernel-builder itself: ``make test`` runs this file.

    KERNEL_BUILDER_CACHE=.venv-kb-cache .venv/bin/python tests/cuda_test_env.py   # prints its python

It creates (or finds) the isolated environment that ``kernel-builder build --variant <CUDA_VARIANT>`` uses, the
same steps the build takes (``plan.selected``): the matrix entry of the CUDA test variant, its Torch wheel, and
``ensure_env``. The suite then builds with ``--python`` that interpreter (``KB_TEST_CUDA_PYTHON``) and lets the
variant-matrix tests find the same environment in the same cache (``KB_TEST_KERNEL_BUILDER_CACHE``). One pip
install of the CUDA Torch per clone instead of two, and both full-list CUDA builds of examples/relu see Torch's
headers at one path, so the second takes its objects from the compiler cache.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from matrix_data import CUDA_VARIANT

from kernel_builder.config import load_project
from kernel_builder.pipeline.environment.isolated_envs import EnvSpec, ensure_env, env_ready
from kernel_builder.pipeline.environment.provision import resolve_torch
from kernel_builder.pipeline.plan.candidates import all_candidates
from kernel_builder.pipeline.plan.selected import wants_pypi_toolkit

RELU = Path(__file__).resolve().parent.parent / "examples" / "relu"


def cuda_test_python() -> Path:
    """The interpreter of the CUDA test variant's environment in ``$KERNEL_BUILDER_CACHE``, created if missing."""
    (candidate,) = [c for c in all_candidates(load_project(RELU).project) if c.name == CUDA_VARIANT]
    assert candidate.entry is not None
    spec = EnvSpec.for_entry(candidate.entry)
    wheel = None if env_ready(spec) else resolve_torch(spec.torch_pin, spec.compute, spec.index_url)
    return ensure_env(
        spec,
        log=lambda line: print(line, file=sys.stderr),
        cuda_toolkit=wants_pypi_toolkit(candidate),
        torch_requirement=wheel.requirement if wheel is not None else None,
    )


if __name__ == "__main__":
    if not os.environ.get("KERNEL_BUILDER_CACHE"):
        sys.exit("set KERNEL_BUILDER_CACHE to the tests' kernel-builder cache (the Makefile's TEST_CACHE)")
    print(cuda_test_python())
