"""Locked loads of a kernel with kernel dependencies: each dependency at the commit the same lock pins for it.

``org/alpha`` v1 depends on ``org/beta`` v1 and takes it with ``get_kernel_dep`` while it is imported (ours,
else upstream's ``kernels.get_kernel_dep``: the same build serves both loaders). The tree is locked by
``kernel-builder lock`` and fetched by ``kernel-builder download`` against the Hub double; after locking,
``org/beta``'s ``v1`` branch moves on, so a load that ignored the lock would get the newer build. Upstream's
``kernels`` (0.19.1 and 0.17.2) loads the same lock in a subprocess (differential), with ``LOCAL_KERNELS``
pointing ``org/beta`` elsewhere: neither loader consults it for a locked load.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import torch
import warm_python
from hub_server import HubServer, files_from_directory
from loader_fixtures import FILES, reset_loader, write_variant
from publish_fixtures import CPU, cpu_machine, run_cli  # noqa: F401 (fixture)
from upstream_kernels import INSTALLED, KERNELS_0_17_2, child_env, loader_child_env

from kernel_builder.layers import LockedLayerRepository
from kernel_builder.loader import (
    KernelDependencyError,
    get_kernel,
    get_loaded_kernels,
    get_locked_kernel,
    load_kernel,
    trust,
)

pytestmark = pytest.mark.usefixtures("cpu_machine")

A, B = "org/alpha", "org/beta"

ALPHA_INIT = """
from ._ops import ops


def _dependency(repo_id):
    try:
        from kernel_builder import get_kernel_dep
    except ImportError:
        pass
    else:
        try:
            return get_kernel_dep(repo_id), "kernel_builder"
        except RuntimeError:  # imported by another loader
            pass
    from kernels import get_kernel_dep as upstream_get_kernel_dep

    return upstream_get_kernel_dep(repo_id), "kernels"


BETA, PROVIDER = _dependency("org/beta")

from . import layers
"""

ALPHA_LAYERS = """
import torch

from .. import BETA


class Scaled(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * BETA.FACTOR
"""


def beta_init(value: str, factor: int) -> str:
    return f"from ._ops import ops\n\nVALUE = {value!r}\nFACTOR = {factor}\n"


def kernel_id(repo_id: str, tag: str = "1") -> str:
    return f"_{repo_id.split('/')[1]}_cpu_{tag}"


def publish(
    hub: HubServer,
    tmp_path: Path,
    repo_id: str,
    files: Mapping[str, str],
    depends: Sequence[Mapping[str, Any]] = (),
    *,
    tag: str = "1",
) -> str:
    """Commit a CPU variant of ``repo_id`` on ``v1`` (its organization trusted); the commit's SHA.

    The ``v1`` tree holds ``build/`` only: upstream's offline ``load_kernel`` wants a complete snapshot in the
    cache, and ``download`` fetches the variant alone.
    """
    org, name = repo_id.split("/")
    hub.add_organization(org)
    first = tag == "1"
    if first:
        hub.create_repo(repo_id)
        hub.create_branch(repo_id, "v1")
    directory = tmp_path / f"{name}-{tag}"
    write_variant(
        directory / CPU,
        name=name,
        kernel_id=kernel_id(repo_id, tag),
        files={**FILES, **files},
        extra={"kernel-depends": list(depends)},
    )
    delete = [".gitattributes"] if first else []
    return hub.commit(repo_id, files_from_directory(directory, "build"), branch="v1", delete=delete)


def tree(hub: HubServer, tmp_path: Path) -> tuple[str, str]:
    """Publish the two kernels; then a newer ``org/beta`` on ``v1``, which the lock must not pick up. Returns the
    commits of ``org/alpha`` and of the older ``org/beta``."""
    sha_b = publish(hub, tmp_path, B, {"__init__.py": beta_init("locked", 3)})
    sha_a = publish(
        hub,
        tmp_path,
        A,
        {"__init__.py": ALPHA_INIT, "layers/__init__.py": ALPHA_LAYERS},
        [{"repo-id": B, "version": 1}],
    )
    return sha_a, sha_b


def move_beta_on(hub: HubServer, tmp_path: Path) -> str:
    return publish(hub, tmp_path, B, {"__init__.py": beta_init("newer", 5)}, tag="2")


def project(tmp_path: Path, name: str = "app") -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1"\n\n[tool.kernels.dependencies]\n"{A}" = 1\n',
        encoding="utf-8",
    )
    return directory


def lock_entry(repo_id: str, sha: str) -> dict[str, Any]:
    return {"dependency": {"repo-id": repo_id, "version": 1}, "lock": {"commit": sha}}


def decoy(tmp_path: Path) -> Path:
    """A local ``org/beta`` that ``LOCAL_KERNELS`` points at: a locked load must not use it."""
    return write_variant(
        tmp_path / "decoy" / "build" / CPU,
        name="beta",
        kernel_id="_beta_cpu_decoy",
        files={**FILES, "__init__.py": beta_init("local", 7)},
    ).parent.parent


def seen(module: Any) -> dict[str, Any]:
    """What a loaded ``org/alpha`` got as its dependency."""
    return {
        "module": module.__name__,
        "beta": module.BETA.__name__,
        "beta_file": str(module.BETA.__file__),
        "value": module.BETA.VALUE,
        "provider": module.PROVIDER,
    }


UPSTREAM = """
import json, sys
from pathlib import Path
import kernels

function, lock = sys.argv[1:]
a = getattr(kernels, function)("org/alpha", lockfile=Path(lock))
print(json.dumps({
    "module": a.__name__,
    "beta": a.BETA.__name__,
    "beta_file": a.BETA.__file__,
    "value": a.BETA.VALUE,
    "provider": a.PROVIDER,
}))
"""


RELEASES = [INSTALLED, KERNELS_0_17_2]


def upstream(
    function: str, lock: Path, cache: Path, factory: pytest.TempPathFactory, release: str, **env: str
) -> dict[str, Any]:
    """Upstream's (``release``) ``function`` (``load_kernel`` or ``get_locked_kernel``) of ``org/alpha`` with
    ``lock``, in a fresh interpreter on ``cache``; what the loaded kernel got as its dependency."""
    pytest.importorskip("kernels")
    environment = loader_child_env(cache, drop=("HF_HUB_OFFLINE",), **env)
    result = warm_python.run(
        [sys.executable, "-c", textwrap.dedent(UPSTREAM), function, str(lock)],
        env=child_env(factory, release, environment), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-4000:]
    loaded: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_load_kernel_loads_the_locked_tree_like_kernels(
    hub: HubServer,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    release: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sha_a, sha_b = tree(hub, tmp_path)
    app = project(tmp_path)
    run = run_cli(capsys, "lock", str(app))
    assert run.code == 0, run.err
    lock = app / "kernels.lock"
    assert json.loads(lock.read_text()) == [lock_entry(A, sha_a), lock_entry(B, sha_b)]
    move_beta_on(hub, tmp_path)
    run = run_cli(capsys, "download", str(app))
    assert run.code == 0, run.err

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("LOCAL_KERNELS", f"{B}={decoy(tmp_path)}")
    hub.clear_requests()
    alpha = load_kernel(A, lockfile=lock)
    assert hub.requests == []  # never the network
    ours = seen(alpha)
    assert ours == {
        "module": kernel_id(A),
        "beta": kernel_id(B),
        "beta_file": ours["beta_file"],
        "value": "locked",
        "provider": "kernel_builder",
    }
    assert f"/snapshots/{sha_b}/build/{CPU}/" in ours["beta_file"]
    revisions = {k.repo_info.repo_id: k.repo_info.revision for k in get_loaded_kernels() if k.repo_info}
    assert revisions == {A: sha_a, B: sha_b}
    assert load_kernel(B, lockfile=lock) is alpha.BETA  # the dependency is the locked kernel itself

    # Upstream loads the same lock from the same cache (what `kernel-builder download` fetched), ignoring
    # LOCAL_KERNELS as well: the same modules from the same files.
    theirs = upstream(
        "load_kernel",
        lock,
        Path(os.environ["KERNELS_CACHE"]),
        tmp_path_factory,
        release,
        HF_HUB_OFFLINE="1",
        LOCAL_KERNELS=os.environ["LOCAL_KERNELS"],
    )
    assert theirs == {**ours, "provider": "kernels"}


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_get_locked_kernel_downloads_the_locked_tree_like_kernels(
    hub: HubServer,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    release: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sha_a, sha_b = tree(hub, tmp_path)
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    lock = app / "kernels.lock"
    move_beta_on(hub, tmp_path)
    monkeypatch.setenv("LOCAL_KERNELS", f"{B}={decoy(tmp_path)}")
    hub.clear_requests()
    ours = seen(get_locked_kernel(A, lockfile=lock))
    assert (ours["module"], ours["beta"], ours["value"]) == (kernel_id(A), kernel_id(B), "locked")
    assert f"/snapshots/{sha_b}/build/{CPU}/" in ours["beta_file"]
    # Only the locked commits' files were fetched.
    fetched = {
        r.path.split("/resolve/", 1)[1].split("/", 1)[0] for r in hub.requests if "/resolve/" in r.path
    }
    assert fetched == {sha_a, sha_b}

    # What it downloaded now loads without the network.
    reset_loader()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert seen(load_kernel(A, lockfile=lock)) == ours

    theirs = upstream(
        "get_locked_kernel",
        lock,
        tmp_path / "upstream-cache",
        tmp_path_factory,
        release,
        LOCAL_KERNELS=os.environ["LOCAL_KERNELS"],
    )
    assert theirs["beta_file"].startswith(str(tmp_path / "upstream-cache"))
    assert {**theirs, "beta_file": None} == {**ours, "provider": "kernels", "beta_file": None}
    assert f"/snapshots/{sha_b}/build/{CPU}/" in theirs["beta_file"]
    assert get_kernel(B, version=1).VALUE == "local"  # the decoy is what an unlocked load would take


def test_a_locked_layer_repository_gets_its_dependencies(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tree(hub, tmp_path)
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    move_beta_on(hub, tmp_path)
    layer = LockedLayerRepository(A, lockfile=app / "kernels.lock", layer_name="Scaled").load()
    assert layer().forward(torch.tensor([1.0, -2.0])).tolist() == [3.0, -6.0]  # the locked beta's FACTOR


def test_a_dependency_the_lock_does_not_pin_names_the_chain(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sha_a, sha_b = tree(hub, tmp_path)
    app = project(tmp_path)
    lock = app / "kernels.lock"
    lock.write_text(json.dumps([lock_entry(A, sha_a)]), encoding="utf-8")  # written by hand: no org/beta
    expected = (
        f"kernel dependency {A} -> {B}: cannot resolve {B} (version 1): the lock {lock} does not pin it (it was "
        f"written before this dependency existed, or by hand): re-create the lock with `kernel-builder lock "
        f"{app}`, then run `kernel-builder download {app}`"
    )

    hub.clear_requests()
    with pytest.raises(KernelDependencyError) as caught:
        get_locked_kernel(A, lockfile=lock)
    assert (str(caught.value), caught.value.chain) == (expected, (A, B))
    # The tree is resolved before anything is downloaded: only the kernel's metadata.json was fetched.
    fetched = [
        r.path.split(f"/{sha_a}/", 1)[1] for r in hub.requests if r.method == "GET" and "/resolve/" in r.path
    ]
    assert fetched == [f"build/{CPU}/metadata.json"]
    assert get_loaded_kernels() == []

    # load_kernel, with the kernel downloaded: the same error, without the network.
    assert (
        run_cli(capsys, "download", str(app)).code == 1
    )  # downloads org/alpha, then says org/beta is missing
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(KernelDependencyError) as caught:
        load_kernel(A, lockfile=lock)
    assert str(caught.value) == expected
    assert get_loaded_kernels() == []

    # Re-locked as the message says, the tree loads.
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert run_cli(capsys, "lock", str(app)).code == 0
    assert get_locked_kernel(A, lockfile=lock).BETA.VALUE == "locked"
    assert sha_b in str(get_locked_kernel(B, lockfile=lock).__file__)


def test_a_failed_locked_load_leaves_no_half_download(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metadata.json read to choose the variant is not mistaken for a download by the next locked load."""
    sha_a, _ = tree(hub, tmp_path)
    app = project(tmp_path)
    lock = app / "kernels.lock"
    lock.write_text(json.dumps([lock_entry(A, sha_a)]), encoding="utf-8")
    with pytest.raises(KernelDependencyError):
        get_locked_kernel(A, lockfile=lock)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError) as caught:
        load_kernel(A, lockfile=lock)
    assert str(caught.value) == (
        f"{A} at {sha_a}, variant {CPU}, (locked in {lock}) is not in the cache ({os.environ['KERNELS_CACHE']}): "
        f"run `kernel-builder download {app}`"
    )
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert run_cli(capsys, "lock", str(app)).code == 0
    assert get_locked_kernel(A, lockfile=lock).BETA.VALUE == "locked"  # downloads the rest, verified


def test_get_locked_kernel_applies_the_trust_gate_to_dependencies(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    tree(hub, tmp_path)
    app = project(tmp_path)
    lock = app / "kernels.lock"
    assert run_cli(capsys, "lock", str(app)).code == 0
    hub.add_organization("org", trusted=False)
    monkeypatch.setattr(trust, "_verdicts", {})  # a new process: the verdict `lock` saw is not remembered
    with pytest.raises(ValueError, match=rf"^kernel dependency {A} -> {B}: .*not a trusted kernel publisher"):
        get_locked_kernel(A, lockfile=lock, trust_remote_code=[A])
    assert get_locked_kernel(A, lockfile=lock, trust_remote_code=[A, B]).BETA.VALUE == "locked"
