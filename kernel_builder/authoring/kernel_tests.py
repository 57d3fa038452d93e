"""Running a kernel's own tests the way its authors do, against one built variant.

Kernel test suites usually ``import <name>`` (``import relu``), while a build holds flat variant directories that
the loaders import under the variant's unique id. The tests get the same environment as those of
``kernel-builder test`` (:func:`kernel_builder.authoring.devtest.pytest_environment`), with the plugin
:mod:`kernel_builder.authoring.pytest_plugin` named in ``PYTEST_PLUGINS``: before the first conftest it loads the
variant (digest verified, as every load) and exposes it as ``<name>`` (:func:`kernel_builder.loader.alias.load_as`);
``LOCAL_KERNELS`` maps the kernel's Hub repo id to the variant, so ``get_kernel("org/name", version=N)`` in the
tests gives
that same module. ``build/`` is left as it was.

:func:`run_kernel_tests` runs pytest on ``tests/`` that way, in the interpreter the variant is for.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.authoring.devtest import collected_sources, pytest_environment
from kernel_builder.authoring.preflight import check_test_interpreter
from kernel_builder.common import processes
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, UsageError
from kernel_builder.pipeline.check.import_check import with_this_package

PLUGIN = "kernel_builder.authoring.pytest_plugin"

_SELECT = r"""
import sys
from kernel_builder.loader.local import local_variant_dir
print(local_variant_dir(sys.argv[1]))
"""


@dataclass(frozen=True)
class KernelTestEnv:
    """Where a kernel's tests find the variant, and the environment of the pytest process that runs them."""

    variant_dir: Path
    env: dict[str, str]


def kernel_test_env(
    project: KernelProject, variant_dir: Path, base: Mapping[str, str] | None = None
) -> KernelTestEnv:
    """The environment in which pytest exposes ``variant_dir`` as ``import <py_name>`` and ``get_kernel(<repo
    id>)`` gives it (``[general.hub] repo-id``, else ``local/<name>``)."""
    if not (variant_dir / "__init__.py").is_file():
        raise BuildError(f"{variant_dir} is not a built variant (no __init__.py); build the kernel first")
    env = pytest_environment(project, base, variant_dir=variant_dir)
    env["PYTEST_PLUGINS"] = ",".join(p for p in (env.get("PYTEST_PLUGINS"), PLUGIN) if p)
    return KernelTestEnv(variant_dir.resolve(), env)


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
    under the kernel's name; returns pytest's exit status. ``UsageError`` when ``python`` lacks pytest (or
    ``kernels``, which the tests import)."""
    chosen = variant_dir or select_variant(project, python)
    setup = kernel_test_env(project, chosen)
    tests = project.root / "tests"
    check_test_interpreter(
        python or sys.executable, setup.env, collected_sources(project, pytest_args), root=project.root
    )
    argv = [str(python or sys.executable), "-m", "pytest", *(pytest_args or [str(tests)])]
    return processes.run(argv, cwd=cwd or project.root, env=setup.env, stdin=None).returncode
