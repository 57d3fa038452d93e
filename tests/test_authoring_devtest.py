"""``kernel-builder init`` → ``kernel-builder test``, end to end on this machine's CPU (slow), and the
environment the test subprocess gets (fast)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from build_runs import run_cli
from matrix_data import CPU_VARIANT

from kernel_builder.authoring.devtest import pytest_command, pytest_environment
from kernel_builder.authoring.pytest_plugin import ENV
from kernel_builder.authoring.scaffold import InitOptions, init_project
from kernel_builder.config import load_project
from kernel_builder.pipeline.options import BuildOptions


@pytest.mark.slow
@pytest.mark.parametrize(("backends", "org"), [("cpu", None), ("cuda,cpu", "acme")])
def test_init_then_test_passes(tmp_path: Path, backends: str, org: str | None) -> None:
    root = tmp_path / "my-kernel"
    run_cli(
        ["init", root, "--name", "my-kernel", "--backends", backends, *(["--org", org] if org else [])]
    ).check()
    # Verbose, so that the one run also names each test it passed.
    run = run_cli(["test", root, "--", "-v", "-p", "no:cacheprovider"], cwd=tmp_path).check()
    assert (root / "build" / CPU_VARIANT / "metadata.json").is_file()
    assert "22 passed" in run.stdout, run.output
    assert "skipped" not in run.stdout.splitlines()[-1]
    # The get_kernel test ran against this project (LOCAL_KERNELS), not the Hub:
    assert "tests/test_my_kernel.py::test_loads_through_get_kernel PASSED" in run.stdout, run.output

    # A failing test: pytest's exit status is the command's; nothing is rebuilt for a change of tests/.
    test_file = root / "tests" / "test_my_kernel.py"
    test_file.write_text(
        test_file.read_text()
        + "\n\ndef test_fails():\n    assert my_kernel.relu(torch.ones(1)).item() == 2\n"
    )
    failed = run_cli(["test", root, "--", "-q", "-p", "no:cacheprovider"], cwd=tmp_path)
    assert failed.returncode == 1, failed.output
    assert "1 failed, 22 passed" in failed.stdout
    assert "up to date" in failed.stderr
    # Test paths given after `--` replace tests/.
    only = run_cli(
        ["test", root, "--", "-q", "-p", "no:cacheprovider", "tests/test_my_kernel.py::test_relu_keeps_nan"]
    )
    assert only.check().stdout.count("passed") == 1 and "1 passed" in only.stdout


def test_environment_exposes_the_kernel_and_maps_the_repo_id(tmp_path: Path) -> None:
    init_project(tmp_path / "k", InitOptions(name="my-kernel", org="acme", backends=("cpu",)))
    project = load_project(tmp_path / "k").project
    env = pytest_environment(project, {"LOCAL_KERNELS": "other/x=/elsewhere", "PYTHONPATH": "/p"})
    root = (tmp_path / "k").resolve()
    assert env["LOCAL_KERNELS"] == f"other/x=/elsewhere{os.pathsep}acme/my-kernel={root}"
    assert env[ENV] == f"my_kernel={root / 'build'}"
    assert env["PYTHONPATH"].endswith(f"{os.pathsep}/p")
    # A mapping of the same repo id is replaced, not duplicated (the loader rejects duplicates).
    env = pytest_environment(project, {"LOCAL_KERNELS": "acme/my-kernel=/old"})
    assert env["LOCAL_KERNELS"] == f"acme/my-kernel={root}"


def test_pytest_command_runs_tests_unless_paths_are_given(tmp_path: Path) -> None:
    init_project(tmp_path / "k", InitOptions(name="abc", backends=("cpu",)))
    project = load_project(tmp_path / "k").project
    command = pytest_command(project, ["-k", "relu"])
    assert command[1:5] == ["-m", "pytest", "-p", "kernel_builder.authoring.pytest_plugin"]
    assert command[5:] == [str(project.root / "tests"), "-k", "relu"]
    assert pytest_command(project, ["tests/test_abc.py::test_x", "-q"])[5:] == [
        "tests/test_abc.py::test_x",
        "-q",
    ]
    # Relative to the caller's directory: made absolute (pytest runs in the project root).
    absolute = str(project.root / "tests" / "test_abc.py")
    assert pytest_command(project, [os.path.relpath(absolute)])[5:] == [absolute]


def test_no_build_is_an_error(tmp_path: Path) -> None:
    init_project(tmp_path / "k", InitOptions(name="abc", backends=("cpu",)))
    from kernel_builder.authoring.devtest import run_tests
    from kernel_builder.errors import BuildError

    with pytest.raises(BuildError, match="nothing was built"):
        run_tests(load_project(tmp_path / "k").project, [], log=print)


def test_only_test_takes_arguments_after_the_separator(capsys: pytest.CaptureFixture[str]) -> None:
    from kernel_builder.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["build", "--", "-q"])
    assert exit_info.value.code == 2
    assert "only `test` passes arguments on" in capsys.readouterr().err


def test_separator_words_never_become_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`kernel-builder test -- -q tests/x.py`: PATH stays `.`, and both words go to pytest."""
    from kernel_builder import cli
    from kernel_builder.authoring import devtest
    from kernel_builder.commands import _shared

    seen: dict[str, object] = {}

    def fake_build(path: str, options: BuildOptions, *, before: object = None) -> tuple[object, int]:
        seen["path"] = path
        seen["build_python"] = options.python
        return "project", 0

    def fake_run(project: object, pytest_args: list[str], *, log: object, python: str | None = None) -> int:
        seen["pytest_args"] = pytest_args
        seen["python"] = python
        return 5

    monkeypatch.setattr(_shared, "build_first", fake_build)
    monkeypatch.setattr(devtest, "run_tests", fake_run)
    assert cli.main(["test", "--", "-q", "tests/x.py"]) == 5  # pytest's status
    assert seen == {"path": ".", "pytest_args": ["-q", "tests/x.py"], "build_python": None, "python": None}
    assert cli.main(["test", "proj"]) == 5
    assert seen == {"path": "proj", "pytest_args": [], "build_python": None, "python": None}
    # --python both builds and runs the tests.
    assert cli.main(["test", "proj", "--python", "/venv/bin/python"]) == 5
    assert seen["build_python"] == seen["python"] == "/venv/bin/python"
