"""The test interpreter's check before `kernel-builder test` builds: pytest, and ``kernels`` where the tests import
it, looked up in real interpreters (virtual environments without them), with the exact install command."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from build_runs import REPO
from suite_fixtures import bare_venv, mixed_suite_project, without_pytest_and_kernels

from kernel_builder.authoring.preflight import (
    KERNELS_REQUIREMENT,
    ImportSite,
    check_test_interpreter,
    install_command,
    module_imports,
)
from kernel_builder.errors import UsageError


@pytest.fixture(scope="module")
def empty_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Nothing installed, not even pip."""
    return bare_venv(tmp_path_factory.mktemp("venvs") / "empty")


@pytest.fixture(scope="module")
def pip_only_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bare_venv(tmp_path_factory.mktemp("venvs") / "pip-only", lambda name: name.startswith("pip"))


@pytest.fixture(scope="module")
def no_pytest_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Everything this interpreter has (torch, kernel-builder's dependencies) but pytest, kernels and pip."""
    return bare_venv(tmp_path_factory.mktemp("venvs") / "no-pytest", without_pytest_and_kernels)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def test_module_level_imports_are_found_guarded_and_lazy_ones_are_not(tmp_path: Path) -> None:
    found = write(
        tmp_path / "test_a.py",
        """
        import os
        import kernels
        from kernels.layer import Mode
        if os.environ.get("X"):
            import kernels.utils as u
        with open(__file__):
            from kernels import get_kernel
        """,
    )
    ignored = write(
        tmp_path / "test_b.py",
        """
        try:
            import kernels
        except ImportError:
            kernels = None

        def test_x():
            import kernels

        class TestY:
            from kernels import get_kernel

        import kernelsx
        from . import kernels
        from .kernels import x
        """,
    )
    broken = write(tmp_path / "test_c.py", "import kernels\ndef (:\n")
    sites = module_imports([found, ignored, broken, tmp_path / "missing.py"], "kernels")
    assert sites == [ImportSite(found, line) for line in (2, 3, 5, 7)]


def test_install_command_with_and_without_pip() -> None:
    assert install_command("/v/bin/python", ["pytest", KERNELS_REQUIREMENT]) == (
        "/v/bin/python -m pip install pytest kernels==0.19.1"
    )
    assert install_command("/v/bin/python", ["pytest"], has_pip=False) == (
        "/v/bin/python -m pip install pytest (/v/bin/python has no pip: run `/v/bin/python -m ensurepip` first, "
        "or use `uv pip install --python /v/bin/python pytest`)"
    )


def test_an_interpreter_without_pytest_kernels_and_pip(empty_venv: Path, tmp_path: Path) -> None:
    tests = write(tmp_path / "tests" / "test_k.py", "import torch\nimport kernels\n")
    with pytest.raises(UsageError) as error:
        check_test_interpreter(empty_venv, os.environ, [tests], root=tmp_path)
    assert str(error.value) == (
        f"the test interpreter {empty_venv} lacks what the tests need:\n"
        "  pytest, which runs the tests\n"
        "  kernels, Hugging Face's kernel loader, which the tests import (tests/test_k.py:2)\n"
        f"Install them with: {empty_venv} -m pip install pytest kernels==0.19.1 ({empty_venv} has no pip: run "
        f"`{empty_venv} -m ensurepip` first, or use `uv pip install --python {empty_venv} pytest "
        "kernels==0.19.1`)"
    )


def test_kernels_is_asked_for_only_when_the_tests_import_it(pip_only_venv: Path, tmp_path: Path) -> None:
    tests = write(tmp_path / "tests" / "test_k.py", "import torch\n")
    with pytest.raises(UsageError) as error:
        check_test_interpreter(pip_only_venv, os.environ, [tests], root=tmp_path)
    assert str(error.value) == (
        f"the test interpreter {pip_only_venv} lacks what the tests need:\n"
        "  pytest, which runs the tests\n"
        f"Install it with: {pip_only_venv} -m pip install pytest"
    )


def test_the_lookup_uses_the_environment_the_tests_get(empty_venv: Path, tmp_path: Path) -> None:
    """``PYTHONPATH`` (kernel-builder's own ``site-packages`` for an installed kernel-builder) counts."""
    pytest_dir = Path(pytest.__file__).parent
    kernels = importlib.util.find_spec("kernels")
    assert kernels is not None and kernels.origin is not None
    kernels_dir = Path(kernels.origin).parent
    path = tmp_path / "path"
    path.mkdir()
    for package in (pytest_dir, kernels_dir):
        os.symlink(package, path / package.name)
    tests = write(tmp_path / "tests" / "test_k.py", "import kernels\n")
    check_test_interpreter(empty_venv, {**os.environ, "PYTHONPATH": str(path)}, [tests])


def test_this_interpreter_has_what_the_tests_need(tmp_path: Path) -> None:
    tests = write(tmp_path / "tests" / "test_k.py", "import kernels\n")
    check_test_interpreter(sys.executable, os.environ, [tests])  # no error: pytest and kernels are installed


def test_an_interpreter_that_does_not_run(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=f"^cannot run the test interpreter {tmp_path}/nope: "):
        check_test_interpreter(tmp_path / "nope", os.environ, [])
    broken = write(tmp_path / "broken", "#!/bin/sh\necho 'no such library' >&2\nexit 3\n")
    broken.chmod(0o755)
    with pytest.raises(UsageError) as error:
        check_test_interpreter(broken, os.environ, [])
    assert str(error.value) == f"the test interpreter {broken} failed to start: no such library"


# --- the command -----------------------------------------------------------------------------------------


def cli(python: str | os.PathLike[str], *args: str | os.PathLike[str]) -> subprocess.CompletedProcess[str]:
    """``python -m kernel_builder ARGS`` with this checkout importable: kernel-builder run by ``python``."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [python, "-m", "kernel_builder", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


@pytest.mark.slow
def test_kernel_builder_test_in_a_venv_without_pytest_says_what_to_install(
    no_pytest_venv: Path, tmp_path: Path
) -> None:
    """kernel-builder installed in a venv that has torch but not pytest: exit status 2 before any build, the
    exact command for that venv; with ``--python`` naming such an interpreter, the same for it."""
    root = mixed_suite_project(tmp_path / "kb-mix")
    run = cli(no_pytest_venv, "test", root, "--", "-q")
    assert run.returncode == 2, run.stderr
    assert run.stderr.splitlines() == [
        f"error: the test interpreter {no_pytest_venv} lacks what the tests need:",
        "  pytest, which runs the tests",
        "  kernels, Hugging Face's kernel loader, which the tests import (tests/upstream/__init__.py:1, "
        "tests/upstream/test_upstream.py:5)",
        f"Install them with: {no_pytest_venv} -m pip install pytest kernels==0.19.1 ({no_pytest_venv} has no "
        f"pip: run `{no_pytest_venv} -m ensurepip` first, or use `uv pip install --python {no_pytest_venv} "
        "pytest kernels==0.19.1`)",
    ]
    assert not (root / "build").exists()
    # Only the tests named after `--`: they do not import kernels.
    by_name = cli(sys.executable, "test", root, "--python", no_pytest_venv, "--", "tests/test_by_name.py")
    assert by_name.returncode == 2, by_name.stderr
    assert by_name.stderr.splitlines()[1:] == [
        "  pytest, which runs the tests",
        f"Install it with: {no_pytest_venv} -m pip install pytest ({no_pytest_venv} has no pip: run "
        f"`{no_pytest_venv} -m ensurepip` first, or use `uv pip install --python {no_pytest_venv} pytest`)",
    ]
    assert not (root / "build").exists()


@pytest.mark.slow
def test_after_installing_pytest_it_works(tmp_path: Path) -> None:
    """The same venv with pytest (as `pip install pytest` leaves it): the tests that need no kernels pass."""
    python = bare_venv(
        tmp_path / "venv", lambda name: without_pytest_and_kernels(name) or name.startswith(("pytest", "_pytest",
                                                                                                "py.py", "pluggy",
                                                                                                "iniconfig"))
    )  # fmt: skip
    root = mixed_suite_project(tmp_path / "kb-mix")
    run = cli(python, "test", root, "--", "-q", "-p", "no:cacheprovider", "tests/test_by_name.py")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout.splitlines()[-1]
