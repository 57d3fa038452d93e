"""The deadline of one Hub operation (kernel_builder/hub/network.py, docs/environment.md).

A stalled Hub fails once the operation's deadline has passed, whatever the retries would allow, and the error
names every try; a download that keeps progressing is never cut off by it. Shortened settings through the same
variables the defaults come from (``KERNEL_BUILDER_HUB_*``); the tests assert what is raised and what was
tried, and bound their own duration only so that a missing deadline fails instead of hanging.
``benchmarks/stalled_hub.py`` measures the default settings.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import ENV_VARIANT, FILES, seed_version_one
from loader_fixtures import env_machine as env_machine  # a fixture, used by short_deadline

from kernel_builder.errors import HubConnectionError
from kernel_builder.hub import Hub, NetworkPolicy, RemoteRepo

REPO = "org/relu"
REFS = f"/api/kernels/{REPO}/refs"
TREE = f"/api/kernels/{REPO}/tree/"
RESOLVE = f"/kernels/{REPO}/resolve/"
METADATA = f"build/{ENV_VARIANT}/metadata.json"


@pytest.fixture(autouse=True)
def short_deadline(monkeypatch: pytest.MonkeyPatch, env_machine: None) -> None:
    """One-second timeouts, many retries allowed, and a 2.5-second deadline: the deadline ends the tries."""
    monkeypatch.setenv("KERNEL_BUILDER_HUB_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("KERNEL_BUILDER_HUB_READ_TIMEOUT", "1")
    monkeypatch.setenv("KERNEL_BUILDER_HUB_RETRIES", "10")
    monkeypatch.setenv("KERNEL_BUILDER_HUB_DEADLINE", "2.5")


def tries(message: str) -> list[str]:
    return re.findall(r"try (\d+): ", message)


def test_the_default_deadline_is_under_a_minute() -> None:
    """Every timeout is cut to what is left of the deadline: an operation ends at it, plus the time to raise."""
    assert NetworkPolicy().deadline <= 50.0
    assert NetworkPolicy.from_environment().deadline == 2.5  # the variable the tests shorten is the one read


@pytest.mark.parametrize(
    ("fault", "route", "what"),
    [
        ("stall", REFS, "list the branches"),  # accepts, never answers
        ("stall-body", REFS, "list the branches"),  # headers and half the answer, then nothing
        ("stall", TREE, "list the files under build"),  # huggingface_hub retries tree listings on its own
        ("stall", RESOLVE, "download build/"),
        ("stall-body", RESOLVE, "download build/"),  # huggingface_hub resumes a broken download on its own
    ],
)
def test_a_stalled_operation_ends_at_its_deadline_naming_each_try(
    hub: HubServer, tmp_path: Path, fault: str, route: str, what: str
) -> None:
    sha = seed_version_one(hub, tmp_path / "publish", tag="deadline")
    hub.inject(fault, route, times=1000, seconds=30.0)
    client = Hub(offline=False)
    repo = RemoteRepo(REPO, "kernel")
    start = time.monotonic()
    with pytest.raises(HubConnectionError) as caught:
        if route == REFS:
            client.branches(repo)
        elif route == TREE:
            client.tree_files(repo, sha, "build")
        else:
            client.download_file(repo, sha, METADATA)
    elapsed = time.monotonic() - start
    message = str(caught.value)
    assert message.startswith(f"{REPO}: {what}"), message
    numbers = tries(message)
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)] and numbers, message
    assert len(numbers) < 11, message  # the deadline, not the 10 retries, ended it
    assert "the 2.5 s deadline" in message, message
    assert "KERNEL_BUILDER_HUB_DEADLINE" in message
    assert elapsed < 15.0, f"{fault} on {route}: gave up after {elapsed:.1f} s"


def test_a_folder_download_stalled_in_its_worker_threads_ends_at_the_deadline(
    hub: HubServer, tmp_path: Path
) -> None:
    """``snapshot_download`` fetches the files in worker threads: they run inside the operation too, so its
    limits and deadline bound them (without, huggingface_hub's own 10 s timeouts and retries would)."""
    sha = seed_version_one(hub, tmp_path / "publish", tag="folder_stall")
    hub.inject("stall-body", RESOLVE, times=1000, seconds=30.0)
    client = Hub(offline=False)
    start = time.monotonic()
    with pytest.raises(HubConnectionError) as caught:
        client.download_folder(RemoteRepo(REPO, "kernel"), sha, f"build/{ENV_VARIANT}")
    elapsed = time.monotonic() - start
    message = str(caught.value)
    assert message.startswith(f"{REPO}: download build/{ENV_VARIANT}"), message
    assert tries(message) and "the 2.5 s deadline" in message, message
    assert elapsed < 15.0, f"gave up after {elapsed:.1f} s"


@pytest.mark.slow
def test_one_stalled_file_of_a_folder_ends_at_the_deadline_while_the_others_arrive(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other files of the variant arrive at once. They were counted as progress again at each try (as finished
    files, on the folder's file counter: taken from the cache, they are no byte from the Hub), so every retry
    began with a whole new deadline: here a second try of 3 s, ending near 6.5 s; with the default settings a
    load was held for more than two minutes (tests/test_hub_network_stalls.py). A try budget of 3 s (connect 1,
    read 2) against a 4 s deadline tells the two apart: the second try now ends at the deadline."""
    monkeypatch.setenv("KERNEL_BUILDER_HUB_READ_TIMEOUT", "2")
    monkeypatch.setenv("KERNEL_BUILDER_HUB_DEADLINE", "4")
    sha = seed_version_one(hub, tmp_path / "publish", tag="one_file_stall")
    hub.inject(
        "stall", f"{RESOLVE}{sha}/build/{ENV_VARIANT}/__init__.py", times=1000, seconds=30.0, method="GET"
    )
    client = Hub(offline=False)
    start = time.monotonic()
    with pytest.raises(HubConnectionError) as caught:
        client.download_folder(RemoteRepo(REPO, "kernel"), sha, f"build/{ENV_VARIANT}")
    elapsed = time.monotonic() - start
    message = str(caught.value)
    assert message.startswith(f"{REPO}: download build/{ENV_VARIANT}"), message
    # Usually a second try starts and ends at the deadline; on a loaded machine the first try's own retries can
    # reach the deadline before a second one begins. Either way no try gets a deadline of its own.
    if tries(message) == ["1", "2"]:
        assert "try 2: no complete answer, and the 4 s deadline passed" in message, message
    else:
        assert tries(message) == ["1"] and "the 4 s deadline ended the tries" in message, message
    assert elapsed < 5.5, f"gave up after {elapsed:.1f} s"


@pytest.mark.slow
def test_a_download_that_keeps_progressing_outlasts_the_deadline(hub: HubServer, tmp_path: Path) -> None:
    """Twenty files, each arriving in 16 pieces over 3 s (each piece well within the read timeout):
    huggingface_hub downloads eight at a time, so the later files start after the 2.5 s deadline; they run
    because the earlier ones kept progressing."""
    files = {**FILES, **{f"data/part{index:02}.txt": f"{index}" * 400 for index in range(20)}}
    sha = seed_version_one(hub, tmp_path / "publish", tag="trickle", files=files)
    trickle = hub.inject("trickle", RESOLVE, times=1000, seconds=3.0)  # every GET trickles
    client = Hub(offline=False)
    start = time.monotonic()
    path = client.download_folder(RemoteRepo(REPO, "kernel"), sha, f"build/{ENV_VARIANT}")
    assert trickle.hits >= len(files)
    assert time.monotonic() - start > 5.0  # it did outlast the deadline, twice
    assert sorted(p.name for p in (path / "data").iterdir()) == [f"part{index:02}.txt" for index in range(20)]
    assert (path / "data" / "part07.txt").read_text() == "7" * 400


@pytest.mark.slow
def test_a_trickling_single_file_download_outlasts_the_deadline(hub: HubServer, tmp_path: Path) -> None:
    sha = seed_version_one(hub, tmp_path / "publish", tag="trickle_file")
    trickle = hub.inject("trickle", RESOLVE, times=1000, seconds=5.0)  # every GET trickles
    start = time.monotonic()
    path = Hub(offline=False).download_file(RemoteRepo(REPO, "kernel"), sha, METADATA)
    assert time.monotonic() - start > 2.5
    assert trickle.hits >= 2  # a HEAD for the metadata, a GET for the bytes (at least)
    assert path is not None and path.read_bytes() == hub_file(hub, sha)


def hub_file(hub: HubServer, sha: str) -> bytes:
    """The file as the double stores it, fetched without faults."""
    import urllib.request

    with urllib.request.urlopen(f"{hub.url}/kernels/{REPO}/resolve/{sha}/{METADATA}") as answer:
        return bytes(answer.read())
