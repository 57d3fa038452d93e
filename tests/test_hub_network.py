"""Timeouts and retries of every Hub request (kernel_builder/hub.py, docs/environment.md).

The Hub double misbehaves on chosen routes (:meth:`HubServer.inject`): it stalls, drops the connection,
truncates a body, or answers 429 / 500. Each test bounds its own duration, so a missing timeout fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import env_machine as env_machine  # a fixture, used by quick_network
from loader_fixtures import seed_version_one

from kernel_builder.errors import HubConnectionError, UsageError
from kernel_builder.hub import Hub, NetworkPolicy
from kernel_builder.loader import get_kernel, has_kernel

REPO = "org/relu"
VARIANT = "torch212-cxx11-cu130-x86_64-linux"
REFS = f"/api/kernels/{REPO}/refs"
TREE = f"/api/kernels/{REPO}/tree/"
RESOLVE = f"/kernels/{REPO}/resolve/"
OVERVIEW = "/api/organizations/org/overview"


@pytest.fixture(autouse=True)
def quick_network(monkeypatch: pytest.MonkeyPatch, env_machine: None) -> None:
    """One-second timeouts and one retry, so that each case takes seconds."""
    monkeypatch.setenv("KERNEL_BUILDER_HUB_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("KERNEL_BUILDER_HUB_READ_TIMEOUT", "1")
    monkeypatch.setenv("KERNEL_BUILDER_HUB_RETRIES", "1")


def timed_load() -> tuple[float, str]:
    start = time.monotonic()
    module = get_kernel(REPO, version=1)
    return time.monotonic() - start, module.__name__


@pytest.mark.parametrize(
    ("fault", "route", "seconds"),
    [
        ("stall", REFS, 5.0),  # the branch listing answers after 5 s: the read timeout (1 s) cuts it short
        ("stall", OVERVIEW, 5.0),  # the trust lookup, our own request
        ("stall", TREE, 5.0),  # the variant listing
        ("drop", REFS, 0.0),
        ("drop", TREE, 0.0),
        ("429", OVERVIEW, 0.0),
        ("500", REFS, 0.0),
        ("500", RESOLVE, 0.0),  # a file download: huggingface_hub reports it as "not in the local cache"
        ("truncate", RESOLVE, 0.0),  # half a file, then the connection closes: resumed or retried
    ],
)
def test_one_failed_request_is_retried_and_the_load_succeeds(
    hub: HubServer, tmp_path: Path, fault: str, route: str, seconds: float
) -> None:
    seed_version_one(hub, tmp_path / "publish", tag="network")
    injected = hub.inject(fault, route, times=1, seconds=seconds)
    elapsed, name = timed_load()
    assert injected.hits == 1
    assert name.startswith("_relu_network_")
    assert elapsed < 4.0, f"{fault} on {route}: the load took {elapsed:.1f} s"


@pytest.mark.parametrize(
    ("fault", "route", "what", "reason"),
    [
        ("stall", REFS, "org/relu: list the branches", "no answer within 1 s (the read timeout)"),
        ("stall", OVERVIEW, "ask whether org is a trusted kernel publisher", "no answer within 1 s"),
        ("500", REFS, "org/relu: list the branches", "the Hub answered HTTP 500"),
        ("429", REFS, "org/relu: list the branches", "the Hub answered HTTP 429"),
        ("drop", REFS, "org/relu: list the branches", "the connection was dropped"),
        ("500", RESOLVE, "org/relu: download", "the Hub answered HTTP 500"),
    ],
)
def test_a_failing_hub_gives_one_error_naming_endpoint_request_and_cause(
    hub: HubServer, tmp_path: Path, fault: str, route: str, what: str, reason: str
) -> None:
    seed_version_one(hub, tmp_path / "publish", tag="network")
    injected = hub.inject(fault, route, times=100, seconds=30.0)
    start = time.monotonic()
    with pytest.raises(Exception) as caught:
        get_kernel(REPO, version=1, trust_remote_code=fault == "stall" and route == REFS)
    elapsed = time.monotonic() - start
    error = caught.value
    if route == OVERVIEW:  # the trust gate refuses whatever failed; its message carries ours
        assert isinstance(error.__cause__, HubConnectionError)
        error = error.__cause__
    assert isinstance(error, HubConnectionError) and isinstance(error, OSError)
    message = str(error)
    assert message.startswith(what), message
    assert f"on {hub.url} failed: {reason}" in message
    assert "tried 2 times" in message and "KERNEL_BUILDER_HUB_READ_TIMEOUT" in message
    assert injected.hits >= 2
    assert elapsed < 10.0, f"{fault} on {route}: gave up after {elapsed:.1f} s"


def test_an_unreachable_endpoint_is_our_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    start = time.monotonic()
    with pytest.raises(HubConnectionError) as caught:
        has_kernel(REPO, version=1, trust_remote_code=True)  # past the trust lookup, to the branch listing
    assert time.monotonic() - start < 5.0
    assert str(caught.value).startswith(
        f"org/relu: list the branches on {endpoint} failed: could not connect"
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("KERNEL_BUILDER_HUB_READ_TIMEOUT", "soon", "KERNEL_BUILDER_HUB_READ_TIMEOUT='soon' is not a number"),
        ("KERNEL_BUILDER_HUB_CONNECT_TIMEOUT", "0", "KERNEL_BUILDER_HUB_CONNECT_TIMEOUT='0' is not a number"),
        ("KERNEL_BUILDER_HUB_READ_TIMEOUT", "nan", "KERNEL_BUILDER_HUB_READ_TIMEOUT='nan' is not a number"),
        ("KERNEL_BUILDER_HUB_RETRIES", "-1", "KERNEL_BUILDER_HUB_RETRIES='-1' is not a whole number"),
        ("KERNEL_BUILDER_HUB_RETRIES", "\uff12", "KERNEL_BUILDER_HUB_RETRIES='\uff12' is not a whole number"),
    ],
)
def test_bad_limits_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match="^" + message.replace("(", r"\(")):
        NetworkPolicy.from_environment()


def test_the_limits_cap_our_requests_and_leave_the_others_alone(
    hub: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """huggingface_hub's own calls pass "no timeout" (tree listings) or their own (downloads): inside one of our
    operations the limits are set on each request as it is sent, the lower of the two winning; a request of the
    same shared client outside our operations keeps its own timeout."""
    monkeypatch.setenv("KERNEL_BUILDER_HUB_CONNECT_TIMEOUT", "3")
    monkeypatch.setenv("KERNEL_BUILDER_HUB_READ_TIMEOUT", "7.5")
    from huggingface_hub import get_session

    ours = Hub(offline=False)
    Hub(offline=False)  # a second operation does not add a second hook
    sent: list[dict[str, float]] = []
    session = get_session()
    session.event_hooks["response"].append(
        lambda response: sent.append(response.request.extensions["timeout"])
    )
    url = f"{hub.url}/api/organizations/none/overview"
    try:
        ours.retrying("ask", lambda: session.get(url, timeout=None))
        ours.retrying("ask", lambda: session.get(url, timeout=2.0))
        session.get(url, timeout=None)
        session.get(url, timeout=20.0)
    finally:
        session.event_hooks["response"].pop()
    assert [(t["connect"], t["read"]) for t in sent] == [(3.0, 7.5), (2.0, 2.0), (None, None), (20.0, 20.0)]
