"""``kernel-builder info --dep-tree`` (``kernel_builder.loader.dependency_tree``): the kernel dependencies of the
variant that loads here, resolved recursively as a load resolves them; the same tree as upstream's ``kernels info
--dep-tree`` (the pinned release) on the Hub double."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import commit_variants, fresh_loader  # noqa: F401  (fixture)
from upstream_kernels import upstream_cli

from kernel_builder.cli import main
from kernel_builder.formats.variants import variant_for_environment
from kernel_builder.loader.dependency_tree import render_tree

#: Each kernel and the kernels it depends on (all at version 1).
TREE = {
    "org/top": ["org/beta", "org/alpha"],
    "org/alpha": ["org/gamma"],
    "org/beta": ["org/gamma"],
    "org/gamma": [],
}


pytestmark = pytest.mark.usefixtures("fresh_loader")


def publish(hub: HubServer, tmp_path: Path) -> None:
    own = variant_for_environment().name
    hub.add_organization("org")
    for repo_id, depends in TREE.items():
        name = repo_id.split("/")[1]
        hub.create_repo(repo_id)
        hub.create_branch(repo_id, "v1")
        extra = {
            "kernel-depends": [{"repo-id": dep, "version": 1} for dep in depends],
            "kernels-minver": "0.17.0",
        }
        commit_variants(
            hub, tmp_path / name, {own: {"name": name, "extra": extra}},
            kernel_id=lambda variant: f"_{name}_v1", repo_id=repo_id, branch="v1",
        )  # fmt: skip


def test_render_tree() -> None:
    assert render_tree("org/top", {"org/a": {"org/c": {}}, "org/b": {"org/c": {}}}) == [
        "org/top",
        "|-- org/a",
        "|   `-- org/c",
        "`-- org/b",
        "    `-- org/c",
    ]
    assert render_tree("org/top", {}) == ["org/top"]


def test_info_dep_tree(hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(hub, tmp_path)
    assert main(["info", "org/top", "--dep-tree", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["dependency_tree"] == {"org/alpha": {"org/gamma": {}}, "org/beta": {"org/gamma": {}}}
    assert main(["info", "org/top", "--dep-tree"]) == 0
    text = capsys.readouterr().out
    assert (
        "kernel dependencies:\norg/top\n|-- org/alpha\n|   `-- org/gamma\n`-- org/beta\n    `-- org/gamma\n"
        in text
    )
    assert main(["info", "org/gamma", "--dep-tree"]) == 0
    assert "kernel dependencies:\n-\n" in capsys.readouterr().out
    assert main(["info", "org/top", "--json"]) == 0
    assert "dependency_tree" not in json.loads(capsys.readouterr().out)  # only when asked


@pytest.mark.slow  # upstream's CLI in a fresh interpreter
def test_the_same_tree_as_upstream(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path)
    theirs = json.loads(upstream_cli("info", "org/top", "--dep-tree", "--json"))
    assert main(["info", "org/top", "--dep-tree", "--json"]) == 0
    mine = json.loads(capsys.readouterr().out)
    assert mine["dependency_tree"] == theirs["dependency_tree"]
    # The drawn tree: upstream's lines up to its next field, ours up to the blank line before the variants.
    theirs_text = (
        upstream_cli("info", "org/top", "--dep-tree").split("Kernel dependencies:\n", 1)[1].splitlines()
    )
    assert main(["info", "org/top", "--dep-tree"]) == 0
    ours_text = capsys.readouterr().out.split("kernel dependencies:\n", 1)[1].splitlines()
    theirs_tree = theirs_text[: next(i for i, line in enumerate(theirs_text) if ": " in line)]
    assert ours_text[: ours_text.index("")] == theirs_tree == render_tree("org/top", mine["dependency_tree"])
