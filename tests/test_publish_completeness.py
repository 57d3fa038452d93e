"""``upload`` never publishes a silently incomplete release, and ``upload --dry-run`` rehearses one offline.

The project is the tutorial's CPU kernel (``init --backends cpu``); its build/ holds one required variant, as a
machine builds it. The required set comes from the variant matrix, as ``matrix --required`` gives it: the upload is
refused, naming each missing variant and the runner and command that build it, then accepted with
``--allow-incomplete``, and the card on the Hub lists the missing ones. Everything goes through the real
``huggingface_hub`` client to the Hub double."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from hub_server import HubServer
from matrix_data import NEWEST_REQUIRED_TORCH, variant
from publish_fixtures import committed_content, run_cli, write_kernel, writes

from kernel_builder import cli
from kernel_builder.pipeline.plan.runners import NO_RUNNER, RUNNERS

REPO = "my-org/my-relu"
BUILT = variant(NEWEST_REQUIRED_TORCH)
"""The one variant build/ holds: a required CPU variant, as a machine with the newest required Torch builds."""


def _required(project: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, str]]:
    """The jobs of ``matrix --required``: every required variant a runner builds."""
    capsys.readouterr()
    assert cli.main(["matrix", str(project), "--format", "json", "--required"]) == 0
    include: list[dict[str, str]] = json.loads(capsys.readouterr().out)["include"]
    return include


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    root = tmp_path / "my-relu"
    assert cli.main(["init", str(root), "--name", "my-relu", "--org", "my-org", "--backends", "cpu"]) == 0
    write_kernel(root, {BUILT: {"name": "my-relu"}})
    return root


def test_an_incomplete_release_is_refused_then_allowed_and_the_card_lists_what_is_missing(
    hub: HubServer, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.add_organization("my-org")
    jobs = [job for job in _required(project, capsys) if job["variant"] != BUILT]
    assert {job["runner"] for job in jobs} == {RUNNERS["x86_64-linux"].label, RUNNERS["aarch64-linux"].label}

    refused = run_cli(capsys, "upload", str(project))
    assert refused.code == 1
    assert writes(hub) == []
    assert (
        f"refusing to upload an incomplete release: it lacks {len(jobs) + 2} of the {len(jobs) + 3} "
        in refused.err
    )
    assert f"{len(jobs)} of them built by kernel-builder:" in refused.err
    for job in jobs:  # each missing variant, with the runner and the command that build it
        assert f"  {job['variant']}: `{job['command']}` (CI runner {job['runner']})" in refused.err
    # The macOS variants are missing too, with the reason no runner of this tool builds them.
    assert "-aarch64-darwin: not built by kernel-builder (" + NO_RUNNER["darwin"] in refused.err
    assert "--allow-incomplete" in refused.err

    allowed = run_cli(capsys, "upload", str(project), "--allow-incomplete")
    assert allowed.code == 0, allowed.err
    assert "warning: uploading an incomplete release (--allow-incomplete)" in allowed.err
    card = committed_content(hub)["README.md"].decode()
    filled = run_cli(capsys, "fill-card", str(project), "--repo-id", REPO)  # the card, filled for REPO
    assert filled.code == 0, filled.err
    assert card.startswith(filled.out.rstrip("\n"))
    section = card.split("## Missing variants", 1)[1]
    for job in jobs:
        assert f"- `{job['variant']}`" in section
    assert BUILT not in section
    assert "-aarch64-darwin`: " + NO_RUNNER["darwin"] in section
    assert f"build/{BUILT}/metadata.json" in hub.files(REPO, "v1")


def test_variants_already_on_the_branch_count(
    hub: HubServer, project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A release uploaded from several machines: the last upload completes what the branch has."""
    hub.add_organization("my-org")
    names = [job["variant"] for job in _required(project, capsys)]
    *first, last = names
    write_kernel(project, {name: {"name": "my-relu"} for name in first})
    assert run_cli(capsys, "upload", str(project), "--allow-incomplete").code == 0
    other = tmp_path / "other" / "my-relu"
    assert cli.main(["init", str(other), "--name", "my-relu", "--org", "my-org", "--backends", "cpu"]) == 0
    write_kernel(other, {last: {"name": "my-relu"}})
    run = run_cli(capsys, "upload", str(other), "--dry-run")
    assert run.code == 0, run.err
    assert f"required variants: {len(names)} of {len(names) + 2} present" in run.out  # all but macOS
    assert f"{len(first)} variant(s) already on v1 stay" in run.out
    assert run_cli(capsys, "upload", str(other)).code == 0


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("network_off", ["HF_HUB_OFFLINE", "closed port"])
def test_dry_run_rehearses_offline(
    hub: HubServer,
    project: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    network_off: str,
) -> None:
    jobs = _required(project, capsys)
    if network_off == "HF_HUB_OFFLINE":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        why = "the Hub was not asked (offline mode is on: HF_HUB_OFFLINE)"
    else:
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
        monkeypatch.setenv("KERNEL_BUILDER_HUB_RETRIES", "0")
        why = "the Hub was not asked (it could not be reached: "
    run = run_cli(capsys, "upload", str(project), "--dry-run")
    assert hub.requests == []  # nothing reached the Hub double
    assert run.code == 1  # the rehearsal fails as the upload would: the release is incomplete
    lines = run.out.splitlines()
    assert lines[0] == "dry run: nothing was changed"
    assert lines[1].startswith(f"upload to kernel repo {REPO}, branch v1 (")
    assert why in run.out
    assert f"  add    build/{BUILT}/metadata.json (" in run.out and "to v1" in run.out
    assert "  add    README.md (" in run.out and "to main" in run.out
    assert (
        "checks:\n  1 variant(s): names, metadata.json, package and digest checked\n  check-abi: no findings"
        in run.out
    )
    assert (
        f"  required variants: 1 of {len(jobs) + 2} present (variants already on the Hub branch are not known"
        in run.out
    )
    for job in (j for j in jobs if j["variant"] != BUILT):
        assert f"    {job['variant']}: `{job['command']}` (CI runner {job['runner']})" in run.out
    assert "error: refusing to upload an incomplete release" in run.err

    allowed = run_cli(capsys, "upload", str(project), "--dry-run", "--allow-incomplete")
    assert allowed.code == 0, allowed.err
    assert "missing required variants (" in allowed.out
    assert hub.requests == []
