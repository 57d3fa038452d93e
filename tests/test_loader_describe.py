"""kernel-builder info, versions and verify-signature (kernel_builder.loader.describe and its commands) against
the Hub double, with an injected environment (a CUDA 13.0 build of Torch 2.12 on x86_64 Linux).

The one signed variant here carries a real Sigstore bundle (tests/fixtures/sigstore) that signs another
artifact, so it is "present" for ``info`` and fails verification; that a real signature verifies is
tests/test_loader_signatures.py's part.
"""

from __future__ import annotations

import importlib.resources
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer
from loader_fixtures import ENV, commit_variants, reset_loader

from kernel_builder.cli import main
from kernel_builder.formats import runtime
from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.loader import get_loaded_kernels, signatures, trust
from kernel_builder.loader import resolve as resolve_module
from kernel_builder.loader.describe import describe_kernel, kernel_versions

LINUX = "x86_64-linux"
CU126 = f"torch212-cxx11-cu126-{LINUX}"
CU130 = f"torch212-cxx11-cu130-{LINUX}"
CU132 = f"torch212-cxx11-cu132-{LINUX}"
REPO = "org/relu"
FOREIGN_BUNDLE = (
    Path(__file__).resolve().parent
    / "fixtures"
    / "sigstore"
    / "pypi_attestation_models-0.0.4a2.tar.gz.sigstore"
)
REJECT_126 = "built for CUDA 12.6 (cu126), major version differs from the environment's CUDA 13.0"
REJECT_132 = "built for CUDA 13.2 (cu132), minor version newer than the environment's CUDA 13.0"
BUILDER = {"provenance": {"kernel-builder": {"version": "0.9.1"}}}
DEPENDS = {"kernel-depends": [{"repo-id": "org/activation", "version": 2}]}


@pytest.fixture(autouse=True)
def machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setattr(runtime, "detect_environment", lambda: ENV)
    monkeypatch.setattr(resolve_module, "probe_gpus", lambda backend: [])
    monkeypatch.setattr(trust, "_verdicts", {})
    for name in (signatures.REQUIRE_SIGNATURE, signatures.SIGNERS, "KERNEL_BUILDER_VERIFY_DIGEST"):
        monkeypatch.delenv(name, raising=False)
    # Verify against the production trust root the sigstore package ships: no TUF refresh, no network.
    shipped = (
        importlib.resources.files("sigstore")
        / "_store"
        / "https%3A%2F%2Ftuf-repo-cdn.sigstore.dev"
        / "trusted_root.json"
    )
    root = tmp_path / "trusted_root.json"
    root.write_bytes(shipped.read_bytes())
    monkeypatch.setenv(signatures.TRUSTED_ROOT, str(root))
    reset_loader()
    yield
    reset_loader()


def publish(hub: HubServer, tmp_path: Path) -> dict[str, str]:
    """v1: three CUDA variants, cu130 with a (foreign) bundle and a builder version; v2: cu130 alone, unsigned."""
    hub.add_organization("org")
    hub.create_repo(REPO)
    shas = {}
    releases: list[tuple[int, dict[str, dict[str, Any]], dict[str, bytes | str]]] = [
        (1, {CU126: {}, CU130: {"extra": {**BUILDER, **DEPENDS}}, CU132: {"digest": False}}, {f"build/{CU130}/metadata.json.sigstore": FOREIGN_BUNDLE.read_bytes()}),
        (2, {CU130: {}}, {}),
    ]  # fmt: skip
    for version, variants, extra in releases:
        hub.create_branch(REPO, f"v{version}")
        shas[f"v{version}"] = commit_variants(
            hub, tmp_path / f"v{version}", variants, kernel_id=lambda name: f"_relu_v{version}_{name[:18].replace('-', '_')}",
            repo_id=REPO, branch=f"v{version}", extra=extra,
        )  # fmt: skip
    return shas


def downloaded(hub: HubServer) -> list[str]:
    return sorted(
        r.path.split("/resolve/", 1)[1].split("/", 1)[1]
        for r in hub.requests
        if r.method == "GET" and "/resolve/" in r.path
    )


# --- info ---------------------------------------------------------------------------------------------------


def test_info_judges_every_variant_and_reads_only_metadata(hub: HubServer, tmp_path: Path) -> None:
    shas = publish(hub, tmp_path)
    hub.clear_requests()
    info = describe_kernel(REPO, version=1)
    assert (info.repo_id, info.sha, info.ref, info.version, info.loads) == (REPO, shas["v1"], "v1", 1, CU130)
    assert info.environment == "Torch 2.12 (cxx11 ABI), backend cuda 13.0, x86_64-linux, no GPU visible"
    rows = [
        (v.name, v.verdict, v.reason, v.builder_version, v.kernel_depends, v.digest, v.signature)
        for v in info.variants
    ]
    assert rows == [
        (CU130, "preferred", None, "0.9.1", (KernelDependency("org/activation", 2),), True, "present"),
        (CU126, "rejected", REJECT_126, None, (), True, "absent"),
        (CU132, "rejected", REJECT_132, None, (), False, "absent"),
    ]
    assert all(path.endswith("/metadata.json") for path in downloaded(hub)), downloaded(
        hub
    )  # no code fetched
    assert get_loaded_kernels() == []


def test_info_defaults_to_the_newest_version_and_takes_a_revision(hub: HubServer, tmp_path: Path) -> None:
    shas = publish(hub, tmp_path)
    newest = describe_kernel(REPO)
    assert (newest.sha, newest.version, [v.name for v in newest.variants]) == (shas["v2"], 2, [CU130])
    assert newest.variants[0].signature == "absent"
    by_sha = describe_kernel(REPO, revision=shas["v1"])
    assert (by_sha.ref, by_sha.version, len(by_sha.variants)) == (None, None, 3)


def test_info_verify_checks_the_bundle_of_signed_variants(hub: HubServer, tmp_path: Path) -> None:
    publish(hub, tmp_path)
    info = describe_kernel(REPO, version=1, signers=signatures.signers_from_env())
    signed = info.variants[0]
    assert (signed.name, signed.signature) == (CU130, "invalid")
    assert signed.signature_detail.startswith("the signature of metadata.json does not verify")
    assert [v.signature for v in info.variants[1:]] == ["absent", "absent"]


def test_info_command_text_and_json(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shas = publish(hub, tmp_path)
    assert main(["info", REPO, "--version", "1"]) == 0
    text = capsys.readouterr().out
    assert f"revision: {shas['v1']} (v1)" in text
    assert f"loads here: {CU130}" in text
    block = text.split(f"{CU130}: loads here\n", 1)[1].split("\n\n")[0].splitlines()[:4]
    assert block == [
        "  built by: kernel-builder 0.9.1",
        "  digest: yes",
        "  signature: present",
        "  kernel dependencies: org/activation v2",
    ]
    assert f"{CU126}: not here: {REJECT_126}" in text
    assert main(["info", REPO, "--version", "1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["revision"], data["loads"], data["name"], data["license"]) == (
        shas["v1"],
        CU130,
        "relu",
        "Apache-2.0",
    )
    assert [(v["name"], v["loads_here"], v["signature"], v["digest"]) for v in data["variants"]] == [
        (CU130, True, "present", True),
        (CU126, False, "absent", True),
        (CU132, False, "absent", False),
    ]
    assert data["variants"][0]["kernel_depends"] == [
        {"repo_id": "org/activation", "version": 2, "revision": None}
    ]


def test_info_errors(hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(hub, tmp_path)
    assert main(["info", REPO, "--version", "7"]) == 1
    assert "has no version 7 (no branch v7); available versions: 1, 2" in capsys.readouterr().err
    assert main(["info", "org/missing"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err
    assert main(["info", "../x"]) == 2
    assert "is not a Hub repository id" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:
        main(["info", REPO, "--version", "1", "--revision", "main"])
    assert usage.value.code == 2


# --- versions -----------------------------------------------------------------------------------------------


def test_versions_list_branches_commits_and_this_machines_variant(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shas = publish(hub, tmp_path)
    versions = kernel_versions(REPO)
    assert [(v.version, v.sha, v.latest, v.variant) for v in versions] == [
        (1, shas["v1"], False, CU130),
        (2, shas["v2"], True, CU130),
    ]
    assert main(["versions", REPO]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"v1  {shas['v1']}",
        f"  loads here: {CU130}",
        f"v2  {shas['v2']}  (latest)",
        f"  loads here: {CU130}",
    ]
    assert main(["versions", REPO, "--json", "--backend", "cpu"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows == [
        {"version": 1, "branch": "v1", "commit": shas["v1"], "latest": False, "loads": None},
        {"version": 2, "branch": "v2", "commit": shas["v2"], "latest": True, "loads": None},
    ]


def test_versions_of_a_repo_without_version_branches(
    hub: HubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.create_repo("org/plain")
    hub.commit("org/plain", {"README.md": b"# plain\n"})
    assert kernel_versions("org/plain") == []
    assert main(["versions", "org/plain"]) == 0
    assert capsys.readouterr().err == "org/plain has no version branches (v<N>)\n"


def test_versions_offline_come_from_the_cache(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shas = publish(hub, tmp_path)
    describe_kernel(REPO, version=1)  # reads metadata only: no ref recorded
    from kernel_builder.loader import get_kernel

    get_kernel(REPO, version=2)  # a load records refs/v2
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert [(v.version, v.sha, v.latest) for v in kernel_versions(REPO)] == [(2, shas["v2"], True)]


# --- verify-signature ---------------------------------------------------------------------------------------


def test_verify_signature_downloads_and_fails_a_foreign_bundle(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path)
    assert main(["verify-signature", REPO, "1"]) == 1
    err = capsys.readouterr().err
    assert f"error: {CU130}: the signature of metadata.json does not verify" in err
    assert "1 of 1 variant(s) failed verification" in err
    assert f"build/{CU130}/__init__.py" in downloaded(hub)  # the whole variant, for the digest check
    assert get_loaded_kernels() == []  # nothing imported


def test_verify_signature_unsigned_fails_unless_filtered(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path)
    assert main(["verify-signature", REPO, "--version", "2"]) == 1
    assert f"error: {CU130}: not signed (no metadata.json.sigstore)" in capsys.readouterr().err
    assert main(["verify-signature", REPO, "--filter-unsigned"]) == 0  # the newest version: v2
    assert capsys.readouterr().out == f"skipped {CU130}: not signed (no metadata.json.sigstore)\n"


def test_verify_signature_all_variants(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path)
    assert main(["verify-signature", REPO, "1", "--all-variants", "--filter-unsigned"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        f"skipped {CU126}: not signed (no metadata.json.sigstore)",
        f"skipped {CU132}: not signed (no metadata.json.sigstore)",
    ]
    assert "1 of 3 variant(s) failed verification" in captured.err


def test_verify_signature_usage_errors(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path)
    assert main(["verify-signature", REPO, "1", "--identity", "org/relu"]) == 2
    assert "--identity 'org/relu' is not a GitHub Actions workflow URI" in capsys.readouterr().err
    assert main(["verify-signature", REPO, "1", "--version", "1"]) == 2
    assert "give the version once" in capsys.readouterr().err
    assert main(["verify-signature", REPO, "1", "--identity", signatures.DEFAULT_SIGNERS[0]]) == 1


# --- info on a local build ----------------------------------------------------------------------------------


def test_info_describes_a_local_build(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from loader_fixtures import write_variant

    build = tmp_path / "kernel" / "build"
    write_variant(build / CU130, backend="cuda", extra=BUILDER)
    write_variant(build / CU126, backend="cuda", kernel_id="_relu_cu126_0123")
    (build / CU130 / "metadata.json.sigstore").write_bytes(FOREIGN_BUNDLE.read_bytes())
    # a project's sources: named like a variant
    (tmp_path / "kernel" / "torch-ext" / "relu").mkdir(parents=True)
    assert main(["info", str(tmp_path / "kernel"), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert (data["path"], data["loads"], "repo_id" in data) == (str(build), CU130, False)
    assert [(v["name"], v["reason"], v["builder_version"], v["signature"]) for v in data["variants"]] == [
        (CU130, None, "0.9.1", "present"),
        (CU126, REJECT_126, None, "absent"),
    ]
    assert main(["info", str(build), "--verify"]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"path: {build}\n")
    assert "  signature: invalid (the signature of metadata.json does not verify: " in text
    assert main(["info", str(build), "--version", "1"]) == 2
    assert "is a local directory: --version and --revision apply to Hub repos" in capsys.readouterr().err
    assert main(["info", str(tmp_path)]) == 2
    assert (
        "holds no build variants: expected <variant>/ or build/<variant>/ directories"
        in capsys.readouterr().err
    )
