"""docs/ci.md's GitHub Actions workflow: actionlint accepts it, it builds the required set from
``kernel-builder matrix``, checks the ABI without ``|| true`` and uploads once; the matrix uses standard
GitHub-hosted runner labels and says what each job must install."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import matrix_data as md
import pytest

from kernel_builder import cli

ROOT = Path(__file__).resolve().parent.parent
CI_DOC = ROOT / "docs" / "ci.md"


def actionlint() -> str:
    found = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    if not Path(found).exists():
        pytest.fail("actionlint is not installed: `make .venv/.installed` installs it with the test extra")
    return found


def workflow_text() -> str:
    (block,) = re.findall(r"```yaml\n(.*?)```", CI_DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    return str(block)


def lint(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True, exist_ok=True)
    (workflows / "build.yml").write_text(text, encoding="utf-8")
    return subprocess.run(
        [actionlint(), "-no-color", ".github/workflows/build.yml"], cwd=tmp_path, capture_output=True, text=True,
        check=False,
    )  # fmt: skip


def test_the_documented_workflow_passes_actionlint(tmp_path: Path) -> None:
    result = lint(tmp_path, workflow_text())
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path: Path) -> None:
    """The check can fail: a misspelt output and a non-standard runner label are reported."""
    broken = workflow_text().replace("needs.matrix.outputs.matrix", "needs.matrix.outputs.matrx", 1)
    broken = broken.replace("runs-on: ubuntu-24.04", "runs-on: ubuntu-99.04", 1)
    result = lint(tmp_path, broken)
    assert result.returncode == 1
    assert 'label "ubuntu-99.04" is unknown' in result.stdout
    assert "matrx" in result.stdout


def test_the_workflow_builds_the_required_set_checks_and_uploads_once() -> None:
    text = workflow_text()
    assert "kernel-builder matrix . --format github --required" in text
    assert "fromJSON(needs.matrix.outputs.matrix)" in text
    assert "run: ${{ matrix.command }}" in text
    assert "|| true" not in text
    assert text.count("kernel-builder check-abi") == 2  # each variant's job, and all of them before uploading
    assert text.count("kernel-builder upload") == 1
    assert "needs: build" in text.split("  upload:")[1]
    # The matrix and upload jobs on the x86_64 runner; each variant's job on its platform's runner.
    assert re.findall(r"runs-on: (.+)", text) == ["ubuntu-24.04", "${{ matrix.runner }}", "ubuntu-24.04"]
    # A CUDA toolkit is installed only by the jobs whose CUDA release PyPI lacks.
    assert "if: matrix.toolkit == 'system'" in text


def test_matrix_runner_labels_are_standard_github_hosted_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every runner label the matrix of relu names is one actionlint knows as a GitHub-hosted label."""
    assert cli.main(["matrix", str(ROOT / "examples" / "relu"), "--format", "json"]) == 0
    include = json.loads(capsys.readouterr().out)["include"]
    labels = sorted({entry["runner"] for entry in include})
    jobs = "".join(
        f"  job{i}:\n    runs-on: {label}\n    steps:\n      - run: echo ok\n"
        for i, label in enumerate(labels)
    )
    result = lint(tmp_path, f"name: labels\non: push\njobs:\n{jobs}")
    assert result.returncode == 0, result.stdout
    assert labels == ["ubuntu-24.04", "ubuntu-24.04-arm"]
    assert {(e["system"], e["runner"]) for e in include} == {
        ("x86_64-linux", "ubuntu-24.04"),
        ("aarch64-linux", "ubuntu-24.04-arm"),
    }


def test_matrix_says_what_each_job_installs(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", str(ROOT / "examples" / "relu"), "--format", "json", "--required"]) == 0
    include = {e["variant"]: e for e in json.loads(capsys.readouterr().out)["include"]}
    assert all(e["required"] for e in include.values())
    # Exactly the required cpu and cuda entries of the matrix data on the build host.
    required = {
        md.variant(
            md.major_minor(e["torch"]), None if e["backend"] == "cpu" else md.major_minor(e["version"])
        )
        for backend in ("cpu", "cuda")
        for e in md.entries(backend, system=md.HOST_SYSTEM)
        if e["required"]
    }
    assert sorted(name for name in include if name.endswith(md.HOST_SYSTEM)) == sorted(required)
    # The same set for aarch64-linux, on its own runner; nothing for macOS, which this tool does not build.
    arm = {name.replace(md.HOST_SYSTEM, "aarch64-linux") for name in required}
    assert {name for name in include if name.endswith("-aarch64-linux")} == arm
    assert set(include) == required | arm
    # What each job installs: nothing for cpu; CUDA 13 comes from PyPI, CUDA 12 from the system.
    torch = md.NEWEST_REQUIRED_TORCH
    assert (include[md.variant(torch)]["cuda"], include[md.variant(torch)]["toolkit"]) == ("", "")
    for cuda in md.cuda_versions(torch):
        job = include[md.variant(torch, cuda)]
        assert (job["cuda"], job["toolkit"]) == (md.dotted(cuda), "pypi" if cuda >= (13, 0) else "system")
        arm = include[md.variant(torch, cuda).replace(md.HOST_SYSTEM, "aarch64-linux")]
        assert (arm["cuda"], arm["toolkit"]) == (job["cuda"], job["toolkit"])
        # A CUDA 12 job installs from NVIDIA's apt repository of its CPU: sbsa for aarch64.
        if job["toolkit"] == "system":
            assert job["cuda_repo"].endswith("/ubuntu2404/x86_64") and arm["cuda_repo"].endswith(
                "/ubuntu2404/sbsa"
            )
        else:
            assert job["cuda_repo"] == arm["cuda_repo"] == ""
