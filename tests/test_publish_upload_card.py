"""``upload`` publishes the kernel's card filled in for the repository it uploads to (kernel_builder/pipeline/card.py),
never the raw template, through the Hub double."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hub_server import HubServer
from publish_fixtures import run_cli, write_kernel

TEMPLATED = Path(__file__).parent / "fixtures" / "cards" / "templated"
HOSTILE = Path(__file__).parent / "fixtures" / "cards" / "hostile"


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    root = tmp_path / "card-demo"
    shutil.copytree(TEMPLATED, root)
    # build/ as a build that did not fill the card left it: the raw template
    return write_kernel(root, card=(TEMPLATED / "CARD.md").read_text())


def test_upload_fills_the_card_for_the_target_repo(
    hub: HubServer, kernel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_cli(capsys, "upload", str(kernel), "--repo-id", "org/card-demo")
    assert run.code == 0, run.err
    readme = hub.files("org/card-demo", "main")["README.md"].decode()
    assert "{{" not in readme.replace("{{ not a variable }}", "") and "{%" not in readme
    assert readme.startswith("---\nlibrary_name: kernels\nlicense: apache-2.0\n---\n\n# org/card-demo\n")
    assert "- `scale`\n- `shift`\n" in readme and "- `Scale`\n- `Identity`\n" in readme
    assert "kernels-example/card-demo" not in readme  # the upload's repository, not build.toml's


def test_upload_refuses_a_hostile_card_before_any_request(
    hub: HubServer, kernel: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(HOSTILE / "globals.md", kernel / "CARD.md")
    run = run_cli(capsys, "upload", str(kernel), "--repo-id", "org/card-demo")
    assert run.code == 2
    assert f"error: {kernel / 'CARD.md'}: cannot fill the card template: " in run.err
    assert hub.requests == []
