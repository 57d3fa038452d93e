"""The Hub operations (docs/loading.md): every read and write request the loader and ``upload`` make, through
one :class:`Hub` that wraps ``huggingface_hub``'s ``HfApi``, ``hf_hub_download`` and ``snapshot_download``.

``huggingface_hub`` reads its environment once, at import; a :class:`Hub` instead reads ``HF_ENDPOINT``, the
cache variables and ``HF_HUB_OFFLINE`` when it is created (once per operation) and passes ``endpoint``,
``cache_dir``, ``repo_type`` and the user agent explicitly on every call, so a changed environment takes effect
at the next call. Every request runs inside one operation of :mod:`kernel_builder.hub.network` (timeouts,
retries, deadline). The first call for a repo tries the ``kernel`` type and, on ``RepositoryNotFoundError``,
the legacy ``model`` type once. Offline, a :class:`Hub` makes no HTTP request at all.
"""

from __future__ import annotations

import os
import posixpath
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import GatedRepoError, RemoteEntryNotFoundError, RepositoryNotFoundError
from huggingface_hub.hf_api import RepoFile, RepoFolder

import kernel_builder.hub.network as network
from kernel_builder import __version__
from kernel_builder.common.hub_env import endpoint
from kernel_builder.errors import HubConnectionError
from kernel_builder.formats.files import HUB_IGNORE_PATTERNS
from kernel_builder.hub.cache import CacheError, CacheLayout, entries, remove_partial
from kernel_builder.hub.environment import is_offline
from kernel_builder.hub.errors import failure
from kernel_builder.hub.network import NetworkPolicy
from kernel_builder.hub.repos import (
    KERNEL,
    MODEL,
    REPO_TYPES,
    AddFile,
    CommitResult,
    DeleteFile,
    RemoteFile,
    RemoteRepo,
)

__all__ = ["LIBRARY_NAME", "Hub", "Warn"]

LIBRARY_NAME = "kernel_builder"
T = TypeVar("T")
Warn = Callable[[str, type[Warning]], None]


def _legacy_warning(repo_id: str) -> str:
    return (
        f"{repo_id} is a model-type repository; kernels are now published as kernel-type repositories. "
        f"Loading it as a model repository still works, but ask its publisher to move it to a kernel repo."
    )


def _warn(message: str, category: type[Warning]) -> None:
    warnings.warn(message, category, stacklevel=4)


class Hub(CacheLayout):
    """The Hub as one operation sees it: endpoint, cache, offline mode and user agent fixed at creation.

    ``warn`` emits the legacy-repository ``FutureWarning`` (the loader passes one that points at its caller).
    """

    def __init__(self, *, agent: str | None = None, offline: bool | None = None, warn: Warn = _warn) -> None:
        super().__init__()
        self.endpoint = endpoint()
        self.offline = is_offline() if offline is None else offline
        self.user_agent = agent
        self.network = NetworkPolicy.from_environment()
        if not self.offline:
            network.install_hooks()
        self._emit = warn
        self._api: HfApi | None = None
        self._warned: set[str] = set()
        self._lock = threading.Lock()

    @property
    def api(self) -> HfApi:
        """An ``HfApi`` bound to this endpoint and user agent; never used offline."""
        if self.offline:
            raise RuntimeError("offline mode: no Hub request may be made")
        if self._api is None:
            self._api = HfApi(
                endpoint=self.endpoint,
                library_name=LIBRARY_NAME,
                library_version=__version__,
                user_agent=self.user_agent,
            )
        return self._api

    def _common(self) -> dict[str, Any]:
        return {
            "endpoint": self.endpoint,
            "cache_dir": self.cache_dir,
            "library_name": LIBRARY_NAME,
            "library_version": __version__,
            "user_agent": self.user_agent,
            "tqdm_class": network.progress_class(),
            "etag_timeout": self.network.read,
        }

    def _warn_legacy(self, repo_id: str) -> None:
        with self._lock:
            if repo_id in self._warned:
                return
            self._warned.add(repo_id)
        self._emit(_legacy_warning(repo_id), FutureWarning)

    def retrying(self, what: str, action: Callable[[], T], *, transfer: bool = False) -> T:
        """Run one request as an operation with tries and a deadline (:func:`kernel_builder.hub.network.retrying`);
        ``transfer``: the deadline counts time without progress (downloads)."""
        return network.retrying(what, action, self.network, endpoint=self.endpoint, transfer=transfer)

    def call(
        self, repo: RemoteRepo, action: Callable[[str], T], what: str = "a request", *, transfer: bool = False
    ) -> T:
        """Run ``action(repo_type)`` with retries (:meth:`retrying`); the first call for ``repo`` falls back from
        ``kernel`` to ``model``. ``what`` names the request in errors (``list the branches``, …); downloads pass
        ``transfer=True``: a large file may stream for longer than the deadline, as long as it progresses."""
        label = f"{repo.repo_id}: {what}"
        if repo.repo_type is not None:
            kind = repo.repo_type
            return self.retrying(label, lambda: action(kind), transfer=transfer)
        try:
            result = self.retrying(label, lambda: action(KERNEL), transfer=transfer)
        except RepositoryNotFoundError as kernel_error:
            if isinstance(kernel_error, GatedRepoError):  # it exists: only "not found" falls back
                raise
            try:
                result = self.retrying(label, lambda: action(MODEL), transfer=transfer)
            except RepositoryNotFoundError as error:
                error.append_to_message(
                    f"\n{repo.repo_id}: no such repository on {self.endpoint}; looked it up as a kernel repo "
                    f"and as a (legacy) model repo."
                )
                raise error from kernel_error
            repo.repo_type = MODEL
            self._warn_legacy(repo.repo_id)
            return result
        repo.repo_type = KERNEL
        return result

    # -- read calls (online) --

    def branches(self, repo: RemoteRepo) -> dict[str, str]:
        """Branch name → commit SHA."""
        refs = self.call(
            repo, lambda kind: self.api.list_repo_refs(repo.repo_id, repo_type=kind), "list the branches"
        )
        return {branch.name: branch.target_commit for branch in refs.branches}

    def commit_of(self, repo: RemoteRepo, revision: str) -> str:
        """The commit SHA of a branch, tag or SHA (``repo_info``)."""
        info = self.call(
            repo,
            lambda kind: self.api.repo_info(repo.repo_id, revision=revision, repo_type=kind),
            f"resolve revision {revision!r}",
        )
        if info.sha is None:  # pragma: no cover - the Hub always sends it
            raise RuntimeError(f"the Hub gave no commit for {repo.repo_id}@{revision}")
        return info.sha

    def folders(self, repo: RemoteRepo, sha: str, path: str) -> list[str]:
        """Names of the folders directly under ``path`` at ``sha``; none when ``path`` does not exist."""

        entries = self._tree(repo, sha, path, recursive=False)
        return sorted(e.path.rsplit("/", 1)[-1] for e in entries if isinstance(e, RepoFolder))

    def file_exists(self, repo: RemoteRepo, sha: str, filename: str) -> bool:
        return self.call(
            repo,
            lambda kind: self.api.file_exists(repo.repo_id, filename, revision=sha, repo_type=kind),
            f"look for {filename} at {sha}",
        )

    def download_file(self, repo: RemoteRepo, sha: str, filename: str) -> Path | None:
        """One file at ``sha`` into the cache (offline: from it); ``None`` when it does not exist."""
        if self.offline:
            path = self.snapshot(repo, sha) / filename
            return path if path.is_file() else None

        def download(kind: str) -> Path | None:
            self.guard(RemoteRepo(repo.repo_id, kind), sha, posixpath.dirname(filename))
            try:
                return Path(
                    hf_hub_download(repo.repo_id, filename, repo_type=kind, revision=sha, **self._common())
                )
            except RemoteEntryNotFoundError:
                return None

        return self.call(repo, download, f"download {filename} at {sha}", transfer=True)

    def download_folder(self, repo: RemoteRepo, sha: str, folder: str) -> Path:
        """The variant files (docs/layout.md: no bytecode, no hidden path) under ``folder`` at ``sha``; returns
        ``<snapshot>/<folder>``.

        Offline the snapshot must already hold it (``local_files_only``). Raises ``FileNotFoundError`` naming
        repo, SHA and folder when the folder is absent afterwards.
        """

        def download(kind: str) -> str:
            if self.offline:
                return str(fetch(kind))
            typed = RemoteRepo(repo.repo_id, kind)
            self.guard(typed, sha, folder)
            partial = self.snapshot(typed, sha).joinpath(*folder.split("/"))
            before = entries(partial)
            try:
                return str(fetch(kind))
            except OSError as error:
                # Never leave half a variant: a later load would find an incomplete folder.
                remove_partial(partial, before, self.repo_folder(typed) / "blobs")
                if isinstance(error, HubConnectionError) or failure(error, connect=0, read=0) is not None:
                    raise
                raise CacheError(
                    f"{repo.repo_id}: downloading {folder} at {sha} into {self.cache_dir} failed: "
                    f"{error.strerror or error}"
                    + (f" ({error.filename})" if error.filename else "")
                    + "; the partial download was removed"
                    + ". Free some space or point KERNELS_CACHE elsewhere, then load again."
                ) from None

        def fetch(kind: str) -> str:
            return str(
                snapshot_download(
                    repo.repo_id,
                    repo_type=kind,
                    revision=sha,
                    allow_patterns=[f"{folder}/*"],
                    ignore_patterns=list(HUB_IGNORE_PATTERNS),
                    local_files_only=self.offline,
                    **self._common(),
                )
            )

        what = f"download {folder} at {sha}"
        snapshot = Path(
            self.call(repo, download, what, transfer=True) if not self.offline else download(self._type(repo))
        )
        # The Hub may answer for another commit than the one asked: only the asked one's snapshot is used.
        # (Compared resolved: a cache root that is itself a link is reported resolved by huggingface_hub.)
        if os.path.realpath(snapshot) != os.path.realpath(self.snapshot(repo, sha)):
            raise ValueError(
                f"{repo.repo_id}@{sha}: the download landed in {snapshot}, not in the snapshot of {sha}"
            )
        target = snapshot / folder
        if not target.is_dir():
            raise FileNotFoundError(f"{repo.repo_id}@{sha}: {folder} is missing from the download ({target})")
        return target

    def tree_files(self, repo: RemoteRepo, revision: str, path: str | None = None) -> list[RemoteFile]:
        """Every file under ``path`` (the whole tree when ``None``) at ``revision``, recursively, by path.

        A ``path`` that does not exist gives an empty list.
        """

        files = [
            RemoteFile(e.path, e.size, e.blob_id, e.lfs.sha256 if e.lfs is not None else None)
            for e in self._tree(repo, revision, path, recursive=True)
            if isinstance(e, RepoFile)
        ]
        return sorted(files, key=lambda file: file.path)

    def _tree(self, repo: RemoteRepo, revision: str, path: str | None, *, recursive: bool) -> list[object]:
        """The entries of the repository tree under ``path`` at ``revision``; none when ``path`` does not exist."""

        def listing(kind: str) -> list[object]:
            try:
                return list(
                    self.api.list_repo_tree(
                        repo.repo_id,
                        path_in_repo=path,
                        revision=revision,
                        repo_type=kind,
                        recursive=recursive,
                    )
                )
            except RemoteEntryNotFoundError:
                return []

        return self.call(repo, listing, f"list the files under {path or '/'} at {revision}")

    def existing_branches(self, repo: RemoteRepo) -> dict[str, str] | None:
        """Branch name → commit SHA, or ``None`` when the repository does not exist (under its type)."""
        try:
            return self.branches(repo)
        except RepositoryNotFoundError as error:
            if isinstance(error, GatedRepoError):
                raise
            return None

    def repo_url(self, repo: RemoteRepo) -> str:
        """The repository's page: ``<endpoint>/kernels/<id>`` (``<endpoint>/<id>`` for a model repo)."""
        prefix = "" if self._type(repo) == MODEL else f"{self._type(repo)}s/"
        return f"{self.endpoint}/{prefix}{repo.repo_id}"

    # -- write calls (upload; docs/cli.md); ``repo.repo_type`` is always explicit here --

    def create_repo(self, repo: RemoteRepo, *, private: bool) -> str:
        """Create the repository (an existing one is fine); returns its URL."""
        with network.unbounded_scope(self.network):
            url = self.api.create_repo(
                repo.repo_id, repo_type=self._type(repo), private=private, exist_ok=True
            )
        return str(url)

    def create_branch(self, repo: RemoteRepo, branch: str, revision: str) -> None:
        """Create ``branch`` at ``revision`` (an existing branch is fine)."""
        with network.unbounded_scope(self.network):
            self.api.create_branch(
                repo.repo_id, branch=branch, revision=revision, repo_type=self._type(repo), exist_ok=True
            )

    def commit(
        self,
        repo: RemoteRepo,
        operations: Sequence[AddFile | DeleteFile],
        *,
        revision: str,
        message: str,
        description: str | None = None,
        parent: str | None = None,
        create_pr: bool = False,
    ) -> CommitResult:
        """One commit of ``operations`` on ``revision`` (a branch or ``refs/pr/<n>``).

        ``parent`` makes the Hub refuse the commit (412) if ``revision`` moved since it was read. With
        ``create_pr`` the commit opens a pull request against ``revision`` instead of advancing it.
        """
        converted: list[CommitOperationAdd | CommitOperationDelete] = [
            CommitOperationAdd(path_in_repo=op.path, path_or_fileobj=op.source)
            if isinstance(op, AddFile)
            else CommitOperationDelete(path_in_repo=op.path)
            for op in operations
        ]
        with network.unbounded_scope(self.network):  # the upload may take long; each request is bounded
            info = self.api.create_commit(
                repo.repo_id,
                converted,
                commit_message=message,
                commit_description=description,
                repo_type=self._type(repo),
                revision=revision,
                parent_commit=parent,
                create_pr=create_pr,
            )
        assert not isinstance(info, Future)  # run_as_future is not used
        return CommitResult(info.oid, info.commit_url, info.pr_url, info.pr_revision)

    def trusted_publisher(self, organization: str) -> object:
        """The organization overview's ``trustedKernelPublisher`` value (``None`` when absent).

        Asked of this Hub's endpoint directly: some ``huggingface_hub`` releases build this one URL from the
        endpoint read when they were imported, not from the client's, and would ask another Hub."""
        from urllib.parse import quote

        from huggingface_hub import get_session
        from huggingface_hub.utils._headers import build_hf_headers  # the headers HfApi would send
        from huggingface_hub.utils._http import hf_raise_for_status  # its HfHubHTTPError names the status

        if self.offline:
            raise RuntimeError("offline mode: no Hub request may be made")
        headers = build_hf_headers(
            library_name=LIBRARY_NAME, library_version=__version__, user_agent=self.user_agent
        )
        url = f"{self.endpoint}/api/organizations/{quote(organization, safe='')}/overview"

        def ask() -> object:
            response = get_session().get(url, headers=headers)
            hf_raise_for_status(response)
            return response.json()

        overview = self.retrying(f"ask whether {organization} is a trusted kernel publisher", ask)
        return overview.get("trustedKernelPublisher") if isinstance(overview, dict) else None

    # -- the cache (the layout is CacheLayout's) --

    def find_cached(self, repo_id: str, present: Callable[[RemoteRepo], bool]) -> RemoteRepo | None:
        """Offline type detection: the first of ``kernel`` and ``model`` for which ``present`` holds."""
        for kind in REPO_TYPES:
            candidate = RemoteRepo(repo_id, kind)
            if present(candidate):
                if kind == MODEL:
                    self._warn_legacy(repo_id)
                return candidate
        return None
