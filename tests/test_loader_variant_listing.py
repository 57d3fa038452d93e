"""``kernel-builder variants`` (``kernel_builder.loader.variant_listing``) against the Hub double, and the same
repository through upstream's ``kernels variants`` (the pinned release): the same variants at the same
versions, the same compatible ones in the same order of preference, the same preferred one.

Both judge this machine as it is (no injected environment): a CPU build of Torch on x86_64 Linux.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer
from loader_fixtures import commit_variants
from upstream_kernels import our_cli, upstream_cli

from kernel_builder.cli import main
from kernel_builder.formats.variants import variant_for_environment

REPO = "org/relu"


def variants_here() -> dict[str, str]:
    """Variant names built around this machine's own: its variant, and one changed in each part."""
    own = variant_for_environment().name
    torch_part, _, rest = own.partition("-")
    older = "torch29" if torch_part != "torch29" else "torch28"
    return {
        "own": own,
        "noarch": "torch-cpu",
        "older-torch": f"{older}-{rest}",
        "other-backend": own.replace("-cpu-", "-cu130-"),
        "other-cpu": own.replace("x86_64", "aarch64")
        if "x86_64" in own
        else own.replace("aarch64", "x86_64"),
        "universal": "torch-universal",
    }


def publish(hub: HubServer, tmp_path: Path) -> dict[str, str]:
    names = variants_here()
    hub.add_organization("org")
    hub.create_repo(REPO)
    versions = {1: ["own", "noarch", "older-torch"], 2: list(names)}
    for version, keys in versions.items():
        hub.create_branch(REPO, f"v{version}")
        commit_variants(
            hub, tmp_path / f"v{version}", {names[key]: {} for key in keys},
            kernel_id=lambda name: f"_relu_{name.replace('-', '_')}", repo_id=REPO, branch=f"v{version}",
        )  # fmt: skip
    return names


def comparable(listing: dict[str, Any]) -> list[dict[str, Any]]:
    """Per revision: the compatible variants in order, the preferred one, and the rejected ones as a set (with
    a reason each; upstream words it its own way and orders equally preferred rejections by chance)."""
    result = []
    for revision in listing["revisions"]:
        variants = revision["variants"]
        result.append(
            {
                "version": revision["version"],
                "revision": revision["revision"],
                "compatible": [v["variant"] for v in variants if v["compatible"]],
                "preferred": [v["variant"] for v in variants if v["preferred"]],
                "rejected": sorted(v["variant"] for v in variants if not v["compatible"]),
                "reasons": all((v["reason"] is None) == v["compatible"] for v in variants),
            }
        )
    return result


@pytest.mark.slow  # upstream's CLI, a fresh interpreter per case
@pytest.mark.parametrize(
    "selection",
    [
        [],
        ["--all-versions"],
        ["--version", "1"],
        ["--version", "latest"],
        ["--revision", "v1"],
        ["--only-compatible"],
    ],
    ids=lambda selection: " ".join(selection) or "default",
)
def test_the_same_variants_and_verdicts_as_upstream(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], selection: list[str]
) -> None:
    names = publish(hub, tmp_path)
    theirs = json.loads(upstream_cli("variants", REPO, "--json", *selection))
    mine = json.loads(our_cli(capsys, "variants", REPO, "--json", *selection))
    assert mine["repo_id"] == theirs["repo_id"] == REPO
    assert comparable(mine) == comparable(theirs)
    newest = comparable(mine)[-1]
    assert newest["preferred"] == [names["own"]]
    if selection in ([], ["--version", "latest"], ["--only-compatible"]):
        assert [r["version"] for r in mine["revisions"]] == [2]
        assert newest["compatible"] == [names["own"], "torch-cpu", "torch-universal"]
        expected = (
            []
            if selection == ["--only-compatible"]
            else sorted(names[k] for k in ("older-torch", "other-backend", "other-cpu"))
        )
        assert newest["rejected"] == expected


@pytest.mark.slow
def test_the_text_has_upstreams_lines_for_compatible_variants(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The text output: each version's label, then one line per variant; the compatible ones exactly as
    upstream prints them, each rejected one named (with our own reason)."""
    names = publish(hub, tmp_path)
    theirs = upstream_cli("variants", REPO, "--all-versions").splitlines()
    mine = our_cli(capsys, "variants", REPO, "--all-versions").splitlines()
    assert [line for line in mine if line.endswith("\u2705") or line.endswith(":") or not line] == [
        line for line in theirs if line.endswith("\u2705") or line.endswith(":") or not line
    ]
    assert {line.split(":")[0] for line in mine if ": " in line} == {
        line.split(":")[0] for line in theirs if ": " in line
    }
    assert f"{names['own']} compatible, preferred \u2705" in mine


def test_usage_errors(hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(hub, tmp_path)
    assert main(["variants", REPO, "--version", "7"]) == 2
    assert "org/relu has no version 7 (branch v7); versions: 1, 2" in capsys.readouterr().err
    for argv in (["--version", "one"], ["--version", "1", "--revision", "v1"]):
        with pytest.raises(SystemExit) as raised:
            main(["variants", REPO, *argv])
        assert raised.value.code == 2
    assert "expected a version number or 'latest', got 'one'" in capsys.readouterr().err
    hub.create_repo("org/plain")
    assert main(["variants", "org/plain"]) == 2
    assert "org/plain has no version branches (v<N>): give --revision" in capsys.readouterr().err
    assert main(["variants", "not a repo"]) == 2
