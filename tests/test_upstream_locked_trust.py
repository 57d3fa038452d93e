"""``get_locked_kernel(trust_remote_code=...)``: online, a locked load passes the trust gate as upstream's does
(``True`` skips it, a list of repo ids skips it for those); offline the lock decides, as it was trust-checked
when it was written; ``load_kernel`` never asks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import commit_variants, reset_loader

from kernel_builder.loader import UntrustedKernelError, get_locked_kernel, load_kernel, trust
from kernel_builder.loader.lock import lock_project

REPO = "shady/relu"


@pytest.fixture(autouse=True)
def fresh_loader(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(trust, "_verdicts", {})
    reset_loader()
    yield
    reset_loader()


def locked_project(hub: HubServer, tmp_path: Path) -> Path:
    """A project locking ``shady/relu`` v1 (an untrusted publisher, locked with --trust-remote-code)."""
    hub.add_organization("shady", trusted=False)
    hub.create_repo(REPO)
    hub.create_branch(REPO, "v1")
    commit_variants(
        hub,
        tmp_path / "publish",
        {"torch-cpu": {}},
        kernel_id=lambda name: "_relu_shady",
        repo_id=REPO,
        branch="v1",
    )
    project = tmp_path / "app"
    project.mkdir()
    (project / "pyproject.toml").write_text(f'[tool.kernels.dependencies]\n"{REPO}" = 1\n', encoding="utf-8")
    assert lock_project(project, trust_remote_code=True).written
    return project / "kernels.lock"


def test_online_locked_loads_pass_the_trust_gate(hub: HubServer, tmp_path: Path) -> None:
    lock = locked_project(hub, tmp_path)
    hub.clear_requests()
    with pytest.raises(UntrustedKernelError, match="organization 'shady' is not a trusted kernel publisher"):
        get_locked_kernel(REPO, lockfile=lock)
    assert [r.path for r in hub.requests] == [
        "/api/organizations/shady/overview"
    ]  # refused before downloading
    with pytest.raises(UntrustedKernelError):
        get_locked_kernel(REPO, lockfile=lock, trust_remote_code=["shady/other"])
    module = get_locked_kernel(REPO, lockfile=lock, trust_remote_code=[REPO])
    assert module.__name__ == "_relu_shady"
    assert get_locked_kernel(REPO, lockfile=lock, trust_remote_code=True) is module
    with pytest.raises(TypeError, match="^trust_remote_code must be True, False or a list"):
        get_locked_kernel(REPO, lockfile=lock, trust_remote_code="yes")  # type: ignore[arg-type]


def test_offline_the_lock_decides(hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = locked_project(hub, tmp_path)
    get_locked_kernel(REPO, lockfile=lock, trust_remote_code=True)  # downloads the variant
    reset_loader()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.clear_requests()
    assert get_locked_kernel(REPO, lockfile=lock).__name__ == "_relu_shady"
    reset_loader()
    assert load_kernel(REPO, lockfile=lock).__name__ == "_relu_shady"
    assert hub.requests == []
