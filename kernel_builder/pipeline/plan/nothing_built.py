"""What to say when a build produces no variant at all: the reason per backend, and the command that would build
one. ``build``, ``test`` and ``bench`` then fail (exit status 1) instead of printing an empty table, so a CI job
or a newcomer never takes "done" for a kernel that was not built (docs/cli.md, "A build of nothing").
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from kernel_builder import backends
from kernel_builder.config.archs import applicable_entries
from kernel_builder.config.model import KernelProject
from kernel_builder.formats.matrix import MatrixEntry, load_matrix
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter
from kernel_builder.pipeline.plan.planner import host_system, how_to_build

__all__ = ["explain", "install_torch_line"]

_PREFIX = "no {backend} variant is built: "


def install_torch_line(project: KernelProject, backend: str) -> str | None:
    """The ``pip install`` of a torch that builds ``backend`` for this project: the newest required matrix entry
    of this host's system within the project's bounds (its pin and index), or ``None`` when there is none."""
    entries = [
        e
        for e in applicable_entries(project.config, load_matrix(), backend)
        if host_system() in e.systems and e.torch_pin is not None
    ]
    if not entries:
        return None
    best: MatrixEntry = max(entries, key=lambda e: (e.required, e.torch))
    index = f" --index-url {shlex.quote(best.index_url)}" if best.index_url else ""
    return f"pip install torch=={best.torch_pin}{index}"


def explain(
    project: KernelProject,
    skipped: Sequence[tuple[str, str]],
    interpreter: BuildInterpreter | None,
    *,
    explicit: bool,
    command: str = "build",
) -> str:
    """The error of a build that produced nothing: ``skipped`` are its (backend or variant, reason) pairs.

    With the default selection each skipped entry is a backend, and its hint names the ``--variant`` that builds
    one in an isolated environment and the ``--python`` interpreter that would; for ``test`` and ``bench``, which
    run in the interpreter, the torch to install there. With ``--variant``/``--required``/``--all-variants`` the
    build's table already gives each variant's reason, so the hint points at what can be built where.
    """
    lines = ["no variant was built"]
    if explicit:
        lines[0] += (
            f": none of the {len(skipped)} selected variant(s) can be built here (each one's reason is above)"
        )
        lines.append(
            "  `kernel-builder list-variants` shows which variants this machine can build; `kernel-builder matrix "
            "--format github` gives each one a CI runner (docs/ci.md)"
        )
        return "\n".join(lines)
    if not skipped:
        lines[0] += f": {project.display_path} has no variant for this build to make"
    for backend, reason in skipped:
        lines.append(f"  {backend}: {reason.removeprefix(_PREFIX.format(backend=backend))}")
        if backend not in backends.names() or not backends.get(backend).buildable:
            continue  # another tool's platform: no command of this one builds it
        lines.append(f"  {_hint(project, backend, interpreter, command)}")
    return "\n".join(lines)


def _hint(project: KernelProject, backend: str, interpreter: BuildInterpreter | None, command: str) -> str:
    build = how_to_build(project, backend, interpreter)
    if command == "build":
        return build
    install = install_torch_line(project, backend)
    environment = f" (a virtual environment where you ran `{install}`)" if install else ""
    if command == "test":
        run = f"`kernel-builder test --python PATH` with an interpreter whose torch is a {backend} build{environment}"
    else:
        run = f"`kernel-builder {command}` in an environment whose torch is a {backend} build{environment}"
    return f"To {command} a {backend} variant: {run}.\n  {build}"
