"""Older releases of upstream's ``kernels`` package, beside the pinned one, for the tests that must hold for each
release line (sharing one module between both loaders: tests/test_loader_share.py) and the differential tests
that compare against 0.17.2 as well as the pinned release (:func:`child_env`).

The test extra pins ``kernels`` 0.19.1 into ``.venv``. Each older release is installed once, without its
dependencies (the pinned release's are a superset), into a directory of its own: a fresh interpreter started
with that directory first on ``PYTHONPATH`` imports that release instead (:func:`release_env`). No second
Torch is installed, so making one costs a wheel download, and it is kept in the tests' kernel-builder cache
(``KB_TEST_KERNEL_BUILDER_CACHE``, which ``make test`` sets and fills first by running this file) across runs:

    KB_TEST_KERNEL_BUILDER_CACHE=.venv-kb-cache .venv/bin/python tests/upstream_kernels.py   # prints the dirs

Without that variable it is made once per test run, in the run's shared directory, by whichever pytest-xdist
worker asks first.
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import warm_python
from build_runs import run_dir
from pip_targets import install_target

#: The pinned release (pyproject.toml's test extra) and the older ones each release-line test also runs with.
PINNED = "0.19.1"
OLDER = ("0.17.2", "0.18.3")
RELEASES = (*OLDER, PINNED)
#: The release installed in this interpreter (the test extra's pin), and the one kernel-builder was a drop-in for
#: before 0.19, which the differential tests still compare against where they say so.
INSTALLED = importlib.metadata.version("kernels")
KERNELS_0_17_2 = OLDER[0]

CACHE_VARIABLE = "KB_TEST_KERNEL_BUILDER_CACHE"
REPO = Path(__file__).resolve().parent.parent


def cache_root() -> Path | None:
    """Where the releases are kept across runs: ``$KB_TEST_KERNEL_BUILDER_CACHE/upstream-kernels``, if set."""
    cache = os.environ.get(CACHE_VARIABLE)
    return Path(cache) / "upstream-kernels" if cache else None


def install_release(version: str, root: Path) -> Path:
    """``root/<version>``, holding ``kernels==version`` (no dependencies); installed unless it is there already."""
    return install_target(f"kernels=={version}", root / version, marker="kernels/__init__.py")


def loader_child_env(cache: Path, *, drop: tuple[str, ...] = (), **extra: str) -> dict[str, str]:
    """The environment of a fresh interpreter that loads kernels (ours or upstream's) on a cache of its own: this
    process's (the ``hub`` fixture's endpoint and token among it) without the variables in ``drop``, no bytecode
    written, ``extra`` on top. Telemetry stays on: with it off, kernels 0.17 sends an invalid User-Agent header
    (a trailing "; ")."""
    env = {key: value for key, value in os.environ.items() if key not in drop}
    env.update(
        {
            "PYTHONDONTWRITEBYTECODE": "1",
            "KERNELS_CACHE": str(cache),
            "HF_HUB_CACHE": str(cache),
            "HF_HUB_DISABLE_TELEMETRY": "0",
        }
    )
    env.update(extra)
    return env


def releases_root(factory: pytest.TempPathFactory) -> Path:
    """Where the releases are installed: the tests' cache (:func:`cache_root`), else the run's shared directory."""
    return cache_root() or run_dir(factory) / "upstream-kernels"


def release_env(version: str, factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment changes that make a fresh interpreter import ``kernels==version`` and this checkout's
    kernel_builder: ``PYTHONPATH`` with the release's directory first (none for the pinned release), then the
    checkout."""
    first = [] if version == PINNED else [str(install_release(version, releases_root(factory)))]
    path = [*first, str(REPO), os.environ.get("PYTHONPATH")]
    return {"PYTHONPATH": os.pathsep.join(p for p in path if p)}


_checked: set[Path] = set()


def child_env(factory: pytest.TempPathFactory, version: str, env: dict[str, str]) -> dict[str, str]:
    """``env`` for a child interpreter that imports ``kernels`` ``version`` (unchanged for the installed one),
    checked once per process by asking such a child which release it imports."""
    if version == INSTALLED:
        return env
    site = install_release(version, releases_root(factory))
    child = {**env, "PYTHONPATH": os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)}
    if site not in _checked:
        probe = subprocess.run(
            [sys.executable, "-c", "import kernels; print(kernels.__version__)"],
            capture_output=True,
            text=True,
            env=child,
            check=False,
        )
        assert probe.stdout.strip() == version, probe.stderr
        _checked.add(site)
    return child


#: Upstream's command-line entry point, found as its ``kernels`` console script is (the module moved in 0.19).
UPSTREAM_MAIN = (
    "from importlib.metadata import entry_points\n"
    "(main,) = [e.load() for e in entry_points(group='console_scripts', name='kernels')]"
)


def upstream_cli(*args: str) -> str:
    """The output of the pinned release's ``kernels`` command (this interpreter's, run as its console script
    runs it, in a fresh process: :mod:`warm_python`), which must succeed; skips the test where it is not
    installed."""
    if shutil.which("kernels", path=os.path.dirname(sys.executable)) is None:
        pytest.skip("upstream's kernels command is not installed")
    code = f"import sys\n{UPSTREAM_MAIN}\nsys.argv[0] = 'kernels'\nsys.exit(main())\n"
    result = warm_python.run([sys.executable, "-c", code, *args])
    assert result.returncode == 0, f"kernels {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return result.stdout


def our_cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The output of ``kernel-builder ARGS``, run in this process, which must succeed."""
    from kernel_builder.cli import main

    assert main(list(args)) == 0
    return capsys.readouterr().out


if __name__ == "__main__":
    where = cache_root()
    if where is None:
        sys.exit(f"set {CACHE_VARIABLE} to the tests' kernel-builder cache (the Makefile's TEST_CACHE)")
    for release in OLDER:
        print(install_release(release, where))
