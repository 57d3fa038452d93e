"""A Hub that stalls any one request of a load, with the DEFAULT network settings (no ``KERNEL_BUILDER_HUB_*``
variable): ``get_kernel`` ends with a clear error within a minute (kernel_builder/hub/network.py,
docs/environment.md).

Each request of a load is stalled in turn, both ways a broken Hub or proxy stalls: no answer at all, and the
status line, the headers and part of the body, then nothing: the branch listing, the tree listing of the
variants, the trust check of the publisher, the variant's ``metadata.json`` and a file of the variant (whose
download runs in ``huggingface_hub``'s worker threads). Before, a stalled file download held a load for more than
two minutes: the files that did arrive counted as progress of the whole folder download, and every retry started
with a new deadline.

The scenarios run at once, each in its own interpreter against one Hub double (each on its own repository and
organization), so the file waits about as long as its slowest scenario; each test then checks its own.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hub_server import HubServer, client_environment
from loader_fixtures import FILES, commit_variants

#: What the issue asks: a clear error within this many seconds (the default deadline is 50 s).
LIMIT_S = 60.0
ROOT = Path(__file__).resolve().parents[1]

#: The child: get_kernel with the default network settings, this environment faked (no Torch import).
PROBE = """
import json, sys, time
from kernel_builder.formats import runtime
from kernel_builder.formats.runtime import Environment
from kernel_builder.loader import resolve
runtime.detect_environment = lambda: Environment(
    cpu="x86_64", os="linux", torch_version=(2, 13), cxx11_abi=True, backend="cpu", backend_version=None
)
resolve.probe_gpus = lambda backend: []
from kernel_builder import get_kernel
import kernel_builder.loader.remote  # the Hub client imported before the clock starts: a loaded machine is slow at it
start = time.monotonic()
try:
    get_kernel(sys.argv[1], version=1)
    outcome = "loaded"
except Exception as error:
    outcome = f"{type(error).__name__}: {error}"
print(json.dumps({"seconds": time.monotonic() - start, "outcome": outcome}))
"""

VARIANT = "torch-cpu"
#: The path prefix of a stalled request, given the repository, its organization and the commit.
Prefix = Callable[[str, str, str], str]
#: Request → (its path prefix, the method stalled: ``None`` for every method).
REQUESTS: dict[str, tuple[Prefix, str | None]] = {
    "branch listing": (lambda repo, org, sha: f"/api/kernels/{repo}/refs", None),
    "tree listing": (lambda repo, org, sha: f"/api/kernels/{repo}/tree/", None),
    "trust check": (lambda repo, org, sha: f"/api/organizations/{org}/overview", None),
    "metadata download": (
        lambda repo, org, sha: f"/kernels/{repo}/resolve/{sha}/build/{VARIANT}/metadata.json",
        None,
    ),
    "file download": (
        lambda repo, org, sha: f"/kernels/{repo}/resolve/{sha}/build/{VARIANT}/__init__.py",
        "GET",
    ),
    "file download (its HEAD)": (
        lambda repo, org, sha: f"/kernels/{repo}/resolve/{sha}/build/{VARIANT}/__init__.py",
        "HEAD",
    ),
}
MODES = ("stall", "stall-body")  # no answer; the headers and half the body, then nothing


def module_id(index: int, variant: str) -> str:
    return f"_relu_stall{index}"


@pytest.fixture(scope="module")
def stalled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[tuple[str, str], dict[str, object]]]:
    """Every (request, mode) scenario's outcome: each a load of its own repository, all at once."""
    server = HubServer().start()
    base = tmp_path_factory.mktemp("stalls")
    children = {}
    try:
        for index, (request, mode) in enumerate((r, m) for r in REQUESTS for m in MODES):
            if request == "file download (its HEAD)" and mode == "stall-body":
                continue  # a HEAD has no body to stall in
            org, repo = f"org{index}", f"org{index}/relu"
            server.add_organization(org, trusted=True)
            server.create_repo(repo)
            server.create_branch(repo, "v1")
            sha = commit_variants(
                server,
                base / f"publish{index}",
                {VARIANT: {"files": FILES}},
                kernel_id=functools.partial(module_id, index),
                repo_id=repo,
                branch="v1",
            )
            prefix, method = REQUESTS[request]
            server.inject(mode, prefix(repo, org, sha), times=1000, seconds=600.0, method=method)
            cache = base / f"cache{index}"
            env = {
                key: value
                for key, value in os.environ.items()
                if not key.startswith(("KERNEL_BUILDER_", "HF_", "KERNELS_")) and key != "LOCAL_KERNELS"
            }
            env.update({"PYTHONPATH": str(ROOT), **client_environment(server.url, cache)})
            children[(request, mode)] = subprocess.Popen(
                [sys.executable, "-c", PROBE, repo],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
        started = time.monotonic()
        outcomes = {}
        for key, child in children.items():
            out, err = child.communicate(timeout=max(1.0, 3 * LIMIT_S - (time.monotonic() - started)))
            assert child.returncode == 0, err[-3000:]
            outcomes[key] = json.loads(out.strip().splitlines()[-1])
        yield outcomes
    finally:
        for child in children.values():
            if child.poll() is None:
                child.kill()
        server.stop()


def check(outcomes: dict[tuple[str, str], dict[str, object]], request: str, names: str) -> None:
    for mode in MODES:
        if (request, mode) == ("file download (its HEAD)", "stall-body"):
            continue  # a HEAD has no body to stall in: the fixture sets up no such case
        result = outcomes[(request, mode)]
        seconds, outcome = float(str(result["seconds"])), str(result["outcome"])
        assert seconds < LIMIT_S, f"{request}, {mode}: {seconds:.1f} s: {outcome}"
        assert outcome.startswith(("HubConnectionError: ", "UntrustedKernelError: ")), (
            request,
            mode,
            outcome,
        )
        assert names in outcome, (request, mode, outcome)
        assert "KERNEL_BUILDER_HUB_DEADLINE" in outcome and "org" in outcome, outcome


@pytest.mark.slow
def test_a_stalled_branch_listing(stalled: dict[tuple[str, str], dict[str, object]]) -> None:
    check(stalled, "branch listing", "list the branches")


@pytest.mark.slow
def test_a_stalled_tree_listing(stalled: dict[tuple[str, str], dict[str, object]]) -> None:
    check(stalled, "tree listing", "list the files under build")


@pytest.mark.slow
def test_a_stalled_trust_check(stalled: dict[tuple[str, str], dict[str, object]]) -> None:
    check(stalled, "trust check", "could not verify that organization")


@pytest.mark.slow
def test_a_stalled_metadata_download(stalled: dict[tuple[str, str], dict[str, object]]) -> None:
    check(stalled, "metadata download", f"download build/{VARIANT}/metadata.json")


@pytest.mark.slow
def test_a_stalled_file_download(stalled: dict[tuple[str, str], dict[str, object]]) -> None:
    """The variant's files come through ``snapshot_download``'s worker threads: the files that do arrive no
    longer extend the deadline of the one that stalls."""
    check(stalled, "file download", f"download build/{VARIANT} at")
    check(stalled, "file download (its HEAD)", f"download build/{VARIANT} at")
