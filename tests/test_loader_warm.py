"""``get_kernel`` from the Hub cache alone (docs/loading.md, "When the cache is trusted"), through the real client
and the Hub double for the loads that fill the cache.

A load within ``KERNEL_BUILDER_CACHE_TTL`` of an online one (or offline) makes no request and imports neither
``huggingface_hub`` nor ``httpx``; a moved branch is picked up once the time is up or when the time is 0; what
the cache holds is checked before it becomes a path or runs (hostile refs, links out of the cache, forged
records), and the cache never widens trust.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import ENV_VARIANT, FILES, commit_variants, env_machine, reset_loader, seed_version_one

from kernel_builder.errors import UsageError
from kernel_builder.loader import KernelIntegrityError, UntrustedKernelError, get_loaded_kernels, warm
from kernel_builder.loader.warm import get_kernel

__all__ = ["env_machine"]  # the fixture, used by name

REPO = "org/relu"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def ttl(hub: HubServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The default time (the hub fixture sets 0, so that the Hub path's tests always ask the double)."""
    monkeypatch.delenv(warm.CACHE_TTL, raising=False)
    yield


def cache() -> Path:
    return Path(os.environ["KERNELS_CACHE"])


def snapshot(sha: str) -> Path:
    return cache() / "kernels--org--relu" / "snapshots" / sha


def loaded_revision() -> str:
    info = get_loaded_kernels()[-1].repo_info
    assert info is not None
    return info.revision


def move_v1(hub: HubServer, tmp_path: Path, tag: str) -> str:
    """A new build on branch ``v1`` (another module id): the branch moves to a new commit."""
    return commit_variants(
        hub,
        tmp_path / tag,
        {ENV_VARIANT: {"files": {**FILES, "_ops.py": f"ops = {tag!r}\n"}}},
        kernel_id=lambda name: f"_relu_{tag}_" + name.replace("-", "_"),
        repo_id=REPO,
        branch="v1",
    )


# --- a fresh interpreter --------------------------------------------------------------------------------

#: The Hub client and the HTTP libraries it may sit on (huggingface_hub 2 uses httpx2).
NETWORK = ("huggingface_hub", "httpx", "httpx2", "httpcore", "requests", "urllib3")
#: Modules only slower paths need (docs/performance.md): the Hub path, the signature policy (off unless
#: KERNEL_BUILDER_REQUIRE_SIGNATURE is set), kernel dependencies (this kernel has none), the GPU-architecture
#: rules (no GPU variant is judged), the public form of the decisions (a load hands none out) and the build
#: side's stages.
SLOW_PATHS = (
    "kernel_builder.hub",
    "kernel_builder.formats.variant_model",
    "kernel_builder.loader.remote",
    "kernel_builder.loader.signatures",
    "kernel_builder.loader.dependencies",
    "kernel_builder.loader.hub_dependencies",
    "kernel_builder.backends.gpu_archs",
    "kernel_builder.pipeline",
    "kernel_builder.config",
)
PROBE = f"""
NETWORK = {NETWORK!r}
SLOW_PATHS = {SLOW_PATHS!r}
import json, sys
from kernel_builder import get_kernel
module = get_kernel(sys.argv[1], version=1)
print(json.dumps({{
    "ops": module.ops,
    "relu": module.relu(-2.0),
    "network": sorted(name for name in NETWORK if name in sys.modules),
    "slow": sorted(name for name in sys.modules if name.startswith(SLOW_PATHS)),
}}))
"""


@pytest.mark.slow
def test_a_warm_load_in_a_fresh_interpreter_imports_no_network_stack_nor_slow_paths(
    hub: HubServer, tmp_path: Path, ttl: None
) -> None:
    """After one online load, a new interpreter loads the kernel from the cache: no request, and neither
    ``huggingface_hub`` nor its HTTP library imported (the real environment chooses the pure-Python
    ``torch-cpu``). Before the cache path, the second interpreter imported the whole client; before the
    loader's slow paths were imported where used, it also imported the signature policy, the kernel-dependency
    resolver and the GPU-architecture rules (``SLOW_PATHS``)."""
    reset_loader()
    hub.add_organization("org", trusted=True)
    hub.create_repo(REPO)
    hub.create_branch(REPO, "v1")
    files = {**FILES, "__init__.py": FILES["__init__.py"] + "\ndef relu(x):\n    return max(x, 0.0)\n"}
    sha = commit_variants(
        hub,
        tmp_path / "build",
        {"torch-cpu": {"files": files}},
        kernel_id=lambda _: "_relu_warm_cpu",
        repo_id=REPO,
        branch="v1",
    )
    module = get_kernel(REPO, version=1)  # the real environment, online: fills the cache and the record
    assert module.relu(-1.0) == 0.0 and hub.requests
    hub.clear_requests()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = [sys.executable, "-c", PROBE, REPO]
    second = subprocess.run(run, capture_output=True, text=True, env=env, check=False)
    assert second.returncode == 0, second.stderr
    result = json.loads(second.stdout)
    assert result == {"ops": "ops of _relu_warm_cpu._ops", "relu": 0.0, "network": [], "slow": []}
    assert hub.requests == []
    assert (snapshot(sha) / "build" / "torch-cpu" / "metadata.json").is_file()

    offline = subprocess.run(
        run, capture_output=True, text=True, env={**env, "HF_HUB_OFFLINE": "1"}, check=False
    )
    assert offline.returncode == 0, offline.stderr
    assert json.loads(offline.stdout)["network"] == []
    assert json.loads(offline.stdout)["slow"] == []
    assert hub.requests == []
    reset_loader()


# --- freshness: a moved branch or a new version is picked up ----------------------------------------------


def test_within_the_time_the_recorded_commit_loads_without_a_request(
    hub: HubServer, tmp_path: Path, env_machine: None, ttl: None
) -> None:
    first = seed_version_one(hub, tmp_path / "one", tag="one")
    module = get_kernel(REPO, version=1)
    assert module.ops == f"ops of {module.__name__}._ops"
    assert loaded_revision() == first
    hub.clear_requests()
    warm_module = get_kernel(REPO, version=1)
    assert warm_module is module and hub.requests == []


def test_a_moved_branch_is_picked_up_when_the_time_is_up(
    hub: HubServer, tmp_path: Path, env_machine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(warm.CACHE_TTL, "1")
    first = seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    moved = move_v1(hub, tmp_path, "two")
    hub.clear_requests()
    reset_loader()
    stale = get_kernel(REPO, version=1)  # within the second: the recorded commit, no request
    assert loaded_revision() == first and stale.ops == f"ops of {stale.__name__}._ops"
    assert hub.requests == []
    time.sleep(1.2)
    reset_loader()
    fresh = get_kernel(REPO, version=1)
    assert fresh.ops == "two" and loaded_revision() == moved
    assert hub.requests


def test_time_zero_asks_the_hub_at_every_load(
    hub: HubServer, tmp_path: Path, env_machine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(warm.CACHE_TTL)
    seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    moved = move_v1(hub, tmp_path, "two")
    monkeypatch.setenv(warm.CACHE_TTL, "0")  # the way to force the online check
    reset_loader()
    assert get_kernel(REPO, version=1).ops == "two" and loaded_revision() == moved


def test_a_new_version_is_asked_for(hub: HubServer, tmp_path: Path, env_machine: None, ttl: None) -> None:
    seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    hub.create_branch(REPO, "v2")
    second = commit_variants(
        hub,
        tmp_path / "v2",
        {ENV_VARIANT: {}},
        kernel_id=lambda name: "_relu_v2_" + name.replace("-", "_"),
        repo_id=REPO,
        branch="v2",
    )
    hub.clear_requests()
    get_kernel(REPO, version=2)
    assert loaded_revision() == second and hub.requests


def test_a_pinned_commit_stays_cached_after_the_time_when_the_caller_trusts_it(
    hub: HubServer, tmp_path: Path, env_machine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(warm.CACHE_TTL, "1")
    sha = seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    time.sleep(1.2)
    hub.clear_requests()
    reset_loader()
    get_kernel(REPO, revision=sha, trust_remote_code=True)  # a commit never moves
    assert hub.requests == [] and loaded_revision() == sha
    reset_loader()
    get_kernel(REPO, revision=sha)  # the publisher verdict is older than the time: the Hub is asked again
    assert hub.requests and loaded_revision() == sha


def test_an_invalid_time_is_a_usage_error(
    hub: HubServer, tmp_path: Path, env_machine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(warm.CACHE_TTL, "soon")
    with pytest.raises(UsageError, match=r"^KERNEL_BUILDER_CACHE_TTL='soon' is not a number of seconds"):
        get_kernel(REPO, version=1)


# --- trust ------------------------------------------------------------------------------------------------


def test_the_cache_never_widens_trust(hub: HubServer, tmp_path: Path, env_machine: None, ttl: None) -> None:
    """Loaded once with ``trust_remote_code=True`` from an untrusted publisher: a warm load without it still asks
    the Hub, which refuses it."""
    seed_version_one(hub, tmp_path / "one", tag="one")
    hub.add_organization("org", trusted=False)
    get_kernel(REPO, version=1, trust_remote_code=True)
    reset_loader()
    hub.clear_requests()
    with pytest.raises(UntrustedKernelError, match="organization 'org' is not a trusted kernel publisher"):
        get_kernel(REPO, version=1)
    assert hub.requests


# --- hostile cache contents ---------------------------------------------------------------------------------


def test_a_ref_holding_a_path_is_refused_offline(
    hub: HubServer, tmp_path: Path, env_machine: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    ref = cache() / "kernels--org--relu" / "refs" / "v1"
    ref.write_text("../../../../outside")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    reset_loader()
    with pytest.raises(KernelIntegrityError, match=r"the cached ref v1 .* does not hold a 40-hex commit id"):
        get_kernel(REPO, version=1)


@pytest.mark.parametrize("offline", [False, True], ids=["warm", "offline"])
def test_a_snapshot_link_out_of_the_cache_is_refused(
    hub: HubServer,
    tmp_path: Path,
    env_machine: None,
    ttl: None,
    monkeypatch: pytest.MonkeyPatch,
    offline: bool,
) -> None:
    """The same bytes (the digest would pass), but read from outside the cache: refused, nothing imported."""
    sha = seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    reset_loader()
    ops = snapshot(sha) / "build" / ENV_VARIANT / "_ops.py"
    outside = tmp_path / "elsewhere.py"
    outside.write_bytes(ops.read_bytes())
    ops.unlink()
    ops.symlink_to(outside)
    if offline:
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        KernelIntegrityError, match=r"_ops.py links to .*elsewhere.py, outside the repository's blobs/"
    ):
        get_kernel(REPO, version=1)
    assert get_loaded_kernels() == []


def test_a_linked_snapshot_folder_is_refused(
    hub: HubServer, tmp_path: Path, env_machine: None, ttl: None
) -> None:
    sha = seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    reset_loader()
    build = snapshot(sha) / "build"
    moved = tmp_path / "moved-build"
    build.rename(moved)
    build.symlink_to(moved, target_is_directory=True)
    with pytest.raises(KernelIntegrityError, match=r"/build is a link or not a folder"):
        get_kernel(REPO, version=1)
    assert get_loaded_kernels() == []


def test_a_forged_record_is_ignored(hub: HubServer, tmp_path: Path, env_machine: None, ttl: None) -> None:
    """A record whose commit is a path or whose variants are not variant names is not ours: the Hub answers."""
    sha = seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    records = list((cache() / warm.RESOLVED).glob("*.json"))
    assert len(records) == 2  # version:1 and the commit itself
    for record in records:
        data = json.loads(record.read_text())
        assert data["sha"] == sha
        record.write_text(json.dumps({**data, "sha": "../../../elsewhere", "variants": ["../x"]}))
    reset_loader()
    hub.clear_requests()
    get_kernel(REPO, version=1)
    assert hub.requests and loaded_revision() == sha


def test_a_damaged_digest_in_the_cache_is_still_caught(
    hub: HubServer, tmp_path: Path, env_machine: None, ttl: None
) -> None:
    sha = seed_version_one(hub, tmp_path / "one", tag="one")
    get_kernel(REPO, version=1)
    reset_loader()
    ops = snapshot(sha) / "build" / ENV_VARIANT / "_ops.py"
    blob = ops.resolve()
    blob.chmod(0o644)
    blob.write_text("ops = 'changed'\n")
    with pytest.raises(KernelIntegrityError, match=r"do not match the digest"):
        get_kernel(REPO, version=1)
    assert get_loaded_kernels() == []
