"""Running a kernel's own tests the way its authors do.

Kernel test suites usually ``import <name>`` (``import relu``), while a build holds flat variant directories
(``build/<variant>/__init__.py``) that the loaders import under the variant's unique id. This module makes a
variant importable under the kernel's package name without touching ``build/``: a *view* directory
``.kernel-builder/import/<variant>/`` holds one entry, ``<name>``, a relative symlink to ``build/<variant>``; put
the view first on ``sys.path`` (``PYTHONPATH``) and ``import <name>`` gives that variant. The same environment
maps the kernel's Hub repo id to the variant through ``LOCAL_KERNELS``, so ``get_kernel("org/name")`` in the
tests loads it too.

:func:`run_kernel_tests` runs pytest on ``tests/`` that way, in the interpreter the variant is for.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.build.check.import_check import with_this_package
from kernel_builder.build.state import STATE_DIR
from kernel_builder.common import processes
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, UsageError

IMPORT_DIR = "import"

_SELECT = r"""
import sys
from kernel_builder.loader.local import local_variant_dir
print(local_variant_dir(sys.argv[1]))
"""


@dataclass(frozen=True)
class KernelTestEnv:
    """Where a kernel's tests find the variant: the view to put on ``sys.path`` and the environment variables."""

    variant_dir: Path
    view: Path  # holds <py_name> -> variant_dir
    env: dict[str, str]


def package_view(project: KernelProject, variant_dir: Path) -> Path:
    """``.kernel-builder/import/<variant>/`` holding ``<py_name>`` → ``variant_dir`` (created or refreshed)."""
    if not (variant_dir / "__init__.py").is_file():
        raise BuildError(f"{variant_dir} is not a built variant (no __init__.py); build the kernel first")
    view = project.root / STATE_DIR / IMPORT_DIR / variant_dir.name
    link = view / project.py_name
    target = os.path.relpath(variant_dir.absolute(), view.absolute())
    if link.is_symlink() and os.readlink(link) == target:
        return view
    view.mkdir(parents=True, exist_ok=True)
    tmp = view / f".{project.py_name}.{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target, target_is_directory=True)
    os.replace(tmp, link)
    return view


def kernel_test_env(
    project: KernelProject, variant_dir: Path, base: Mapping[str, str] | None = None
) -> KernelTestEnv:
    """The environment in which ``import <py_name>`` and ``get_kernel(<repo id>)`` give ``variant_dir``.

    ``PYTHONPATH`` starts with the view; ``LOCAL_KERNELS`` maps ``[general.hub] repo-id`` (when set) to the variant;
    bytecode goes to ``.kernel-builder/pycache`` instead of into the variant.
    """
    env = dict(os.environ if base is None else base)
    view = package_view(project, variant_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(view), env.get("PYTHONPATH")) if p)
    env["PYTHONPYCACHEPREFIX"] = str(project.root / STATE_DIR / "pycache")
    repo_id = project.config.general.hub.repo_id
    if repo_id:
        mapping = f"{repo_id}={variant_dir}"
        env["LOCAL_KERNELS"] = os.pathsep.join(p for p in (mapping, env.get("LOCAL_KERNELS")) if p)
    return KernelTestEnv(variant_dir, view, env)


def select_variant(project: KernelProject, python: str | os.PathLike[str] | None = None) -> Path:
    """The variant of ``build/`` that the loader picks in ``python``'s environment (default: this one)."""
    build = project.root / "build"
    if not build.is_dir():
        raise UsageError(
            f"{build} does not exist: build the kernel first (kernel-builder build {project.root})"
        )
    result = processes.run(
        [python or sys.executable, "-c", _SELECT, build], capture=True, env=with_this_package()
    )
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise BuildError(
            f"no variant in {build} suits {python or sys.executable}: {lines[-1] if lines else ''}"
        )
    return Path(result.stdout.strip().splitlines()[-1])


def run_kernel_tests(
    project: KernelProject,
    *,
    python: str | os.PathLike[str] | None = None,
    variant_dir: Path | None = None,
    pytest_args: Sequence[str] = (),
    cwd: Path | None = None,
) -> int:
    """Run pytest on the kernel's ``tests/`` with ``python`` (default: this interpreter), the variant importable
    under the kernel's name; returns pytest's exit status."""
    chosen = variant_dir or select_variant(project, python)
    setup = kernel_test_env(project, chosen)
    tests = project.root / "tests"
    argv = [str(python or sys.executable), "-m", "pytest", *(pytest_args or [str(tests)])]
    return processes.run(argv, cwd=cwd or project.root, env=setup.env, stdin=None).returncode
