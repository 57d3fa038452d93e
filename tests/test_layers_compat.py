"""The same kernelize script (``kernelize_compat.py``) run with ``kernel_builder`` and with upstream's
``kernels`` makes the same replacement decisions for the same mappings: against the Hub double and through
local builds.

Here the kernels are pure-Python ones (fast); ``test_layers_examples.py`` runs the script on CPU builds of
examples/activation and examples/relu (slow).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer
from layers_fixtures import KERNEL_REPO, publish_kernel, write_kernel

SCRIPT = Path(__file__).resolve().parent / "kernelize_compat.py"
PACKAGES = ("kernel_builder", "kernels")


def run_compat_script(package: str, config: dict[str, Any], work: Path) -> dict[str, Any]:
    """Run the script with ``package`` in a fresh interpreter, with its own kernel cache; its JSON result."""
    pytest.importorskip(package)
    work.mkdir(parents=True, exist_ok=True)
    config_file = work / "config.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "KERNELS_CACHE": str(work / "cache"),
        "HF_HUB_CACHE": str(work / "cache"),
        # With telemetry off, kernels 0.17 sends an invalid User-Agent header (a trailing "; ").
        "HF_HUB_DISABLE_TELEMETRY": "0",
    }
    env.pop("DISABLE_KERNEL_MAPPING", None)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), package, str(config_file)],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, f"{package}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    decisions: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return decisions


def differences(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    return [
        f"{key}: kernel_builder {ours.get(key)!r}, kernels {theirs.get(key)!r}"
        for key in sorted(set(ours) | set(theirs))
        if ours.get(key) != theirs.get(key)
    ]


def test_same_decisions_as_upstream_kernels(hub: HubServer, tmp_path: Path) -> None:
    publish_kernel(hub, tmp_path)
    root = write_kernel(tmp_path / "local-activation", tag="local_")
    config = {"sources": {"hub": {"*": KERNEL_REPO}, "local": {"*": str(root)}}, "extras": True}
    ours, theirs = (run_compat_script(package, config, tmp_path / package) for package in PACKAGES)
    assert differences(ours, theirs) == []

    # The comparison covers every kind of decision, not only fallbacks.
    kinds = Counter(value if isinstance(value, str) else "ok" for value in ours.values())
    assert set(kinds) == {"ok", "error:ValueError", "error:TypeError"}, kinds
    outcomes = Counter(
        outcome for value in ours.values() if isinstance(value, dict) for outcome in value.values()
    )
    assert {"original", "kernel", "kernel:SiluAndMul", "kernel:GeluTanh", "kernel:ReLU"} <= set(outcomes)
    for source in ("hub", "local"):
        bare = ours[f"{source}/bare/inference/cpu/fallback=true"]
        assert bare == {
            "act": "kernel:SiluAndMul",
            "gelu": "kernel:GeluTanh",
            "relu": "kernel:ReLU",
            "on": "kernel:ReLU",
            "off": "original",
            "plain": "original",
            "head": "original",
            "head:silu_and_mul": "kernel",
        }
        training = ours[f"{source}/bare/training/cpu/fallback=true"]
        assert (training["act"], training["gelu"]) == (
            "kernel:SiluAndMul",
            "original",
        )  # GeluTanh: no backward
        assert ours[f"{source}/bare/training/cpu/fallback=false"] == "error:ValueError"
        capability = {
            c: ours[f"{source}/capabilities/inference/cuda{c}/fallback=true"]["relu"] for c in (75, 86, 90)
        }
        assert capability == {75: "kernel:ReLU", 86: "kernel:GeluTanh", 90: "kernel:SiluAndMul"}
        assert ours[f"{source}/incompatible-WithInit/inference/cpu/fallback=true"] == "error:TypeError"
        assert ours[f"{source}/missing-layer/inference/cpu/fallback=true"] == "error:ValueError"
