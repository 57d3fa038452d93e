"""``kernel-builder lock`` / ``download`` and the locked loads, in both lock formats (docs/loading.md).

The differential tests against upstream's ``kernels`` CLI, the dependency tree and hostile lock files are in
``test_loader_lock_compat.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import runpy
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer, files_from_directory, git_blob_oid
from loader_fixtures import make_env, reset_loader, write_variant
from publish_fixtures import (
    CPU,
    CUDA,
    REPO,
    cpu_machine,  # noqa: F401 (fixture)
    run_cli,
    write_kernel,
    writes,
)

import kernel_builder
from kernel_builder import KernelIntegrityError, KernelNotLockedError, get_loaded_kernels
from kernel_builder.formats import runtime
from kernel_builder.loader import get_locked_kernel, load_kernel, resolve

pytestmark = pytest.mark.usefixtures("cpu_machine")

PROJECT_ROOT = Path(__file__).resolve().parents[1]
TVM = "tvm-ffi01-cu128-x86_64-linux"


def project(tmp_path: Path, dependencies: str = f'"{REPO}" = 1\n', name: str = "app") -> Path:
    directory = tmp_path / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1"\n\n[tool.kernels.dependencies]\n{dependencies}',
        encoding="utf-8",
    )
    return directory


def publish(
    hub: HubServer,
    tmp_path: Path,
    variants: Mapping[str, Mapping[str, Any]],
    *,
    repo_id: str = REPO,
    version: int = 1,
    extra: Mapping[str, bytes | str] | None = None,
    lfs: tuple[str, ...] = (),
) -> str:
    """Seed ``v<version>`` of a repo (created, its org trusted, if new) with written variants."""
    if repo_id not in {r for r in _repos(hub)}:
        hub.add_organization(repo_id.split("/")[0])
        hub.create_repo(repo_id)
    directory = tmp_path / f"seed-{repo_id.replace('/', '-')}-{version}"
    for name, options in variants.items():
        backend = "cuda" if name in (CUDA, TVM) else "cpu"
        kernel_id = f"_relu_{version}_{name.replace('-', '_')}"
        write_variant(directory / name, **{"kernel_id": kernel_id, "backend": backend, **options})
    if f"v{version}" not in hub.branches(repo_id):
        hub.create_branch(repo_id, f"v{version}")
    files = {**files_from_directory(directory, "build"), **(extra or {})}
    return hub.commit(repo_id, files, branch=f"v{version}", lfs=lfs)


def _repos(hub: HubServer) -> list[str]:
    return [repo_id for (_, repo_id) in hub._repos]


def independent_hash(hub: HubServer, sha: str, variant: str, repo_id: str = REPO) -> str:
    """The older format's variant hash recomputed from the double's stored files: sha256 over sorted (relpath, raw object id)."""
    prefix = f"build/{variant}/"
    pairs = []
    for path, data in hub.files(repo_id, sha).items():
        if not path.startswith(prefix) or path.endswith(".pyc") or "__pycache__" in path.split("/"):
            continue
        entry = hub.file_entry(repo_id, path, sha)
        object_id = entry.sha256 if entry.sha256 else git_blob_oid(data)
        assert object_id == (entry.sha256 or entry.oid)
        pairs.append((path[len(prefix) :].encode(), bytes.fromhex(object_id)))
    digest = hashlib.sha256()
    for key, value in sorted(pairs):
        digest.update(key)
        digest.update(value)
    return "sha256-" + digest.hexdigest()


def read_lock(directory: Path) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads((directory / "kernels.lock").read_text(encoding="utf-8"))
    return data


def entry(repo_id: str, sha: str, version: int = 1) -> dict[str, Any]:
    """One entry of the kernels format."""
    return {"dependency": {"repo-id": repo_id, "version": version}, "lock": {"commit": sha}}


def write_legacy_lock(
    hub: HubServer, directory: Path, sha: str, variants: tuple[str, ...], repo_id: str = REPO, **extra: str
) -> list[dict[str, Any]]:
    """An older-format lock (``repo_id``/``sha``/``variants``) with independently computed variant hashes."""
    hashes = {
        name: {"hash": independent_hash(hub, sha, name, repo_id), "hash_type": "git_lfs_concat"}
        for name in variants
    }
    data = [{"repo_id": repo_id, "sha": sha, "variants": hashes, **extra}]
    (directory / "kernels.lock").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return data


def snapshot(sha: str, variant: str, repo_id: str = REPO) -> Path:
    folder = "kernels--" + repo_id.replace("/", "--")
    return Path(os.environ["KERNELS_CACHE"]) / folder / "snapshots" / sha / "build" / variant


# --- the round trip ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_upload_lock_download_and_load_offline(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.add_organization("org")
    assert run_cli(capsys, "upload", str(write_kernel(tmp_path / "relu")), "--repo-id", REPO).code == 0
    sha = hub.resolve(REPO, "v1")
    app = project(tmp_path)

    run = run_cli(capsys, "lock", str(app))
    assert (run.code, run.out) == (0, f"wrote {app / 'kernels.lock'} (1 kernel(s))\n"), run.err
    assert read_lock(app) == [entry(REPO, sha)]

    hub.clear_requests()
    run = run_cli(capsys, "download", str(app))
    assert (run.code, run.out) == (0, f"{REPO} {CPU}: {snapshot(sha, CPU)}\n"), run.err
    fetched = {r.path.split(f"/{sha}/", 1)[1] for r in hub.requests if "/resolve/" in r.path}
    assert fetched == {
        f"build/{CPU}/{name}" for name in ("__init__.py", "_ops.py", "layers/__init__.py", "metadata.json")
    }

    # A program of the project loads it offline, its lock found next to its pyproject.toml (`__main__`).
    (app / "src").mkdir()
    (app / "src" / "main.py").write_text(
        textwrap.dedent(
            """
            import kernel_builder
            module = kernel_builder.load_kernel("org/relu")
            (kernel,) = kernel_builder.get_loaded_kernels()
            print(module.__name__, kernel.repo_info.revision, module.layers.LAYER)
            """
        ),
        encoding="utf-8",
    )
    hub.clear_requests()
    result = subprocess.run(
        [sys.executable, str(app / "src" / "main.py")],
        check=False,
        cwd=tmp_path,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(PROJECT_ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["_relu_a_torch_cpu", sha, "layer"]
    assert hub.requests == []


# --- determinism, errors, defaults -----------------------------------------------------------


def test_lock_is_deterministic_in_the_kernels_format(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = publish(
        hub,
        tmp_path,
        {CPU: {}, TVM: {}},
        extra={
            f"build/{CPU}/__pycache__/_ops.cpython-312.pyc": b"\0",
            f"build/{CPU}/layers/x.pyc": b"\0",
            "build/notes/README.txt": "not a variant",
            "build/CARD.md": "# card",
            "README.md": "# relu",
        },
    )
    publish(hub, tmp_path, {CPU: {}}, version=2)
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    first = (app / "kernels.lock").read_bytes()
    assert run_cli(capsys, "lock", str(app)).code == 0
    assert (app / "kernels.lock").read_bytes() == first
    assert read_lock(app) == [entry(REPO, sha)]  # v1, not the newer v2
    # The kernels loader's own layout: 2-space indentation, no final newline.
    assert first.endswith(b"}\n  }\n]") and b'\n  {\n    "dependency": {\n      "repo-id"' in first


@pytest.mark.parametrize(
    ("pyproject", "message"),
    [
        (
            None,
            (
                "{file}: not found; `kernel-builder lock` reads the kernels to lock from its "
                "[tool.kernels.dependencies] table"
            ),
        ),
        (
            '[project]\nname = "app"\n',
            (
                "{file}: no [tool.kernels.dependencies] table; add one that maps each kernel repo to its major "
                'version, e.g. "kernels-community/relu" = 1'
            ),
        ),
        (
            '[tool.kernels.dependencies]\n"org/relu" = "1"\n',
            (
                '{file}: [tool.kernels.dependencies] "org/relu": expected an integer major version (branch v<N>), '
                "got '1'"
            ),
        ),
        (
            '[tool.kernels.dependencies]\n"org/relu" = true\n',
            (
                '{file}: [tool.kernels.dependencies] "org/relu": expected an integer major version (branch v<N>), '
                "got True"
            ),
        ),
        (
            "[tool.kernels.dependencies]\nrelu = 1\n",
            '{file}: [tool.kernels.dependencies] "relu": not a kernel repo id of the form <org>/<name>',
        ),
        ("[tool.kernels\n", "{file}: cannot read it: "),
    ],
    ids=["no-file", "no-table", "string-version", "bool-version", "bad-repo-id", "bad-toml"],
)
def test_lock_configuration_errors_exit_2(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], pyproject: str | None, message: str
) -> None:
    app = tmp_path / "app"
    app.mkdir()
    if pyproject is not None:
        (app / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    run = run_cli(capsys, "lock", str(app))
    assert run.code == 2
    assert run.err.startswith("error: " + message.format(file=app / "pyproject.toml")), run.err
    assert hub.requests == [] and not (app / "kernels.lock").exists()


def test_lock_and_download_default_to_the_current_directory(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sha = publish(hub, tmp_path, {CPU: {}})
    app = project(tmp_path)
    monkeypatch.chdir(app)
    assert run_cli(capsys, "lock").code == 0
    assert read_lock(app) == [entry(REPO, sha)]
    run = run_cli(capsys, "download")
    assert run.out == f"{REPO} {CPU}: {snapshot(sha, CPU)}\n"
    (app / "kernels.lock").unlink()
    run = run_cli(capsys, "download")
    assert (run.code, run.err) == (
        2,
        "error: kernels.lock: not found; create it with `kernel-builder lock .` first\n",
    )


def test_lock_trust_gate_and_failures(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    publish(hub, tmp_path, {CPU: {}})
    hub.add_organization("shady", trusted=False)
    hub.create_repo("shady/relu")
    app = project(tmp_path, f'"{REPO}" = 1\n"shady/relu" = 1\n"org/missing" = 1\n"{REPO}-two" = 3\n')
    hub.create_repo(f"{REPO}-two")
    run = run_cli(capsys, "lock", str(app))
    assert run.code == 1
    lines = run.err.splitlines()
    assert lines[0].startswith("locked org/relu v1 at ")
    assert lines[1] == (
        f"error: org/missing: 404 Client Error. org/missing: no such repository on {hub.url}; looked it up as a "
        f"kernel repo and as a (legacy) model repo."
    )
    assert (
        lines[2]
        == "error: org/relu-two: org/relu-two has no version 3 (no branch v3); it has no version branches (v<N>) at all"
    )
    assert lines[3] == (
        f"error: shady/relu: cannot load shady/relu: organization 'shady' is not a trusted kernel publisher on "
        f"{hub.url}, and kernels run arbitrary code. If you trust shady, pass trust_remote_code=True "
        f"(kernel-builder lock --trust-remote-code)."
    )
    assert lines[-1] == f"error: {app / 'kernels.lock'} was not written (3 repo(s) failed)"
    assert not (app / "kernels.lock").exists()

    shady = hub.commit("shady/relu", {"build/torch-cpu/__init__.py": "x = 1\n"}, branch="main")
    hub.create_branch("shady/relu", "v1")
    app = project(tmp_path, '"shady/relu" = 1\n', name="trusting")
    assert run_cli(capsys, "lock", str(app), "--trust-remote-code").code == 0
    assert read_lock(app) == [entry("shady/relu", shady)]


def test_lock_follows_redirects_and_pins_the_destination(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sha = publish(hub, tmp_path, {CPU: {}}, repo_id="org/new")
    hub.create_repo("org/old")
    hub.commit("org/old", {"kernel-status.toml": 'kind = "redirect"\ndestination = "org/new"\n'})
    app = project(tmp_path, '"org/old" = 1\n')
    run = run_cli(capsys, "lock", str(app))
    assert run.code == 0
    assert run.err.splitlines()[-2:] == [
        "warning: 'org/old' redirected to 'org/new'",
        "warning: org/old: kernels.lock pins its redirect destination org/new; load it by that id and name it in "
        "[tool.kernels.dependencies]",
    ]
    assert read_lock(app) == [entry("org/new", sha)]  # the kernels format has no room for the old id
    assert run_cli(capsys, "download", str(app)).code == 0
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.clear_requests()
    module = load_kernel("org/new", lockfile=app / "kernels.lock")
    assert module.__name__ == "_relu_1_torch_cpu"
    with pytest.raises(KernelNotLockedError, match="org/old is not locked"):
        load_kernel("org/old", lockfile=app / "kernels.lock")

    # An older-format lock records the id it was redirected from, and still loads by either id.
    write_legacy_lock(hub, app, sha, (CPU,), repo_id="org/new", redirected_from="org/old")
    assert load_kernel("org/old", lockfile=app / "kernels.lock") is module
    assert load_kernel("org/new", lockfile=app / "kernels.lock") is module
    assert hub.requests == []


# --- verification --------------------------------------------------------------------------------------


def test_download_detects_an_edited_lock_hash(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = publish(hub, tmp_path, {CPU: {}, CUDA: {}})
    app = project(tmp_path)
    lock = write_legacy_lock(hub, app, sha, (CPU, CUDA))
    assert run_cli(capsys, "download", str(app)).code == 0  # as written, it verifies
    actual = lock[0]["variants"][CPU]["hash"]
    edited = "sha256-" + "0" * 64
    lock[0]["variants"][CPU]["hash"] = edited
    (app / "kernels.lock").write_text(json.dumps(lock, indent=2) + "\n", encoding="utf-8")
    hub.clear_requests()
    run = run_cli(capsys, "download", str(app))
    assert run.code == 1
    assert run.err.splitlines() == [
        (
            f"error: {REPO} at {sha}: {REPO} at {sha}, variant {CPU}: the files at that commit do not match the "
            f"lock {app / 'kernels.lock'}: expected {edited}, actual {actual}. If the repository was changed on "
            f"purpose, review it and re-create the lock with `kernel-builder lock` ({app / 'kernels.lock'})."
        ),
        "error: 1 of 1 kernel(s) failed",
    ]
    assert not [r for r in hub.requests if "/resolve/" in r.path]  # refused before downloading anything


def test_tampered_download_fails_download_and_load(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = publish(hub, tmp_path, {CPU: {}})
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    assert run_cli(capsys, "download", str(app)).code == 0
    blob = (snapshot(sha, CPU) / "_ops.py").resolve()
    blob.chmod(0o644)
    blob.write_text("ops = 'evil'\n", encoding="utf-8")

    with pytest.raises(KernelIntegrityError) as caught:
        load_kernel(REPO, lockfile=app / "kernels.lock")
    message = str(caught.value)
    evil = git_blob_oid(b"ops = 'evil'\n")
    assert (
        message.splitlines()[1]
        == f"  _ops.py: mismatch (its content hashes to {evil}, its cache blob is {blob.name})"
    )
    assert f"delete {snapshot(sha, CPU).parents[3]}" in message and "verify_digest=False" in message
    assert get_loaded_kernels() == []

    run = run_cli(capsys, "download", str(app))
    assert run.code == 1
    assert "  _ops.py: mismatch (git blob SHA-1 is " in run.err
    assert f"the downloaded files of {snapshot(sha, CPU)} do not match the repository's tree:" in run.err
    # Switched off, the lock hash is not re-derived, and the digest is not checked either.
    assert load_kernel(REPO, lockfile=app / "kernels.lock", verify_digest=False).ops == "evil"


def test_a_cache_of_copies_skips_the_lock_hash_but_not_the_digest(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    sha = publish(hub, tmp_path, {CPU: {}})
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    assert run_cli(capsys, "download", str(app)).code == 0
    variant = snapshot(sha, CPU)
    for link in [p for p in variant.rglob("*") if p.is_symlink()]:
        data = link.read_bytes()
        link.unlink()
        link.write_bytes(data)  # as on a filesystem without symlinks
    caplog.set_level("DEBUG", logger="kernel_builder")
    assert load_kernel(REPO, lockfile=app / "kernels.lock").__name__ == "_relu_1_torch_cpu"
    assert "the cache holds copies, not links to blobs; lock hash not re-derived" in caplog.text

    reset_loader()
    (variant / "_ops.py").write_text("ops = 'evil'\n")
    with pytest.raises(KernelIntegrityError, match="_ops.py: mismatch"):
        load_kernel(REPO, lockfile=app / "kernels.lock")


def test_an_unlocked_variant_is_refused(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = publish(hub, tmp_path, {CPU: {}, CUDA: {}})
    app = project(tmp_path)
    lock = write_legacy_lock(hub, app, sha, (CPU, CUDA))
    assert run_cli(capsys, "download", str(app)).code == 0
    del lock[0]["variants"][CPU]
    (app / "kernels.lock").write_text(json.dumps(lock), encoding="utf-8")
    expected = (
        f"{REPO} at {sha}, variant {CPU} is not covered by the lock {app / 'kernels.lock'} (locked variants: "
        f"{CUDA}). If the repository was changed on purpose, review it and re-create the lock with "
        f"`kernel-builder lock` ({app / 'kernels.lock'}) to cover it."
    )
    run = run_cli(capsys, "download", str(app))
    assert run.code == 1 and run.err.splitlines()[0] == f"error: {REPO} at {sha}: {expected}"
    with pytest.raises(KernelIntegrityError) as caught:
        load_kernel(REPO, lockfile=app / "kernels.lock")
    assert str(caught.value) == expected


def test_all_variants_lfs_files_and_per_repo_failures(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    library = {
        "_relu.abi3.so": "\x7fELF not really\n",
        "__init__.py": "from ._ops import ops\n",
        "_ops.py": "ops = 'ops of ' + __name__\n",
    }
    sha = publish(hub, tmp_path, {CPU: {"files": library}, CUDA: {}}, lfs=(f"build/{CPU}/_relu.abi3.so",))
    publish(hub, tmp_path, {CPU: {}}, repo_id="org/gone")
    app = project(tmp_path, f'"{REPO}" = 1\n"org/gone" = 1\n')
    assert run_cli(capsys, "lock", str(app)).code == 0
    assert read_lock(app) == [entry("org/gone", hub.resolve("org/gone", "v1")), entry(REPO, sha)]
    hub._repos.pop(("kernel", "org/gone"))  # deleted from the Hub after locking
    run = run_cli(capsys, "download", str(app), "--all-variants")
    assert run.code == 1
    assert run.out.splitlines() == [
        f"{REPO} {CPU}: {snapshot(sha, CPU)}",
        f"{REPO} {CUDA}: {snapshot(sha, CUDA)}",
    ]
    assert run.err.splitlines()[-1] == "error: 1 of 2 kernel(s) failed"
    assert any(line.startswith("error: org/gone at ") for line in run.err.splitlines())
    so = snapshot(sha, CPU) / "_relu.abi3.so"
    assert len(Path(os.readlink(so)).name) == 64  # an LFS blob, named by its SHA-256

    # The older format's variant hash covers the LFS file by its SHA-256.
    write_legacy_lock(hub, app, sha, (CPU, CUDA))
    assert run_cli(capsys, "download", str(app), "--all-variants").code == 0
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert load_kernel(REPO, lockfile=app / "kernels.lock").__name__ == "_relu_1_torch_cpu"


# --- the locked loads -----------------------------------------------------------------------------------


def test_load_kernel_needs_the_download(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = publish(hub, tmp_path, {CPU: {}})
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    hub.clear_requests()
    with pytest.raises(FileNotFoundError) as caught:
        load_kernel(REPO, lockfile=app / "kernels.lock")
    assert str(caught.value) == (
        f"{REPO} at {sha} (locked in {app / 'kernels.lock'}) is not in the cache ({os.environ['KERNELS_CACHE']}): "
        f"run `kernel-builder download {app}`"
    )
    assert hub.requests == []  # never the network, even online


def test_get_locked_kernel_downloads_verifies_and_reuses(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sha = publish(hub, tmp_path, {CPU: {}, CUDA: {}})
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    hub.clear_requests()
    module = get_locked_kernel(REPO, lockfile=app / "kernels.lock")
    assert module.__name__ == "_relu_1_torch_cpu"
    (loaded,) = get_loaded_kernels()
    assert loaded.repo_info is not None and (loaded.repo_info.repo_id, loaded.repo_info.revision) == (
        REPO,
        sha,
    )
    fetched = sorted(
        r.path.split(f"/{sha}/", 1)[1] for r in hub.requests if r.method == "GET" and "/resolve/" in r.path
    )
    assert all(path.startswith(f"build/{CPU}/") for path in fetched)
    assert writes(hub) == []

    hub.clear_requests()
    assert get_locked_kernel(REPO, lockfile=app / "kernels.lock") is module
    # Cached: verified from the cache; the commit's variants are listed, nothing is downloaded.
    assert [r.path for r in hub.requests if "/resolve/" in r.path] == []
    write_legacy_lock(hub, app, sha, (CPU, CUDA))  # an older-format lock lists the variants itself
    hub.clear_requests()
    assert get_locked_kernel(REPO, lockfile=app / "kernels.lock") is module
    assert hub.requests == []

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    other = project(tmp_path, '"org/other" = 1\n', name="other")
    (other / "kernels.lock").write_text(
        json.dumps([{"repo_id": "org/other", "sha": "a" * 40, "variants": {}}]), encoding="utf-8"
    )
    with pytest.raises(FileNotFoundError, match=r"org/other at a{40} \(locked in .*\) is not in the cache"):
        get_locked_kernel("org/other", lockfile=other / "kernels.lock")


def test_get_locked_kernel_checks_dependencies_before_downloading(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "einops", None)
    sha = publish(hub, tmp_path, {CPU: {"python_depends": ["einops"]}})
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    hub.clear_requests()
    with pytest.raises(ImportError, match="pip install einops"):
        get_locked_kernel(REPO, lockfile=app / "kernels.lock")
    fetched = [
        r.path.split(f"/{sha}/", 1)[1] for r in hub.requests if r.method == "GET" and "/resolve/" in r.path
    ]
    assert fetched == [f"build/{CPU}/metadata.json"]


# --- caller detection and shipping the lock ------------------------------------------------------------


def test_an_installed_package_uses_the_lock_in_its_metadata(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(hub, tmp_path, {CPU: {}})
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    assert run_cli(capsys, "download", str(app)).code == 0

    site = tmp_path / "site"
    package = site / "relu_helper"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        "import importlib\n\ndef load():\n    return importlib.import_module('relu_helper.loading').MODULE\n"
    )
    (package / "loading.py").write_text(  # runs under importlib's frames, which are skipped like ours
        "import kernel_builder\n\nMODULE = kernel_builder.load_kernel('org/relu')\n"
    )
    info = site / "relu_helper-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: relu-helper\nVersion: 0.1\n")
    (info / "top_level.txt").write_text("relu_helper\n")
    (info / "kernels.lock").write_bytes((app / "kernels.lock").read_bytes())
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.chdir(tmp_path)  # no kernels.lock here: only the metadata's can be found
    monkeypatch.delitem(sys.modules, "relu_helper", raising=False)
    monkeypatch.delitem(sys.modules, "relu_helper.loading", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import relu_helper  # type: ignore[import-not-found]

    assert relu_helper.load().__name__ == "_relu_1_torch_cpu"

    (info / "kernels.lock").write_text("[]\n")
    monkeypatch.delitem(sys.modules, "relu_helper.loading")
    with pytest.raises(KernelNotLockedError) as caught:
        relu_helper.load()
    assert str(caught.value) == (
        f"{REPO} is not locked: no lock file lists it (searched: kernels.lock in the metadata of distribution "
        f"'relu-helper'). Add it to [tool.kernels.dependencies] in the project's pyproject.toml and run "
        f"`kernel-builder lock`, then `kernel-builder download`; or pass lockfile=<path to kernels.lock>."
    )


def test_code_outside_distributions_searches_up_to_the_project(tmp_path: Path, hub: HubServer) -> None:
    app = project(tmp_path)
    script = app / "tools" / "run.py"
    script.parent.mkdir()
    script.write_text("import kernel_builder\nkernel_builder.load_kernel('org/relu')\n")
    with pytest.raises(KernelNotLockedError) as caught:
        runpy.run_path(str(script), run_name="__main__")
    assert str(caught.value).startswith(
        f"{REPO} is not locked: no lock file lists it (searched: {app / 'tools' / 'kernels.lock'}; "
        f"{app / 'kernels.lock'}). "
    )
    assert kernel_builder.load_kernel is load_kernel and kernel_builder.get_locked_kernel is get_locked_kernel


def test_egg_info_writer_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    from kernel_builder.common import toml as tomllib

    declared = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["entry-points"]
    target = declared["egg_info.writers"]["kernels.lock"]
    module_name, _, attribute = target.partition(":")
    writer = getattr(importlib.import_module(module_name), attribute)

    calls: list[tuple[str, str, str | None, bool]] = []

    class Command:
        def write_or_delete_file(
            self, what: str, filename: str, data: str | None, force: bool = False
        ) -> None:
            calls.append((what, filename, data, force))

    app = project(tmp_path)
    monkeypatch.chdir(app)
    writer(Command(), "kernels.lock", "app.egg-info/kernels.lock")
    assert calls == [
        ("kernels.lock", "app.egg-info/kernels.lock", None, True)
    ]  # no lock: remove a stale copy
    (app / "kernels.lock").write_text("[]\n")
    writer(Command(), "kernels.lock", "app.egg-info/kernels.lock")
    assert calls[-1] == ("kernels.lock", "app.egg-info/kernels.lock", "[]\n", True)
    (app / "pyproject.toml").write_text('[project]\nname = "app"\n')
    writer(Command(), "kernels.lock", "app.egg-info/kernels.lock")
    assert len(calls) == 2  # no [tool.kernels.dependencies]: not our business


def test_locked_loads_check_the_gpu_architectures_unless_asked_not_to(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """As kernels 0.19: ``load_kernel`` and ``get_locked_kernel`` check the visible GPUs against a variant's
    architectures (the one chooser's check), and take ``check_arch=False`` to skip it."""
    arch = "torch212-cxx11-cu130-x86_64-linux"
    publish(hub, tmp_path, {arch: {"backend": "cuda", "archs": ["8.0"]}, CUDA: {"backend": "cuda"}})
    app = project(tmp_path)
    assert run_cli(capsys, "lock", str(app)).code == 0
    monkeypatch.setattr(
        runtime, "detect_environment", lambda: make_env(backend="cuda", backend_version=(13, 0))
    )
    monkeypatch.setattr(resolve, "probe_gpus", lambda backend: [(9, 0)])
    lock = app / "kernels.lock"
    assert (
        get_locked_kernel(REPO, lockfile=lock).__name__ == "_relu_1_torch_cuda"
    )  # the 8.0 build does not run
    reset_loader()
    assert (
        get_locked_kernel(REPO, lockfile=lock, check_arch=False).__name__
        == f"_relu_1_{arch.replace('-', '_')}"
    )
    reset_loader()
    assert load_kernel(REPO, lockfile=lock).__name__ == "_relu_1_torch_cuda"
    reset_loader()
    assert load_kernel(REPO, lockfile=lock, check_arch=False).__name__ == f"_relu_1_{arch.replace('-', '_')}"
