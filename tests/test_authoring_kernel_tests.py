"""Running a kernel's own tests the way its authors do (``kernel_builder.authoring.kernel_tests``): ``import <name>`` and
``get_kernel(<repo id>)`` both give the built variant, through the same plugin and environment as
``kernel-builder test``, and ``build/`` is left as it was."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from build_outputs import snapshot
from build_runs import NO_IMPORT_CHECK, metadata, run_cli
from cpu_projects import quick_project
from matrix_data import CPU_VARIANT

from kernel_builder.authoring.kernel_tests import PLUGIN, kernel_test_env, run_kernel_tests, select_variant
from kernel_builder.authoring.pytest_plugin import ENV
from kernel_builder.config import load_project
from kernel_builder.errors import BuildError, UsageError

pytestmark = pytest.mark.slow

REPO_ID = "kernel-builder-tests/kb-quick"

AUTHOR_TESTS = """
import os

import kernel_builder
import kb_quick
import torch


def test_import_by_name_gives_the_built_variant():
    assert os.path.realpath(kb_quick.__file__) == os.path.realpath(os.environ["EXPECTED_INIT"])
    assert kb_quick.__name__ == os.environ["EXPECTED_ID"]
    assert kb_quick.ops is getattr(torch.ops, os.environ["EXPECTED_ID"])


def test_get_kernel_gives_the_same_variant():
    module = kernel_builder.get_kernel("{repo_id}", version=1)
    assert module is kb_quick
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = quick_project(tmp_path_factory.mktemp("kernel-tests") / "kb-quick", repo_id=REPO_ID)
    (root / "tests").mkdir()
    (root / "tests" / "test_by_name.py").write_text(textwrap.dedent(AUTHOR_TESTS.format(repo_id=REPO_ID)))
    run_cli(["build", root, NO_IMPORT_CHECK]).check()  # the tests here load it themselves
    return root


def test_the_authors_tests_pass_against_the_variant(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One module: ``import kb_quick`` is the variant the loader imported under its id (not a second copy)."""
    project = load_project(built).project
    variant = built / "build" / CPU_VARIANT
    before = snapshot(built / "build")
    monkeypatch.setenv("EXPECTED_INIT", str(variant / "__init__.py"))
    monkeypatch.setenv("EXPECTED_ID", str(metadata(variant)["id"]))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "")
    status = run_kernel_tests(project, pytest_args=[str(built / "tests"), "-q", "-p", "no:cacheprovider"])
    assert status == 0
    assert snapshot(built / "build") == before  # no __pycache__ in the variant, no other change


def test_the_variant_is_the_one_the_loader_picks(built: Path) -> None:
    project = load_project(built).project
    assert select_variant(project) == built / "build" / CPU_VARIANT


def test_environment_names_the_variant_and_the_plugin(built: Path) -> None:
    project = load_project(built).project
    variant = built / "build" / CPU_VARIANT
    base = {"PYTHONPATH": "/elsewhere", "LOCAL_KERNELS": "a/b=/x", "PYTEST_PLUGINS": "other_plugin"}
    setup = kernel_test_env(project, variant, base=base)
    assert setup.variant_dir == variant.resolve()
    assert setup.env[ENV] == f"kb_quick={variant.resolve()}"
    assert setup.env["PYTEST_PLUGINS"] == f"other_plugin,{PLUGIN}"
    assert setup.env["LOCAL_KERNELS"] == f"a/b=/x:{REPO_ID}={variant.resolve()}"
    assert setup.env["PYTHONPATH"].endswith(":/elsewhere")
    # The same repo id mapped elsewhere is replaced (the loader rejects a second mapping of one id).
    again = kernel_test_env(project, variant, base={"LOCAL_KERNELS": f"{REPO_ID}=/old"})
    assert again.env["LOCAL_KERNELS"] == f"{REPO_ID}={variant.resolve()}"


def test_no_build_is_a_usage_error(tmp_path: Path) -> None:
    project = load_project(quick_project(tmp_path / "kb-quick")).project
    with pytest.raises(UsageError, match="does not exist: build the kernel first"):
        select_variant(project)
    with pytest.raises(BuildError, match="is not a built variant"):
        kernel_test_env(project, tmp_path / "kb-quick" / "build" / CPU_VARIANT)
