"""The examples' own test suites, run against fresh builds on this machine's CPU (slow).

Each example is copied out of the repository and built once per session for the running torch (CPU) with
`kernel-builder build`; its `tests/` run in a subprocess as a kernel author would run them: the variant
importable under the kernel's name (``kernel_builder.authoring.kernel_tests``). The builds of examples/activation and
examples/relu also serve the kernelize compatibility check: the script of `test_layers_compat.py`, run with
`kernel_builder` and with upstream's `kernels`, must make the same decisions with the examples' compiled layers,
from local builds and from the Hub double.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import matrix_data as md
import pytest
import warm_python
from build_runs import NO_IMPORT_CHECK, Built, build, shared_build
from cpu_projects import built_example, copy_example
from hub_server import HubServer, files_from_directory
from layers_fixtures import differences, run_compat_script

from kernel_builder.authoring.kernel_tests import kernel_test_env, select_variant
from kernel_builder.cli import main
from kernel_builder.config import load_project

pytestmark = pytest.mark.slow


#: Examples no other test file builds: built here without the import check, since every test of this file loads
#: them itself (their own suites, the kernelize script). examples/relu is the build the whole session shares.
ONLY_HERE = ("activation", "relu-triton")


def built_here(example: str, factory: pytest.TempPathFactory) -> Built:
    """``examples/<example>`` copied and built once per test run with ``--no-import-check``."""

    def make(tree: Path) -> Built:
        root = copy_example(example, tree / example)
        return Built(root, build(root, NO_IMPORT_CHECK))

    return shared_build(factory, f"examples-{example}-loaded-by-tests", make)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``built(example)``: the root of a copy of ``examples/<example>`` built for the CPU, once per test run:
    ``cpu_projects.built_example`` for examples/relu, which other files use too, :func:`built_here` for the rest."""
    builds: dict[str, Built] = {}

    def get(example: str) -> Path:
        if example not in builds:
            make = built_here if example in ONLY_HERE else built_example
            builds[example] = make(example, tmp_path_factory)
        return builds[example].root

    return get


@pytest.mark.parametrize(
    ("example", "variants"),
    [
        ("relu", [md.CPU_VARIANT]),
        ("activation", [md.CPU_VARIANT]),
        ("relu-triton", ["torch-cpu", "torch-cuda"]),
    ],
)
def test_example_suite_passes_on_its_build(
    built: Callable[[str], Path],
    tmp_path: Path,
    example: str,
    variants: list[str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = built(example)
    assert sorted(p.name for p in (root / "build").iterdir() if p.is_dir()) == variants
    # The same builds are manylinux_2_28-clean (docs/manylinux.md): what the suite checks below is what ships.
    # (The command in this process: it reads the libraries and starts nothing.)
    capsys.readouterr()
    code = main(["check-abi", str(root)])
    abi = capsys.readouterr()
    assert (code, abi.out.splitlines()[-1].endswith("no violations")) == (0, True), abi.out + abi.err
    # As the authors run them: the variant importable as `import <name>` and through LOCAL_KERNELS.
    project = load_project(root).project
    setup = kernel_test_env(project, select_variant(project))
    result = warm_python.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(root / "tests"),
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=setup.env,
        check=False,
    )
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in summary and "skipped" not in summary, summary


def test_kernelize_decisions_match_upstream_on_example_builds(
    built: Callable[[str], Path], hub: HubServer, tmp_path: Path
) -> None:
    roots = {name: built(name) for name in ("activation", "relu")}
    hub.add_organization("kernel-builder-examples", trusted=False)
    for name, root in roots.items():
        repo_id = f"kernel-builder-examples/{name}"
        hub.create_repo(repo_id, repo_type="kernel")
        hub.create_branch(repo_id, "v1")
        hub.commit(repo_id, files_from_directory(root / "build", "build"), branch="v1", repo_type="kernel")
    where = {"SiluAndMul": "activation", "GeluTanh": "activation", "ReLU": "relu", "*": "activation"}
    config = {
        "sources": {
            "hub": {layer: f"kernel-builder-examples/{name}" for layer, name in where.items()},
            "local": {layer: str(roots[name]) for layer, name in where.items()},
        }
    }
    ours, theirs = (
        run_compat_script(package, config, tmp_path / package) for package in ("kernel_builder", "kernels")
    )
    assert differences(ours, theirs) == []
    for source in ("hub", "local"):
        inference = ours[f"{source}/bare/inference/cpu/fallback=false"]
        assert (inference["act"], inference["gelu"], inference["relu"], inference["outputs"]) == (
            "kernel:SiluAndMul",
            "kernel:GeluTanh",
            "kernel:ReLU",
            "match",
        )
        assert ours[f"{source}/bare/inference+compile/cpu/fallback=false"]["relu"] == "kernel:ReLU"
        training = ours[f"{source}/bare/training/cpu/fallback=true"]  # the examples' ops have no backward
        assert (training["act"], training["relu"], training["outputs"]) == ("original", "original", "match")
        assert ours[f"{source}/bare/training/cpu/fallback=false"] == "error:ValueError"
