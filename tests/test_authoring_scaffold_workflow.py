"""The CI workflow ``kernel-builder init`` writes: the workflow of docs/ci.md itself (one text, so the two never
drift), actionlint accepts it, and the project's matrix gives its aarch64-linux variants the Arm runner."""

from __future__ import annotations

import json
from pathlib import Path

import matrix_data as md
import pytest
from test_docs_ci import lint, workflow_text

from kernel_builder import cli


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("init") / "my-kernel"
    assert (
        cli.main(["init", str(root), "--name", "my-kernel", "--org", "acme", "--backends", "cuda,cpu"]) == 0
    )
    return root


def _workflow(project: Path) -> str:
    return (project / ".github" / "workflows" / "build.yml").read_text(encoding="utf-8")


def test_the_init_workflow_is_the_documented_one(project: Path) -> None:
    lines = _workflow(project).splitlines(keepends=True)
    header = [line for line in lines if line.startswith("#")]
    assert lines[: len(header)] == header and "my-kernel" in header[0]
    assert "".join(lines[len(header) :]) == workflow_text()


def test_the_init_workflow_passes_actionlint(project: Path, tmp_path: Path) -> None:
    result = lint(tmp_path, _workflow(project))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_init_project_matrix_has_aarch64_rows(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["matrix", str(project), "--format", "github", "--required"]) == 0
    include = json.loads(capsys.readouterr().out)["include"]
    arm = [e for e in include if e["system"] == "aarch64-linux"]
    assert {e["backend"] for e in arm} == {"cpu", "cuda"}
    assert {e["runner"] for e in arm} == {"ubuntu-24.04-arm"}
    assert len(arm) == len([e for e in include if e["system"] == "x86_64-linux"])
    assert not [e for e in include if "darwin" in e["variant"]]


def test_the_init_workflow_builds_the_required_torch_releases(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The workflow's jobs are ``matrix --required``: every required Torch release of the matrix data, on both
    Linux systems, and no optional one."""
    assert cli.main(["matrix", str(project), "--format", "github", "--required"]) == 0
    include = json.loads(capsys.readouterr().out)["include"]
    built = {(e["variant"].split("-")[0], e["system"]) for e in include}
    releases = {md.tag(torch) for torch in md.REQUIRED_TORCH_VERSIONS}
    assert built == {(tag, system) for tag in releases for system in ("x86_64-linux", "aarch64-linux")}
