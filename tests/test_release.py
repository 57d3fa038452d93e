"""Installing and releasing kernel-builder itself: the tutorial's install commands work as written in a fresh
virtual environment, the sdist and the wheel build and pass ``twine check``, and the release workflow
(``.github/workflows/release.yml``) passes actionlint and publishes only from a tag, with trusted publishing.

The builds run on a copy of the repository's files, so they leave nothing (``*.egg-info``, ``build/``) in the
checkout. Nothing is downloaded: the fresh environment sees the test environment's packages through a ``.pth``
file (torch and the dependencies are then already satisfied), and pip runs with ``--no-index``. The
environment is created without its own copy of pip (``ensurepip`` alone takes half a minute on a busy
machine): its ``pip`` command runs this environment's pip module with the fresh environment's interpreter,
which installs into the fresh environment like its own pip would.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from test_docs_ci import actionlint

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
TUTORIAL = ROOT / "docs" / "tutorial.md"
INSTALL_MARK = "<!-- not run by the tutorial test: tests/test_release.py runs it"
_IGNORED = shutil.ignore_patterns(
    ".git", ".venv*", "build", ".kernel-builder", "*.egg-info", "__pycache__", ".*_cache", "dist"
)


def source_copy(dest: Path) -> Path:
    """The repository's files (what a clone has) under ``dest``."""
    shutil.copytree(ROOT, dest, ignore=_IGNORED, symlinks=True)
    return dest


def install_block() -> str:
    text = TUTORIAL.read_text(encoding="utf-8")
    match = re.search(re.escape(INSTALL_MARK) + r"[^\n]*\n```sh\n(.*?)```", text, flags=re.DOTALL)
    assert match is not None, "docs/tutorial.md has no install block marked for tests/test_release.py"
    return match[1]


def packages_but_kernel_builder(view: Path) -> Path:
    """A directory of links to this environment's installed packages, without kernel-builder (installed here
    editable: its finder and entry points must not leak into the fresh environment)."""
    view.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        name = entry.name.lower()
        if (
            not name.startswith(("kernel_builder", "__editable__", "kernel-builder"))
            and entry.suffix != ".pth"
        ):
            (view / entry.name).symlink_to(entry)
    return view


def offline_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV", "PYTHON"))}
    env.update(PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return env


def test_release_workflow_passes_actionlint() -> None:
    result = subprocess.run(
        [actionlint(), "-no-color", ".github/workflows/release.yml"], cwd=ROOT, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_release_workflow_checks_everything_and_publishes_only_from_a_tag() -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    dist, publish = text.split("\n  publish:\n")
    assert "python -m build" in dist and "twine check --strict dist/*" in dist
    assert "python -m venv /tmp/clean" in dist and "/tmp/clean/bin/kernel-builder --help" in dist
    assert "if: startsWith(github.ref, 'refs/tags/v')" in publish and "needs: dist" in publish
    # Trusted publishing: an OIDC token, no stored password.
    assert "id-token: write" in publish and "pypa/gh-action-pypi-publish" in publish
    assert "password" not in publish and "secrets." not in text


@pytest.mark.slow
def test_tutorial_install_commands_work_in_a_fresh_venv(tmp_path: Path) -> None:
    script = install_block()
    # A CPU torch: the tutorial's CPU kernel builds nothing under the CUDA build a plain `pip install torch` brings.
    assert (
        "pip install torch --index-url https://download.pytorch.org/whl/cpu\npip install ./kernel-builder\n"
        in script
    )
    source_copy(tmp_path / "kernel-builder")
    # The tutorial's first line creates .venv (without pip, see above); a .pth file there makes this
    # environment's packages visible, except kernel-builder itself, and .venv/bin/pip runs their pip with
    # .venv's interpreter.
    first, _, rest = script.partition("\n")
    assert first == "python -m venv .venv"
    outer = packages_but_kernel_builder(tmp_path / "outer")
    setup = f"""set -euo pipefail
{first} --without-pip
echo {outer} > "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/outer.pth"
printf '#!/bin/sh\\nexec "$(dirname "$0")/python" -m pip "$@"\\n' > .venv/bin/pip
chmod +x .venv/bin/pip
"""
    result = subprocess.run(
        ["bash", "-c", setup + rest + "\ncommand -v kernel-builder\nkernel-builder check-config ./kernel-builder/examples/relu\n"],
        cwd=tmp_path, env=offline_env(), capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "usage: kernel-builder" in result.stdout
    # The command is the fresh environment's, and it runs the copy that was installed there, not this one.
    assert f"{tmp_path}/.venv/bin/kernel-builder" in result.stdout
    located = subprocess.run(
        [str(tmp_path / ".venv" / "bin" / "python"), "-c", "import kernel_builder; print(kernel_builder.__file__)"],
        cwd=tmp_path, env=offline_env(), capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert located.stdout.startswith(str(tmp_path / ".venv")), located.stdout
    assert "relu" in result.stdout


@pytest.mark.slow
def test_sdist_and_wheel_build_and_pass_twine_check(tmp_path: Path) -> None:
    source = source_copy(tmp_path / "src")
    dist = tmp_path / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)],
        env=offline_env(), capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert built.returncode == 0, built.stdout + built.stderr
    from kernel_builder import __version__

    wheel = dist / f"kernel_builder-{__version__}-py3-none-any.whl"
    sdist = dist / f"kernel_builder-{__version__}.tar.gz"
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in dist.iterdir())
    names = set(zipfile.ZipFile(wheel).namelist())
    # The data files the tool reads at run time are in the wheel.
    for data in ("formats/build-matrix.json", "cmake/KernelBuilder.cmake", "py.typed"):
        assert f"kernel_builder/{data}" in names, data
    assert any(n.startswith("kernel_builder/templates/") and n.endswith(".tmpl") for n in names)
    checked = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count("PASSED") == 2
