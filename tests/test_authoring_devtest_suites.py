"""`kernel-builder test` on test suites written the way public kernels write them (``suite_fixtures``): a
conftest that imports the package through a helper module (with the source tree first on ``sys.path``),
``kernels.get_kernel`` through ``LOCAL_KERNELS`` followed by a submodule attribute, child processes that import
the package, and every loader in one process. Each passes unchanged, and a kernel's own test run
(``kernel_builder.authoring.kernel_tests``) runs them the same way."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from build_runs import run_cli
from suite_fixtures import SUITE_TESTS, mixed_suite_project

from kernel_builder.authoring.devtest import SHIM_DIR, collected_sources, pytest_environment
from kernel_builder.authoring.kernel_tests import run_kernel_tests
from kernel_builder.authoring.pytest_plugin import ENV
from kernel_builder.config import load_project

pytest.importorskip(
    "kernels", reason="the suite loads the kernel through the kernels package (the test extra)"
)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return mixed_suite_project(tmp_path_factory.mktemp("suites") / "kb-mix")


@pytest.mark.slow
def test_kernel_builder_test_passes_every_pattern(suite: Path, capfd: pytest.CaptureFixture[str]) -> None:
    run = run_cli(["test", suite, "--", "-v", "-p", "no:cacheprovider"]).check()
    passed = sorted(re.findall(r"^tests/(\S+) PASSED", run.stdout, re.MULTILINE))
    assert passed == [
        "test_by_name.py::test_the_build_not_the_source_tree",
        "test_subprocess.py::test_both_get_kernels_without_the_name_in_a_child",
        "test_subprocess.py::test_import_by_name_then_kernels_in_a_child",
        "test_subprocess.py::test_kernels_first_in_a_child",
        "upstream/test_upstream.py::test_every_way_of_loading_gives_one_complete_module",
    ], run.output
    assert f"{SUITE_TESTS} passed" in run.stdout.splitlines()[-1]

    # A kernel's own test run, against one variant directory (LOCAL_KERNELS names the variant, not the root).
    project = load_project(suite).project
    capfd.readouterr()
    status = run_kernel_tests(project, pytest_args=[str(suite / "tests"), "-q", "-p", "no:cacheprovider"])
    out = capfd.readouterr().out
    assert status == 0, out
    assert f"{SUITE_TESTS} passed" in out.strip().splitlines()[-1]


def test_the_import_shim_is_first_on_the_path(suite: Path) -> None:
    """Processes the tests start find ``<package>`` on ``PYTHONPATH``: a one-file shim in the state directory."""
    project = load_project(suite).project
    env = pytest_environment(project, {"PYTHONPATH": "/elsewhere"})
    shim = suite / ".kernel-builder" / SHIM_DIR
    entries = env["PYTHONPATH"].split(os.pathsep)
    assert (entries[0], entries[-1], len(entries)) == (str(shim), "/elsewhere", 3)  # kernel_builder's between
    text = (shim / "kb_mix" / "__init__.py").read_text()
    assert "import_kernel_under_test(__name__)" in text
    assert [p.name for p in shim.iterdir()] == ["kb_mix"]
    before = (shim / "kb_mix" / "__init__.py").stat().st_mtime_ns
    pytest_environment(project, {})
    assert (shim / "kb_mix" / "__init__.py").stat().st_mtime_ns == before  # unchanged: not rewritten


def test_collected_sources_follow_the_test_paths(suite: Path) -> None:
    project = load_project(suite).project
    tests = suite / "tests"
    assert [p.relative_to(suite).as_posix() for p in collected_sources(project, ["-q"])] == [
        "tests/conftest.py",
        "tests/test_by_name.py",
        "tests/test_subprocess.py",
        "tests/upstream/__init__.py",
        "tests/upstream/test_upstream.py",
        "tests/utils.py",
    ]
    # A named file brings the conftest.py and __init__.py files above it, up to the project root.
    named = collected_sources(project, [str(tests / "upstream" / "test_upstream.py") + "::test_x"])
    assert [p.relative_to(suite).as_posix() for p in named] == [
        "tests/upstream/test_upstream.py",
        "tests/upstream/__init__.py",
        "tests/conftest.py",
    ]


def test_the_shim_outside_a_test_run(suite: Path) -> None:
    """Without ``KERNEL_BUILDER_TEST_KERNEL`` naming it, the shim is a clear ``ModuleNotFoundError``."""
    env = pytest_environment(load_project(suite).project, dict(os.environ))
    for value in (None, "other_kernel=/somewhere"):
        env.pop(ENV, None)
        if value is not None:
            env[ENV] = value
        result = subprocess.run(
            [sys.executable, "-c", "import kb_mix"], capture_output=True, text=True, env=env, check=False
        )
        assert result.returncode == 1
        assert result.stderr.strip().splitlines()[-1] == (
            "ModuleNotFoundError: No module named 'kb_mix': the kernel-builder test shim for it loads the kernel "
            "under test only where KERNEL_BUILDER_TEST_KERNEL=kb_mix=<build directory> is set (a `kernel-builder "
            "test` run and the processes it starts)"
        )


@pytest.mark.slow
def test_a_build_that_does_not_load_stops_pytest_before_the_conftests(suite: Path, tmp_path: Path) -> None:
    env = pytest_environment(load_project(suite).project, dict(os.environ))
    env[ENV] = f"kb_mix={tmp_path / 'nowhere'}"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "kernel_builder.authoring.pytest_plugin",
            str(suite / "tests"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=suite,
        check=False,
    )
    assert result.returncode == 4  # pytest's usage error
    assert result.stderr.strip().splitlines() == [
        f"ERROR: cannot load the kernel under test from {tmp_path / 'nowhere'}: {tmp_path / 'nowhere'} does not "
        "exist: expected a kernel repo root containing build/, a build/ directory with variant directories, or "
        "one variant directory containing metadata.json"
    ]


COLLECTION = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "kernels-community"


@pytest.mark.slow
@pytest.mark.skipif(not (COLLECTION / "einops").is_dir(), reason="the kernels collection is not checked out")
def test_a_collection_kernel_whose_tests_call_kernels_get_kernel(tmp_path: Path) -> None:
    """The collection's einops: every test module calls ``kernels.get_kernel`` on a kernel the run already
    imported as ``einops``; with the pinned ``kernels`` (0.19), which reuses that module only after comparing
    builds, the whole suite passes, with no collection error."""
    import importlib.metadata

    from upstream_kernels import PINNED

    assert importlib.metadata.version("kernels") == PINNED
    project = shutil.copytree(COLLECTION / "einops", tmp_path / "einops")
    run = run_cli(["test", project, "--", "-q", "-p", "no:cacheprovider"], cwd=tmp_path)
    assert run.returncode == 0, run.output
    summary = run.stdout.strip().splitlines()[-1]
    assert re.search(r"\b\d+ passed\b", summary) and "error" not in summary, run.output
