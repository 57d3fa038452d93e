"""``kernel-builder test``: build this environment's variant, then run the project's tests against it.

Tests run in a pytest subprocess (a fresh process: op namespaces are process-global, and a rebuilt kernel
must not meet the previous one), where the kernel is importable under its package name (``import relu``,
through :mod:`kernel_builder.authoring.pytest_plugin`, and in the processes the tests start through an import
shim on ``PYTHONPATH``) and ``get_kernel("<repo-id>", version=N)`` resolves to the project through
``LOCAL_KERNELS``. Before the build, :mod:`kernel_builder.authoring.preflight` checks that the test interpreter
has pytest (and ``kernels`` when the tests import it). See ``docs/tutorial.md``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from kernel_builder.authoring.preflight import check_test_interpreter
from kernel_builder.authoring.pytest_plugin import ENV as KERNEL_ENV
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, UsageError
from kernel_builder.pipeline.check.import_check import with_this_package
from kernel_builder.pipeline.state import STATE_DIR

#: Under the project's state directory: the import shim ``<package>/__init__.py``, first on ``PYTHONPATH``.
SHIM_DIR = "test-import"

_SHIM = """\
# Written by kernel-builder for `kernel-builder test` (kept up to date by each run). In the test run and in the
# processes it starts, `import {name}` loads the kernel under test ({env}) instead of this file.
from kernel_builder.authoring.pytest_plugin import import_kernel_under_test

import_kernel_under_test(__name__)
"""


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
    env = with_this_package(env)
    # First: before kernel-builder's own site-packages, which may hold an unrelated package of the same name.
    env["PYTHONPATH"] = os.pathsep.join((str(write_import_shim(project)), env["PYTHONPATH"]))
    return env


def write_import_shim(project: KernelProject) -> Path:
    """The directory (in the project's state directory) holding the import shim ``<package>/__init__.py``.

    In the pytest process the plugin loads the kernel before the first conftest; a process the tests start
    runs no plugin, but searches ``PYTHONPATH``, which it inherits. A ``sitecustomize`` or ``.pth`` file would
    have to go into the test interpreter's own site-packages (and a ``sitecustomize`` there would hide the
    interpreter's own). The shim is static: the kernel's path comes from the environment. Written
    atomically, only when it changed.
    """
    directory = project.root / STATE_DIR / SHIM_DIR
    init = directory / project.py_name / "__init__.py"
    text = _SHIM.format(name=project.py_name, env=KERNEL_ENV)
    try:
        if init.read_text(encoding="utf-8") == text:
            return directory
    except OSError:
        pass
    init.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".__init__.", dir=init.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, init)
    return directory


def _split_args(project: KernelProject, pytest_args: Sequence[str]) -> tuple[list[str], list[Path]]:
    """The arguments for pytest (run in the project root) and the test paths they name; a path that exists
    relative to the caller's directory is made absolute."""
    args: list[str] = []
    paths: list[Path] = []
    for arg in pytest_args:
        base, sep, rest = arg.partition("::")
        if not arg.startswith("-") and base:
            if Path(base).exists():
                arg = str(Path(base).resolve()) + sep + rest
                paths.append(Path(base).resolve())
            elif (project.root / base).exists():
                paths.append(project.root / base)
        args.append(arg)
    return args, paths


def pytest_command(
    project: KernelProject, pytest_args: Sequence[str], python: str | os.PathLike[str] | None = None
) -> list[str]:
    """``python -m pytest`` with the plugin; ``tests/`` unless the arguments name test paths of their own."""
    args, paths = _split_args(project, pytest_args)
    tests = project.root / "tests"
    if not paths and not tests.is_dir():
        raise UsageError(f"{tests} does not exist: add tests there, or pass test paths after `--`")
    argv = [str(python or sys.executable), "-m", "pytest", "-p", "kernel_builder.authoring.pytest_plugin"]
    return argv + (args if paths else [str(tests), *args])


def _python_files(path: Path) -> Iterator[Path]:
    if path.is_file():
        yield path
        return
    for file in sorted(path.rglob("*.py")):
        if not any(part.startswith(".") or part == "__pycache__" for part in file.relative_to(path).parts):
            yield file


def collected_sources(project: KernelProject, pytest_args: Sequence[str]) -> list[Path]:
    """The Python files pytest imports for this run: the named test paths (else ``tests/``), with the
    ``conftest.py`` and ``__init__.py`` files of the directories above them up to the project root."""
    paths = _split_args(project, pytest_args)[1] or [project.root / "tests"]
    root = project.root.resolve()
    files: dict[Path, None] = {}
    for path in paths:
        files.update(dict.fromkeys(_python_files(path)))
        for parent in path.resolve().parents:
            if parent != root and root not in parent.parents:
                break
            files.update(
                dict.fromkeys(p for p in (parent / "conftest.py", parent / "__init__.py") if p.is_file())
            )
    return list(files)


def check_tests_can_run(
    project: KernelProject, pytest_args: Sequence[str], python: str | os.PathLike[str] | None = None
) -> None:
    """Before the build: the test interpreter has pytest, and ``kernels`` if the tests import it
    (:func:`kernel_builder.authoring.preflight.check_test_interpreter`); ``UsageError`` otherwise."""
    pytest_command(project, pytest_args)  # no tests/ and no test paths: the usage error comes first
    sources = collected_sources(project, pytest_args)
    check_test_interpreter(python or sys.executable, pytest_environment(project), sources, root=project.root)


def run_tests(
    project: KernelProject,
    pytest_args: Sequence[str],
    *,
    log: Callable[[str], None],
    python: str | os.PathLike[str] | None = None,
) -> int:
    """Run the project's tests against its build (already made) with ``python`` (default: this interpreter);
    returns pytest's exit status."""
    if not (project.root / "build").is_dir():
        raise BuildError(f"{project.root / 'build'} does not exist: nothing was built")
    argv = pytest_command(project, pytest_args, python)
    log(f"running: pytest {' '.join(argv[5:])}")
    return subprocess.run(argv, cwd=project.root, env=pytest_environment(project), check=False).returncode
