"""Running kernel-builder and what it built, for the end-to-end build tests: the two test interpreters, the CLI
in a subprocess (timed), a fresh Python for loading a built kernel, git for the provenance tests, and
:class:`Built`, a project built into its root.

Loading a built kernel always happens in a fresh subprocess with ``PYTHONDONTWRITEBYTECODE=1``: Torch op
namespaces are process-global, and an import in the test process would write ``__pycache__`` into the
variant directories whose exact contents other tests check.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest
import warm_python
from matrix_data import CPU_VARIANT

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
STATE_DIR = ".kernel-builder"


# ---------------------------------------------------------------------------------------------------------
# Interpreters


def cpu_python() -> Path:
    """The interpreter running the tests; its Torch is the CPU build the cpu variant needs."""
    return Path(sys.executable)


#: Written by ``make test``: the path of the CUDA tests' interpreter (tests/cuda_test_env.py).
CUDA_TEST_PYTHON_FILE = REPO / ".venv-kb-cache" / "cuda-test-python"


def cuda_python() -> Path | None:
    """The CUDA build interpreter: ``KB_TEST_CUDA_PYTHON``, else the one ``make test`` made (the path in
    :data:`CUDA_TEST_PYTHON_FILE`), else ``.venv-cu130/bin/python`` in the repo."""
    configured = os.environ.get("KB_TEST_CUDA_PYTHON")
    if not configured and CUDA_TEST_PYTHON_FILE.is_file():
        configured = CUDA_TEST_PYTHON_FILE.read_text(encoding="utf-8").strip()
    path = Path(configured) if configured else REPO / ".venv-cu130" / "bin" / "python"
    if not path.is_absolute():
        path = REPO / path
    return path if path.exists() else None


def require_cuda_python() -> Path:
    """The CUDA interpreter, or skip with the reason (``make test`` creates one: tests/cuda_test_env.py)."""
    path = cuda_python()
    where = os.environ.get("KB_TEST_CUDA_PYTHON") or str(REPO / ".venv-cu130" / "bin" / "python")
    if path is None:
        pytest.skip(
            f"no CUDA build interpreter at {where} (set KB_TEST_CUDA_PYTHON to a Python with torch+cu130)"
        )
    if (
        shutil.which("nvcc") is None
        and not Path("/usr/local/cuda/bin/nvcc").exists()
        and not os.environ.get("CUDA_HOME")
    ):
        pytest.skip("no nvcc: install CUDA 13.0 or set CUDA_HOME")
    return path


# ---------------------------------------------------------------------------------------------------------
# Running the CLI and built kernels


@dataclass(frozen=True)
class CliRun:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def check(self) -> CliRun:
        assert self.returncode == 0, (
            f"kernel-builder {' '.join(self.argv)} exited {self.returncode}:\n{self.output}"
        )
        return self


def run_cli(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    prelude: str = "",
    cwd: Path | None = None,
) -> CliRun:
    """``python -m kernel_builder ARGS`` in a subprocess (the tests' interpreter), timed.

    ``prelude`` is Python run before the CLI is imported (e.g. to change ``kernel_builder.__version__``).
    """
    argv = tuple(str(a) for a in args)
    if prelude:
        command = [
            sys.executable,
            "-c",
            f"{prelude}\nimport sys\nfrom kernel_builder.cli import main\nsys.exit(main(sys.argv[1:]))",
            *argv,
        ]
    else:
        command = [sys.executable, "-m", "kernel_builder", *argv]
    start = time.monotonic()
    result = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd, check=False
    )
    return CliRun(argv, result.returncode, result.stdout, result.stderr, time.monotonic() - start)


def build(
    root: Path,
    *extra: str | os.PathLike[str],
    python: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> CliRun:
    """``kernel-builder build ROOT`` (with ``--python`` for a CUDA build); must succeed."""
    args: list[str | os.PathLike[str]] = ["build", root, *extra]
    if python is not None:
        args += ["--python", python]
    return run_cli(args, env=env).check()


#: For builds whose tests do not examine the import check: it starts the build interpreter and imports Torch
#: (3-6 s of CPU per variant), and its own tests (``test_pipeline_check_import_*.py``, ``test_pipeline_builder_noop.py``)
#: cover it. A test that loads the build still does so itself, in a fresh interpreter.
NO_IMPORT_CHECK = "--no-import-check"

#: For the second of two clean builds compared byte for byte: compiled for real, not taken from the
#: compiler cache the first one filled (which would make the comparison hold trivially).
NO_COMPILER_CACHE = {"KERNEL_BUILDER_COMPILER_CACHE": "off"}


def run_python(
    python: Path,
    code: str,
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run ``code`` in a fresh ``python`` (no bytecode written; this checkout importable); return stdout. The
    tests' own interpreter is forked with Torch imported (:mod:`warm_python`)."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    full_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": path, **(env or {})}
    result = warm_python.run(
        [str(python), "-c", textwrap.dedent(code), *[str(a) for a in args]],
        capture_output=True, text=True, env=full_env, cwd=cwd, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"python failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def run_json(
    python: Path,
    code: str,
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> object:
    """Like :func:`run_python`; the last line of stdout is JSON."""
    return json.loads(run_python(python, code, *args, cwd=cwd, env=env).strip().splitlines()[-1])


def run_dir(factory: pytest.TempPathFactory) -> Path:
    """A directory of this pytest run that every pytest-xdist worker sees (the workers' base directories are
    ``<run>/popen-gwN``); without xdist, the session's base directory."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def shared_build(factory: pytest.TempPathFactory, name: str, make: Callable[[Path], Built]) -> Built:
    """``make(root)`` once per test run, whichever worker asks first; the others wait and get the same ``Built``.

    ``root`` is ``<run_dir>/<name>/tree``; a JSON file written after ``make`` returns marks the build complete,
    so a worker that finds it never sees a half-made tree. Tests must not change what they get.
    """
    directory = run_dir(factory) / name
    directory.mkdir(parents=True, exist_ok=True)
    done = directory / "built.json"
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.is_file():
            shutil.rmtree(directory / "tree", ignore_errors=True)  # what a worker that failed left
            built = make(directory / "tree")
            tmp = done.with_suffix(".tmp")
            tmp.write_text(
                json.dumps({**asdict(built), "root": str(built.root)}, default=str), encoding="utf-8"
            )
            tmp.replace(done)
            return built
    data = json.loads(done.read_text(encoding="utf-8"))
    run = CliRun(**{**data["run"], "argv": tuple(data["run"]["argv"])})
    return Built(Path(data["root"]), run, data["variant"])


@dataclass(frozen=True)
class Built:
    """A project built into ``root``; ``run`` is the CLI call that built it."""

    root: Path
    run: CliRun
    variant: str = CPU_VARIANT

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def variant_dir(self) -> Path:
        return self.build / self.variant

    @property
    def cmake_build(self) -> Path:
        return self.root / STATE_DIR / self.variant / "cmake-build"

    @property
    def ops_name(self) -> str:
        value = metadata(self.variant_dir)["id"]
        assert isinstance(value, str)
        return value


def metadata(variant_dir: Path) -> dict[str, object]:
    data = json.loads((variant_dir / "metadata.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


# ---------------------------------------------------------------------------------------------------------
# git, parallel compiler runs, timings


def git(root: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    }  # fmt: skip
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=True
    ).stdout


def git_init(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "fixture")


def run_parallel(
    commands: Sequence[Sequence[str | os.PathLike[str]]], *, cwd: Path
) -> list[subprocess.CompletedProcess[str]]:
    """Run compiler commands two at a time (the CI host has two cores)."""
    results: list[subprocess.CompletedProcess[str]] = []
    for start in range(0, len(commands), 2):
        batch = [
            subprocess.Popen(
                [str(a) for a in argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            for argv in commands[start : start + 2]
        ]
        for argv, proc in zip(commands[start : start + 2], batch):
            out, _ = proc.communicate()
            results.append(subprocess.CompletedProcess([str(a) for a in argv], proc.returncode, out, ""))
    return results


def printed(label: str, seconds: float) -> None:
    """Report a measured time (shown with ``pytest -s`` or in the captured output of a failure)."""
    print(f"[timing] {label}: {seconds:.2f} s")
