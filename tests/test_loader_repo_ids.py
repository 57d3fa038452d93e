"""Hostile repo ids through every public entry point of the loader (docs/security.md).

One rule decides what a repo id is (:func:`kernel_builder.formats.identifiers.repo_id_problem`); these tests
pass ids that would climb out of the cache or name more than one directory level through each way a repo id
reaches the loader (arguments, ``LOCAL_KERNELS``, ``kernels.lock``, the ``lock`` command's ``pyproject.toml``,
``metadata.json`` dependencies, layer repositories) and check that each one refuses them before any request.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from hub_server import HubServer

import kernel_builder
from kernel_builder.errors import ConfigError
from kernel_builder.formats.identifiers import is_repo_id
from kernel_builder.formats.lockfile import parse_lock
from kernel_builder.formats.metadata import read_metadata
from kernel_builder.loader import parse_local_kernels
from kernel_builder.loader.lock import read_dependencies

HOSTILE = [
    "org/..",
    "../x",
    "./x",
    "org/.",
    "..",
    "a/b/c",
    "/x",
    "x/",
    "/",
    "",
    "org//x",
    "org/.hidden",
    "org/x.",
    "-org/x",
    "org/re--lu",
    "org/re..lu",
    "org\\x",
    "org/x\n",
    " org/x",
    "org/x y",
    "org/ü",
]

# The entry points that may reach the Hub get the ones that climb or nest (each test starts a Hub double).
CLIMBING = ["org/..", "../x", "./x", "a/b/c", "org//x", "", "org/x\n"]

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_every_hostile_id_breaks_the_one_rule() -> None:
    assert [value for value in HOSTILE if is_repo_id(value)] == []


_HUB_CALLS: dict[str, Callable[[str], object]] = {
    "get_kernel": lambda repo_id: kernel_builder.get_kernel(repo_id, version=1),
    "get_kernel(revision)": lambda repo_id: kernel_builder.get_kernel(repo_id, revision="main"),
    "has_kernel": lambda repo_id: kernel_builder.has_kernel(repo_id, version=1),
    "get_kernel_variants": lambda repo_id: kernel_builder.get_kernel_variants(repo_id, revision="main"),
    "install_kernel": lambda repo_id: kernel_builder.install_kernel(repo_id, revision="main"),
    "LayerRepository": lambda repo_id: kernel_builder.LayerRepository(repo_id, layer_name="L", version=1),
    "FuncRepository": lambda repo_id: kernel_builder.FuncRepository(repo_id, func_name="f", version=1),
}


@pytest.mark.parametrize("call", sorted(_HUB_CALLS))
@pytest.mark.parametrize("repo_id", CLIMBING)
def test_hub_entry_points_refuse_before_any_request(hub: HubServer, call: str, repo_id: str) -> None:
    with pytest.raises(ValueError, match=r"^invalid kernel repo id "):
        _HUB_CALLS[call](repo_id)
    assert hub.requests == []


_LOCKED_CALLS: dict[str, Callable[[str, Path], object]] = {
    "load_kernel": lambda repo_id, lock: kernel_builder.load_kernel(repo_id, lockfile=lock),
    "get_locked_kernel": lambda repo_id, lock: kernel_builder.get_locked_kernel(repo_id, lockfile=lock),
    "LockedLayerRepository": lambda repo_id, lock: kernel_builder.LockedLayerRepository(
        repo_id, layer_name="L", lockfile=lock
    ),
    "LockedFuncRepository": lambda repo_id, lock: kernel_builder.LockedFuncRepository(
        repo_id, func_name="f", lockfile=lock
    ),
}


@pytest.mark.parametrize("call", sorted(_LOCKED_CALLS))
@pytest.mark.parametrize("repo_id", CLIMBING)
def test_locked_entry_points_refuse_the_id_itself(
    hub: HubServer, tmp_path: Path, call: str, repo_id: str
) -> None:
    lock = tmp_path / "kernels.lock"
    lock.write_text("[]", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^invalid kernel repo id "):
        _LOCKED_CALLS[call](repo_id, lock)
    assert hub.requests == []


@pytest.mark.parametrize("repo_id", HOSTILE)
def test_lock_entries_with_hostile_ids_are_refused(repo_id: str) -> None:
    text = json.dumps([{"repo_id": repo_id, "sha": SHA, "variants": {}}])
    with pytest.raises(ValueError, match=r"entry 0\.repo_id: expected '<org>/<name>'"):
        parse_lock(text, "kernels.lock")


@pytest.mark.parametrize("repo_id", HOSTILE)
def test_lock_redirects_to_hostile_ids_are_refused(repo_id: str) -> None:
    text = json.dumps([{"repo_id": "org/relu", "sha": SHA, "variants": {}, "redirected_from": repo_id}])
    with pytest.raises(ValueError, match=r"org/relu: redirected_from: expected a repo id"):
        parse_lock(text, "kernels.lock")


# LOCAL_KERNELS trims white space around each segment, so an id that differs only by it is that id.
@pytest.mark.parametrize("repo_id", [value for value in HOSTILE if value.strip() == value and value])
def test_local_kernels_refuses_hostile_ids(repo_id: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^invalid LOCAL_KERNELS segment "):
        parse_local_kernels(f"{repo_id}={tmp_path}")


@pytest.mark.parametrize("repo_id", HOSTILE)
def test_lock_command_refuses_hostile_ids_in_pyproject(repo_id: str, tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(f"[tool.kernels.dependencies]\n{json.dumps(repo_id)} = 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"not a kernel repo id of the form <org>/<name>"):
        read_dependencies(tmp_path)


@pytest.mark.parametrize("repo_id", HOSTILE)
def test_metadata_kernel_dependencies_refuse_hostile_ids(repo_id: str, tmp_path: Path) -> None:
    data = {
        "name": "relu",
        "version": 1,
        "python-depends": [],
        "backend": {"type": "cpu"},
        "kernel-depends": [{"repo-id": repo_id, "version": 1}],
    }
    (tmp_path / "metadata.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match=r"kernel-depends"):
        read_metadata(tmp_path)
