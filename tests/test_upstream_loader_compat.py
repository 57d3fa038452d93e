"""The same loading calls through upstream's ``kernels`` (the pinned 0.19.1) and through ``kernel_builder``,
against the Hub double, have the same outcome (``loader_compat.py`` runs them, one fresh interpreter per package, because
upstream reads the Hub endpoint and cache when it is imported).

Covered: ``trust_remote_code`` as an allowlist of repo ids, ``check_arch`` (with a faked CUDA device) of the
loading functions and of the layer repositories,
``kernels-minver`` (newer than the ``kernels`` API refused, older or equal loaded), the version/revision check
before a ``LOCAL_KERNELS`` override, and the upstream parameters of ``install_kernel``, ``has_kernel`` and
``get_local_kernel``. Outcomes are compared exactly: loaded (by a tag the kernel defines), the boolean of
``has_kernel``, or the builtin exception type, except for the few differences :data:`KNOWN_DIFFERENCES` lists
(each documented in docs/migrating.md), which are compared exactly as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer, files_from_directory
from loader_fixtures import write_variant

SCRIPT = Path(__file__).resolve().parent / "loader_compat.py"
PROJECT = Path(__file__).resolve().parents[1]

TRUSTED, UNTRUSTED = "trusted-org", "other-org"
TINY, OTHER = f"{TRUSTED}/tiny", f"{UNTRUSTED}/tiny"
MINVER, ARCHY = f"{TRUSTED}/minver", f"{TRUSTED}/archy"

#: Case → (ours, upstream's): the documented differences (docs/migrating.md), each compared exactly too.
KNOWN_DIFFERENCES = {
    # Both refuse a GPU-architecture mismatch. Our resolver rejects the variant and reports every variant's
    # verdict (NoCompatibleVariantError, a FileNotFoundError); upstream chooses the variant first and then
    # raises RuntimeError from its check.
    "arch-mismatch": ("error:FileNotFoundError", "error:RuntimeError"),
    "layer-arch-mismatch": ("error:FileNotFoundError", "error:RuntimeError"),
    "func-arch-mismatch": ("error:FileNotFoundError", "error:RuntimeError"),
    "local-layer-arch-mismatch": ("error:FileNotFoundError", "error:RuntimeError"),
    # has_kernel answers False for a version the repository does not have, as for a missing repository or
    # revision; upstream raises ValueError there.
    "has-missing-version": ("False", "error:ValueError"),
}


#: The layers module of every test kernel: one layer class, ``Tagged``.
LAYERS = "import torch\n\n\nclass Tagged(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def tiny(tag: str) -> dict[str, str]:
    init = f"from . import layers\n\nTAG = {tag!r}\n\n\ndef tagged(x):\n    return x\n"
    return {"__init__.py": init, "layers/__init__.py": LAYERS}


def write_kernel(root: Path, tag: str, variants: Mapping[str, Mapping[str, Any]]) -> Path:
    """``root/build/<variant>`` for each variant (``write_variant`` options); every one defines ``TAG``."""
    for variant, options in variants.items():
        kernel_id = f"_tiny_{tag.replace('-', '_')}_{variant.replace('-', '_')}"
        write_variant(
            root / "build" / variant,
            name="tiny",
            kernel_id=kernel_id,
            backend=variant.removeprefix("torch-"),
            files=tiny(f"{tag}/{variant}"),
            **options,
        )
    return root


def publish(
    hub: HubServer, tmp_path: Path, repo_id: str, version: int, variants: Mapping[str, Mapping[str, Any]]
) -> None:
    """Commit the variants on branch ``v<version>`` of ``repo_id`` (created with ``v1``)."""
    if version == 1:
        hub.create_repo(repo_id)
    hub.create_branch(repo_id, f"v{version}")
    tag = f"{repo_id.split('/')[1]}-v{version}"
    root = write_kernel(tmp_path / "publish" / tag, tag, variants)
    hub.commit(repo_id, files_from_directory(root / "build", "build"), branch=f"v{version}")


def run_script(package: str, config: dict[str, Any], work: Path) -> dict[str, Any]:
    """Run ``loader_compat.py`` with ``package`` in a fresh interpreter with its own cache; its JSON result."""
    work.mkdir(parents=True, exist_ok=True)
    config_file = work / "config.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": str(PROJECT),
        "KERNELS_CACHE": str(work / "cache"),
        "HF_HUB_CACHE": str(work / "cache"),
        # With telemetry off, kernels 0.17 sends an invalid User-Agent header (a trailing "; ").
        "HF_HUB_DISABLE_TELEMETRY": "0",
    }
    for name in ("LOCAL_KERNELS", "KERNEL_BUILDER_CHECK_GPU_ARCH", "KERNEL_BUILDER_VERIFY_DIGEST"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), package, str(config_file)],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{package}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    output: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return output


def compare(config: dict[str, Any], tmp_path: Path) -> dict[str, str]:
    """Run ``config`` through both packages; assert the same outcomes; return ours."""
    pytest.importorskip("kernels")
    ours, theirs = (
        run_script(package, config, tmp_path / package) for package in ("kernel_builder", "kernels")
    )
    differences = []
    for name in sorted(set(ours["results"]) | set(theirs["results"])):
        pair = (ours["results"].get(name), theirs["results"].get(name))
        known = KNOWN_DIFFERENCES.get(name)
        if (pair != known) if known is not None else (pair[0] != pair[1]):
            differences.append(
                f"{name}: kernel_builder {pair[0]!r} ({ours['messages'].get(name, '')}), "
                f"kernels {pair[1]!r} ({theirs['messages'].get(name, '')})"
            )
    assert differences == []
    results: dict[str, str] = ours["results"]
    return results


def case(
    name: str, call: str, *args: Any, env: Mapping[str, str] | None = None, **kwargs: Any
) -> dict[str, Any]:
    """One call of ``loader_compat.py``; a ``Path`` argument travels as ``{"path": ...}``."""
    encoded = [{"path": str(arg)} if isinstance(arg, Path) else arg for arg in args]
    return {"name": name, "call": call, "args": encoded, "kwargs": kwargs, "env": dict(env or {})}


@pytest.mark.slow
def test_trust_allowlist_minver_and_local_kernels_as_upstream(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization(TRUSTED, trusted=True)
    hub.add_organization(UNTRUSTED, trusted=False)
    publish(hub, tmp_path, TINY, 1, {"torch-cpu": {}})
    publish(hub, tmp_path, OTHER, 1, {"torch-cpu": {}})
    publish(hub, tmp_path, MINVER, 1, {"torch-cpu": {"extra": {"kernels-minver": "0.17.0"}}})
    publish(hub, tmp_path, MINVER, 2, {"torch-cpu": {"extra": {"kernels-minver": "0.17.2"}}})
    publish(hub, tmp_path, MINVER, 3, {"torch-cpu": {"extra": {"kernels-minver": "0.18.0"}}})
    local = write_kernel(tmp_path / "local", "local", {"torch-cpu": {}})
    new_local = write_kernel(
        tmp_path / "local-new", "local-new", {"torch-cpu": {"extra": {"kernels-minver": "1.0.0"}}}
    )
    override = {"LOCAL_KERNELS": f"{TINY}={local}"}
    cases = [
        # trust_remote_code: a list of repo ids allowed in addition to trusted publishers
        case("trusted-publisher", "get_kernel", TINY, version=1),
        case("untrusted-refused", "get_kernel", OTHER, version=1),
        case("allowlisted", "get_kernel", OTHER, version=1, trust_remote_code=[OTHER]),
        case("not-on-the-list", "get_kernel", OTHER, version=1, trust_remote_code=[TINY, "other-org/else"]),
        case("trust-all", "get_kernel", OTHER, revision="v1", trust_remote_code=True),
        case("trusted-with-a-list", "get_kernel", TINY, version=1, trust_remote_code=[OTHER]),
        case("has-untrusted", "has_kernel", OTHER, version=1),
        case("has-allowlisted", "has_kernel", OTHER, version=1, trust_remote_code=[OTHER]),
        case("has-missing-version", "has_kernel", TINY, version=9),
        case("install-untrusted", "install_kernel", OTHER, version=1),
        case("install-by-version", "install_kernel", OTHER, version=1, trust_remote_code=[OTHER]),
        case("install-by-revision", "install_kernel", TINY, revision="v1", local_files_only=False),
        case("install-neither", "install_kernel", TINY),
        # kernels-minver against the kernels API level (0.17.2)
        case("minver-older", "get_kernel", MINVER, version=1),
        case("minver-equal", "get_kernel", MINVER, version=2),
        case("minver-newer", "get_kernel", MINVER, version=3),
        case("local-minver-newer", "get_local_kernel", new_local),
        case("local", "get_local_kernel", local, trust_remote_code=[OTHER], user_agent="compat-test"),
        # LOCAL_KERNELS: the version/revision arguments are checked before the override
        case("override-without-version", "get_kernel", TINY, env=override),
        case("override-with-both", "get_kernel", TINY, version=1, revision="v1", env=override),
        case("override-with-version", "get_kernel", TINY, version=1, env=override),
        case("override-has-kernel", "has_kernel", TINY, version=1, env=override),
        case("hub-without-version", "get_kernel", TINY),
    ]
    ours = compare({"gpu": None, "cases": cases}, tmp_path)
    assert ours == {
        "trusted-publisher": "loaded:tiny-v1/torch-cpu",
        "untrusted-refused": "error:ValueError",
        "allowlisted": "loaded:tiny-v1/torch-cpu",
        "not-on-the-list": "error:ValueError",
        "trust-all": "loaded:tiny-v1/torch-cpu",
        "trusted-with-a-list": "loaded:tiny-v1/torch-cpu",
        "has-untrusted": "error:ValueError",
        "has-allowlisted": "True",
        "has-missing-version": "False",
        "install-untrusted": "error:ValueError",
        "install-by-version": "path:torch-cpu",
        "install-by-revision": "path:torch-cpu",
        "install-neither": "error:ValueError",
        "minver-older": "loaded:minver-v1/torch-cpu",
        "minver-equal": "loaded:minver-v2/torch-cpu",
        "minver-newer": "error:RuntimeError",
        "local-minver-newer": "error:RuntimeError",
        "local": "loaded:local/torch-cpu",
        "override-without-version": "error:ValueError",
        "override-with-both": "error:ValueError",
        "override-with-version": "loaded:local/torch-cpu",
        "override-has-kernel": "True",
        "hub-without-version": "error:ValueError",
    }


@pytest.mark.slow
def test_check_arch_as_upstream(hub: HubServer, tmp_path: Path) -> None:
    """With a (faked) compute capability 9.0 device: a build for 8.0 only is refused unless check_arch=False."""
    hub.add_organization(TRUSTED, trusted=True)
    publish(hub, tmp_path, ARCHY, 1, {"torch-cuda": {"archs": ["8.0"]}})
    publish(hub, tmp_path, ARCHY, 2, {"torch-cuda": {"archs": ["8.0", "9.0"]}})
    local = write_kernel(tmp_path / "local-archy", "local-archy", {"torch-cuda": {"archs": ["8.0"]}})
    cases = [
        case("arch-mismatch", "get_kernel", ARCHY, version=1),
        case("arch-unchecked", "get_kernel", ARCHY, version=1, check_arch=False),
        case("arch-match", "get_kernel", ARCHY, version=2),
        case("has-arch-mismatch", "has_kernel", ARCHY, version=1),
        case("has-arch-unchecked", "has_kernel", ARCHY, version=1, check_arch=False),
        case("has-arch-match", "has_kernel", ARCHY, version=2),
        # The layer repositories pass check_arch on to the load.
        case("layer-arch-mismatch", "LayerRepository.load", ARCHY, version=1, layer_name="Tagged"),
        case(
            "layer-arch-unchecked",
            "LayerRepository.load",
            ARCHY,
            version=1,
            check_arch=False,
            layer_name="Tagged",
        ),
        case("func-arch-mismatch", "FuncRepository.load", ARCHY, version=1, func_name="tagged"),
        case(
            "func-arch-unchecked",
            "FuncRepository.load",
            ARCHY,
            version=1,
            func_name="tagged",
            check_arch=False,
        ),
        case("local-layer-arch-mismatch", "LocalLayerRepository.load", local, layer_name="Tagged"),
        case(
            "local-layer-arch-unchecked",
            "LocalLayerRepository.load",
            local,
            check_arch=False,
            layer_name="Tagged",
        ),
    ]
    ours = compare({"gpu": [9, 0], "cases": cases}, tmp_path)
    assert ours == {
        "arch-mismatch": "error:FileNotFoundError",
        "arch-unchecked": "loaded:archy-v1/torch-cuda",
        "arch-match": "loaded:archy-v2/torch-cuda",
        "has-arch-mismatch": "False",
        "has-arch-unchecked": "True",
        "has-arch-match": "True",
        "layer-arch-mismatch": "error:FileNotFoundError",
        "layer-arch-unchecked": "layer:archy-v1/torch-cuda",
        "func-arch-mismatch": "error:FileNotFoundError",
        "func-arch-unchecked": "layer:archy-v1/torch-cuda",
        "local-layer-arch-mismatch": "error:FileNotFoundError",
        "local-layer-arch-unchecked": "layer:local-archy/torch-cuda",
    }
