"""The same kernelize script (``kernelize_compat.py``) run with ``kernel_builder`` and with upstream's
``kernels`` (the pinned 0.19) makes the same replacement decisions for the same mappings, and reads them back
the same (``get_kernelized_layers``): against the Hub double and through local builds.

Here the kernels are pure-Python ones (fast); ``test_examples.py`` runs the script on CPU builds of
examples/activation and examples/relu (slow).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from hub_server import HubServer
from layers_fixtures import KERNEL_REPO, differences, publish_kernel, run_compat_script, write_kernel


@pytest.mark.slow
def test_same_decisions_as_upstream_kernels(hub: HubServer, tmp_path: Path) -> None:
    publish_kernel(hub, tmp_path)
    root = write_kernel(tmp_path / "local-activation", tag="local_")
    config = {"sources": {"hub": {"*": KERNEL_REPO}, "local": {"*": str(root)}}, "extras": True}
    ours, theirs = (
        run_compat_script(package, config, tmp_path / package) for package in ("kernel_builder", "kernels")
    )
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
            "outputs": "match",
            "read-back": json.dumps(
                {
                    "act": "SiluAndMul",
                    "gelu": "GeluTanh",
                    "relu": "ReLU",
                    "on": "ReLU",
                    "head:silu_and_mul": "SiluAndMul",
                },
                sort_keys=True,
            ),
        }
        training = ours[f"{source}/bare/training/cpu/fallback=true"]
        assert (training["act"], training["gelu"]) == (
            "kernel:SiluAndMul",
            "original",
        )  # GeluTanh: no backward
        assert ours[f"{source}/bare/training/cpu/fallback=false"] == "error:ValueError"
        # 0.19 dropped the check of the registered mode: a layer without backward registered for training
        # serves inference, and falls back for training.
        registered = f"{source}/training-no-backward/{{}}/cpu/fallback=true"
        assert ours[registered.format("inference")]["gelu"] == "kernel:GeluTanh"
        assert ours[registered.format("training")]["gelu"] == "original"
        capability = {
            c: ours[f"{source}/capabilities/inference/cuda{c}/fallback=true"]["relu"] for c in (75, 86, 90)
        }
        assert capability == {75: "kernel:ReLU", 86: "kernel:GeluTanh", 90: "kernel:SiluAndMul"}
        assert ours[f"{source}/incompatible-WithInit/inference/cpu/fallback=true"] == "error:TypeError"
        assert ours[f"{source}/missing-layer/inference/cpu/fallback=true"] == "error:ValueError"
