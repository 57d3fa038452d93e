"""A build that makes no variant fails (exit status 1) with the reason per backend and the command that would
build one; ``test`` names the interpreter to run it with. The two cases the newcomer met: the tutorial's CPU
project under a CUDA build of torch, and a kernel whose ``[general.cuda]`` maxver is 12.x under CUDA 13. No
compiler runs: nothing is built."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import matrix_data as md
import pytest
from build_runs import cuda_python, run_cli

from kernel_builder.formats.matrix import load_matrix


def _cuda_python() -> Path:
    python = cuda_python()
    if python is None:
        pytest.skip("no CUDA build interpreter (KB_TEST_CUDA_PYTHON or .venv-cu130)")
    return python


def _init(tmp_path: Path, name: str, backends: str) -> Path:
    root = tmp_path / name
    run_cli(["init", root, "--name", name, "--org", "my-org", "--backends", backends]).check()
    return root


def _suggested_cpu() -> str:
    """The CPU variant the hint names: a required one, of the CUDA interpreter's Torch where that is required."""
    own = md.CUDA_TEST_TORCH
    torch = own if md.is_required("cpu", torch=own, system=md.HOST_SYSTEM) else md.NEWEST_REQUIRED_TORCH
    return md.variant(torch)


def _cpu_install() -> str:
    """The newest required CPU torch of the matrix on this system, as pip installs it."""
    entry = max(
        (
            e
            for e in load_matrix().entries
            if e.backend == "cpu" and e.required and "x86_64-linux" in e.systems
        ),
        key=lambda e: e.torch,
    )
    return f"pip install torch=={entry.torch_pin} --index-url {entry.index_url}"


def test_cpu_project_under_a_cuda_torch_fails_with_the_fix(tmp_path: Path) -> None:
    python = _cuda_python()
    root = _init(tmp_path, "my-relu", "cpu")
    report = tmp_path / "report.json"
    run = run_cli(["build", root, "--python", python, "--json", report])
    assert run.returncode == 1, run.output
    assert "skipped cpu: no cpu variant is built: the build interpreter's torch is a cuda build" in run.stdout
    assert "error: no variant was built\n  cpu: the build interpreter's torch is a cuda build" in run.stderr
    assert f"`kernel-builder build --variant {_suggested_cpu()}`" in run.stderr
    assert "`kernel-builder build --python PATH` with an interpreter whose torch is a cpu build" in run.stderr
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["failed"] is True and data["nothing_built"].startswith("no variant was built")
    assert not (root / "build" / _suggested_cpu()).exists()


def test_cuda_maxver_12_under_cuda_13_fails_with_a_cuda_12_variant(tmp_path: Path) -> None:
    python = _cuda_python()
    root = _init(tmp_path, "old-cuda", "cuda")
    toml = root / "build.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace(
            "[general.hub]", '[general.cuda]\nmaxver = "12.9"\n\n[general.hub]'
        ),
        encoding="utf-8",
    )
    run = run_cli(["build", root, "--python", python])
    assert run.returncode == 1, run.output
    assert (
        "skipped cuda: no cuda variant is built: CUDA 13.0 is outside [general.cuda] minver/maxver"
        in run.stdout
    )
    assert (
        "error: no variant was built\n  cuda: CUDA 13.0 is outside [general.cuda] minver/maxver" in run.stderr
    )
    # The variant suggested is one the bounds allow: a CUDA 12 build of the newest required torch that has one.
    newest = max(t for t in md.REQUIRED_TORCH_VERSIONS if md.is_required("cuda", torch=t, cuda=(12, 6)))
    assert f"--variant {md.variant(newest, (12, 6))}`" in run.stderr
    assert "done in" in run.stdout  # the table is still printed, before the error


def _cuda_test_interpreter(tmp_path: Path, cuda: Path) -> Path:
    """A venv of the CUDA interpreter that sees its torch first, then this environment's packages but torch
    (pytest and its plugins, kernel_builder): what `pip install ./kernel-builder torch pytest` gives."""
    venv = tmp_path / "cuda-venv"
    subprocess.run([cuda, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    cuda_site = subprocess.run(
        [cuda, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    site = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    links = venv / "links"
    links.mkdir()
    torch_parts = ("torch", "functorch", "triton", "nvidia")
    for entry in sorted(Path(sysconfig.get_paths()["purelib"]).iterdir()):
        if entry.name.endswith(".pth") or entry.name == "__pycache__" or entry.name.startswith(torch_parts):
            continue
        os.symlink(entry, links / entry.name)
    (Path(site) / "kb_links.pth").write_text(f"{cuda_site}\n{links}\n", encoding="utf-8")
    return python


def test_test_under_a_cuda_torch_names_the_fix(tmp_path: Path) -> None:
    cuda = _cuda_python()
    if sys.version_info[:2] != tuple(
        int(part)
        for part in subprocess.run(
            [cuda, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()  # fmt: skip
    ):
        pytest.skip("the CUDA interpreter's Python differs from this one: its venv cannot share our packages")
    python = _cuda_test_interpreter(tmp_path, cuda)
    root = _init(tmp_path, "my-relu", "cpu")
    run = run_cli(["test", root, "--python", python, "--", "-q"], cwd=tmp_path)
    assert run.returncode == 1, run.output
    assert "running: pytest" not in run.output  # no pytest run against a build that is not there
    assert "error: no variant was built\n  cpu: the build interpreter's torch is a cuda build" in run.stderr
    assert (
        "To test a cpu variant: `kernel-builder test --python PATH` with an interpreter whose torch is a cpu build "
        f"(a virtual environment where you ran `{_cpu_install()}`)"
    ) in run.stderr
    assert f"`kernel-builder build --variant {_suggested_cpu()}`" in run.stderr


def _metal_project(tmp_path: Path) -> Path:
    """The init CPU project with a compiled Metal kernel too: its variants are macOS ones, built by no host here."""
    root = _init(tmp_path, "my-relu", "cpu")
    toml = root / "build.toml"
    text = toml.read_text(encoding="utf-8").replace('backends = ["cpu"]', 'backends = ["cpu", "metal"]')
    text += '\n[kernel.my_relu_metal]\nbackend = "metal"\ndepends = ["torch"]\nsrc = ["my_relu_metal/relu.metal"]\n'
    toml.write_text(text, encoding="utf-8")
    (root / "my_relu_metal").mkdir()
    (root / "my_relu_metal" / "relu.metal").write_text("// a Metal kernel\n", encoding="utf-8")
    return root


def test_a_selection_with_nothing_buildable_fails(tmp_path: Path) -> None:
    """Every selected variant skipped: the table gives each one's reason, the error where to build them."""
    run = run_cli(["build", _metal_project(tmp_path), "--all-variants", "--backend", "metal", "--offline"])
    assert run.returncode == 1, run.output
    skipped = [line for line in run.stdout.splitlines() if line.startswith("skipped torch")]
    assert skipped and all(
        "-metal-aarch64-darwin: backend 'metal' cannot be built" in line for line in skipped
    )
    assert (
        f"error: no variant was built: none of the {len(skipped)} selected variant(s) can be built here"
        in run.stderr
    )
    assert "`kernel-builder matrix --format github` gives each one a CI runner" in run.stderr
