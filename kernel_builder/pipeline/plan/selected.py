"""Planning explicitly selected variants (``build --variant``/``--all-variants``): each in an interpreter whose
torch gives exactly that variant — the running one when it does, else an isolated environment created (or
reused) for it (:mod:`kernel_builder.pipeline.environment.isolated_envs`). ``--offline`` never creates one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernel_builder import backends
from kernel_builder.common.diagnostics import Diagnostic
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment import provision, toolchain
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, quick_probe
from kernel_builder.pipeline.environment.isolated_envs import EnvSpec, ensure_env, env_ready
from kernel_builder.pipeline.environment.provision import resolve_torch
from kernel_builder.pipeline.plan.candidates import Candidate
from kernel_builder.pipeline.plan.native import native_targets
from kernel_builder.pipeline.plan.planner import VariantPlan, plan_candidate


@dataclass(frozen=True)
class EnvironmentPolicy:
    """What of a build's options decides where a selected variant is planned, handed over as values: the build's
    options (``pipeline/options.py``) are the orchestrator's, above this stage."""

    offline: bool = False  # never create an environment or pip-install anything
    refresh_envs: bool = False  # re-create the environments it uses
    native: bool = False  # --arch native: the capabilities of this machine's GPUs
    explicit_archs: tuple[str, ...] | None = None  # --arch 8.0,9.0a


def variant_name(interpreter: BuildInterpreter, stable_abi: tuple[int, int] | None) -> str | None:
    """The variant ``interpreter`` builds (a stable-ABI one for ``stable_abi``), or None where it builds none."""
    try:
        return interpreter.variant(stable_abi).name
    except ValueError:
        return None


def _stable_abi(project: KernelProject, backend: str) -> tuple[int, int] | None:
    abi = getattr(project.config.framework, "stable_abi_for", lambda _b: None)(backend)
    return abi.major_minor if abi is not None else None


def served(project: KernelProject, interpreter: BuildInterpreter | None) -> set[str]:
    """The variant names the running (or ``--python``) interpreter builds itself."""
    if interpreter is None:
        return set()
    names = {variant_name(interpreter, None)}
    for backend in project.config.aot_backends():
        stable = _stable_abi(project, backend)
        if stable is not None:
            names.add(variant_name(interpreter, stable))
    return {n for n in names if n is not None}


def wants_pypi_toolkit(candidate: Candidate) -> tuple[int, int] | None:
    """The CUDA version whose toolkit the environment must bring, when the system's nvcc is another one."""
    if (
        not backends.get(candidate.backend).needs_nvcc
        or candidate.entry is None
        or candidate.entry.version is None
    ):
        return None
    wanted = (candidate.entry.version[0], candidate.entry.version[1])
    try:
        system = toolchain.cuda_toolkit().version
    except BuildError:
        return wanted
    return None if system == wanted else wanted


def offline_mismatch(
    candidate: Candidate, interpreter: BuildInterpreter | None, abi: tuple[int, int] | None
) -> str:
    """Why ``--offline`` cannot build ``candidate``: the running environment's torch gives another variant."""
    entry = candidate.entry
    assert entry is not None
    compute = entry.backend if entry.version_str is None else f"{entry.backend} {entry.version_str}"
    if interpreter is None:
        have = "this environment has no torch"
    else:
        own = variant_name(interpreter, abi) or "no variant"
        have = f"this environment's torch {interpreter.torch_version} builds {own}"
    return (
        f"--offline: {have}, not {candidate.name}; run kernel-builder with --python naming an interpreter whose "
        f"torch is {entry.torch_str} ({compute}), or drop --offline to let kernel-builder create that environment"
    )


def _as_cpu(candidate: Candidate, interpreter: BuildInterpreter) -> BuildInterpreter | None:
    """``interpreter`` building CPU variants from its Torch of another backend (its CPU parts: docs/cross.md),
    when ``candidate`` is a CPU variant of that Torch's version; else None."""
    if candidate.backend != "cpu" or interpreter.backend()[0] == "cpu" or candidate.entry is None:
        return None
    if interpreter.torch_major_minor != candidate.entry.torch:
        return None
    return dataclasses.replace(interpreter, cpu_view=True)


def _host_nvcc(cuda: tuple[int, int], policy: EnvironmentPolicy, *, log: Callable[[str], None]) -> Path:
    """This host's nvcc of CUDA ``cuda`` for a cross build: the system's where it is that release, else (CUDA 13
    on) NVIDIA's PyPI toolkit of it, in an environment of its own (``isolated_envs.ensure_toolkit_env``), as a
    native build of that release gets it in its build environment."""
    from kernel_builder.pipeline.environment.isolated_envs import ensure_toolkit_env

    try:
        toolkit = toolchain.cuda_toolkit(None, cuda)
    except BuildError:
        toolkit = None
    if (toolkit is None or toolkit.version != cuda) and cuda[0] >= 13:
        purelib = ensure_toolkit_env(cuda, refresh=policy.refresh_envs, log=log)
        toolkit = toolchain.cuda_toolkit(purelib, cuda)
    if toolkit is None:
        raise BuildError(provision.no_cuda_12_message(cuda))
    toolchain.check_cuda_match(toolkit, f"{cuda[0]}.{cuda[1]}")
    return toolkit.nvcc


def _target_interpreter(
    candidate: Candidate,
    policy: EnvironmentPolicy,
    *,
    log: Callable[[str], None],
    preparing: Callable[[], None],
) -> BuildInterpreter:
    """The target environment of a cross-built candidate (created or reused), seen as a build interpreter."""
    from kernel_builder.pipeline.environment.target_env import (
        TargetSpec,
        ensure_target,
        target_interpreter,
        target_ready,
    )

    if policy.offline:
        raise BuildError(
            f"--offline: {candidate.name} is cross-compiled, from the target's torch, which --offline does not fetch"
        )
    assert candidate.entry is not None and candidate.system is not None
    preparing()
    spec = TargetSpec.for_entry(candidate.entry, candidate.system)
    wheel = None
    if policy.refresh_envs or not target_ready(spec):
        wheel = resolve_torch(spec.torch_pin, spec.compute, spec.index_url, spec.system)
    host_nvcc = None
    version = candidate.entry.version
    if backends.get(candidate.backend).needs_nvcc and version is not None:
        host_nvcc = _host_nvcc(
            (version[0], version[1]), policy, log=lambda line: log(f"{candidate.name}: {line}")
        )
    root = ensure_target(
        spec,
        refresh=policy.refresh_envs,
        requirement=wheel.requirement if wheel is not None else None,
        log=lambda line: log(f"{candidate.name}: {line}"),
        host_nvcc=host_nvcc,
    )
    interpreter = target_interpreter(root, spec.system)
    return _as_cpu(candidate, interpreter) or interpreter


def plan_selected(
    project: KernelProject,
    candidate: Candidate,
    unique_id: str,
    default: BuildInterpreter | None,
    policy: EnvironmentPolicy,
    *,
    log: Callable[[str], None],
    preparing: Callable[[], None],
    status: Callable[[str], None] | None = None,
) -> tuple[VariantPlan, BuildInterpreter | None, list[Diagnostic]]:
    """Plan ``candidate`` in an interpreter whose torch gives exactly that variant; ``preparing`` is called
    before an environment is created or checked, ``status`` with what pip does while one is created."""
    if candidate.entry is None:
        plan, _ = plan_candidate(project, candidate.name, candidate.backend, None, unique_id)
        return plan, default, []
    interpreter = default
    abi = _stable_abi(project, candidate.backend)
    if candidate.cross:
        interpreter = _target_interpreter(candidate, policy, log=log, preparing=preparing)
    elif interpreter is not None and _as_cpu(candidate, interpreter) is not None:
        interpreter = _as_cpu(candidate, interpreter)
    if interpreter is None or variant_name(interpreter, abi) != candidate.name:
        if policy.offline:
            raise BuildError(offline_mismatch(candidate, interpreter, abi))
        preparing()
        spec = EnvSpec.for_entry(candidate.entry)
        wheel = None
        if policy.refresh_envs or not env_ready(spec):
            wheel = resolve_torch(spec.torch_pin, spec.compute, spec.index_url)
        python = ensure_env(
            spec,
            refresh=policy.refresh_envs,
            log=lambda line: log(f"{candidate.name}: {line}"),
            cuda_toolkit=wants_pypi_toolkit(candidate),
            torch_requirement=wheel.requirement if wheel is not None else None,
            status=status,
        )
        if status is not None:
            status(
                "reading the build environment's torch"
            )  # its first import: seconds, more on a busy machine
        interpreter = quick_probe(python)
        interpreter = _as_cpu(candidate, interpreter) or interpreter
    targets = native_targets(interpreter) if policy.native else None
    plan, diagnostics = plan_candidate(
        project,
        candidate.name,
        candidate.backend,
        interpreter,
        unique_id,
        native_targets=targets,
        explicit_archs=policy.explicit_archs,
    )
    return plan, interpreter, list(diagnostics)
