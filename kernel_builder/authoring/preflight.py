"""What the interpreter that runs a kernel's tests must have, checked before anything is built.

``kernel-builder`` needs neither pytest nor Hugging Face's ``kernels`` package, and a kernel's test interpreter
(``--python``, a CUDA environment) is often not the one kernel-builder is installed in. Without a check, a missing
pytest ends a test run, after the build, in ``No module named pytest``, and a test suite that imports
``kernels`` fails at collection with an ``ImportError`` that does not say what to install. :func:`check_test_interpreter`
looks both up in the test interpreter, with the environment the tests get, and raises one ``UsageError`` (exit
status 2) that names what is missing, where the tests import it, and the one command that installs it there.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.common import processes
from kernel_builder.errors import UsageError
from kernel_builder.loader.minver import KERNELS_REQUIREMENT

__all__ = ["KERNELS_REQUIREMENT", "ImportSite", "check_test_interpreter", "install_command", "module_imports"]


_PROBE = """
import importlib.util, sys
for name in sys.argv[1:]:
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    print(name, int(found))
"""


@dataclass(frozen=True)
class ImportSite:
    """A module-level ``import`` of a module in a test file (such an import runs at collection)."""

    file: Path
    line: int


def _module_statements(body: Iterable[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements a module runs when imported: into ``if``/``with``/``for``/``while`` blocks, not into
    functions, classes or ``try`` blocks (an import guarded by ``try`` is the author's fallback)."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.If, ast.For, ast.While)):
            yield from _module_statements([*statement.body, *statement.orelse])
        elif isinstance(statement, ast.With):
            yield from _module_statements(statement.body)


def _names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.Import):
        return [alias.name for alias in statement.names]
    if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
        return [statement.module]
    return []


def module_imports(files: Iterable[Path], module: str) -> list[ImportSite]:
    """Where ``files`` import ``module`` (or one of its submodules) at module level; unreadable files are
    skipped (pytest reports them itself)."""
    sites = []
    for file in files:
        try:
            tree = ast.parse(file.read_bytes(), filename=str(file))
        except (OSError, SyntaxError, ValueError):
            continue
        for statement in _module_statements(tree.body):
            if any(name == module or name.startswith(module + ".") for name in _names(statement)):
                sites.append(ImportSite(file, statement.lineno))
    return sites


def _missing(python: str, modules: list[str], env: Mapping[str, str]) -> set[str]:
    try:
        result = processes.run([python, "-c", _PROBE, *modules], capture=True, env=env)
    except OSError as error:
        raise UsageError(f"cannot run the test interpreter {python}: {error.strerror or error}") from error
    if result.returncode != 0:
        lines = result.stderr.strip().splitlines()
        raise UsageError(
            f"the test interpreter {python} failed to start: {lines[-1] if lines else 'no output'}"
        )
    found = dict(line.rsplit(" ", 1) for line in result.stdout.splitlines() if " " in line)
    return {name for name in modules if found.get(name) != "1"}


def install_command(python: str, requirements: Iterable[str], *, has_pip: bool = True) -> str:
    """The command that installs ``requirements`` for ``python``; for an interpreter without pip (a venv made
    by uv, or with ``--without-pip``), the two ways to get one."""
    names = " ".join(requirements)
    command = f"{python} -m pip install {names}"
    if has_pip:
        return command
    return f"{command} ({python} has no pip: run `{python} -m ensurepip` first, or use `uv pip install --python {python} {names}`)"


def _shown(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.resolve().relative_to(root.resolve()))
        except ValueError:
            pass
    return str(path)


def check_test_interpreter(
    python: str | os.PathLike[str],
    env: Mapping[str, str],
    test_files: Iterable[Path],
    *,
    root: Path | None = None,
) -> None:
    """Raise ``UsageError`` unless ``python`` (run with ``env``) can import pytest and, when ``test_files``
    import ``kernels`` at module level, ``kernels``. File names in the message are relative to ``root``."""
    interpreter = str(python)
    sites = module_imports(test_files, "kernels")
    modules = ["pytest", *(["kernels"] if sites else []), "pip"]
    missing = _missing(interpreter, modules, env)
    lines, requirements = [], []
    if "pytest" in missing:
        lines.append("  pytest, which runs the tests")
        requirements.append("pytest")
    if "kernels" in missing:
        where = ", ".join(f"{_shown(site.file, root)}:{site.line}" for site in sites[:3])
        more = f" and {len(sites) - 3} more" if len(sites) > 3 else ""
        lines.append(f"  kernels, Hugging Face's kernel loader, which the tests import ({where}{more})")
        requirements.append(KERNELS_REQUIREMENT)
    if not lines:
        return
    command = install_command(interpreter, requirements, has_pip="pip" not in missing)
    raise UsageError("\n".join([f"the test interpreter {interpreter} lacks what the tests need:", *lines,
                                f"Install {'it' if len(requirements) == 1 else 'them'} with: {command}"]))  # fmt: skip
