"""One module per build when a process loads it through both kernel_builder and Hugging Face's ``kernels``.

Each case runs in a fresh interpreter (the registries of both loaders and ``sys.meta_path`` are process-wide).
The variant is a pure-Python package whose ``__init__`` binds one submodule only through the import system
(``from .core import VALUE``, and ``core`` imports ``_backends``): a module executed a second time over
submodules already in ``sys.modules`` lacks ``core`` and ``_backends`` as attributes, which is the failure seen
with ``kernels.get_kernel`` after a kernel_builder load.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from build_runs import run_python
from loader_fixtures import write_variant

pytest.importorskip("kernels", reason="the kernels package (the test extra) is what these tests share with")
pytestmark = pytest.mark.slow  # a fresh interpreter importing torch per case

FILES = {
    "__init__.py": "from .core import VALUE\n",
    "core.py": "from . import _backends\n\nVALUE = _backends.X + 1\n",
    "_backends.py": "X = 41\n",
}
KERNEL_ID = "_kbshare_cpu_0123456789"

CHECKS = """
import importlib.machinery, json, sys
from pathlib import Path

import kernel_builder.loader.share as share

def report(a, b):
    import kernels
    import kernels.importer
    loaded = kernels.get_loaded_kernels()
    loader = kernels.importer.__loader__
    return {
        "same": a is b,
        "complete": [hasattr(m, "_backends") and hasattr(m, "core") and m.VALUE == 42 for m in (a, b)],
        "in_sys_modules": sys.modules[a.__name__] is a,
        "kernels_registry": [entry.module is a for entry in loaded],
        "real_loader": isinstance(loader, importlib.machinery.SourceFileLoader),
        "hooks_left": sum(type(f).__name__ == "_PatchOnImport" for f in sys.meta_path),
    }

first, second = Path(sys.argv[1]), Path(sys.argv[2])
"""

SAME = {
    "same": True,
    "complete": [True, True],
    "in_sys_modules": True,
    "kernels_registry": [True],
    "real_loader": True,
    "hooks_left": 0,
}


def run(code: str, first: Path, second: Path, env: dict[str, str] | None = None) -> dict[str, object]:
    script = CHECKS + code + "\nprint(json.dumps(report(a, b)))\n"
    out = run_python(Path(sys.executable), script, first, second, env=env)
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


@pytest.fixture
def variant(tmp_path: Path) -> Path:
    return write_variant(tmp_path / "kbshare", name="kbshare", kernel_id=KERNEL_ID, files=FILES)


def test_kernel_builder_first_then_kernels_imported_later(variant: Path) -> None:
    """The hook patches ``kernels.importer`` when it is first imported, then leaves ``sys.meta_path``."""
    code = """
import kernel_builder
a = kernel_builder.get_local_kernel(first)
assert "kernels" not in sys.modules and sum(type(f).__name__ == "_PatchOnImport" for f in sys.meta_path) == 1
import kernels
b = kernels.get_local_kernel(second)
"""
    assert run(code, variant, variant) == SAME


def test_kernels_imported_before_kernel_builder_loads(variant: Path) -> None:
    """``kernels.importer`` already imported: patched at once, no hook installed."""
    code = """
import kernels, kernel_builder
a = kernel_builder.get_local_kernel(first)
b = kernels.get_local_kernel(second)
"""
    assert run(code, variant, variant) == SAME


def test_kernels_first_then_kernel_builder(variant: Path) -> None:
    """The converse order, which kernel_builder's loader handled already: it reuses the ``kernels`` module."""
    code = """
import kernels, kernel_builder
b = kernels.get_local_kernel(second)
a = kernel_builder.get_local_kernel(first)
"""
    assert run(code, variant, variant) == SAME


def test_a_copy_of_the_same_build_is_shared(variant: Path, tmp_path: Path) -> None:
    """Another directory with the same id and digest (a copy, a second checkout) is the same build."""
    copy = shutil.copytree(variant, tmp_path / "copy" / "kbshare")
    code = """
import kernel_builder, kernels
a = kernel_builder.get_local_kernel(first)
b = kernels.get_local_kernel(second)
"""
    assert run(code, variant, copy) == SAME


def test_another_build_under_the_same_id_is_not_shared(variant: Path, tmp_path: Path) -> None:
    """A different digest is a different build: the ``kernels`` package imports it itself, as without
    kernel_builder (and kernel_builder's module keeps working)."""
    other = write_variant(
        tmp_path / "other" / "kbshare",
        name="kbshare",
        kernel_id=KERNEL_ID,
        files={**FILES, "_backends.py": "X = 41  # another build\n"},
    )
    code = """
import kernel_builder, kernels
a = kernel_builder.get_local_kernel(first)
b = kernels.get_local_kernel(second)
"""
    result = run(code, variant, other)
    assert result["same"] is False
    # Executed a second time over a's submodules: the failure this module prevents for the same build.
    assert result["complete"] == [True, False]
    assert result["in_sys_modules"] is False and result["kernels_registry"] == [False]


def test_the_switch_turns_sharing_off(variant: Path) -> None:
    """``KERNEL_BUILDER_SHARE_WITH_KERNELS=0`` (the build's import check): the kernels package imports it
    itself, as without kernel_builder."""
    code = """
import kernel_builder, kernels
a = kernel_builder.get_local_kernel(first)
b = kernels.get_local_kernel(second)
"""
    result = run(code, variant, variant, env={"KERNEL_BUILDER_SHARE_WITH_KERNELS": "off"})
    assert (result["same"], result["complete"]) == (False, [True, False])
