"""One module per build when a process loads it through both kernel_builder and Hugging Face's ``kernels``, for
each release line of ``kernels`` (0.17, 0.18, 0.19: tests/upstream_kernels.py), in both orders.

Each case runs in a fresh interpreter (the registries of both loaders and ``sys.meta_path`` are process-wide),
which imports the release under test. The variant is a pure-Python package whose ``__init__`` binds one
submodule only through the import system (``from .core import VALUE``, and ``core`` imports ``_backends``): a
module executed a second time over submodules already in ``sys.modules`` lacks ``core`` and ``_backends`` as
attributes, which is the failure seen with ``kernels.get_kernel`` 0.17 after a kernel_builder load; 0.18 and
later failed instead with ``AssertionError: ... its metadata was not recorded``.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from build_runs import run_python
from loader_fixtures import write_variant
from upstream_kernels import RELEASES, release_env

pytest.importorskip("kernels", reason="the kernels package (the test extra) is what these tests share with")
pytestmark = pytest.mark.slow  # a fresh interpreter importing torch per case

FILES = {
    "__init__.py": "from .core import VALUE\n",
    "core.py": "from . import _backends\n\nVALUE = _backends.X + 1\n",
    "_backends.py": "X = 41\n",
}
KERNEL_ID = "_kbshare_cpu_0123456789"

CHECKS = """
import importlib.machinery, importlib.metadata, json, sys
from pathlib import Path

import kernel_builder.loader.share as share

def importer_module():
    return sys.modules.get("kernels._internals.importer") or sys.modules["kernels.importer"]

def report(a, b):
    import kernels
    loaded = kernels.get_loaded_kernels()
    importer = importer_module()
    line = share.shared_line(importer)
    return {
        "release": importlib.metadata.version("kernels"),
        "line": None if line is None else line.releases,
        "same": a is b,
        "complete": [hasattr(m, "_backends") and hasattr(m, "core") and m.VALUE == 42 for m in (a, b)],
        "in_sys_modules": sys.modules[a.__name__] is a,
        "kernels_registry": [entry.module is a for entry in loaded],
        "real_loader": isinstance(importer.__loader__, importlib.machinery.SourceFileLoader),
        "hooks_left": sum(type(f).__name__ == "_PatchOnImport" for f in sys.meta_path),
    }

def failure(call):
    try:
        call()
    except Exception as error:
        return type(error).__name__
    return None

first, second = Path(sys.argv[1]), Path(sys.argv[2])
"""


def same(release: str) -> dict[str, object]:
    """The report when both loaders give one complete module, shared through ``release``'s line."""
    return {
        "release": release,
        "line": release.rpartition(".")[0],
        "same": True,
        "complete": [True, True],
        "in_sys_modules": True,
        "kernels_registry": [True],
        "real_loader": True,
        "hooks_left": 0,
    }


def run(
    code: str, first: Path, second: Path, release_env: dict[str, str], env: dict[str, str] | None = None
) -> Any:
    """The last line the script prints, parsed: ``report(a, b)``, or what it put in ``failed``."""
    script = CHECKS + code + "\nprint(json.dumps(report(a, b) if b is not None else failed))\n"
    out = run_python(Path(sys.executable), script, first, second, env={**release_env, **(env or {})})
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(params=RELEASES)
def release(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[str, dict[str, str]]:
    """A release of ``kernels`` and the environment that makes a fresh interpreter import it."""
    version: str = request.param
    return version, release_env(version, tmp_path_factory)


@pytest.fixture
def variant(tmp_path: Path) -> Path:
    return write_variant(tmp_path / "kbshare", name="kbshare", kernel_id=KERNEL_ID, files=FILES)


def test_kernel_builder_first_then_kernels_imported_later(
    variant: Path, release: tuple[str, dict[str, str]]
) -> None:
    """The hook patches the ``kernels`` importer module when it is first imported, then leaves ``sys.meta_path``."""
    code = """
import kernel_builder
a = kernel_builder.get_local_kernel(first)
assert "kernels" not in sys.modules and sum(type(f).__name__ == "_PatchOnImport" for f in sys.meta_path) == 1
import kernels
b = kernels.get_local_kernel(second)
"""
    version, env = release
    assert run(code, variant, variant, env) == same(version)


def test_kernels_imported_before_kernel_builder_loads(
    variant: Path, release: tuple[str, dict[str, str]]
) -> None:
    """The ``kernels`` importer module already imported: patched at once, no hook installed."""
    code = """
import kernels, kernel_builder
a = kernel_builder.get_local_kernel(first)
b = kernels.get_local_kernel(second)
"""
    version, env = release
    assert run(code, variant, variant, env) == same(version)


def test_kernels_first_then_kernel_builder(variant: Path, release: tuple[str, dict[str, str]]) -> None:
    """The converse order: kernel_builder's loader reuses the module the ``kernels`` package imported."""
    code = """
import kernels, kernel_builder
b = kernels.get_local_kernel(second)
a = kernel_builder.get_local_kernel(first)
"""
    version, env = release
    assert run(code, variant, variant, env) == same(version)


def test_a_copy_of_the_same_build_is_shared(
    variant: Path, tmp_path: Path, release: tuple[str, dict[str, str]]
) -> None:
    """Another directory with the same id and digest (a copy, a second checkout) is the same build."""
    copy = shutil.copytree(variant, tmp_path / "copy" / "kbshare")
    code = """
import kernel_builder, kernels
a = kernel_builder.get_local_kernel(first)
b = kernels.get_local_kernel(second)
"""
    version, env = release
    assert run(code, variant, copy, env) == same(version)


def test_another_build_under_the_same_id_is_not_shared(
    variant: Path, tmp_path: Path, release: tuple[str, dict[str, str]]
) -> None:
    """A different digest is a different build, which the ``kernels`` package handles as without kernel_builder:
    0.17 imports it itself, 0.18 and later refuse it (``RuntimeError``: two builds under one id). Either way
    kernel_builder's module keeps working."""
    other = write_variant(
        tmp_path / "other" / "kbshare",
        name="kbshare",
        kernel_id=KERNEL_ID,
        files={**FILES, "_backends.py": "X = 41  # another build\n"},
    )
    code = """
import kernel_builder, kernels
a = kernel_builder.get_local_kernel(first)
failed = failure(lambda: kernels.get_local_kernel(second))
b = None if failed else kernels.get_local_kernel(second)
if failed:
    failed = {"error": failed, "a_complete": a.VALUE == 42, "in_sys_modules": sys.modules[a.__name__] is a}
"""
    version, env = release
    result = run(code, variant, other, env)
    if version.startswith("0.17."):
        assert result["same"] is False
        # Executed a second time over a's submodules: the failure this module prevents for the same build.
        assert result["complete"] == [True, False]
        assert result["in_sys_modules"] is False and result["kernels_registry"] == [False]
    else:
        assert result == {"error": "RuntimeError", "a_complete": True, "in_sys_modules": True}


def test_the_switch_turns_sharing_off(variant: Path, release: tuple[str, dict[str, str]]) -> None:
    """``KERNEL_BUILDER_SHARE_WITH_KERNELS=0``: the ``kernels`` package gets no answer from kernel_builder, as
    without it: 0.17 imports the build itself (a second, incomplete module), 0.18 and later fail on the module
    they did not import."""
    code = """
import kernel_builder, kernels
a = kernel_builder.get_local_kernel(first)
failed = failure(lambda: kernels.get_local_kernel(second))
b = None if failed else kernels.get_local_kernel(second)
"""
    version, env = release
    result = run(code, variant, variant, env, env={"KERNEL_BUILDER_SHARE_WITH_KERNELS": "off"})
    if version.startswith("0.17."):
        assert (result["same"], result["complete"]) == (False, [True, False])
    else:
        assert result == "AssertionError"
