"""A local test double of the Hugging Face Hub's HTTP API (docs/loading.md), for the test suite only.

:class:`HubServer` serves, on ``127.0.0.1`` and an ephemeral port, the routes that ``huggingface_hub``'s real
client calls for ``list_repo_refs``, ``list_repo_tree``, ``repo_info``, ``file_exists``, ``hf_hub_download``,
``snapshot_download``, ``get_organization_overview``, ``create_repo``, ``create_branch`` and ``create_commit``.
It reproduces what that client relies on: git blob SHA-1 oids and LFS SHA-256 oids with exact sizes, the
``ETag`` / ``X-Linked-Etag`` / ``X-Repo-Commit`` headers, ``Range`` requests, 404s carrying ``X-Error-Code``
(``RepoNotFound``, ``RevisionNotFound``, ``EntryNotFound``), 409s, a 412 for a stale ``parentCommit``, and a 501
naming any route it does not implement. Kernel and model repos are separate namespaces.

Tests seed it through Python (:meth:`HubServer.create_repo`, :meth:`HubServer.commit`,
:meth:`HubServer.create_branch`, :meth:`HubServer.add_organization`), read the :attr:`HubServer.requests` log,
make it fail with :meth:`HubServer.fail_with_500`, and inspect what uploads wrote (:meth:`HubServer.files`).
File contents live in a temporary directory, one file per blob; everything else is in memory under one lock.

The ``hub`` fixture starts one per test and points ``huggingface_hub`` and the loader at it (``HF_ENDPOINT``,
``KERNELS_CACHE``, ``HF_HUB_CACHE``, a dummy ``HF_TOKEN``, no telemetry, no Xet).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import itertools
import json
import os
import re
import select
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

import pytest

__all__ = [
    "FAULTS",
    "Fault",
    "HubError",
    "HubServer",
    "LoggedRequest",
    "files_from_directory",
    "git_blob_oid",
    "hub",
    "lfs_pointer",
]

KERNEL = "kernel"
MODEL = "model"
# URL segments: /api/<plural>/... and /<prefix><org>/<name>/resolve/...
_PLURAL = {"kernels": KERNEL, "models": MODEL}
_PREFIX = {KERNEL: "kernels/", MODEL: ""}
_SHA_RE = re.compile(r"[0-9a-f]{40}")
_PR_RE = re.compile(r"refs/pr/([1-9][0-9]*)")
_RANGE_RE = re.compile(r"bytes=(\d*)-(\d*)")
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

# What the Hub puts in a new repo's first commit: LFS rules for large binary formats (abridged, our own list).
GITATTRIBUTES = "".join(
    f"{pattern} filter=lfs diff=lfs merge=lfs -text\n"
    for pattern in ("*.bin", "*.pt", "*.pth", "*.safetensors", "*.so", "*.tar.gz", "*.zip")
)


# --- git and LFS object ids ---------------------------------------------------------------------------------


def git_blob_oid(data: bytes) -> str:
    """The git blob SHA-1 of ``data``: ``sha1(b"blob <size>\\0" + data)``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def lfs_pointer(data: bytes) -> bytes:
    """The git-LFS pointer file git stores in place of ``data``."""
    digest = hashlib.sha256(data).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{digest}\nsize {len(data)}\n".encode()


def _git_tree_oid(entries: list[tuple[str, bool, str]]) -> str:
    """The git tree SHA-1 of ``(name, is_directory, hex oid)`` entries, in git's order (directories as ``name/``)."""
    body = b"".join(
        (b"40000 " if is_dir else b"100644 ") + name.encode() + b"\0" + bytes.fromhex(oid)
        for name, is_dir, oid in sorted(entries, key=lambda e: e[0] + ("/" if e[1] else ""))
    )
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def files_from_directory(directory: str | os.PathLike[str], prefix: str = "") -> dict[str, bytes]:
    """Every regular file under ``directory`` as ``{prefix/relative/path: bytes}`` (for :meth:`HubServer.commit`)."""
    root = Path(directory)
    base = prefix.strip("/")
    return {
        f"{base}/{path.relative_to(root).as_posix()}"
        if base
        else path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# --- stored state -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredFile:
    """One file of a commit: its git blob id, its size and, if LFS-tracked, the SHA-256 of its content."""

    oid: str
    size: int
    sha256: str | None = None
    pointer_size: int | None = None

    @property
    def key(self) -> str:
        """Where the content is stored: the SHA-256 for LFS files, else the blob id."""
        return self.sha256 or self.oid


@dataclass(frozen=True)
class Commit:
    oid: str
    parent: str | None
    title: str
    description: str
    date: str
    files: Mapping[str, StoredFile]


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    created: str
    commits: dict[str, Commit] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    pull_requests: dict[int, str] = field(default_factory=dict)

    @property
    def url_path(self) -> str:
        return _PREFIX[self.repo_type] + self.repo_id


@dataclass(frozen=True)
class LoggedRequest:
    """One request as the double received it: ``path`` is percent-decoded, ``raw_path`` as sent."""

    method: str
    path: str
    raw_path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: bytes = b""


class HubError(Exception):
    """An HTTP error answer: status, ``X-Error-Code`` (if any) and message."""

    def __init__(self, status: int, message: str, code: str | None = None, commit: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.commit = commit  # X-Repo-Commit of a 404 on a resolved revision


# --- the double ---------------------------------------------------------------------------------------------


class HubServer:
    """An in-process Hub double; :meth:`start` it, seed it, point clients at :attr:`url`, then :meth:`stop` it."""

    #: Entries per page of a tree listing (``expand=true`` pages hold 50, as on the Hub); tests may lower it.
    page_size = 1000

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._storage = Path(tempfile.mkdtemp(prefix="hub-double-"))
        self._repos: dict[tuple[str, str], Repo] = {}
        self._orgs: dict[str, dict[str, Any]] = {}
        self._log: list[LoggedRequest] = []
        self._fail_prefix: str | None = None
        self._faults: list[Fault] = []
        self._stopping = threading.Event()
        self._counter = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()

    # -- lifecycle --

    def start(self) -> HubServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.hub = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="hub-double", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and delete the stored blobs; safe to call twice."""
        self._stopping.set()  # ends every stall at once
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        with self._lock:
            connections, self._connections = self._connections, set()
        for connection in connections:  # idle keep-alive connections of clients' pools
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        shutil.rmtree(self._storage, ignore_errors=True)

    @property
    def url(self) -> str:
        """The endpoint, ``http://127.0.0.1:<port>`` (what ``HF_ENDPOINT`` is set to)."""
        assert self._server is not None, "the double is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # -- request log and failure switch --

    @property
    def requests(self) -> list[LoggedRequest]:
        """Every request received so far, in order (a copy)."""
        with self._lock:
            return list(self._log)

    def clear_requests(self) -> None:
        with self._lock:
            self._log.clear()

    def fail_with_500(self, path_prefix: str | None = "/") -> None:
        """Answer 500 to every request whose decoded path starts with ``path_prefix``; ``None`` recovers.

        Beware: ``huggingface_hub`` retries some calls on 500 with back-off (seconds), e.g. tree listings.
        """
        with self._lock:
            self._fail_prefix = path_prefix

    def inject(
        self,
        fault: str,
        path_prefix: str = "/",
        *,
        times: int = 1,
        seconds: float = 0.0,
        method: str | None = None,
    ) -> Fault:
        """Misbehave on the next ``times`` requests whose decoded path starts with ``path_prefix`` (and whose
        method is ``method``, when given: ``"GET"`` leaves a download's ``HEAD`` alone).

        ``fault`` is one of :data:`FAULTS`: ``stall`` (answer only after ``seconds``), ``drop`` (close the
        connection without an answer), ``truncate`` (announce the whole body, send half, close), ``stall-body``
        (the headers and half the body, then stall ``seconds``), ``trickle`` (the whole body, in 16 pieces spread
        over ``seconds``), ``429`` (with ``Retry-After: 0``) or ``500``. Faults are matched in the order they were injected; the returned
        :class:`Fault` counts the requests it hit.
        """
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r} (expected one of {', '.join(FAULTS)})")
        injected = Fault(fault, path_prefix, times, seconds, method)
        with self._lock:
            self._faults.append(injected)
        return injected

    def _take_fault(self, path: str, method: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if (
                    fault.remaining > 0
                    and path.startswith(fault.path_prefix)
                    and fault.method in (None, method)
                ):
                    fault.remaining -= 1
                    fault.hits += 1
                    return fault
        return None

    def _track(self, connection: socket.socket, open_: bool) -> None:
        with self._lock:
            if open_:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    # -- seeding --

    def add_organization(self, name: str, *, trusted: object = True, fullname: str | None = None) -> None:
        """An organization whose overview reports ``trustedKernelPublisher = trusted`` (``None``: key absent)."""
        overview: dict[str, Any] = {
            "name": name,
            "fullname": fullname or name,
            "avatarUrl": f"https://avatars.invalid/{name}.png",
        }
        if trusted is not None:
            overview["trustedKernelPublisher"] = trusted
        with self._lock:
            self._orgs[name] = overview

    def create_repo(self, repo_id: str, *, repo_type: str = KERNEL, private: bool = False) -> str:
        """A new repo with ``.gitattributes`` committed on ``main``; returns that first commit's SHA."""
        with self._lock:
            if (repo_type, repo_id) in self._repos:
                raise HubError(409, f"{repo_type} repo {repo_id} already exists")
            repo = Repo(repo_type, repo_id, private, _now())
            self._repos[(repo_type, repo_id)] = repo
            data = GITATTRIBUTES.encode()
            commit = self._new_commit(repo, None, "initial commit", "", {".gitattributes": self._store(data)})
            repo.branches["main"] = commit.oid
            return commit.oid

    def commit(
        self,
        repo_id: str,
        files: Mapping[str, bytes | str] | None = None,
        *,
        repo_type: str = KERNEL,
        branch: str = "main",
        lfs: Collection[str] = (),
        delete: Collection[str] = (),
        message: str = "seed",
    ) -> str:
        """Commit ``files`` (paths in ``lfs`` as LFS files) and ``delete`` on ``branch``; returns the new SHA.

        ``branch`` may be ``refs/pr/<n>``. Deleting a missing path raises :class:`HubError`.
        """
        with self._lock:
            repo = self._repo(repo_type, repo_id)
            ref = self._branch_ref(repo, branch)
            parent = repo.commits[self._ref_target(repo, ref)]
            tree = dict(parent.files)
            for path in delete:
                self._delete(tree, path, folder=False, commit=parent.oid)
            for path, content in (files or {}).items():
                data = content.encode() if isinstance(content, str) else content
                tree[_clean_path(path)] = self._store(data, lfs=path in lfs)
            commit = self._new_commit(repo, parent.oid, message, "", tree)
            self._set_ref(repo, ref, commit.oid)
            return commit.oid

    def create_branch(
        self, repo_id: str, branch: str, *, repo_type: str = KERNEL, revision: str = "main"
    ) -> str:
        """A branch at ``revision``; returns its SHA."""
        with self._lock:
            repo = self._repo(repo_type, repo_id)
            if branch in repo.branches:
                raise HubError(409, f"branch {branch} already exists")
            sha = self._resolve(repo, revision)
            repo.branches[branch] = sha
            return sha

    def set_branch_target(self, repo_id: str, branch: str, target: str, *, repo_type: str = KERNEL) -> None:
        """Make ``branch`` report ``target`` as its commit, whatever that string is (a hostile Hub's answer).

        Only the ref listing carries it; requests for ``target`` resolve as for any other revision name.
        """
        with self._lock:
            self._repo(repo_type, repo_id).branches[branch] = target

    def create_tag(self, repo_id: str, tag: str, *, repo_type: str = KERNEL, revision: str = "main") -> str:
        with self._lock:
            repo = self._repo(repo_type, repo_id)
            sha = self._resolve(repo, revision)
            repo.tags[tag] = sha
            return sha

    # -- inspection --

    def resolve(self, repo_id: str, revision: str = "main", *, repo_type: str = KERNEL) -> str:
        """The commit SHA ``revision`` (branch, tag, ``refs/pr/<n>`` or SHA) points at."""
        with self._lock:
            return self._resolve(self._repo(repo_type, repo_id), revision)

    def branches(self, repo_id: str, *, repo_type: str = KERNEL) -> dict[str, str]:
        with self._lock:
            return dict(self._repo(repo_type, repo_id).branches)

    def pull_requests(self, repo_id: str, *, repo_type: str = KERNEL) -> dict[int, str]:
        with self._lock:
            return dict(self._repo(repo_type, repo_id).pull_requests)

    def files(self, repo_id: str, revision: str = "main", *, repo_type: str = KERNEL) -> dict[str, bytes]:
        """Every file at ``revision`` with its content."""
        with self._lock:
            repo = self._repo(repo_type, repo_id)
            tree = repo.commits[self._resolve(repo, revision)].files
            return {path: self._read(entry) for path, entry in sorted(tree.items())}

    def file_entry(
        self, repo_id: str, path: str, revision: str = "main", *, repo_type: str = KERNEL
    ) -> StoredFile:
        with self._lock:
            repo = self._repo(repo_type, repo_id)
            return repo.commits[self._resolve(repo, revision)].files[path]

    def commit_info(self, repo_id: str, revision: str = "main", *, repo_type: str = KERNEL) -> Commit:
        with self._lock:
            repo = self._repo(repo_type, repo_id)
            return repo.commits[self._resolve(repo, revision)]

    # -- internals (callers hold the lock) --

    def _store(self, data: bytes, *, lfs: bool = False) -> StoredFile:
        if lfs:
            pointer = lfs_pointer(data)
            entry = StoredFile(
                git_blob_oid(pointer), len(data), hashlib.sha256(data).hexdigest(), len(pointer)
            )
        else:
            entry = StoredFile(git_blob_oid(data), len(data))
        path = self._storage / entry.key
        if not path.exists():
            path.write_bytes(data)
        return entry

    def _read(self, entry: StoredFile) -> bytes:
        return (self._storage / entry.key).read_bytes()

    def _new_commit(
        self, repo: Repo, parent: str | None, title: str, description: str, files: Mapping[str, StoredFile]
    ) -> Commit:
        seed = f"{repo.repo_type}:{repo.repo_id}:{parent}:{next(self._counter)}:{os.urandom(8).hex()}"
        commit = Commit(
            hashlib.sha1(seed.encode()).hexdigest(), parent, title, description, _now(), dict(files)
        )
        repo.commits[commit.oid] = commit
        return commit

    def _repo(self, repo_type: str, repo_id: str, *, authorized: bool = True) -> Repo:
        repo = self._repos.get((repo_type, repo_id))
        if repo is None or (repo.private and not authorized):
            raise HubError(404, f"{repo_type} repository {repo_id} not found", "RepoNotFound")
        return repo

    def _resolve(self, repo: Repo, revision: str) -> str:
        if _SHA_RE.fullmatch(revision) and revision in repo.commits:
            return revision
        for prefix, refs in (("", repo.branches), ("refs/heads/", repo.branches), ("refs/tags/", repo.tags)):
            if revision.startswith(prefix) and revision[len(prefix) :] in refs:
                return refs[revision[len(prefix) :]]
        if revision in repo.tags:
            return repo.tags[revision]
        match = _PR_RE.fullmatch(revision)
        if match and int(match.group(1)) in repo.pull_requests:
            return repo.pull_requests[int(match.group(1))]
        raise HubError(404, f"invalid revision {revision!r} for {repo.repo_id}", "RevisionNotFound")

    def _branch_ref(self, repo: Repo, revision: str) -> tuple[str, str]:
        """The movable ref a commit to ``revision`` advances: ``("branch", name)`` or ``("pr", number)``."""
        match = _PR_RE.fullmatch(revision)
        if match and int(match.group(1)) in repo.pull_requests:
            return ("pr", match.group(1))
        name = revision.removeprefix("refs/heads/")
        if name in repo.branches:
            return ("branch", name)
        raise HubError(404, f"branch {revision!r} not found in {repo.repo_id}", "RevisionNotFound")

    def _ref_target(self, repo: Repo, ref: tuple[str, str]) -> str:
        return repo.pull_requests[int(ref[1])] if ref[0] == "pr" else repo.branches[ref[1]]

    def _set_ref(self, repo: Repo, ref: tuple[str, str], sha: str) -> None:
        if ref[0] == "pr":
            repo.pull_requests[int(ref[1])] = sha
        else:
            repo.branches[ref[1]] = sha

    def _delete(self, tree: dict[str, StoredFile], path: str, *, folder: bool, commit: str) -> None:
        path = _clean_path(path.rstrip("/")) if path.strip("/") else ""
        if folder:
            doomed = [p for p in tree if not path or p.startswith(path + "/")]
        else:
            doomed = [path] if path in tree else []
        if not doomed:
            what = "folder" if folder else "file"
            raise HubError(404, f"A {what} with this name doesn't exist: {path}", "EntryNotFound", commit)
        for name in doomed:
            del tree[name]

    # -- tree views --

    def _tree_entries(self, commit: Commit, base: str, recursive: bool) -> list[dict[str, Any]]:
        files = commit.files
        if base and not any(p.startswith(base + "/") for p in files):
            raise HubError(404, f"{base} does not exist at {commit.oid}", "EntryNotFound", commit.oid)
        directories: set[str] = set()
        listed: list[dict[str, Any]] = []
        start = len(base) + 1 if base else 0
        for path, entry in files.items():
            if base and not path.startswith(base + "/"):
                continue
            parts = path[start:].split("/")
            for depth in range(1, len(parts)):
                directories.add(path[: start + len("/".join(parts[:depth]))])
                if not recursive:
                    break
            if recursive or len(parts) == 1:
                listed.append(self._file_json(path, entry))
        for directory in directories:
            listed.append(
                {
                    "type": "directory",
                    "oid": self._directory_oid(files, directory),
                    "size": 0,
                    "path": directory,
                }
            )
        return sorted(listed, key=lambda item: str(item["path"]))

    def _file_json(self, path: str, entry: StoredFile) -> dict[str, Any]:
        item: dict[str, Any] = {"type": "file", "oid": entry.oid, "size": entry.size, "path": path}
        if entry.sha256 is not None:
            item["lfs"] = {"oid": entry.sha256, "size": entry.size, "pointerSize": entry.pointer_size}
        return item

    def _directory_oid(self, files: Mapping[str, StoredFile], directory: str) -> str:
        prefix = directory + "/" if directory else ""
        children: dict[str, tuple[bool, str]] = {}
        for path, entry in files.items():
            if not path.startswith(prefix):
                continue
            name, _, rest = path[len(prefix) :].partition("/")
            if rest:
                children[name] = (True, "")
            else:
                children[name] = (False, entry.oid)
        entries = [
            (name, is_dir, self._directory_oid(files, prefix + name) if is_dir else oid)
            for name, (is_dir, oid) in children.items()
        ]
        return _git_tree_oid(entries)

    def _last_commit(self, repo: Repo, head: str, path: str, directory: bool) -> dict[str, str]:
        """The most recent commit (from ``head`` back) that changed ``path``, as ``expand=true`` shows it."""

        def state(commit: Commit) -> object:
            if directory:
                return {p: e for p, e in commit.files.items() if p.startswith(path + "/")}
            return commit.files.get(path)

        commit = repo.commits[head]
        while commit.parent is not None and state(repo.commits[commit.parent]) == state(commit):
            commit = repo.commits[commit.parent]
        return {"id": commit.oid, "title": commit.title, "date": commit.date}

    # -- HTTP dispatch (called by the handler threads) --

    def handle(self, request: LoggedRequest, segments: list[str]) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            self._log.append(request)
            failing = self._fail_prefix is not None and request.path.startswith(self._fail_prefix)
        if failing:
            return _json(500, {"error": "the test Hub was told to fail"})
        try:
            return self._route(request, segments)
        except HubError as error:
            headers = {"X-Error-Message": error.message}
            if error.code:
                headers["X-Error-Code"] = error.code
            if error.commit:
                headers["X-Repo-Commit"] = error.commit
            status, base, body = _json(error.status, {"error": error.message})
            return status, {**base, **headers}, body

    def _route(self, request: LoggedRequest, segs: list[str]) -> tuple[int, dict[str, str], bytes]:
        method = request.method
        if segs[:1] == ["api"]:
            rest = segs[1:]
            if method == "POST" and rest == ["repos", "create"]:
                return self._create_repo_route(request)
            if method == "POST" and rest == ["validate-yaml"]:
                return _json(200, {"errors": [], "warnings": []})
            if method == "GET" and len(rest) == 3 and rest[0] == "organizations" and rest[2] == "overview":
                return self._overview_route(rest[1])
            if len(rest) >= 3 and rest[0] in _PLURAL:
                return self._repo_api_route(request, _PLURAL[rest[0]], f"{rest[1]}/{rest[2]}", rest[3:])
        elif method in ("GET", "HEAD"):
            typed = len(segs) >= 6 and segs[0] == "kernels" and segs[3] == "resolve"
            if typed or (len(segs) >= 5 and segs[2] == "resolve"):
                repo_type, offset = (KERNEL, 1) if typed else (MODEL, 0)
                repo_id = f"{segs[offset]}/{segs[offset + 1]}"
                path = "/".join(segs[offset + 4 :])
                return self._resolve_route(request, repo_type, repo_id, segs[offset + 3], path)
        raise HubError(501, f"route not implemented by the test Hub: {method} {request.path}")

    def _authorized(self, request: LoggedRequest) -> bool:
        return "authorization" in request.headers

    def _repo_api_route(
        self, request: LoggedRequest, repo_type: str, repo_id: str, rest: list[str]
    ) -> tuple[int, dict[str, str], bytes]:
        method = request.method
        with self._lock:
            if method == "GET" and (not rest or (len(rest) == 2 and rest[0] == "revision")):
                repo = self._repo(repo_type, repo_id, authorized=self._authorized(request))
                sha = self._resolve(repo, rest[1] if rest else "main")
                return _json(200, self._info_json(repo, sha))
            if method == "GET" and len(rest) >= 2 and rest[0] == "tree":
                repo = self._repo(repo_type, repo_id, authorized=self._authorized(request))
                return self._tree_route(request, repo, rest[1], "/".join(rest[2:]))
            if method == "GET" and rest == ["refs"]:
                repo = self._repo(repo_type, repo_id, authorized=self._authorized(request))
                return _json(200, self._refs_json(repo, request.query.get("include_prs") == "1"))
            if method == "POST" and len(rest) == 2 and rest[0] == "branch":
                return self._branch_route(request, self._repo(repo_type, repo_id), rest[1])
            if method == "POST" and len(rest) == 2 and rest[0] == "preupload":
                return self._preupload_route(request, self._repo(repo_type, repo_id), rest[1])
            if method == "POST" and len(rest) == 2 and rest[0] == "commit":
                return self._commit_route(request, self._repo(repo_type, repo_id), rest[1])
        raise HubError(501, f"route not implemented by the test Hub: {method} {request.path}")

    # -- read routes --

    def _info_json(self, repo: Repo, sha: str) -> dict[str, Any]:
        commit = repo.commits[sha]
        return {
            "_id": hashlib.sha1(repo.repo_id.encode()).hexdigest()[:24],
            "id": repo.repo_id,
            "author": repo.repo_id.split("/")[0],
            "sha": sha,
            "private": repo.private,
            "gated": False,
            "disabled": False,
            "createdAt": repo.created,
            "lastModified": commit.date,
            "siblings": [{"rfilename": path} for path in sorted(commit.files)],
        }

    def _refs_json(self, repo: Repo, include_prs: bool) -> dict[str, Any]:
        data: dict[str, Any] = {
            "branches": [
                {"name": name, "ref": f"refs/heads/{name}", "targetCommit": sha}
                for name, sha in sorted(repo.branches.items())
            ],
            "tags": [
                {"name": name, "ref": f"refs/tags/{name}", "targetCommit": sha}
                for name, sha in sorted(repo.tags.items())
            ],
            "converts": [],
        }
        if include_prs:
            data["pullRequests"] = [
                {"name": f"refs/pr/{number}", "ref": f"refs/pr/{number}", "targetCommit": sha}
                for number, sha in sorted(repo.pull_requests.items())
            ]
        return data

    def _tree_route(
        self, request: LoggedRequest, repo: Repo, revision: str, path: str
    ) -> tuple[int, dict[str, str], bytes]:
        sha = self._resolve(repo, revision)
        recursive = _flag(request.query.get("recursive"))
        expand = _flag(request.query.get("expand"))
        entries = self._tree_entries(repo.commits[sha], _clean_path(path) if path else "", recursive)
        size = min(self.page_size, 50) if expand else self.page_size
        start = int(request.query.get("cursor", "0") or 0)
        page = entries[start : start + size]
        if expand:
            for item in page:
                item["lastCommit"] = self._last_commit(repo, sha, item["path"], item["type"] == "directory")
        headers: dict[str, str] = {}
        if start + size < len(entries):
            query = f"recursive={str(recursive).lower()}&expand={str(expand).lower()}&cursor={start + size}"
            headers["Link"] = f'<{self.url}{request.raw_path.split("?")[0]}?{query}>; rel="next"'
        status, base, body = _json(200, page)
        return status, {**base, **headers}, body

    def _overview_route(self, org: str) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            overview = self._orgs.get(org)
        if overview is None:
            raise HubError(404, f"organization {org} not found")
        return _json(200, overview)

    def _resolve_route(
        self, request: LoggedRequest, repo_type: str, repo_id: str, revision: str, path: str
    ) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            repo = self._repo(repo_type, repo_id, authorized=self._authorized(request))
            sha = self._resolve(repo, revision)
            entry = repo.commits[sha].files.get(path)
            if entry is None:
                raise HubError(404, f"entry {path} not found at {sha}", "EntryNotFound", sha)
            data = self._read(entry)
        headers = {
            "X-Repo-Commit": sha,
            "ETag": f'"{entry.oid}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "application/octet-stream",
            "Content-Disposition": f'inline; filename="{path.rsplit("/", 1)[-1]}"',
        }
        if entry.sha256 is not None:
            headers["X-Linked-Etag"] = f'"{entry.sha256}"'
            headers["X-Linked-Size"] = str(entry.size)
        status = 200
        wanted = request.headers.get("range")
        if wanted is not None and request.method == "GET":
            match = _RANGE_RE.fullmatch(wanted.strip())
            total = len(data)
            first, last = (match.group(1), match.group(2)) if match else ("", "")
            if not match or (not first and not last):
                start, end = -1, -1
            elif not first:
                start, end = max(total - int(last), 0), total - 1
            else:
                start, end = int(first), min(int(last), total - 1) if last else total - 1
            if start < 0 or start >= total or start > end:
                return 416, {"Content-Range": f"bytes */{total}", "Content-Length": "0"}, b""
            data = data[start : end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{total}"
            status = 206
        headers["Content-Length"] = str(len(data))
        return status, headers, data

    # -- write routes --

    def _create_repo_route(self, request: LoggedRequest) -> tuple[int, dict[str, str], bytes]:
        body = _json_body(request)
        name, organization = body.get("name"), body.get("organization")
        repo_type = body.get("type") or MODEL
        if repo_type not in _PREFIX:
            raise HubError(400, f"repo type {repo_type!r} is not served by the test Hub")
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name) or not isinstance(organization, str):
            raise HubError(400, "create needs a valid 'name' and an 'organization'")
        repo_id = f"{organization}/{name}"
        private = body.get("private") is True or body.get("visibility") == "private"
        url = f"{self.url}/{_PREFIX[repo_type]}{repo_id}"
        with self._lock:
            if (repo_type, repo_id) in self._repos:
                return _json(409, {"error": f"You already created this {repo_type} repo", "url": url})
            self.create_repo(repo_id, repo_type=repo_type, private=private)
        return _json(200, {"url": url, "name": repo_id, "id": repo_id})

    def _branch_route(
        self, request: LoggedRequest, repo: Repo, branch: str
    ) -> tuple[int, dict[str, str], bytes]:
        body = _json_body(request)
        if branch.startswith("refs/") or not _NAME_RE.fullmatch(branch.replace("/", "-")):
            raise HubError(400, f"invalid branch name {branch!r}")
        if branch in repo.branches:
            return _json(409, {"error": f"Reference refs/heads/{branch} already exists"})
        start = body.get("startingPoint")
        repo.branches[branch] = self._resolve(repo, start if isinstance(start, str) else "main")
        return _json(200, {})

    def _preupload_route(
        self, request: LoggedRequest, repo: Repo, revision: str
    ) -> tuple[int, dict[str, str], bytes]:
        body = _json_body(request)
        sha = self._resolve(repo, revision)
        tree = repo.commits[sha].files
        answers = []
        for item in body.get("files", []):
            path = item["path"]
            entry = tree.get(path)
            # The client compares this with the git blob SHA-1 of its content (upload mode "regular").
            oid = None if entry is None else (git_blob_oid(self._read(entry)) if entry.sha256 else entry.oid)
            answers.append({"path": path, "uploadMode": "regular", "shouldIgnore": False, "oid": oid})
        return _json(200, {"files": answers, "commitOid": sha})

    def _commit_route(
        self, request: LoggedRequest, repo: Repo, revision: str
    ) -> tuple[int, dict[str, str], bytes]:
        lines = [json.loads(line) for line in request.body.decode().splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            raise HubError(400, "a commit starts with a header line")
        header = lines[0]["value"]
        ref = self._branch_ref(repo, revision)
        head = self._ref_target(repo, ref)
        parent_commit = header.get("parentCommit")
        if parent_commit is not None and parent_commit != head:
            raise HubError(
                412, f"A commit has happened since {parent_commit}; the head of {revision} is {head}"
            )
        tree = dict(repo.commits[head].files)
        for line in lines[1:]:
            key, value = line.get("key"), line.get("value", {})
            raw = str(value.get("path", ""))
            path = _clean_path(raw.rstrip("/") if key == "deletedFolder" else raw)
            if key == "file":
                if value.get("encoding") != "base64":
                    raise HubError(400, f"unsupported encoding for {path}")
                tree[path] = self._store(base64.b64decode(value["content"]))
            elif key == "lfsFile":
                known = self._storage / str(value.get("oid"))
                if not known.is_file():
                    raise HubError(422, f"LFS object {value.get('oid')} for {path} was never uploaded")
                tree[path] = self._store(known.read_bytes(), lfs=True)
            elif key == "deletedFile":
                self._delete(tree, path, folder=False, commit=head)
            elif key == "deletedFolder":
                self._delete(tree, path, folder=True, commit=head)
            else:
                raise HubError(400, f"unknown commit operation {key!r}")
        pr_url = None
        if _flag(request.query.get("create_pr")):
            number = max([0, *repo.pull_requests]) + 1
            repo.pull_requests[number] = head
            ref = ("pr", str(number))
            pr_url = f"{self.url}/{repo.url_path}/discussions/{number}"
        commit = self._new_commit(repo, head, header.get("summary", ""), header.get("description", ""), tree)
        self._set_ref(repo, ref, commit.oid)
        return _json(
            200,
            {
                "success": True,
                "commitOid": commit.oid,
                "commitUrl": f"{self.url}/{repo.url_path}/commit/{commit.oid}",
                "pullRequestUrl": pr_url,
                "hookOutput": "",
            },
        )


def _clean_path(path: str) -> str:
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise HubError(400, f"invalid path in repo: {path!r}")
    return path


def _flag(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true")


def _json(status: int, data: object) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps(data).encode()
    return status, {"Content-Type": "application/json", "Content-Length": str(len(body))}, body


def _json_body(request: LoggedRequest) -> dict[str, Any]:
    if not request.body:
        return {}
    try:
        data = json.loads(request.body)
    except ValueError as error:
        raise HubError(400, f"invalid JSON body: {error}") from error
    if not isinstance(data, dict):
        raise HubError(400, "the JSON body must be an object")
    return data


FAULTS = ("stall", "drop", "truncate", "stall-body", "trickle", "429", "500")


@dataclass
class Fault:
    """One injected misbehaviour (:meth:`HubServer.inject`) and how many requests it has hit so far."""

    kind: str
    path_prefix: str
    remaining: int
    seconds: float
    method: str | None = None
    hits: int = 0


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "hub-double/1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stalls

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the request log is the record

    def setup(self) -> None:
        super().setup()
        self.server.hub._track(self.connection, True)  # type: ignore[attr-defined]

    def finish(self) -> None:
        self.server.hub._track(self.connection, False)  # type: ignore[attr-defined]
        super().finish()

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _stall(self, hub: HubServer, seconds: float) -> bool:
        """Wait ``seconds`` before answering; ``False`` when the client gave up (closed) meanwhile."""
        end = time.monotonic() + seconds
        while not hub._stopping.is_set() and (left := end - time.monotonic()) > 0:
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if readable and not self.connection.recv(1, socket.MSG_PEEK):
                self.close_connection = True
                return False
        return True

    def _serve(self) -> None:
        raw_path, _, query_string = self.path.partition("?")
        segments = [unquote(segment) for segment in raw_path.strip("/").split("/")]
        query = {key: values[-1] for key, values in parse_qs(query_string, keep_blank_values=True).items()}
        request = LoggedRequest(
            method=self.command,
            path=unquote(raw_path),
            raw_path=self.path,
            query=query,
            headers={key.lower(): value for key, value in self.headers.items()},
            body=self._read_body(),
        )
        hub: HubServer = self.server.hub  # type: ignore[attr-defined]
        fault = hub._take_fault(request.path, request.method)
        if fault is not None and fault.kind == "stall":
            if not self._stall(hub, fault.seconds):
                return
        elif fault is not None and fault.kind == "drop":
            with hub._lock:
                hub._log.append(request)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        elif fault is not None and fault.kind in ("429", "500"):
            with hub._lock:
                hub._log.append(request)
            status = int(fault.kind)
            self.send_response(status)
            body = json.dumps({"error": f"the test Hub was told to answer {status}"}).encode()
            for key, value in {
                "Content-Type": "application/json",
                "Content-Length": str(len(body)),
                "Retry-After": "0",
            }.items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            return
        status, headers, body = hub.handle(request, segments)
        if fault is not None and fault.kind == "truncate" and self.command != "HEAD":
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault is not None and fault.kind in ("stall-body", "trickle") and self.command != "HEAD":
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            if fault.kind == "stall-body":
                self.wfile.write(body[: len(body) // 2])
                self.wfile.flush()
                if self._stall(hub, fault.seconds):
                    self.wfile.write(body[len(body) // 2 :])
                return
            pieces = 16
            for index in range(pieces):
                self.wfile.write(body[len(body) * index // pieces : len(body) * (index + 1) // pieces])
                self.wfile.flush()
                if index < pieces - 1 and not self._stall(hub, fault.seconds / pieces):
                    return
            return
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _serve


# --- the fixture --------------------------------------------------------------------------------------------


def client_environment(url: str, cache: Path) -> dict[str, str]:
    """The variables that point every Hub client (ours, huggingface_hub's, upstream's `kernels`) at the double at
    ``url``, with their downloads in ``cache`` and no telemetry or Xet transfers (which would leave loopback)."""
    return {
        "HF_ENDPOINT": url,
        "KERNELS_CACHE": str(cache),
        "HF_HUB_CACHE": str(cache),
        "HF_TOKEN": "hf_dummy_test_token",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",
    }


@pytest.fixture
def hub(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    """A running double with the client environment pointed at it; stopped at teardown."""
    cache = tmp_path_factory.mktemp("hub-cache")
    server = HubServer().start()
    for name, value in {
        **client_environment(server.url, cache),
        # Every online load asks the double, as the tests of the Hub path expect; the tests of loads from the
        # cache alone (test_loader_warm.py) set their own time.
        "KERNEL_BUILDER_CACHE_TTL": "0",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("HF_HUB_OFFLINE", "LOCAL_KERNELS", "HF_HUB_DISABLE_IMPLICIT_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    # huggingface_hub reads these two variables once, at import: mirror them, or its user-agent code
    # would look up agent harnesses on the real Hub.
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_XET", True)
    try:
        yield server
    finally:
        server.stop()
