"""get_kernel and friends against the Hub double, with injected environments (docs/loading.md;
and repos laid out like upstream's).

The versions in variant names and environments here are the test's own: the loader does not read the
variant matrix, so a matrix bump leaves them alone.
"""

from __future__ import annotations

import itertools
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer
from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError
from loader_fixtures import ENV, commit_variants, make_env, reset_loader, write_variant
from packaging.version import Version

import kernel_builder
from kernel_builder.formats import runtime
from kernel_builder.formats.runtime import Environment
from kernel_builder.formats.variant_model import CUDA, ArchVariant, NoarchVariant, Torch, TvmFfi
from kernel_builder.loader import (
    KernelIntegrityError,
    NoCompatibleVariantError,
    RepoInfo,
    UntrustedKernelError,
    VariantAccepted,
    VariantRejected,
    get_kernel,
    get_kernel_variants,
    get_loaded_kernels,
    has_kernel,
    install_kernel,
    trust,
)
from kernel_builder.loader import resolve as resolve_module
from kernel_builder.loader.resolve import Device

LINUX = "x86_64-linux"
CU126 = f"torch212-cxx11-cu126-{LINUX}"
CU130 = f"torch212-cxx11-cu130-{LINUX}"
CU132 = f"torch212-cxx11-cu132-{LINUX}"
REPO = "org/relu"
ENV_LINE = "environment: Torch 2.12 (cxx11 ABI), backend cuda 13.0, x86_64-linux"
PROJECT = Path(__file__).resolve().parents[1]


@dataclass
class Machine:
    env: Environment = ENV
    gpus: list[Device] = field(default_factory=list)


@pytest.fixture(autouse=True)
def machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    state = Machine()
    monkeypatch.setattr(runtime, "detect_environment", lambda: state.env)
    monkeypatch.setattr(resolve_module, "probe_gpus", lambda backend: state.gpus)
    for name in ("KERNEL_BUILDER_VERIFY_DIGEST", "KERNEL_BUILDER_CHECK_GPU_ARCH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(trust, "_verdicts", {})
    reset_loader()
    yield state
    reset_loader()


_serial = itertools.count()


def publish(
    hub: HubServer,
    tmp_path: Path,
    variants: Mapping[str, Mapping[str, Any]],
    *,
    repo_id: str = REPO,
    branch: str = "main",
    repo_type: str = "kernel",
    tag: str = "",
    extra: Mapping[str, bytes | str] | None = None,
) -> str:
    """Commit ``build/<variant>`` directories (written by ``write_variant``) on ``branch``; returns the SHA.

    Each variant gets the id ``_relu_<tag>_<variant>`` unless its options say otherwise.
    """
    return commit_variants(
        hub,
        tmp_path / f"publish-{next(_serial)}",
        variants,
        kernel_id=lambda name: f"_relu_{tag}_{name.replace('-', '_')}".replace("__", "_"),
        repo_id=repo_id,
        branch=branch,
        repo_type=repo_type,
        extra=extra,
    )


def new_repo(hub: HubServer, *, repo_id: str = REPO, repo_type: str = "kernel", trusted: bool = True) -> None:
    hub.add_organization(repo_id.split("/")[0], trusted=trusted)
    hub.create_repo(repo_id, repo_type=repo_type)


def version_branch(
    hub: HubServer,
    tmp_path: Path,
    version: int,
    variants: Mapping[str, Mapping[str, Any]],
    *,
    repo_id: str = REPO,
) -> str:
    hub.create_branch(repo_id, f"v{version}")
    return publish(hub, tmp_path, variants, repo_id=repo_id, branch=f"v{version}", tag=f"v{version}")


def cache_folder(repo_id: str = REPO, kind: str = "kernels") -> Path:
    return Path(os.environ["KERNELS_CACHE"]) / f"{kind}--{repo_id.replace('/', '--')}"


def summary(decisions: list[VariantAccepted | VariantRejected]) -> list[tuple[str, str | None]]:
    return [(d.variant.variant_str, d.reason if isinstance(d, VariantRejected) else None) for d in decisions]


def resolved_paths(hub: HubServer, method: str = "GET") -> list[str]:
    """Repo paths of the files requested with ``method`` (``/resolve/<rev>/<path>``)."""
    return sorted(
        r.path.split("/resolve/", 1)[1].split("/", 1)[1]
        for r in hub.requests
        if r.method == method and "/resolve/" in r.path
    )


# --- the CUDA rule and the rejection trace ------------------------------------------------------


def test_cuda_rule_selects_cu130_and_lists_rejections(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    sha = version_branch(hub, tmp_path, 1, {CU126: {}, CU130: {}, CU132: {}})
    module = get_kernel(REPO, version=1)
    assert module.__name__ == f"_relu_v1_{CU130.replace('-', '_')}"
    assert summary(get_kernel_variants(REPO, version=1)) == [
        (CU130, None),
        (CU126, "built for CUDA 12.6 (cu126), major version differs from the environment's CUDA 13.0"),
        (CU132, "built for CUDA 13.2 (cu132), minor version newer than the environment's CUDA 13.0"),
    ]
    assert get_loaded_kernels()[0].repo_info == RepoInfo(REPO, sha)


def test_only_incompatible_variants_raise_with_the_trace(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    sha = version_branch(hub, tmp_path, 1, {CU126: {}, CU132: {}})
    hub.clear_requests()
    with pytest.raises(NoCompatibleVariantError) as caught:
        get_kernel(REPO, version=1)
    assert isinstance(caught.value, FileNotFoundError)
    assert str(caught.value) == "\n".join(
        [
            f"no compatible kernel variant in {REPO} at {sha} (v1)",
            ENV_LINE,
            "variants:",
            f"  {CU126}: built for CUDA 12.6 (cu126), major version differs from the environment's CUDA 13.0",
            f"  {CU132}: built for CUDA 13.2 (cu132), minor version newer than the environment's CUDA 13.0",
        ]
    )
    assert [d.variant.variant_str for d in caught.value.decisions] == [CU126, CU132]
    assert resolved_paths(hub, "GET") == []  # nothing downloaded
    assert get_loaded_kernels() == []


def test_no_build_folder(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    sha = publish(hub, tmp_path, {}, extra={"README.md": "# relu\n"})
    with pytest.raises(NoCompatibleVariantError) as caught:
        get_kernel(REPO, revision="main")
    assert (
        str(caught.value)
        == f"no compatible kernel variant in {REPO} at {sha}\n{ENV_LINE}\nvariants: no build variants"
    )
    assert not has_kernel(REPO, revision="main")
    assert get_kernel_variants(REPO, revision=sha) == []


# --- get_kernel_variants ------------------------------------------------------------------------------


def test_get_kernel_variants_order(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    names = [
        "torch-universal",
        "torch-cpu",
        CU130,
        f"torch212-cu130-{LINUX}",
        "torch-cuda",
        f"torch211-cxx11-cu130-{LINUX}",
        f"tvm-ffi01-cu130-{LINUX}",
        f"torch-stable-abi211-cu126-{LINUX}",
    ]
    publish(hub, tmp_path, {name: {} for name in names}, extra={"build/notes.txt": "not a variant"})
    decisions = get_kernel_variants(REPO, revision="main")
    assert [type(d) for d in decisions] == [VariantAccepted] * 4 + [VariantRejected] * 4
    assert summary(decisions) == [
        (f"torch212-cu130-{LINUX}", None),
        (CU130, None),
        ("torch-cuda", None),
        ("torch-universal", None),
        ("torch-cpu", "noarch variant for cpu; the selected backend is cuda"),
        (
            f"torch-stable-abi211-cu126-{LINUX}",
            "built for CUDA 12.6 (cu126), major version differs from the environment's CUDA 13.0",
        ),
        (f"torch211-cxx11-cu130-{LINUX}", "built for Torch 2.11; this environment has Torch 2.12"),
        (f"tvm-ffi01-cu130-{LINUX}", "built for tvm-ffi 0.1; tvm-ffi is not installed"),
    ]
    assert summary(get_kernel_variants(REPO, revision="main", backend="cpu"))[0] == ("torch-cpu", None)
    # each variant in its structured form, upstream's classes (compared with upstream's in
    # test_upstream_loader_compat.py and test_loader_resolve_upstream.py)
    first, tvm = decisions[0].variant, decisions[-1].variant
    assert isinstance(first, ArchVariant) and isinstance(first.framework, Torch)
    assert (first.framework.version, first.framework.cxx11_abi) == (Version("2.12"), None)
    assert isinstance(first.backend, CUDA) and first.backend.version == Version("13.0")
    assert isinstance(tvm, ArchVariant) and isinstance(tvm.framework, TvmFfi)
    assert isinstance(decisions[3].variant, NoarchVariant)


# --- get_kernel(version=N): only that variant -------------------------------------------------------


def test_version_loads_its_sha_and_fetches_only_the_chosen_variant(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    publish(hub, tmp_path, {CU130: {}}, tag="main")  # main moves on; v1 stays
    v1 = version_branch(hub, tmp_path, 1, {CU130: {}, "torch-cuda": {}, "torch-cpu": {}})
    hub.clear_requests()
    module = get_kernel(REPO, version=1)
    kernel = get_loaded_kernels()[0]
    assert kernel.repo_info == RepoInfo(REPO, v1) and kernel.module is module
    variant_files = ["__init__.py", "_ops.py", "layers/__init__.py", "metadata.json"]
    assert resolved_paths(hub, "GET") == [f"build/{CU130}/{name}" for name in variant_files]
    assert resolved_paths(hub, "HEAD") == sorted(
        [f"build/{CU130}/{name}" for name in variant_files] + ["kernel-status.toml"]
    )
    assert all(f"/{v1}/" in r.path for r in hub.requests if "/resolve/" in r.path)  # every download pinned
    folder = cache_folder()
    snapshot = folder / "snapshots" / v1
    assert sorted(p.relative_to(snapshot).as_posix() for p in snapshot.rglob("*") if p.is_file()) == [
        f"build/{CU130}/{name}" for name in variant_files
    ]
    assert len(list((folder / "blobs").iterdir())) == 4
    assert (folder / "refs" / "v1").read_text() == v1  # 40 hex, no newline
    assert module.__file__ == str(snapshot / "build" / CU130 / "__init__.py")
    assert module.ops == f"ops of {module.__name__}._ops"
    # A second call resolves to the same directory: the same module, one registry entry.
    assert get_kernel(REPO, version=1) is module
    assert len(get_loaded_kernels()) == 1


def test_user_agent(hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new_repo(hub)
    version_branch(hub, tmp_path, 1, {"torch-cuda": {}})
    get_kernel(REPO, version=1, user_agent={"myapp": "1.0"})
    agents = {r.headers["user-agent"] for r in hub.requests}
    assert len(agents) == 1
    agent = agents.pop()
    assert agent.startswith("kernel_builder/0.1.0; hf_hub/") and agent.endswith("; myapp/1.0")
    assert "file_type/kernel" not in agent  # HF_HUB_DISABLE_TELEMETRY: no extra details
    monkeypatch.delenv("HF_HUB_DISABLE_TELEMETRY")
    hub.clear_requests()
    reset_loader()
    get_kernel(REPO, version=1, user_agent="myapp/1.0")
    agent = hub.requests[0].headers["user-agent"]
    python = ".".join(str(part) for part in sys.version_info[:3])
    # huggingface_hub already names the Python version and drops the repeated part.
    assert f"; python/{python}; " in agent
    assert agent.endswith("; myapp/1.0; backend/cu130; platform/x86_64-linux; file_type/kernel; torch/2.12")


# --- two versions side by side ------------------------------------------------------------------------


def test_two_versions_side_by_side(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    v1 = version_branch(hub, tmp_path, 1, {"torch-cuda": {}})
    v2 = version_branch(hub, tmp_path, 2, {"torch-cuda": {}})
    first = get_kernel(REPO, version=1)
    second = get_kernel(REPO, version=2)
    assert first is not second
    assert (first.__name__, second.__name__) == ("_relu_v1_torch_cuda", "_relu_v2_torch_cuda")
    assert sys.modules[first.__name__] is first and sys.modules[second.__name__] is second
    assert [(k.module, k.repo_info) for k in get_loaded_kernels()] == [
        (first, RepoInfo(REPO, v1)),
        (second, RepoInfo(REPO, v2)),
    ]
    assert first.layers.ops == "ops of _relu_v1_torch_cuda._ops"


# --- version and revision errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "given"),
    [({}, "neither was given"), ({"version": 1, "revision": "main"}, "both were given")],
)
def test_exactly_one_of_version_and_revision(arguments: dict[str, Any], given: str) -> None:
    with pytest.raises(ValueError) as caught:
        get_kernel(REPO, **arguments)
    assert str(caught.value) == (
        f"exactly one of version and revision is required ({given}): pass version=<N> to load the latest build "
        "of major version N (branch v<N>), or revision=<branch, tag or commit SHA>"
    )


@pytest.mark.parametrize("version", [True, "1", 1.0])
def test_version_must_be_an_int(version: object) -> None:
    with pytest.raises(TypeError) as caught:
        get_kernel(REPO, version=version)  # type: ignore[arg-type]
    assert str(caught.value) == f"version must be an int N (branch v<N>), got {version!r}; pass version=<N>"
    with pytest.raises(ValueError, match=r"^version must be 0 or more, got -1; pass version=<N>$"):
        get_kernel(REPO, version=-1)


def test_missing_version_lists_available_versions(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    for version in (10, 2, 1):
        hub.create_branch(REPO, f"v{version}")
    hub.create_branch(REPO, "v01")  # not a version branch
    hub.create_tag(REPO, "v3")  # tags are never versions
    with pytest.raises(ValueError) as caught:
        get_kernel(REPO, version=3)
    assert str(caught.value) == "org/relu has no version 3 (no branch v3); available versions: 1, 2, 10"
    assert not has_kernel(REPO, version=3)
    new_repo(hub, repo_id="org/bare")
    with pytest.raises(ValueError) as caught:
        get_kernel("org/bare", version=0)
    assert (
        str(caught.value)
        == "org/bare has no version 0 (no branch v0); it has no version branches (v<N>) at all"
    )


def test_outdated_version_is_logged(hub: HubServer, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    new_repo(hub)
    version_branch(hub, tmp_path, 2, {"torch-cuda": {}})
    version_branch(hub, tmp_path, 10, {"torch-cuda": {}})
    caplog.set_level(logging.WARNING, logger="kernel_builder")

    def logged() -> list[tuple[str, str]]:  # but the signature check's (these variants are unsigned)
        return [(r.levelname, r.getMessage()) for r in caplog.records if "not signed" not in r.getMessage()]

    get_kernel(REPO, version=10)
    assert logged() == []
    get_kernel(REPO, version=2)
    assert logged() == [
        ("WARNING", "org/relu: loading version 2, but a newer major version 10 exists (branch v10)")
    ]


def test_missing_repo_and_revision(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization("org")
    with pytest.raises(RepositoryNotFoundError) as caught:
        get_kernel("org/missing", version=1)
    assert str(caught.value).endswith(
        f"\norg/missing: no such repository on {hub.url}; looked it up as a kernel repo and as a (legacy) model repo."
    )
    assert [r.path for r in hub.requests[-2:]] == [
        "/api/kernels/org/missing/refs",
        "/api/models/org/missing/refs",
    ]
    new_repo(hub)
    with pytest.raises(RevisionNotFoundError) as revision_error:
        get_kernel(REPO, revision="nope")
    assert str(revision_error.value).endswith("\norg/relu: revision 'nope' does not exist.")
    unknown = "f" * 40
    with pytest.raises(RevisionNotFoundError) as revision_error:
        get_kernel(REPO, revision=unknown)
    assert str(revision_error.value).endswith(f"\norg/relu: revision '{unknown}' does not exist.")
    assert not has_kernel("org/missing", revision="main")
    assert not has_kernel(REPO, revision="nope")
    assert not has_kernel(REPO, revision=unknown)


# --- legacy model repos and redirects -----------------------------------------------------------------


def test_legacy_model_repo(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub, repo_type="model")
    hub.create_branch(REPO, "v1", repo_type="model")
    sha = publish(hub, tmp_path, {"torch-cuda": {}}, branch="v1", repo_type="model")
    with pytest.warns(
        FutureWarning, match=r"^org/relu is a model-type repository; kernels are now published"
    ):
        module = get_kernel(REPO, version=1)
    assert module.__file__ == str(
        cache_folder(kind="models") / "snapshots" / sha / "build/torch-cuda/__init__.py"
    )
    assert (cache_folder(kind="models") / "refs" / "v1").read_text() == sha
    assert not cache_folder().exists()
    assert get_loaded_kernels()[0].repo_info == RepoInfo(REPO, sha)


def _status(destination: str, revision: str | None = None) -> dict[str, str]:
    text = f'kind = "redirect"\ndestination = "{destination}"\n'
    if revision is not None:
        text += f'revision = "{revision}"\n'
    return {"kernel-status.toml": text}


def test_redirect_follows_the_version_and_checks_the_destination(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub, repo_id="old/relu")
    hub.create_branch("old/relu", "v1")
    hub.commit("old/relu", _status("new/relu"), branch="v1")
    new_repo(hub, repo_id="new/relu")
    publish(hub, tmp_path, {"torch-cuda": {}}, repo_id="new/relu", tag="main")
    v1 = version_branch(hub, tmp_path, 1, {"torch-cuda": {}}, repo_id="new/relu")
    with pytest.warns(UserWarning, match=r"^'old/relu' redirected to 'new/relu'$"):
        module = get_kernel("old/relu", version=1)
    assert module.__name__ == "_relu_v1_torch_cuda"  # the destination's v1, not its main
    assert get_loaded_kernels()[0].repo_info == RepoInfo("new/relu", v1)
    assert (cache_folder("new/relu") / "refs" / "v1").read_text() == v1

    hub.add_organization("new", trusted=False)
    trust._verdicts.clear()
    reset_loader()
    with pytest.warns(UserWarning, match="redirected"), pytest.raises(UntrustedKernelError, match="'new'"):
        get_kernel("old/relu", version=1)


def test_redirect_revision_key_and_main(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub, repo_id="old/relu")
    new_repo(hub, repo_id="new/relu")
    main = publish(hub, tmp_path, {"torch-cuda": {}}, repo_id="new/relu", tag="main")
    pinned = hub.create_branch("new/relu", "stable")
    hub.commit("new/relu", {"later.txt": "x"})
    hub.commit("old/relu", _status("new/relu"))
    hub.create_branch("old/relu", "pinned")
    hub.commit("old/relu", _status("new/relu", revision="stable"), branch="pinned")
    with pytest.warns(UserWarning, match="redirected"):
        assert install_kernel("old/relu", revision="main").parts[-3] == hub.resolve("new/relu")
    with pytest.warns(UserWarning, match="redirected"):
        assert has_kernel("old/relu", revision="pinned")
    with pytest.warns(UserWarning, match="redirected"):
        path = install_kernel("old/relu", revision="pinned")
    assert path.parts[-3] == pinned == main
    assert (cache_folder("new/relu") / "refs" / "stable").read_text() == pinned


def test_redirect_loop_and_bad_status(hub: HubServer) -> None:
    new_repo(hub, repo_id="a/relu")
    new_repo(hub, repo_id="b/relu")
    hub.commit("a/relu", _status("b/relu"))
    hub.commit("b/relu", _status("a/relu"))
    with pytest.warns(UserWarning, match="redirected"), pytest.raises(ValueError) as caught:
        get_kernel("a/relu", revision="main")
    assert str(caught.value) == "redirect loop: a/relu -> b/relu -> a/relu"
    for index in range(7):
        new_repo(hub, repo_id=f"c{index}/relu")
        hub.commit(f"c{index}/relu", _status(f"c{index + 1}/relu"))
    with pytest.warns(UserWarning, match="redirected"), pytest.raises(ValueError) as caught:
        get_kernel("c0/relu", revision="main")
    assert str(caught.value) == "more than 5 redirects: " + " -> ".join(f"c{i}/relu" for i in range(7))
    new_repo(hub, repo_id="d/relu")
    sha = hub.commit("d/relu", {"kernel-status.toml": 'kind = "deprecated"\n'})
    with pytest.raises(ValueError) as caught:
        get_kernel("d/relu", revision="main")
    assert str(caught.value) == (
        f"d/relu at {sha}: kernel-status.toml has kind 'deprecated'; the only kind this loader follows is 'redirect'"
    )


# --- the trust gate -----------------------------------------------------------------------------------


def test_untrusted_organization(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub, trusted=False)
    publish(hub, tmp_path, {"torch-cuda": {}})
    with pytest.raises(UntrustedKernelError) as caught:
        get_kernel(REPO, revision="main")
    assert isinstance(caught.value, ValueError)
    assert str(caught.value) == (
        f"cannot load org/relu: organization 'org' is not a trusted kernel publisher on {hub.url}, and kernels "
        "run arbitrary code. If you trust org, pass trust_remote_code=True."
    )
    assert [r.path for r in hub.requests] == ["/api/organizations/org/overview"]  # refused before resolving
    assert get_kernel(REPO, revision="main", trust_remote_code=True).__name__ == "_relu_torch_cuda"
    with pytest.raises(UntrustedKernelError):  # as upstream: has_kernel and install_kernel pass the gate too
        has_kernel(REPO, revision="main")
    with pytest.raises(UntrustedKernelError):
        install_kernel(REPO, revision="main")
    assert has_kernel(REPO, revision="main", trust_remote_code=True)
    assert has_kernel(REPO, revision="main", trust_remote_code=[REPO])


def test_trust_fails_closed_and_is_cached(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    publish(hub, tmp_path, {"torch-cuda": {}})
    hub.fail_with_500("/api/organizations/")
    with pytest.raises(UntrustedKernelError) as caught:
        get_kernel(REPO, revision="main")
    message = str(caught.value)
    assert message.startswith(
        "cannot load org/relu: could not verify that organization 'org' is a trusted kernel publisher "
        f"(HubConnectionError: ask whether org is a trusted kernel publisher on {hub.url} failed: the Hub "
        "answered HTTP 500 (tried 3 times)."
    )
    assert message.endswith(
        "kernels run arbitrary code, so the load is refused. If you trust org, pass trust_remote_code=True."
    )
    hub.fail_with_500(None)
    get_kernel(REPO, revision="main")
    reset_loader()
    get_kernel(REPO, revision="main")
    overview = [r for r in hub.requests if r.path == "/api/organizations/org/overview"]
    assert len(overview) == 4  # three tries that failed (not cached), then the verdict (cached)

    hub.add_organization("absent", trusted=None)
    hub.create_repo("absent/relu")
    with pytest.raises(UntrustedKernelError, match="'absent' is not a trusted kernel publisher"):
        get_kernel("absent/relu", revision="main")
    hub.create_repo("unknown/relu")
    with pytest.raises(UntrustedKernelError, match=r"could not verify .*'unknown'.*'404 Not Found'"):
        get_kernel("unknown/relu", revision="main")


def test_a_list_is_an_allowlist_of_repo_ids(hub: HubServer, tmp_path: Path) -> None:
    """As upstream: listed repositories load without a trusted publisher; every other one still needs one."""
    new_repo(hub, trusted=False)
    publish(hub, tmp_path, {"torch-cuda": {}})
    new_repo(hub, repo_id="good/relu")
    publish(hub, tmp_path, {"torch-cuda": {}}, repo_id="good/relu", tag="good")
    hub.clear_requests()
    assert get_kernel(REPO, revision="main", trust_remote_code=[REPO]).__name__ == "_relu_torch_cuda"
    assert [r.path for r in hub.requests if "overview" in r.path] == []  # listed: the publisher is not asked
    reset_loader()
    with pytest.raises(UntrustedKernelError, match="organization 'org' is not a trusted kernel publisher"):
        get_kernel(REPO, revision="main", trust_remote_code=["org/other", "good/relu"])
    # A trusted publisher's kernel loads whatever the list says.
    assert (
        get_kernel("good/relu", revision="main", trust_remote_code=[REPO]).__name__ == "_relu_good_torch_cuda"
    )
    assert install_kernel(REPO, version=None, revision="main", trust_remote_code=[REPO]).name == "torch-cuda"

    # The list is matched against every repository the load reaches: a redirect's destination too.
    new_repo(hub, repo_id="moved/relu")
    hub.commit("moved/relu", _status(REPO))
    with pytest.warns(UserWarning, match="redirected"), pytest.raises(UntrustedKernelError):
        get_kernel("moved/relu", revision="main", trust_remote_code=["moved/relu"])
    with pytest.warns(UserWarning, match="redirected"):
        get_kernel("moved/relu", revision="main", trust_remote_code=["moved/relu", REPO])

    with pytest.raises(TypeError, match="^trust_remote_code must be True, False or a list"):
        get_kernel(REPO, revision="main", trust_remote_code="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^trust_remote_code lists 3, which is not a string"):
        get_kernel(REPO, revision="main", trust_remote_code=[REPO, 3])  # type: ignore[list-item]
    with pytest.warns(UserWarning, match=r"^trust_remote_code lists 'org', which is not a repo id"):
        with pytest.raises(UntrustedKernelError):  # an organization name matches no repository
            get_kernel(REPO, revision="main", trust_remote_code=["org"])


# --- digest and dependencies on Hub loads ------------------------------------------------------


def test_tampered_cache_fails_verification(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    sha = publish(hub, tmp_path, {"torch-cuda": {}})
    get_kernel(REPO, revision="main")
    reset_loader()
    cached = cache_folder() / "snapshots" / sha / "build/torch-cuda/_ops.py"
    cached.resolve().write_text("ops = 'evil'\n")
    with pytest.raises(KernelIntegrityError) as caught:
        get_kernel(REPO, revision="main")
    lines = str(caught.value).splitlines()
    variant = cached.parent
    assert lines[0] == f"the files of {variant} do not match the digest in its metadata.json:"
    assert lines[1].startswith("  _ops.py: mismatch (sha256 is ")
    assert lines[2] == (
        f"To fix it, delete {cache_folder()} (the cached download of org/relu) and download it again. To load it "
        "anyway, pass verify_digest=False or set KERNEL_BUILDER_VERIFY_DIGEST=0."
    )
    assert get_kernel(REPO, revision="main", verify_digest=False).ops == "evil"


def test_missing_dependency_before_the_download(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "einops", None)
    new_repo(hub)
    sha = publish(hub, tmp_path, {"torch-cuda": {"python_depends": ["torch", "einops"]}})
    with pytest.raises(ImportError) as caught:
        get_kernel(REPO, revision="main")
    assert str(caught.value) == (
        f"kernel relu (org/relu at {sha}, build/torch-cuda) needs the Python package einops (python-depends: "
        "einops), which is not installed; install it with: pip install einops"
    )
    assert resolved_paths(hub, "GET") == ["build/torch-cuda/metadata.json"]


def test_gpu_check_reads_only_metadata(hub: HubServer, tmp_path: Path, machine: Machine) -> None:
    machine.gpus = [(10, 0)]
    new_repo(hub)
    publish(hub, tmp_path, {CU130: {"archs": ["8.0", "9.0"]}, "torch-cuda": {"archs": ["10.0"]}})
    assert get_kernel(REPO, revision="main").__name__ == "_relu_torch_cuda"
    assert resolved_paths(hub, "GET") == sorted(
        [f"build/{CU130}/metadata.json"]
        + [
            f"build/torch-cuda/{name}"
            for name in ("__init__.py", "_ops.py", "layers/__init__.py", "metadata.json")
        ]
    )
    assert summary(get_kernel_variants(REPO, revision="main"))[1] == (
        CU130,
        "GPU 0 has compute capability 10.0; build provides 8.0, 9.0",
    )


def test_check_arch_false_skips_the_gpu_check(
    hub: HubServer, tmp_path: Path, machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As upstream's check_arch=False (and KERNEL_BUILDER_CHECK_GPU_ARCH=0): the declared architectures may be
    incomplete (a Triton fallback, say); the GPUs are not even probed."""
    machine.gpus = [(10, 0)]
    new_repo(hub)
    version_branch(hub, tmp_path, 1, {CU130: {"archs": ["8.0", "9.0"]}})
    with pytest.raises(
        NoCompatibleVariantError, match="GPU 0 has compute capability 10.0; build provides 8.0, 9.0"
    ):
        get_kernel(REPO, version=1)
    assert not has_kernel(REPO, version=1)
    probed: list[str] = []

    def probe(backend: str) -> list[Device]:
        probed.append(backend)
        return machine.gpus

    monkeypatch.setattr(resolve_module, "probe_gpus", probe)
    assert has_kernel(REPO, version=1, check_arch=False)
    assert get_kernel(REPO, version=1, check_arch=False).__name__ == f"_relu_v1_{CU130.replace('-', '_')}"
    assert probed == []
    # Under LOCAL_KERNELS the override honours it too.
    root = tmp_path / "checkout"
    write_variant(root / "build" / CU130, kernel_id="_relu_local", backend="cuda", archs=["8.0"])
    monkeypatch.setenv("LOCAL_KERNELS", f"{REPO}={root}")
    with pytest.raises(NoCompatibleVariantError):
        get_kernel(REPO, version=1)
    assert not has_kernel(REPO, version=1)
    assert get_kernel(REPO, version=1, check_arch=False).__name__ == "_relu_local"
    assert has_kernel(REPO, version=1, check_arch=False)


def test_install_kernel_by_version_and_local_files_only(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    v1 = version_branch(hub, tmp_path, 1, {"torch-cuda": {}})
    v2 = version_branch(hub, tmp_path, 2, {"torch-cuda": {}})
    with pytest.raises(ValueError, match="^exactly one of version and revision is required"):
        install_kernel(REPO)
    path = install_kernel(REPO, version=1)  # online: also records that org is a trusted publisher
    assert path == cache_folder() / "snapshots" / v1 / "build" / "torch-cuda"
    assert (cache_folder() / "refs" / "v1").read_text() == v1
    hub.clear_requests()
    assert install_kernel(REPO, version=1, local_files_only=True) == path
    assert install_kernel(REPO, revision=v1, local_files_only=True) == path
    assert hub.requests == []
    with pytest.raises(ValueError, match="^cannot resolve version 2 of org/relu offline"):
        install_kernel(REPO, version=2, local_files_only=True)
    with pytest.raises(FileNotFoundError, match="is not in the cache"):
        install_kernel(REPO, revision=v2, local_files_only=True)
    assert hub.requests == []


# --- offline -----------------------------------------------------------------------------------


def test_offline_load_by_version_in_a_subprocess(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    v1 = version_branch(hub, tmp_path, 1, {"torch-universal": {}})
    online = get_kernel(REPO, version=1)
    assert online.__name__ == "_relu_v1_torch_universal"
    hub.clear_requests()
    script = textwrap.dedent(
        """
        import warnings
        warnings.simplefilter("ignore")
        import kernel_builder
        module = kernel_builder.get_kernel("org/relu", version=1)
        (kernel,) = kernel_builder.get_loaded_kernels()
        print(module.__name__, kernel.repo_info.revision, module.ops)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(PROJECT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "_relu_v1_torch_universal",
        v1,
        "ops",
        "of",
        "_relu_v1_torch_universal._ops",
    ]
    assert hub.requests == []


def test_offline_errors_and_queries_from_the_cache(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_repo(hub)
    v1 = version_branch(hub, tmp_path, 1, {"torch-cuda": {}, "torch-cpu": {}})
    version_branch(hub, tmp_path, 2, {"torch-cuda": {}})
    get_kernel(REPO, version=1)
    reset_loader()
    hub.clear_requests()
    monkeypatch.setenv("HF_HUB_OFFLINE", "yes")
    cache = os.environ["KERNELS_CACHE"]
    with pytest.raises(ValueError) as caught:
        get_kernel(REPO, version=2, trust_remote_code=True)
    assert str(caught.value) == (
        f"cannot resolve version 2 of org/relu offline (HF_HUB_OFFLINE is set): the cache ({cache}) has no ref v2 "
        "for it. Load it once online (get_kernel('org/relu', version=2)), or pass revision=<sha> of a cached "
        "download."
    )
    with pytest.raises(FileNotFoundError) as missing:
        get_kernel(REPO, revision="a" * 40, trust_remote_code=True)
    assert str(missing.value) == (
        f"org/relu at revision '{'a' * 40}' is not in the cache ({cache}), and offline mode (HF_HUB_OFFLINE) makes "
        "no Hub requests: it needs an earlier online download of that revision"
    )
    with pytest.raises(FileNotFoundError, match="revision 'main' is not in the cache"):
        install_kernel(REPO, revision="main")
    assert has_kernel(REPO, version=1)
    assert not has_kernel(REPO, version=2)
    assert not has_kernel(REPO, version=1, backend="cpu")  # torch-cpu was never downloaded
    assert summary(get_kernel_variants(REPO, revision=v1)) == [("torch-cuda", None)]
    assert install_kernel(REPO, revision=v1) == cache_folder() / "snapshots" / v1 / "build" / "torch-cuda"
    # The online load recorded that org is trusted: offline, that record decides (no warning, no request).
    assert get_kernel(REPO, version=1).__name__ == "_relu_v1_torch_cuda"
    assert hub.requests == []


# --- LOCAL_KERNELS ------------------------------------------------------------------------------------


def test_local_kernels_override_makes_no_request(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "checkout"
    write_variant(root / "build" / "torch-cuda", kernel_id="_relu_local_cuda", backend="cuda")
    write_variant(root / "build" / "torch-cpu", kernel_id="_relu_local_cpu")
    monkeypatch.setenv("LOCAL_KERNELS", f"{REPO}={root}")
    assert get_kernel(REPO, version=7).__name__ == "_relu_local_cuda"
    assert get_kernel(REPO, revision="any", backend="cpu").__name__ == "_relu_local_cpu"
    # The arguments are checked before the override, as upstream checks them: a test that forgets the version
    # fails under LOCAL_KERNELS (kernel-builder test) as it would against the Hub.
    for arguments in ({}, {"version": 1, "revision": "main"}):
        with pytest.raises(ValueError, match="^exactly one of version and revision is required"):
            get_kernel(REPO, **arguments)  # type: ignore[arg-type]
    assert has_kernel(REPO, version=1) and has_kernel(REPO, version=1, backend="cpu")
    assert [k.repo_info for k in get_loaded_kernels()] == [None, None]
    assert hub.requests == []
    monkeypatch.setenv("LOCAL_KERNELS", f"{REPO}={tmp_path / 'gone'}")
    with pytest.raises(FileNotFoundError, match="LOCAL_KERNELS maps org/relu to"):
        get_kernel(REPO, version=1)


# --- install_kernel and has_kernel --------------------------------------------------------------------


def test_install_kernel(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub, trusted=False)  # the trust gate applies: trust_remote_code lists the repository
    sha = publish(hub, tmp_path, {CU130: {}, "torch-cpu": {}})
    with pytest.raises(UntrustedKernelError):
        install_kernel(REPO, revision="main")
    hub.clear_requests()
    trust: list[str] = [REPO]
    path = install_kernel(REPO, revision="main", trust_remote_code=trust)
    assert path == cache_folder() / "snapshots" / sha / "build" / CU130 and path.is_absolute()
    assert (path / "__init__.py").is_file() and (path / "metadata.json").is_file()
    assert (cache_folder() / "refs" / "main").read_text() == sha
    assert get_loaded_kernels() == []
    assert install_kernel(REPO, revision=sha, backend="cpu", trust_remote_code=True).name == "torch-cpu"
    assert has_kernel(REPO, revision="main", trust_remote_code=trust)
    assert has_kernel(REPO, revision=sha, backend="cpu", trust_remote_code=trust)
    assert [r.path for r in hub.requests if "overview" in r.path] == []


def test_install_kernel_dependencies_only_on_request(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "einops", None)
    new_repo(hub)
    publish(hub, tmp_path, {"torch-cuda": {"python_depends": ["einops"]}})
    assert install_kernel(REPO, revision="main").name == "torch-cuda"
    with pytest.raises(ImportError, match="pip install einops"):
        install_kernel(REPO, revision="main", validate_dependencies=True)


def test_has_kernel(hub: HubServer, tmp_path: Path, machine: Machine) -> None:
    new_repo(hub)
    version_branch(hub, tmp_path, 1, {CU130: {}})
    hub.clear_requests()
    assert has_kernel(REPO, version=1)
    assert resolved_paths(hub, "GET") == []  # no code downloaded
    machine.env = make_env(backend_version=(12, 8))
    assert not has_kernel(REPO, version=1)
    with pytest.raises(ValueError, match="^invalid backend 'rocm'"):
        has_kernel(REPO, version=1, backend="rocm")


# --- repos laid out like upstream's -------------------------------------------------------------------------


def test_upstream_layouts_load(hub: HubServer, tmp_path: Path) -> None:
    new_repo(hub)
    flat = version_branch(hub, tmp_path, 1, {"torch-universal": {}})
    hub.create_branch(REPO, "v2")
    nested = publish(
        hub, tmp_path, {"torch-cuda": {"nested": True, "kernel_id": "_relu_nested"}}, branch="v2", tag="v2"
    )
    hub.create_branch(REPO, "v3")
    legacy = publish(
        hub, tmp_path, {"torch-universal": {"nested": True, "name": None, "kernel_id": None}}, branch="v3"
    )
    assert get_kernel(REPO, version=1).__name__ == "_relu_v1_torch_universal"
    module = get_kernel(REPO, version=2)
    assert module.__name__ == "_relu_nested"
    assert module.__file__ == str(cache_folder() / "snapshots" / nested / "build/torch-cuda/relu/__init__.py")
    with pytest.warns(UserWarning, match="has no 'id'"):
        old = get_kernel(REPO, version=3)
    assert old.__name__.startswith("_relu_") and old.layers.LAYER == "layer"
    assert [k.repo_info.revision for k in get_loaded_kernels() if k.repo_info] == [flat, nested, legacy]
    assert "relu" not in sys.modules


def test_public_exports() -> None:
    assert kernel_builder.get_kernel is get_kernel
    assert kernel_builder.has_kernel is has_kernel
    assert kernel_builder.install_kernel is install_kernel
    assert kernel_builder.get_kernel_variants is get_kernel_variants
    code = (
        "import sys, kernel_builder\n"
        "kernel_builder.get_local_kernel\n"
        "print('huggingface_hub' in sys.modules)\n"
        "kernel_builder.get_kernel\n"
        "print('huggingface_hub' in sys.modules)\n"
        "kernel_builder.has_kernel\n"
        "print('huggingface_hub' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # get_kernel imports the Hub client only when the cache cannot answer (test_loader_warm.py); the rest of
    # the Hub half is imported on first use
    assert result.stdout.split() == ["False", "False", "True"]


def test_trust_is_asked_of_the_loaders_endpoint(hub: HubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub's own endpoint (read when it was imported) may name another Hub, or one that is gone."""
    from huggingface_hub import constants

    from kernel_builder.hub import Hub

    new_repo(hub)
    monkeypatch.setattr(constants, "ENDPOINT", "http://127.0.0.1:9")
    assert Hub().trusted_publisher("org") is True
    assert [r.path for r in hub.requests][-1] == "/api/organizations/org/overview"
