"""Links planted in a shared Hub cache are never written through (kernel_builder/hub.py, docs/security.md).

Anyone who can write to a shared cache can replace one of a repository's folders with a symbolic link to a
directory elsewhere; ``huggingface_hub`` would then write the next download's blobs, snapshot links or lock
files there. Each case plants one such link and checks that the load is refused, with a message naming the
link, and that nothing was written outside the cache.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import env_machine, seed_version_one  # noqa: F401  (env_machine: a fixture)

from kernel_builder.hub import CacheLinkError
from kernel_builder.loader import get_kernel, install_kernel

pytestmark = pytest.mark.usefixtures("env_machine")

REPO = "org/relu"
VARIANT = "torch212-cxx11-cu130-x86_64-linux"


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize(
    "planted",
    ["kernels--org--relu/blobs", "kernels--org--relu/snapshots", "kernels--org--relu/snapshots/{sha}",
     "kernels--org--relu/snapshots/{sha}/build", ".locks/kernels--org--relu", "kernels--org--relu"],
)  # fmt: skip
@pytest.mark.parametrize("load", ["get_kernel", "install_kernel"])
def test_a_planted_directory_link_refuses_the_download_and_nothing_lands_outside(
    hub: HubServer, tmp_path: Path, planted: str, load: str
) -> None:
    sha = seed_version_one(hub, tmp_path / "publish", tag="links")
    cache = Path(os.environ["KERNELS_CACHE"])
    outside = tmp_path / "outside"
    outside.mkdir()
    link = cache / planted.format(sha=sha)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside, target_is_directory=True)
    with pytest.raises(CacheLinkError) as caught:
        if load == "get_kernel":
            get_kernel(REPO, version=1)
        else:
            install_kernel(REPO, revision=sha)
    assert str(caught.value).startswith(f"{link} in the Hub cache is a symbolic link (to {outside})")
    assert "Remove it" in str(caught.value)
    assert files_under(outside) == []


def test_a_planted_file_where_a_folder_belongs_is_refused(hub: HubServer, tmp_path: Path) -> None:
    seed_version_one(hub, tmp_path / "publish", tag="links")
    blobs = Path(os.environ["KERNELS_CACHE"]) / "kernels--org--relu" / "blobs"
    blobs.parent.mkdir(parents=True)
    blobs.write_text("not a folder")
    with pytest.raises(CacheLinkError, match="blobs in the Hub cache is not a folder"):
        get_kernel(REPO, version=1)


def test_a_cache_root_that_is_itself_a_link_still_works(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user chooses where the cache lives: only links below the root are refused."""
    seed_version_one(hub, tmp_path / "publish", tag="links")
    real = tmp_path / "real-cache"
    real.mkdir()
    alias = tmp_path / "cache-link"
    alias.symlink_to(real, target_is_directory=True)
    monkeypatch.setenv("KERNELS_CACHE", str(alias))
    module = get_kernel(REPO, version=1)
    assert module.__name__.startswith("_relu_links_")
    assert any(p.name == "metadata.json" for p in real.rglob("*"))
