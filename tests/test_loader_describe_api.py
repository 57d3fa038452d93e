"""``kernel-builder describe-api`` (``kernel_builder.loader.describe_api``): a kernel's API from the
``symbols.json`` its build wrote, never imported. Differential: upstream's ``kernels describe-api`` (the pinned
release) on the same build, local and on the Hub double, prints the same text and the same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from build_runs import run_cli
from cpu_projects import built_example, copy_example
from hub_server import HubServer, files_from_directory
from matrix_data import CPU_VARIANT
from upstream_kernels import our_cli, upstream_cli

from kernel_builder.formats.metadata import read_metadata
from kernel_builder.loader.describe_api import describe_api, render_api

pytestmark = pytest.mark.slow  # a build of the example, and upstream's CLI in fresh interpreters

REPO = "kernel-builder-examples/activation"


@pytest.fixture(scope="module")
def activation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_example("activation", tmp_path_factory).root


def test_the_build_writes_the_api_under_its_digest(activation: Path) -> None:
    variant = activation / "build" / CPU_VARIANT
    symbols = json.loads((variant / "symbols.json").read_text())
    assert symbols == {
        "schema_version": 1,
        "functions": [
            {
                "name": "gelu_tanh",
                "signature": "(x: 'torch.Tensor', out: 'torch.Tensor | None' = None) -> 'torch.Tensor'",
            },
            {
                "name": "silu_and_mul",
                "signature": "(x: 'torch.Tensor', out: 'torch.Tensor | None' = None) -> 'torch.Tensor'",
            },
        ],
        "layers": [
            {"name": "GeluTanh", "attributes": {"can_torch_compile": True, "has_backward": False}},
            {"name": "SiluAndMul", "attributes": {"can_torch_compile": True, "has_backward": False}},
        ],
    }
    digest = read_metadata(variant / "metadata.json").digest
    assert digest is not None and "symbols.json" in digest.files


def test_the_same_api_as_upstream_from_a_local_build(
    activation: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in ([], ["--json"]):
        assert our_cli(capsys, "describe-api", str(activation), *args) == upstream_cli(
            "describe-api", str(activation), *args
        )
    text = render_api(describe_api(str(activation)))
    assert "  SiluAndMul  has_backward=False  can_torch_compile=True" in text.splitlines()


def test_the_same_api_as_upstream_from_the_hub(
    activation: Path, hub: HubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.add_organization("kernel-builder-examples")
    hub.create_repo(REPO)
    hub.create_branch(REPO, "v1")
    hub.commit(REPO, files_from_directory(activation / "build", "build"), branch="v1")
    for args in (["--version", "1"], ["--json"], ["--revision", "v1", "--json"]):
        assert our_cli(capsys, "describe-api", REPO, *args) == upstream_cli("describe-api", REPO, *args)
    # Only symbols.json of the chosen variant was downloaded (and metadata.json, to choose it): nothing imported.
    fetched = sorted(
        r.path.rsplit("/", 1)[-1] for r in hub.requests if r.method == "GET" and "/resolve/" in r.path
    )
    assert set(fetched) == {"metadata.json", "symbols.json"}


def test_a_build_without_the_import_check_has_no_symbols(tmp_path: Path) -> None:
    root = copy_example("relu", tmp_path / "relu")
    run_cli(["build", root, "--no-import-check"]).check()
    assert not (root / "build" / CPU_VARIANT / "symbols.json").exists()
    run = run_cli(["describe-api", root])
    assert run.returncode == 1
    assert f"no symbols.json in {root} (variant {CPU_VARIANT})" in run.stderr
    assert "Rebuild it with kernel-builder" in run.stderr
