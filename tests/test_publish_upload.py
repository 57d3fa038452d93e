"""``kernel-builder upload`` against the Hub double (docs/loading.md;and the issue's acceptance)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import materialise
from hub_server import HubError, HubServer
from loader_fixtures import write_variant
from publish_fixtures import (
    BENCHMARK,
    CARD,
    CPU,
    CUDA,
    REPO,
    Run,
    committed_content,
    committed_paths,
    cpu_machine,  # noqa: F401 (fixture)
    history,
    run_cli,
    variant_files,
    write_kernel,
    writes,
)

from kernel_builder import get_kernel, get_loaded_kernels
from kernel_builder.publish import upload as upload_module

pytestmark = pytest.mark.usefixtures("cpu_machine")

GITATTRIBUTES = ".gitattributes"


def upload(capsys: pytest.CaptureFixture[str], kernel: Path, *args: str) -> Run:
    return run_cli(capsys, "upload", str(kernel), "--repo-id", REPO, *args)


def read_json(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text(encoding="utf-8"))
    return data


# --- a new repo ----------------------------------------------------------------------------------------


def test_upload_to_a_new_repo_then_load_it(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = write_kernel(
        tmp_path / "relu", benchmarks={"benchmark_relu.py": BENCHMARK, "helper.py": "x = 1\n"}
    )
    report = tmp_path / "report.json"
    run = upload(capsys, kernel, "--output-json", str(report))
    assert run.code == 0, run.err
    assert run.out == f"uploaded: {hub.url}/kernels/{REPO}/tree/v1\n"

    assert sorted(hub.branches(REPO)) == ["main", "v1"]
    expected = {
        **variant_files(kernel / "build" / CPU, f"build/{CPU}"),
        **variant_files(kernel / "build" / CUDA, f"build/{CUDA}"),
        "benchmarks/benchmark_relu.py": BENCHMARK.encode(),
    }
    on_branch = hub.files(REPO, "v1")
    assert on_branch.pop(GITATTRIBUTES)
    assert on_branch == expected  # identical bytes, nothing else (no CARD.md, no helper.py)
    main_files = hub.files(REPO, "main")
    assert sorted(main_files) == [GITATTRIBUTES, "README.md"] and main_files["README.md"] == CARD.encode()
    # The request log shows no other file: what was committed is exactly those files and the card.
    assert sorted(committed_paths(hub)) == sorted([*expected, "README.md"])
    assert committed_content(hub) == {**expected, "README.md": CARD.encode()}
    # The card is a commit of its own on main; the branch starts at main's first commit.
    assert history(hub, "v1") == [
        "Upload 2 variant(s) with kernel-builder 0.1.0 (batch 1/1)",
        "initial commit",
    ]
    assert history(hub, "main") == [
        "Update README.md from CARD.md with kernel-builder 0.1.0 (batch 1/1)",
        "initial commit",
    ]
    assert read_json(report) == {
        "status": "uploaded",
        "repo_id": REPO,
        "branch": "v1",
        "url": f"{hub.url}/kernels/{REPO}/tree/v1",
        "pull_requests": [],
        "missing": [],
    }

    hub.add_organization("org")
    module = get_kernel(REPO, version=1)
    assert module.__name__ == "_relu_a_torch_cpu"
    (loaded,) = get_loaded_kernels()
    assert loaded.repo_info is not None and loaded.repo_info.revision == hub.resolve(REPO, "v1")
    assert module.ops == "ops of _relu_a_torch_cpu._ops"


def test_repo_id_and_branch_from_build_toml(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = tmp_path / "relu"
    materialise(
        kernel,
        '[general]\nname = "relu"\nversion = 1\nlicense = "Apache-2.0"\nbackends = ["cpu"]\n\n'
        '[general.hub]\nrepo-id = "org/from-toml"\nbranch = "release"\n\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n',
    )
    write_kernel(kernel, {CPU: {}})
    run = run_cli(capsys, "upload", str(kernel))
    assert run.code == 0, run.err
    assert sorted(hub.branches("org/from-toml")) == ["main", "release"]
    run = run_cli(capsys, "upload", str(kernel), "--branch", "v7", "--dry-run")
    assert run.code == 0, run.err
    assert "create branch v7 from the head of main" in run.out


def test_model_repo_type_and_private(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    run = upload(capsys, kernel, "--repo-type", "model", "--private", "-q")
    assert (run.code, run.out, run.err) == (0, "", "")
    assert sorted(hub.branches(REPO, repo_type="model")) == ["main", "v1"]
    created = [json.loads(r.body) for r in hub.requests if r.path == "/api/repos/create"]
    assert created == [{"name": "relu", "organization": "org", "type": "model", "visibility": "private"}]
    info = [r for r in hub.requests if r.method == "GET" and r.path == f"/api/models/{REPO}/refs"]
    assert info and not [r for r in hub.requests if r.path.startswith("/api/kernels/")]  # no fallback


# --- deletions ----------------------------------------------------------------------------------


def test_new_branch_drops_inherited_build_and_benchmark_files(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.create_repo(REPO)
    hub.commit(
        REPO,
        {
            "build/torch-old/__init__.py": "old",
            "build/torch-cpu/stale.py": "stale",
            "benchmarks/benchmark_old.py": "old",
            "benchmarks/data/input.txt": "data",
            "docs/notes.md": "kept",
        },
    )
    main_before = hub.resolve(REPO)
    kernel = write_kernel(tmp_path / "relu", {CPU: {}}, card=None)
    run = upload(capsys, kernel)
    assert run.code == 0, run.err
    assert sorted(hub.files(REPO, "v1")) == [
        GITATTRIBUTES,
        "benchmarks/benchmark_relu.py",
        "build/torch-cpu/__init__.py",
        "build/torch-cpu/_ops.py",
        "build/torch-cpu/layers/__init__.py",
        "build/torch-cpu/metadata.json",
        "docs/notes.md",
    ]
    assert hub.resolve(REPO) == main_before  # no card: main untouched


def test_existing_branch_replaces_only_the_uploaded_variants(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = write_kernel(
        tmp_path / "first", benchmarks={"benchmark_relu.py": BENCHMARK, "benchmark_old.py": "old = 1\n"}
    )
    assert upload(capsys, first).code == 0
    cuda_before = {p: b for p, b in hub.files(REPO, "v1").items() if p.startswith(f"build/{CUDA}/")}
    main_before = hub.resolve(REPO)

    rebuilt = tmp_path / "rebuilt"
    write_kernel(
        rebuilt,
        {CPU: {"files": {"__init__.py": "from ._ops import ops\n", "_ops.py": "ops = 'new ' + __name__\n"}}},
        tag="b",
    )
    hub.clear_requests()
    run = upload(capsys, rebuilt)
    assert run.code == 0, run.err
    files = hub.files(REPO, "v1")
    assert {p: b for p, b in files.items() if p.startswith(f"build/{CUDA}/")} == cuda_before
    assert sorted(p for p in files if p.startswith(f"build/{CPU}/")) == [
        "build/torch-cpu/__init__.py",
        "build/torch-cpu/_ops.py",
        "build/torch-cpu/metadata.json",
    ]  # layers/__init__.py was stale
    assert files[f"build/{CPU}/_ops.py"] == b"ops = 'new ' + __name__\n"
    assert "benchmarks/benchmark_old.py" not in files
    assert hub.resolve(REPO) == main_before  # the card did not change: no commit on main
    assert sorted(committed_paths(hub)) == [
        "benchmarks/benchmark_old.py",
        "build/torch-cpu/__init__.py",
        "build/torch-cpu/_ops.py",
        "build/torch-cpu/layers/__init__.py",
        "build/torch-cpu/metadata.json",
    ]  # the unchanged benchmark and the untouched variant are not sent again


# --- batches and pull requests -------------------------------------------------------------------------


def test_batches_of_a_lowered_size(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(upload_module, "MAX_OPERATIONS_PER_COMMIT", 4)
    kernel = write_kernel(tmp_path / "relu")  # 8 variant files + 1 benchmark = 9 operations
    assert upload(capsys, kernel).code == 0
    assert history(hub, "v1") == [
        "Upload 2 variant(s) with kernel-builder 0.1.0 (batch 3/3)",
        "Upload 2 variant(s) with kernel-builder 0.1.0 (batch 2/3)",
        "Upload 2 variant(s) with kernel-builder 0.1.0 (batch 1/3)",
        "initial commit",
    ]
    commits = [r for r in hub.requests if r.method == "POST" and "/commit/" in r.path]
    assert [r.path for r in commits] == [f"/api/kernels/{REPO}/commit/v1"] * 3 + [
        f"/api/kernels/{REPO}/commit/main"
    ]
    assert committed_paths(hub)[:9] == sorted(committed_paths(hub)[:9])  # sorted by path across batches


def test_create_pr_batches_land_on_the_pull_request(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert upload(capsys, write_kernel(tmp_path / "first")).code == 0
    v1, main = hub.resolve(REPO, "v1"), hub.resolve(REPO)
    monkeypatch.setattr(upload_module, "MAX_OPERATIONS_PER_COMMIT", 2)
    changed = write_kernel(
        tmp_path / "changed",
        {CPU: {}, CUDA: {}},
        tag="c",
        card=CARD + "\nMore.\n",
    )
    hub.clear_requests()
    report = tmp_path / "pr.json"
    run = upload(capsys, changed, "--create-pr", "--output-json", str(report))
    assert run.code == 0, run.err
    assert (hub.resolve(REPO, "v1"), hub.resolve(REPO)) == (v1, main)  # the branches did not move
    assert hub.pull_requests(REPO) == {1: hub.resolve(REPO, "refs/pr/1"), 2: hub.resolve(REPO, "refs/pr/2")}
    # Two metadata.json files changed (their ids): one batch, opening PR 1 against v1; the card opens PR 2.
    assert (
        hub.files(REPO, "refs/pr/1")[f"build/{CPU}/metadata.json"]
        == (changed / "build" / CPU / "metadata.json").read_bytes()
    )
    assert hub.files(REPO, "refs/pr/2")["README.md"] == (CARD + "\nMore.\n").encode()
    assert read_json(report) == {
        "status": "pull_request_created",
        "repo_id": REPO,
        "branch": "v1",
        "url": f"{hub.url}/kernels/{REPO}/tree/v1",
        "pull_requests": [
            {"branch": "v1", "url": f"{hub.url}/kernels/{REPO}/discussions/1"},
            {"branch": "main", "url": f"{hub.url}/kernels/{REPO}/discussions/2"},
        ],
        "missing": [],
    }
    assert f"  v1: {hub.url}/kernels/{REPO}/discussions/1" in run.out

    more = write_kernel(tmp_path / "more", {CPU: {}, CUDA: {}}, tag="d", card=None, benchmarks={})
    hub.clear_requests()
    assert upload(capsys, more, "--create-pr").code == 0
    # 2 metadata.json changes and the stale benchmark: 3 operations, 2 batches; the second goes to refs/pr/3.
    posted = [r.raw_path for r in hub.requests if r.method == "POST" and "/commit/" in r.raw_path]
    assert posted == [
        f"/api/kernels/{REPO}/commit/v1?create_pr=1",
        f"/api/kernels/{REPO}/commit/refs%2Fpr%2F3",
    ]
    assert history(hub, "refs/pr/3")[:2] == [
        "Upload 2 variant(s) with kernel-builder 0.1.0 (batch 2/2)",
        "Upload 2 variant(s) with kernel-builder 0.1.0 (batch 1/2)",
    ]


def test_create_pr_needs_the_repo_and_the_branch(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = write_kernel(tmp_path / "relu")
    run = upload(capsys, kernel, "--create-pr")
    assert run.code == 1
    assert run.err == (
        f"error: --create-pr needs an existing repository, and kernel repo {REPO} does not exist on {hub.url}; "
        f"upload without --create-pr to create it\n"
    )
    hub.create_repo(REPO)
    run = upload(capsys, kernel, "--create-pr", "--branch", "v9")
    assert run.code == 1
    assert run.err == (
        f"error: --create-pr needs an existing branch, and {REPO} has no branch v9; upload without "
        f"--create-pr to create it\n"
    )
    assert writes(hub) == []


# --- hygiene -------------------------------------------------------------------------------------------


def test_bytecode_and_hidden_files_are_never_sent(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    variant = kernel / "build" / CPU
    (variant / "__pycache__").mkdir()
    (variant / "__pycache__" / "_ops.cpython-312.pyc").write_bytes(b"\0bytecode")
    (variant / "layers" / "old.pyc").write_bytes(b"\0")
    (variant / "layers" / "old.pyo").write_bytes(b"\0")
    (variant / ".env").write_text("HF_TOKEN=hf_leak\n")
    (variant / ".git").mkdir()
    (variant / ".git" / "config").write_text("[core]\n")
    (kernel / "build" / ".torch-cpu.tmp-1").mkdir()
    (kernel / "build" / ".torch-cpu.tmp-1" / "metadata.json").write_text("{}")
    run = upload(capsys, kernel)
    assert run.code == 0, run.err
    assert run.err.splitlines()[:3] == [
        "warning: .torch-cpu.tmp-1: hidden directory (a build's temporary?), not uploaded",
        "warning: torch-cpu/.env: hidden path, not uploaded",
        "warning: torch-cpu/.git: hidden path, not uploaded",
    ]
    sent = committed_paths(hub)
    assert sorted(sent) == sorted(
        [
            "README.md",
            "benchmarks/benchmark_relu.py",
            "build/torch-cpu/__init__.py",
            "build/torch-cpu/_ops.py",
            "build/torch-cpu/layers/__init__.py",
            "build/torch-cpu/metadata.json",
        ]
    )
    assert not any(b"hf_leak" in r.body for r in hub.requests)


def test_links_inside_the_variants_directory_are_followed(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = tmp_path / "relu"
    shared = kernel / "build" / "shared.py"
    shared.parent.mkdir(parents=True)
    shared.write_text("SHARED = 1\n")
    variant = kernel / "build" / CPU
    variant.mkdir()
    os.symlink(shared, variant / "shared.py")
    write_kernel(kernel, {CPU: {}})  # the digest covers the linked file
    assert upload(capsys, kernel).code == 0
    assert hub.files(REPO, "v1")[f"build/{CPU}/shared.py"] == b"SHARED = 1\n"


def test_a_link_leaving_the_tree_aborts_before_any_write(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = tmp_path / "home" / ".cache" / "token"
    secret.parent.mkdir(parents=True)
    secret.write_text("hf_secret")
    kernel = write_kernel(tmp_path / "relu", {CPU: {}, CUDA: {}})
    os.symlink(secret, kernel / "build" / CUDA / "token.txt")
    run = upload(capsys, kernel)
    assert run.code == 1
    real = os.path.realpath(kernel / "build")
    assert run.err == (
        f"error: refusing to upload from {kernel / 'build'}:\n"
        f"  torch-cuda/token.txt: symbolic link {kernel / 'build' / CUDA / 'token.txt'} points to "
        f"{os.path.realpath(secret)}, outside {real}; refusing to read it\n"
    )
    assert hub.requests == []  # refused before the first request, not only before the first write


def test_dry_run_changes_nothing(hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    report = tmp_path / "dry.json"
    run = upload(capsys, kernel, "--dry-run", "--output-json", str(report))
    assert run.code == 0, run.err
    sizes = {path: len(data) for path, data in variant_files(kernel / "build" / CPU, f"build/{CPU}").items()}
    assert run.out == "\n".join(
        [
            "dry run: nothing was changed",
            f"upload to kernel repo {REPO}, branch v1 ({hub.url}/kernels/{REPO}/tree/v1)",
            f"  create repository {REPO} (public)",
            "  create branch v1 from the head of main",
            f"  add    benchmarks/benchmark_relu.py ({len(BENCHMARK)} B) to v1",
            *(f"  add    {path} ({size} B) to v1" for path, size in sorted(sizes.items())),
            f"  add    README.md ({len(CARD)} B) to main",
            "checks:",
            "  1 variant(s): names, metadata.json, package and digest checked",
            "  check-abi: no findings",
            f"  required variants: not checked (no build.toml in {kernel})",
            "",
        ]
    )
    assert read_json(report)["status"] == "dry_run"
    assert writes(hub) == []

    assert upload(capsys, kernel).code == 0
    hub.commit(REPO, {"build/torch-cpu/stale.py": "x"}, branch="v1")
    hub.clear_requests()
    run = upload(capsys, kernel, "--dry-run")
    assert run.out.splitlines()[2:5] == [
        "  delete build/torch-cpu/stale.py from v1",
        "  5 file(s) unchanged on v1",
        "  1 file(s) unchanged on main",
    ]
    assert writes(hub) == []


def test_no_changes_and_the_token_is_never_printed(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "hf_VerySecretTokenValue123"
    monkeypatch.setenv("HF_TOKEN", token)
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    report = tmp_path / "report.json"
    runs = [upload(capsys, kernel, "--output-json", str(report))]
    assert read_json(report)["status"] == "uploaded"
    head = hub.resolve(REPO, "v1")
    hub.clear_requests()
    runs.append(upload(capsys, kernel, "--output-json", str(report)))
    assert runs[-1].out == f"no changes: the Hub already has these files: {hub.url}/kernels/{REPO}/tree/v1\n"
    assert read_json(report)["status"] == "no_changes"
    assert hub.resolve(REPO, "v1") == head and writes(hub) == []
    runs.append(upload(capsys, kernel, "--dry-run", "--debug"))
    hub.fail_with_500(f"/api/kernels/{REPO}/refs")
    runs.append(upload(capsys, kernel))
    assert runs[-1].code == 1 and runs[-1].err.startswith(
        f"error: upload to {REPO} failed: {REPO}: list the branches on {hub.url} failed: the Hub answered HTTP 500"
    )
    for run in runs:
        assert token not in run.out + run.err
    assert token in hub.requests[-1].headers["authorization"]  # it was used, only never shown


# --- refusals ------------------------------------------------------------------------------------------


def test_mixed_metadata_versions_are_refused(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}, CUDA: {"extra": {"version": 2}}})
    run = upload(capsys, kernel)
    assert run.code == 1
    assert run.err == (
        f"error: the variants in {kernel / 'build'} are builds of different versions (torch-cpu: 1, "
        f"torch-cuda: 2); rebuild them from one version of the kernel before uploading\n"
    )
    assert hub.requests == []


@pytest.mark.parametrize(
    ("setup", "problem"),
    [
        (
            lambda v: write_variant(v.parent / "cuda-fast", backend="cuda"),
            "cuda-fast: not a variant name (",
        ),
        (
            lambda v: (v / "metadata.json").write_text('{"name": "relu"}'),
            f"{CPU}: invalid metadata.json: ",
        ),
        (
            lambda v: write_variant(v, files={"_ops.py": "ops = 1\n"}) and (v / "__init__.py").unlink(),
            f"{CPU}: no package __init__.py (tried ",
        ),
        (
            lambda v: (v / "_ops.py").write_text("ops = 'tampered'\n"),
            f"{CPU}: files do not match the digest in metadata.json: _ops.py: mismatch (sha256 is ",
        ),
        (
            lambda v: write_variant(v, extra={"arch-selection": "native"}),
            (
                f'{CPU}: built with --arch native ("arch-selection": "native"), so it runs only on GPUs like '
                f"the build machine's; rebuild it without --arch native to publish it"
            ),
        ),
    ],
    ids=["unparseable-name", "bad-metadata", "no-package", "digest-mismatch", "native-arch"],
)
def test_refused_variants_exit_1_naming_them(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: object, problem: str
) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    setup(kernel / "build" / CPU)  # type: ignore[operator]
    run = upload(capsys, kernel)
    assert run.code == 1
    lines = run.err.splitlines()
    assert lines[0] == f"error: refusing to upload from {kernel / 'build'}:"
    assert any(line.startswith(f"  {problem}") for line in lines[1:]), run.err
    assert hub.requests == []


def test_explicit_arch_builds_upload_only_when_allowed(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``build --arch 9.0`` (a CI smoke build) records "arch-selection": "explicit"; upload refuses it unless
    --allow-explicit-archs."""
    kernel = write_kernel(tmp_path / "relu", {CUDA: {"extra": {"arch-selection": "explicit"}}})
    data = json.loads((kernel / "build" / CUDA / "metadata.json").read_text())
    archs = ", ".join(data["backend"].get("archs", [])) or "none"
    run = upload(capsys, kernel)
    assert run.code == 1
    assert run.err.splitlines()[1:] == [
        f'  {CUDA}: built with an explicit --arch list ("arch-selection": "explicit"; capabilities: {archs}), not '
        "the full list; rebuild it without --arch, or pass --allow-explicit-archs to publish it as it is"
    ]
    assert hub.requests == []
    run = upload(capsys, kernel, "-q", "--allow-explicit-archs")
    assert (run.code, run.err) == (0, "")
    assert hub.requests != []


def test_missing_repo_id_is_a_usage_error(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    run = run_cli(capsys, "upload", str(kernel))
    assert run.code == 2
    assert run.err == (
        f"error: no repository to upload to: pass --repo-id <org>/<name>, or set repo-id in the "
        f"[general.hub] table of {kernel / 'build.toml'}\n"
    )
    run = run_cli(capsys, "upload", str(kernel), "--repo-id", "not-a-repo")
    assert (run.code, run.err) == (
        2,
        "error: invalid repo id 'not-a-repo': expected <org>/<name> (exactly one '/')\n",
    )
    assert hub.requests == []


def test_dirty_builds_warn(hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dirty = {"provenance": {"kernel": {"commit": "0" * 40, "dirty": True}}}
    kernel = write_kernel(tmp_path / "relu", {CPU: {"extra": dirty}})
    run = upload(capsys, kernel, "-q")
    assert run.code == 0
    assert run.err == "warning: torch-cpu: built from uncommitted changes (provenance.kernel.dirty)\n"


def test_variants_from_result_link_into_a_nix_store(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "nix" / "store"
    output = store / ("0" * 32 + "-relu-kernel")
    write_kernel(output, {CPU: {}}, card=None, benchmarks={})
    (store / ("1" * 32 + "-dep")).mkdir()
    (store / ("1" * 32 + "-dep") / "dep.py").write_text("DEP = 1\n")
    kernel = tmp_path / "relu"
    kernel.mkdir()
    os.symlink(output / "build", kernel / "result")
    os.symlink(store / ("1" * 32 + "-dep") / "dep.py", output / "build" / CPU / "dep.py")
    write_variant(output / "build" / CPU, kernel_id="_relu_nix")  # digest with the linked file
    run = upload(capsys, kernel)
    assert run.code == 0, run.err
    assert hub.files(REPO, "v1")[f"build/{CPU}/dep.py"] == b"DEP = 1\n"


def test_forbidden_repo_creation_says_how_to_get_permission(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def forbidden(self: HubServer, request: object) -> object:
        raise HubError(403, 'You don\'t have the rights to create a kernel under the namespace "org"')

    monkeypatch.setattr(HubServer, "_create_repo_route", forbidden)
    run = upload(capsys, write_kernel(tmp_path / "relu", {CPU: {}}))
    assert run.code == 1
    assert run.err == (
        f"error: not allowed to create kernel repo {REPO} on {hub.url} (403). Use a token with write access to "
        f"'org' (HF_TOKEN or `hf auth login`); creating kernel repos may need the organization's permission: "
        f"ask an admin of 'org' to create {REPO} (or to grant you that right), then run the upload again.\n"
    )


# --- the ABI gate: check-abi's verdict decides, --allow-abi-violations overrides and the card says so ----------

NOT_MANYLINUX = """\
#include <memory>
// Copying a shared_ptr references __libc_single_threaded@GLIBC_2.32 with Debian 12's gcc and glibc.
std::shared_ptr<int> keep(const std::shared_ptr<int> &p) { std::shared_ptr<int> q = p; return q; }
"""


def kernel_with_extension(root: Path, extension: bytes) -> Path:
    """A kernel whose CPU variant ships ``extension`` as its compiled ops (digest included)."""
    variant = root / "build" / CPU
    variant.mkdir(parents=True)
    (variant / "_relu_a.abi3.so").write_bytes(extension)
    return write_kernel(root, {CPU: {}})


@pytest.fixture(scope="module")
def non_manylinux_so(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    if shutil.which("g++") is None:
        pytest.skip("needs g++ to build the fixture extension")
    tmp = tmp_path_factory.mktemp("so")
    (tmp / "keep.cpp").write_text(NOT_MANYLINUX)
    subprocess.run(
        ["g++", "-shared", "-fPIC", "-O1", str(tmp / "keep.cpp"), "-o", str(tmp / "keep.so")], check=True
    )
    data = (tmp / "keep.so").read_bytes()
    if b"__libc_single_threaded" not in data:
        pytest.skip("this toolchain does not reference __libc_single_threaded (glibc < 2.32 or GCC < 11)")
    return data


def test_abi_violations_refuse_the_upload_naming_each_symbol(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], non_manylinux_so: bytes
) -> None:
    kernel = kernel_with_extension(tmp_path / "relu", non_manylinux_so)
    run = upload(capsys, kernel)
    assert run.code == 1
    assert run.err.splitlines() == [
        "error: refusing to upload: check-abi rejects 1 variant(s):",
        f"  {CPU}: _relu_a.abi3.so: symbol-version: __libc_single_threaded@GLIBC_2.32 is not allowed by manylinux_2_28",
        (
            "rebuild them with a compliant toolchain (docs/manylinux.md), or pass --allow-abi-violations to upload "
            "them anyway (the card then says so)"
        ),
    ]
    assert hub.requests == []


def test_damaged_extensions_refuse_the_upload(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = kernel_with_extension(tmp_path / "relu", b"")
    run = upload(capsys, kernel)
    assert run.code == 1
    assert f"  {CPU}: _relu_a.abi3.so: unreadable: not a readable ELF shared object: empty file" in run.err
    assert hub.requests == []


def test_allow_abi_violations_uploads_and_the_card_lists_them(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], non_manylinux_so: bytes
) -> None:
    kernel = kernel_with_extension(tmp_path / "relu", non_manylinux_so)
    run = upload(capsys, kernel, "--allow-abi-violations")
    assert run.code == 0, run.err
    assert "warning: uploading despite ABI violations (--allow-abi-violations):" in run.err
    readme = committed_content(hub)["README.md"].decode()
    assert readme.startswith(CARD)
    assert readme.endswith(
        "## ABI check\n\nThese variants were uploaded with `--allow-abi-violations`: `kernel-builder check-abi` "
        "rejects them, and they may fail to load on some systems that Torch supports.\n\n"
        f"- `{CPU}`\n  - _relu_a.abi3.so: symbol-version: __libc_single_threaded@GLIBC_2.32 is not allowed by "
        "manylinux_2_28\n"
    )
    assert (kernel / "build" / "CARD.md").read_text() == CARD  # the local card is left as it was
    assert f"build/{CPU}/_relu_a.abi3.so" in committed_paths(hub)
