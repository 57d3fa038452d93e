"""Two kernels of the real collection, built for the CPU as their authors wrote them, cards included, and their
own tests run through both loaders (CONTRIBUTING.md; the fast half is tests/test_collection.py).

kernels-community's relu (a CPU section beside CUDA, ROCm, XPU and Metal ones; its tests load it with
``kernels.get_kernel``) and rmsnorm (three CPU sections, AVX2 and AVX-512 among them; its tests ``import
rmsnorm``). Each is copied out of the collection and built by ``kernel-builder test``, which runs its tests with
our loader providing the kernel; then its tests run again in an interpreter where only Hugging Face's ``kernels``
loads it (``LOCAL_KERNELS``, and for ``import rmsnorm`` a package that hands over what ``kernels.get_kernel``
returns), and kernel-builder is never imported.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from build_runs import run_cli
from test_collection import COLLECTION, EXPECTED, untouched  # noqa: F401  (skips without the collection)

pytestmark = pytest.mark.slow

KERNELS = {"relu": "kernels-community/relu", "rmsnorm": "kernels-community/rmsnorm"}
#: What the upstream-only run counts as passed, per kernel (relu: the function and its layer; rmsnorm: forward,
#: backward and the layer's kernel path).
TESTS = {"relu": 2, "rmsnorm": 3}

_SHIM = """\
import sys

import kernels

sys.modules[__name__] = kernels.get_kernel({repo!r}, version=1)
"""

_UPSTREAM_ONLY = """\
import sys

import pytest

code = pytest.main(["-q", "-p", "no:cacheprovider", "tests"])
assert "kernel_builder" not in sys.modules, "kernel-builder was imported"
sys.exit(code)
"""


def _copy(name: str, dest: Path) -> Path:
    root = dest / name
    shutil.copytree(COLLECTION / name, root, ignore=shutil.ignore_patterns("build", ".kernel-builder"))
    for path in [root, *root.rglob("*")]:  # the snapshot is read-only
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return root


@pytest.fixture(scope="module", params=sorted(KERNELS))
def tested(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path, str]:
    """The kernel copied, built and tested by ``kernel-builder test``: its name, its root and what pytest said."""
    name = request.param
    root = _copy(name, tmp_path_factory.mktemp("collection"))
    run = run_cli(["test", root, "--", "-q", "-p", "no:cacheprovider"])
    assert run.returncode == 0, run.output
    return name, root, run.output


def test_its_own_tests_pass_with_our_loader(tested: tuple[str, Path, str]) -> None:
    name, _, output = tested
    assert f"{TESTS[name]} passed" in output


def test_the_build_carries_the_filled_card(tested: tuple[str, Path, str]) -> None:
    name, root, _ = tested
    card = root / "build" / "CARD.md"
    filled = run_cli(["fill-card", COLLECTION / name]).check().stdout
    assert card.read_text(encoding="utf-8") == filled
    if (EXPECTED / f"{name}.md").is_file():
        assert filled == (EXPECTED / f"{name}.md").read_text(encoding="utf-8")
    assert f'get_kernel("{KERNELS[name]}", version=1)' in filled


def test_its_own_tests_pass_with_upstreams_loader(tested: tuple[str, Path, str], tmp_path: Path) -> None:
    name, root, _ = tested
    shim = tmp_path / "shim" / name
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text(_SHIM.format(repo=KERNELS[name]))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LOCAL_KERNELS")}
    env |= {"PYTHONPATH": str(shim.parent), "LOCAL_KERNELS": f"{KERNELS[name]}={root}"}
    result = subprocess.run(
        [sys.executable, "-c", _UPSTREAM_ONLY], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{TESTS[name]} passed" in result.stdout
