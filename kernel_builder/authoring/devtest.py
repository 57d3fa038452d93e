"""``kernel-builder test``: build this environment's variant, then run the project's tests against it.

Tests run in a pytest subprocess (a fresh process: op namespaces are process-global, and a rebuilt kernel
must not meet the previous one), where the kernel is importable under its package name (``import relu``,
through :mod:`kernel_builder.authoring.pytest_plugin`) and ``get_kernel("<repo-id>", version=N)`` resolves to the project
through ``LOCAL_KERNELS``. See ``docs/tutorial.md``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from kernel_builder.authoring.pytest_plugin import ENV as KERNEL_ENV
from kernel_builder.build.check.import_check import with_this_package
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, UsageError


def repo_id_for_tests(project: KernelProject) -> str:
    """``[general.hub] repo-id``, else ``local/<name>`` (what ``kernel-builder init`` writes in the tests)."""
    return project.config.general.hub.repo_id or f"local/{project.name}"


def pytest_environment(
    project: KernelProject, base: Mapping[str, str] | None = None, *, variant_dir: Path | None = None
) -> dict[str, str]:
    """The environment of the pytest subprocess: the kernel exposed, its repo id mapped, this package first.

    The kernel is the project's build (the variant the loader picks in the test interpreter), or ``variant_dir``.
    """
    env = dict(os.environ if base is None else base)
    target = variant_dir.resolve() if variant_dir is not None else project.root.resolve()
    mapping = f"{repo_id_for_tests(project)}={target}"
    # Entries of LOCAL_KERNELS already set stay; a second mapping of the same repo id would be an error.
    kept = [s for s in env.get("LOCAL_KERNELS", "").split(os.pathsep) if s.strip() and
            s.partition("=")[0].strip() != repo_id_for_tests(project)]  # fmt: skip
    env["LOCAL_KERNELS"] = os.pathsep.join([*kept, mapping])
    env[KERNEL_ENV] = f"{project.py_name}={target if variant_dir is not None else target / 'build'}"
    return with_this_package(env)


def pytest_command(project: KernelProject, pytest_args: Sequence[str]) -> list[str]:
    """``python -m pytest`` with the plugin; ``tests/`` unless the arguments name test paths of their own.

    pytest runs in the project root: a path that exists relative to the caller's directory is made absolute.
    """
    args: list[str] = []
    names_path = False
    for arg in pytest_args:
        base, sep, rest = arg.partition("::")
        if not arg.startswith("-") and base:
            if Path(base).exists():
                arg, names_path = str(Path(base).resolve()) + sep + rest, True
            elif (project.root / base).exists():
                names_path = True
        args.append(arg)
    tests = project.root / "tests"
    if not names_path and not tests.is_dir():
        raise UsageError(f"{tests} does not exist: add tests there, or pass test paths after `--`")
    argv = [sys.executable, "-m", "pytest", "-p", "kernel_builder.authoring.pytest_plugin"]
    return argv + (args if names_path else [str(tests), *args])


def run_tests(project: KernelProject, pytest_args: Sequence[str], *, log: Callable[[str], None]) -> int:
    """Run the project's tests against its build (already made); returns pytest's exit status."""
    if not (project.root / "build").is_dir():
        raise BuildError(f"{project.root / 'build'} does not exist: nothing was built")
    argv = pytest_command(project, pytest_args)
    log(f"running: pytest {' '.join(argv[5:])}")
    return subprocess.run(argv, cwd=project.root, env=pytest_environment(project), check=False).returncode
