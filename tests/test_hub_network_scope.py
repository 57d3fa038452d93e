"""Our timeouts, retries and error types apply to our own Hub requests only (kernel_builder/hub/network.py).

Differential: one scenario of plain ``huggingface_hub`` calls (a branch listing the double answers with 500, a
download, a branch listing, a missing file, a tree listing it answers only after 2.5 s) runs in a fresh
interpreter that never imports kernel_builder, and in one that first loads a kernel through ``get_kernel`` with
one-second limits set. The requests the double sees for the scenario's repository, the timeouts each was sent
with, and the results and exceptions must be the same. (Before the scoping, the loaded kernel's one-second read
timeout cut the slow tree listing short in the second interpreter.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer
from loader_fixtures import seed_version_one

TESTS = Path(__file__).resolve().parent
MODEL = "org/model"

SCENARIO = textwrap.dedent(
    """
    import json, sys
    mode = sys.argv[1]
    loaded = None
    if mode == "kernel":
        from loader_fixtures import ENV
        from kernel_builder.formats import runtime
        from kernel_builder.loader import get_kernel, resolve

        runtime.detect_environment = lambda: ENV
        resolve.probe_gpus = lambda backend: []
        loaded = get_kernel("org/relu", version=1).__name__

    from huggingface_hub import HfApi, get_session, hf_hub_download

    sent = []
    get_session().event_hooks["request"].append(  # after any other hook: what is really sent
        lambda request: sent.append(
            [request.method, request.url.path, dict(request.extensions.get("timeout") or {})]
        )
    )
    results = {}

    def record(name, action):
        try:
            results[name] = ["ok", action()]
        except Exception as error:
            results[name] = ["raised", type(error).__module__ + "." + type(error).__qualname__]

    record("failing branches", lambda: sorted(b.name for b in HfApi().list_repo_refs("org/model").branches))
    record("download", lambda: open(hf_hub_download("org/model", "config.json"), encoding="utf-8").read())
    record("branches", lambda: sorted(b.name for b in HfApi().list_repo_refs("org/model").branches))
    record("missing", lambda: hf_hub_download("org/model", "missing.json"))
    record("slow tree", lambda: sorted(f.path for f in HfApi().list_repo_tree("org/model")))
    print(json.dumps({
        "loaded": loaded,
        "kernel_builder imported": "kernel_builder" in sys.modules,
        "results": results,
        "sent": [entry for entry in sent if "org/model" in entry[1]],
    }))
    """
)


def run_scenario(hub: HubServer, mode: str, tmp_path: Path) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    hub.clear_requests()
    hub.inject("stall", f"/api/models/{MODEL}/tree/", times=1, seconds=2.5)
    hub.inject("500", f"/api/models/{MODEL}/refs", times=1)
    env = dict(os.environ)
    cache = tmp_path / f"cache-{mode}"
    env.update(
        {
            "PYTHONPATH": os.pathsep.join([str(TESTS), str(TESTS.parent)]),
            "HF_HUB_CACHE": str(cache),
            "KERNELS_CACHE": str(cache),
            "KERNEL_BUILDER_HUB_CONNECT_TIMEOUT": "1",
            "KERNEL_BUILDER_HUB_READ_TIMEOUT": "1",
            "KERNEL_BUILDER_HUB_RETRIES": "0",
        }
    )
    done = subprocess.run(
        [sys.executable, "-c", SCENARIO, mode], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    seen = [(request.method, request.path) for request in hub.requests if MODEL in request.path]
    return outcome, seen


@pytest.mark.slow
def test_a_plain_huggingface_hub_scenario_is_unchanged_by_a_loaded_kernel(
    hub: HubServer, tmp_path: Path
) -> None:
    seed_version_one(hub, tmp_path / "publish", tag="scope")
    hub.create_repo(MODEL, repo_type="model")
    hub.commit(MODEL, {"config.json": '{"hidden": 8}'}, repo_type="model")

    plain, plain_seen = run_scenario(hub, "plain", tmp_path)
    loaded, loaded_seen = run_scenario(hub, "kernel", tmp_path)

    assert plain["kernel_builder imported"] is False and plain["loaded"] is None
    assert loaded["kernel_builder imported"] is True and loaded["loaded"].startswith("_relu_scope_")
    assert plain["results"]["download"] == ["ok", '{"hidden": 8}']
    assert plain["results"]["slow tree"][0] == "ok"  # no timeout of ours: the 2.5 s answer arrives
    assert plain["results"]["branches"] == ["ok", ["main"]]
    assert loaded["results"] == plain["results"]  # same answers, same exception types
    assert loaded["sent"] == plain["sent"]  # same requests, sent with the same timeouts
    assert loaded_seen == plain_seen and plain_seen  # the double saw the same requests
