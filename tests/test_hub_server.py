"""The Hub test double, driven by the real ``huggingface_hub`` client (docs/loading.md).

Object ids are checked against ``git`` itself, error codes against the client's exception types, and every
write route the upload command will use against ``HfApi``'s own calls.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hub_server import GITATTRIBUTES, HubServer, git_blob_oid, lfs_pointer
from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    get_session,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import (
    EntryNotFoundError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.hf_api import RepoFile, RepoFolder

FILES: dict[str, bytes | str] = {
    "README.md": "# relu\n",
    "build/torch-cpu/__init__.py": "from ._ops import ops\n",
    "build/torch-cpu/_ops.py": "ops = 1\n",
    "build/torch-cpu/layers/__init__.py": "",
    "build/torch-cuda/__init__.py": "x = 2\n",
    "weights.bin": bytes(range(256)) * 40,
}


@pytest.fixture
def api(hub: HubServer) -> HfApi:
    return HfApi(endpoint=hub.url)


@pytest.fixture
def seeded(hub: HubServer) -> str:
    hub.create_repo("org/relu")
    return hub.commit("org/relu", FILES, lfs={"weights.bin"})


def _git(cwd: Path, *args: str, stdin: bytes | None = None) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=True)
    return result.stdout.decode().strip()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git to compute reference ids")


# --- routes and errors  -------------------------------------------------------------------------


def test_unknown_route_is_501_naming_it(hub: HubServer, api: HfApi) -> None:
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(f"{hub.url}/api/spaces/org/app/secrets")
    assert caught.value.code == 501
    assert b"route not implemented by the test Hub: GET /api/spaces/org/app/secrets" in caught.value.read()
    with pytest.raises(HfHubHTTPError) as error:
        api.space_info("org/app")
    assert error.value.response.status_code == 501
    assert "route not implemented by the test Hub: GET /api/spaces/org/app" in str(error.value)


def test_404_codes_map_to_client_exceptions(hub: HubServer, api: HfApi, seeded: str) -> None:
    with pytest.raises(RepositoryNotFoundError):
        api.repo_info("org/missing", repo_type="kernel")
    with pytest.raises(RepositoryNotFoundError):  # kernel and model repos are separate namespaces
        api.model_info("org/relu")
    with pytest.raises(RevisionNotFoundError):
        api.repo_info("org/relu", revision="v9", repo_type="kernel")
    with pytest.raises(RevisionNotFoundError):
        list(api.list_repo_tree("org/relu", revision="f" * 40, repo_type="kernel"))
    with pytest.raises(RemoteEntryNotFoundError):
        list(api.list_repo_tree("org/relu", path_in_repo="nope", repo_type="kernel"))
    with pytest.raises(RemoteEntryNotFoundError):
        hf_hub_download("org/relu", "nope.py", repo_type="kernel", endpoint=hub.url)
    assert not api.file_exists("org/relu", "nope.py", repo_type="kernel")
    assert not api.file_exists("org/missing", "README.md", repo_type="kernel")
    assert api.file_exists("org/relu", "README.md", repo_type="kernel", revision=seeded)
    codes = [(r.method, r.path) for r in hub.requests]
    assert ("GET", "/api/kernels/org/missing") in codes
    assert ("HEAD", "/kernels/org/relu/resolve/main/nope.py") in codes


def test_fail_with_500_switch(hub: HubServer, api: HfApi) -> None:
    hub.add_organization("org")
    hub.fail_with_500("/api/organizations/")
    with pytest.raises(HfHubHTTPError) as caught:
        api.get_organization_overview("org")
    assert caught.value.response.status_code == 500
    hub.fail_with_500(None)
    assert api.get_organization_overview("org").name == "org"


def test_organization_overview(hub: HubServer, api: HfApi) -> None:
    hub.add_organization("trusted", fullname="Trusted Org")
    hub.add_organization("plain", trusted=None)
    overview = api.get_organization_overview("trusted")
    assert (overview.name, overview.fullname, vars(overview)["trustedKernelPublisher"]) == (
        "trusted",
        "Trusted Org",
        True,
    )
    assert not hasattr(api.get_organization_overview("plain"), "trustedKernelPublisher")
    with pytest.raises(HfHubHTTPError) as caught:
        api.get_organization_overview("nobody")
    assert caught.value.response.status_code == 404


# --- object ids, sizes and headers --------------------------------------------------------------------------


@needs_git
def test_oids_are_git_blob_and_tree_ids(tmp_path: Path, hub: HubServer, api: HfApi, seeded: str) -> None:
    work = tmp_path / "git"
    work.mkdir()
    _git(work, "init", "-q")
    for path, content in FILES.items():
        data = content.encode() if isinstance(content, str) else content
        if path == "weights.bin":
            data = lfs_pointer(data)  # git stores the pointer of an LFS file
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_bytes(data)
    (work / ".gitattributes").write_text(GITATTRIBUTES)
    _git(work, "add", "-A")
    tree = _git(work, "write-tree")

    entries = {e.path: e for e in api.list_repo_tree("org/relu", recursive=True, repo_type="kernel")}
    assert len(entries) == 11
    for path, entry in entries.items():
        oid = entry.tree_id if isinstance(entry, RepoFolder) else entry.blob_id
        assert oid == _git(work, "rev-parse", f"{tree}:{path}"), path
    readme = entries["README.md"]
    assert isinstance(readme, RepoFile)
    assert (readme.size, readme.lfs) == (7, None)
    assert (
        readme.blob_id == git_blob_oid(b"# relu\n") == _git(work, "hash-object", "--stdin", stdin=b"# relu\n")
    )
    weights = entries["weights.bin"]
    content = bytes(range(256)) * 40
    assert isinstance(weights, RepoFile) and weights.lfs is not None
    assert (weights.size, weights.lfs.size, weights.lfs.pointer_size) == (
        10240,
        10240,
        len(lfs_pointer(content)),
    )
    assert weights.lfs.sha256 == hashlib.sha256(content).hexdigest()


def test_download_headers_cache_blobs_and_ranges(hub: HubServer, seeded: str, tmp_path: Path) -> None:
    content = bytes(range(256)) * 40
    cache = tmp_path / "cache"
    regular = Path(
        hf_hub_download("org/relu", "README.md", repo_type="kernel", cache_dir=cache, endpoint=hub.url)
    )
    lfs = Path(
        hf_hub_download("org/relu", "weights.bin", repo_type="kernel", cache_dir=cache, endpoint=hub.url)
    )
    folder = cache / "kernels--org--relu"
    assert regular == folder / "snapshots" / seeded / "README.md"
    assert regular.resolve() == folder / "blobs" / git_blob_oid(b"# relu\n")
    assert lfs.resolve() == folder / "blobs" / hashlib.sha256(content).hexdigest()
    assert lfs.read_bytes() == content
    assert (folder / "refs" / "main").read_text() == seeded  # by name: the client records the ref

    session = get_session()
    head = session.head(f"{hub.url}/kernels/org/relu/resolve/main/weights.bin")
    assert head.headers["X-Repo-Commit"] == seeded
    assert head.headers["X-Linked-Etag"] == f'"{hashlib.sha256(content).hexdigest()}"'
    assert head.headers["X-Linked-Size"] == head.headers["Content-Length"] == "10240"
    assert head.headers["ETag"] == f'"{git_blob_oid(lfs_pointer(content))}"'
    part = session.get(
        f"{hub.url}/kernels/org/relu/resolve/{seeded}/weights.bin", headers={"Range": "bytes=10-19"}
    )
    assert (part.status_code, part.content, part.headers["Content-Range"]) == (
        206,
        content[10:20],
        "bytes 10-19/10240",
    )
    tail = session.get(f"{hub.url}/kernels/org/relu/resolve/main/weights.bin", headers={"Range": "bytes=-4"})
    assert (tail.status_code, tail.content) == (206, content[-4:])
    bad = session.get(f"{hub.url}/kernels/org/relu/resolve/main/README.md", headers={"Range": "bytes=99-"})
    assert bad.status_code == 416


def test_snapshot_with_patterns_requests_only_matching_files(
    hub: HubServer, seeded: str, tmp_path: Path
) -> None:
    hub.clear_requests()
    snapshot = snapshot_download(
        "org/relu",
        repo_type="kernel",
        revision=seeded,
        cache_dir=tmp_path,
        endpoint=hub.url,
        allow_patterns=["build/torch-cpu/*"],
    )
    files = sorted(p.relative_to(snapshot).as_posix() for p in Path(snapshot).rglob("*") if p.is_file())
    assert files == [
        "build/torch-cpu/__init__.py",
        "build/torch-cpu/_ops.py",
        "build/torch-cpu/layers/__init__.py",
    ]
    fetched = {r.path.split(f"/{seeded}/", 1)[1] for r in hub.requests if "/resolve/" in r.path}
    assert fetched == set(files)


def test_tree_pagination_and_expand(hub: HubServer, api: HfApi, seeded: str) -> None:
    hub.page_size = 2
    hub.clear_requests()
    paths = [e.path for e in api.list_repo_tree("org/relu", recursive=True, repo_type="kernel")]
    assert len(paths) == 11 and paths == sorted(paths)
    assert len(hub.requests) == 6
    assert hub.requests[1].query["cursor"] == "2"
    later = hub.commit("org/relu", {"README.md": "# relu v2\n"}, message="docs")
    expanded = {e.path: e for e in api.list_repo_tree("org/relu", expand=True, repo_type="kernel")}
    assert expanded["README.md"].last_commit is not None and expanded["README.md"].last_commit.oid == later
    assert expanded["README.md"].last_commit.title == "docs"
    build = expanded["build"].last_commit
    assert build is not None and build.oid == seeded


def test_info_and_refs(hub: HubServer, api: HfApi, seeded: str) -> None:
    hub.create_branch("org/relu", "v1")
    hub.create_tag("org/relu", "release")
    moved = hub.commit("org/relu", {"new.txt": "n"}, branch="v1")
    info = api.kernel_info("org/relu", revision="v1")
    assert (info.id, info.sha, info.private) == ("org/relu", moved, False)
    assert api.repo_info("org/relu", repo_type="kernel", revision=seeded).sha == seeded  # still addressable
    assert api.repo_info("org/relu", repo_type="kernel", revision="release").sha == seeded
    refs = api.list_repo_refs("org/relu", repo_type="kernel")
    assert [(b.name, b.ref, b.target_commit) for b in refs.branches] == [
        ("main", "refs/heads/main", seeded),
        ("v1", "refs/heads/v1", moved),
    ]
    assert [(t.name, t.target_commit) for t in refs.tags] == [("release", seeded)]


def test_model_repos(hub: HubServer, api: HfApi, tmp_path: Path) -> None:
    hub.create_repo("org/legacy", repo_type="model")
    sha = hub.commit("org/legacy", {"build/torch-cpu/x.py": "y"}, repo_type="model")
    assert api.model_info("org/legacy").sha == sha
    with pytest.raises(RepositoryNotFoundError):
        api.kernel_info("org/legacy")
    path = hf_hub_download("org/legacy", "build/torch-cpu/x.py", cache_dir=tmp_path, endpoint=hub.url)
    assert Path(path).read_text() == "y"
    assert ("HEAD", "/org/legacy/resolve/main/build/torch-cpu/x.py") in [
        (r.method, r.path) for r in hub.requests
    ]


# --- write routes, through HfApi ----------------------------------------------------------------------------


def test_create_repo_and_branches(hub: HubServer, api: HfApi) -> None:
    url = api.create_repo("org/new", repo_type="kernel", private=True)
    assert (url, url.repo_type, url.repo_id) == (f"{hub.url}/kernels/org/new", "kernel", "org/new")
    first = hub.resolve("org/new")
    assert hub.files("org/new") == {".gitattributes": GITATTRIBUTES.encode()}
    assert hub.commit_info("org/new").parent is None
    assert api.create_repo("org/new", repo_type="kernel", exist_ok=True).repo_id == "org/new"
    with pytest.raises(HfHubHTTPError) as caught:
        api.create_repo("org/new", repo_type="kernel")
    assert caught.value.response.status_code == 409
    assert api.kernel_info("org/new").private is True
    api.create_repo("org/new")  # a model repo of the same name is another repository
    assert api.model_info("org/new").id == "org/new"

    api.create_branch("org/new", branch="v1", repo_type="kernel")
    api.create_branch("org/new", branch="v1", repo_type="kernel", exist_ok=True)
    with pytest.raises(HfHubHTTPError) as caught:
        api.create_branch("org/new", branch="v1", repo_type="kernel")
    assert caught.value.response.status_code == 409
    second = hub.commit("org/new", {"a.txt": "a"})
    api.create_branch("org/new", branch="old", revision=first, repo_type="kernel")
    assert hub.branches("org/new") == {"main": second, "v1": first, "old": first}
    with pytest.raises(RevisionNotFoundError):
        api.create_branch("org/new", branch="bad", revision="nope", repo_type="kernel")


def test_create_commit_adds_deletes_and_skips_unchanged(
    hub: HubServer, api: HfApi, caplog: pytest.LogCaptureFixture
) -> None:
    api.create_repo("org/up", repo_type="kernel")
    info = api.create_commit(
        "org/up",
        [
            CommitOperationAdd("README.md", b"---\nlicense: apache-2.0\n---\n# up\n"),
            CommitOperationAdd("build/torch-cpu/__init__.py", b"x = 1\n"),
            CommitOperationAdd("build/torch-cpu/sub/a.py", b"a\n"),
            CommitOperationAdd("build/torch-cuda/__init__.py", b"y\n"),
        ],
        commit_message="upload",
        repo_type="kernel",
    )
    assert (
        info.oid == hub.resolve("org/up") and info.commit_url == f"{hub.url}/kernels/org/up/commit/{info.oid}"
    )
    assert hub.commit_info("org/up").title == "upload"
    posted = [(r.method, r.path) for r in hub.requests if r.method == "POST"]
    assert posted == [
        ("POST", "/api/repos/create"),
        ("POST", "/api/validate-yaml"),
        ("POST", "/api/kernels/org/up/preupload/main"),
        ("POST", "/api/kernels/org/up/commit/main"),
    ]

    api.create_commit(
        "org/up",
        [CommitOperationDelete("build/torch-cpu/"), CommitOperationDelete("README.md")],
        commit_message="clean",
        repo_type="kernel",
    )
    assert sorted(hub.files("org/up")) == [".gitattributes", "build/torch-cuda/__init__.py"]
    with pytest.raises(EntryNotFoundError):
        api.create_commit(
            "org/up", [CommitOperationDelete("gone.py")], commit_message="x", repo_type="kernel"
        )

    head = hub.resolve("org/up")
    caplog.set_level(logging.INFO, logger="huggingface_hub")
    unchanged = api.create_commit(
        "org/up",
        [CommitOperationAdd("build/torch-cuda/__init__.py", b"y\n")],
        commit_message="same",
        repo_type="kernel",
    )
    assert unchanged.oid == head == hub.resolve("org/up")  # the preupload oid let the client skip it
    assert "No files have been modified since last commit" in caplog.text


def test_stale_parent_commit_is_412(hub: HubServer, api: HfApi) -> None:
    first = hub.create_repo("org/up")
    hub.commit("org/up", {"a": "a"})
    with pytest.raises(HfHubHTTPError) as caught:
        api.create_commit(
            "org/up",
            [CommitOperationAdd("b", b"b")],
            commit_message="m",
            repo_type="kernel",
            parent_commit=first,
        )
    assert caught.value.response.status_code == 412


def test_create_pr_and_commit_to_its_ref(hub: HubServer, api: HfApi) -> None:
    hub.create_repo("org/up")
    base = hub.create_branch("org/up", "v2")
    info = api.create_commit(
        "org/up",
        [CommitOperationAdd("build/x.py", b"x")],
        commit_message="pr",
        repo_type="kernel",
        revision="v2",
        create_pr=True,
    )
    assert info.pr_url == f"{hub.url}/kernels/org/up/discussions/1"
    assert info.pr_revision == "refs/pr/1" and info.pr_num == 1
    assert hub.resolve("org/up", "v2") == base  # the branch itself did not move
    api.create_commit(
        "org/up",
        [CommitOperationAdd("build/y.py", b"y")],
        commit_message="more",
        repo_type="kernel",
        revision="refs/pr/1",
    )
    assert sorted(hub.files("org/up", "refs/pr/1")) == [".gitattributes", "build/x.py", "build/y.py"]
    assert "/api/kernels/org/up/commit/refs%2Fpr%2F1" in [r.raw_path for r in hub.requests]
    refs = api.list_repo_refs("org/up", repo_type="kernel", include_pull_requests=True)
    assert [(p.ref, p.target_commit) for p in refs.pull_requests or []] == [
        ("refs/pr/1", hub.resolve("org/up", "refs/pr/1"))
    ]
    second = api.create_commit(
        "org/up", [CommitOperationAdd("z", b"z")], commit_message="pr2", repo_type="kernel", create_pr=True
    )
    assert second.pr_revision == "refs/pr/2"


def test_stop_is_idempotent_and_frees_the_port(tmp_path: Path) -> None:
    server = HubServer().start()
    url = server.url
    server.create_repo("org/x")
    server.stop()
    server.stop()
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{url}/api/kernels/org/x", timeout=2)
    assert not os.path.exists(server._storage)
