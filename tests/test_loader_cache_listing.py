"""``kernel-builder cache ls`` (``kernel_builder.loader.cache_listing``): the kernels loads cached, by version, with
their variants; the same JSON as upstream's ``kernels cache ls --json`` on the same cache."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import commit_variants, fresh_loader  # noqa: F401  (fixture)
from upstream_kernels import our_cli, upstream_cli

from kernel_builder.cli import main
from kernel_builder.formats.variants import variant_for_environment
from kernel_builder.loader import get_kernel
from kernel_builder.loader.cache_listing import list_cache

REPO = "org/relu"


pytestmark = pytest.mark.usefixtures("fresh_loader")


def publish_and_load(hub: HubServer, tmp_path: Path) -> str:
    """Two versions of a kernel (v2 with two variants), both loaded here; a model repository cached too.
    Returns this machine's variant name."""
    own = variant_for_environment().name
    hub.add_organization("org")
    hub.create_repo(REPO)
    for version, names in ((1, [own]), (2, [own, "torch-cpu"])):
        hub.create_branch(REPO, f"v{version}")
        commit_variants(
            hub, tmp_path / f"v{version}", {name: {} for name in names},
            kernel_id=lambda name: f"_relu_v{version}_{name.replace('-', '_')}", repo_id=REPO, branch=f"v{version}",
        )  # fmt: skip
        get_kernel(REPO, version=version)
    # A model that is not a kernel (no v<N> ref, no build/): listed by neither tool.
    hub.create_repo("org/bert", repo_type="model")
    hub.commit("org/bert", {"config.json": "{}"}, repo_type="model")
    from huggingface_hub import hf_hub_download

    # The endpoint and cache explicitly: huggingface_hub read its variables when it was first imported.
    hf_hub_download(
        "org/bert", "config.json", repo_type="model", endpoint=hub.url, cache_dir=os.environ["KERNELS_CACHE"]
    )
    return own


def test_versions_and_variants_of_what_was_loaded(hub: HubServer, tmp_path: Path) -> None:
    own = publish_and_load(hub, tmp_path)
    listing = list_cache()
    assert listing.cache_dir == Path(os.environ["KERNELS_CACHE"]).resolve()
    (kernel,) = listing.kernels
    assert (kernel.repo_id, kernel.repo_type) == (REPO, "kernel")
    # Only the variant each load chose was downloaded: v2's torch-cpu is not in the cache.
    assert [(v.version, v.variants) for v in kernel.versions] == [("v1", (own,)), ("v2", (own,))]
    assert all(v.size_on_disk > 0 for v in kernel.versions)


def test_an_empty_or_missing_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert list_cache(tmp_path / "nothing").kernels == ()
    assert main(["cache", "ls", "--cache-dir", str(tmp_path / "nothing")]) == 0
    assert capsys.readouterr().out.strip() == f"No cached kernel versions found in {tmp_path / 'nothing'}."


def test_the_table(hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    own = publish_and_load(hub, tmp_path)
    assert main(["cache", "ls"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["ID", "SIZE", "LAST_ACCESSED", "LAST_MODIFIED", "VERSION", "VARIANTS"]
    rows = [line.split() for line in lines[2:]]
    assert [(row[0], row[-2], row[-1]) for row in rows] == [
        (f"kernel/{REPO}", "v1", own),
        (f"kernel/{REPO}", "v2", own),
    ]


@pytest.mark.slow  # upstream's CLI in a fresh interpreter
def test_the_same_json_as_upstream(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish_and_load(hub, tmp_path)
    theirs = json.loads(upstream_cli("cache", "ls", "--json"))
    assert json.loads(our_cli(capsys, "cache", "ls", "--json")) == theirs


def test_a_kernel_published_as_a_model_is_listed_as_one(hub: HubServer, tmp_path: Path) -> None:
    """The loader falls back to a model repository of that id; its cached versions are listed, marked as a
    model (upstream lists kernel repositories only)."""
    own = variant_for_environment().name
    hub.add_organization("org")
    hub.create_repo("org/old", repo_type="model")
    hub.create_branch("org/old", "v1", repo_type="model")
    commit_variants(
        hub, tmp_path / "old", {own: {}}, kernel_id=lambda name: "_relu_old_v1", repo_id="org/old", branch="v1",
        repo_type="model",
    )  # fmt: skip
    with pytest.warns(FutureWarning, match="model-type repository"):
        get_kernel("org/old", version=1)
    (kernel,) = list_cache().kernels
    assert (kernel.repo_id, kernel.repo_type, [v.variants for v in kernel.versions]) == (
        "org/old",
        "model",
        [(own,)],
    )
    assert kernel.to_json()["repo_type"] == "model"
