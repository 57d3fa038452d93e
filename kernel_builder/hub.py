"""The one module that talks to the Hugging Face Hub (docs/loading.md).

Everything that reaches the network goes through :class:`Hub`, which wraps ``huggingface_hub``'s ``HfApi``,
``hf_hub_download`` and ``snapshot_download``. ``huggingface_hub`` reads its environment once, at import; a
:class:`Hub` instead reads ``HF_ENDPOINT``, the cache variables and ``HF_HUB_OFFLINE`` when it is created (once
per operation) and passes ``endpoint``, ``cache_dir``, ``repo_type`` and the user agent explicitly on every
call, so a changed environment takes effect at the next call.

A :class:`RemoteRepo` carries a repo id and, once known, its type: the first call for a repo tries the
``kernel`` type and, on ``RepositoryNotFoundError``, the legacy ``model`` type once (docs/loading.md). Offline, a
:class:`Hub` makes no HTTP request at all: the loader reads refs and snapshots from the cache through it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import platform
import posixpath
import shutil
import stat
import threading
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from huggingface_hub import (
    CommitOperationAdd,
    CommitOperationDelete,
    HfApi,
    constants,
    hf_hub_download,
    snapshot_download,
)
from huggingface_hub.errors import (
    GatedRepoError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
)
from huggingface_hub.hf_api import RepoFile, RepoFolder
from huggingface_hub.utils.tqdm import tqdm as hf_tqdm

from kernel_builder import __version__
from kernel_builder.common.env import hf_flag
from kernel_builder.common.hub_env import DEFAULT_ENDPOINT, cache_location, endpoint, repo_folder_name
from kernel_builder.common.safe_fs import UnsafeFileError, describe_mode, read_bounded, write_inside
from kernel_builder.errors import HubConnectionError, KernelBuilderError, UsageError
from kernel_builder.formats.files import HUB_IGNORE_PATTERNS
from kernel_builder.formats.identifiers import is_commit_id, ref_name_problem

__all__ = [
    "DEFAULT_ENDPOINT",
    "HTTP_ERRORS",
    "KERNEL",
    "MODEL",
    "NetworkPolicy",
    "REQUEST_ERRORS",
    "AddFile",
    "CacheError",
    "CacheLinkError",
    "CommitResult",
    "DeleteFile",
    "Hub",
    "RemoteFile",
    "RemoteRepo",
    "cache_dir",
    "endpoint",
    "is_offline",
    "repo_folder_name",
    "telemetry_disabled",
    "user_agent",
]

logger = logging.getLogger("kernel_builder")

KERNEL = "kernel"
MODEL = "model"
REPO_TYPES = (KERNEL, MODEL)
LIBRARY_NAME = "kernel_builder"
_REF_FILE_LIMIT = 4096  # a ref file holds one commit id
T = TypeVar("T")

# What a failed Hub request raises: HTTP errors, and the transport errors of the HTTP library under
# huggingface_hub (the base class its HfHubHTTPError extends, found without naming that library); with
# OSError, for requests that fail locally (a full disk, an unreadable file to upload).
HTTP_ERRORS: tuple[type[Exception], ...] = (
    HfHubHTTPError,
    *(base for base in HfHubHTTPError.__mro__[1:] if base.__name__ == "HTTPError"),
)
REQUEST_ERRORS: tuple[type[Exception], ...] = (*HTTP_ERRORS, OSError)


def describe_error(error: BaseException) -> str:
    """A failed request's message in one line: huggingface_hub's first line (status) and its last (the
    specific note: which repo, what was tried); other errors as they are."""
    text = str(error).strip()
    if not text:
        return type(error).__name__
    if not isinstance(error, HTTP_ERRORS):
        return text
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{lines[0]} {lines[-1]}" if len(lines) > 2 else " ".join(lines)


# --- timeouts and retries (docs/environment.md) ------------------------------------------------------------------

CONNECT_TIMEOUT = "KERNEL_BUILDER_HUB_CONNECT_TIMEOUT"
READ_TIMEOUT = "KERNEL_BUILDER_HUB_READ_TIMEOUT"
RETRIES = "KERNEL_BUILDER_HUB_RETRIES"
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_BACKOFF_FIRST = 0.5  # seconds before the first retry; doubled each time
_BACKOFF_MOST = 8.0  # no single wait is longer, whatever Retry-After asks
# Transport failures by the class names of the HTTP library under huggingface_hub (it has changed library
# before): worth another try, and reported as a network problem rather than a traceback.
_TIMEOUT_CLASSES = frozenset({"TimeoutException", "Timeout"})
_DROPPED_CLASSES = frozenset({"NetworkError", "RemoteProtocolError", "ConnectError", "ConnectionError"})


def _seconds(name: str, default: float) -> float:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"{name}={text!r} is not a number of seconds above 0; set it to e.g. {default:g}")
    return value


@dataclass(frozen=True)
class NetworkPolicy:
    """How long a Hub request may take and how often a failed one is tried again (docs/environment.md).

    ``connect``: seconds to open a connection; ``read``: seconds to wait for any byte of an answer; ``retries``:
    further attempts after a timeout, a dropped connection, a 429 or a 5xx, with exponential back-off.
    """

    connect: float = 10.0
    read: float = 30.0
    retries: int = 2

    @classmethod
    def from_environment(cls) -> NetworkPolicy:
        text = os.environ.get(RETRIES, "").strip()
        retries = cls.retries
        if text:
            if not (text.isascii() and text.isdigit()) or int(text) > 20:
                raise UsageError(f"{RETRIES}={text!r} is not a whole number from 0 to 20; set it to e.g. 2")
            retries = int(text)
        return cls(_seconds(CONNECT_TIMEOUT, cls.connect), _seconds(READ_TIMEOUT, cls.read), retries)

    def apply(self) -> None:
        """Bound every request of ``huggingface_hub``'s shared HTTP client from now on (docs/environment.md).

        The client has no timeout by default, and some calls pass "no timeout" explicitly, so the bounds are set
        on each request as it is sent (a request hook): ``connect`` and ``read`` cap whatever the request
        carries. The shared client serves the whole process, so this bounds other ``huggingface_hub`` calls
        too; a request that gets its answer in time behaves as before.
        """
        global _active_policy
        from huggingface_hub import get_session

        _active_policy = self
        hooks = get_session().event_hooks
        if _bound_request not in hooks["request"]:
            hooks["request"].append(_bound_request)
        if _note_response not in hooks["response"]:
            hooks["response"].append(_note_response)


_active_policy = NetworkPolicy()
#: When set, the monotonic time after which the current request (with huggingface_hub's own retries) is over.
_deadline: ContextVar[float | None] = ContextVar("kernel_builder_hub_deadline", default=None)


#: The last answer worth a retry (429, 5xx) within the current request, for the message when time runs out.
_last_failure: ContextVar[str | None] = ContextVar("kernel_builder_hub_last_failure", default=None)


class _DeadlinePassed(Exception):
    """Raised from the request hook when huggingface_hub keeps retrying past the request's time."""


def _note_response(response: Any) -> None:
    if response.status_code in _RETRY_STATUSES:
        _last_failure.set(f"the Hub answered HTTP {response.status_code}")


def _bound_request(request: Any) -> None:
    """The request hook: cap the request's timeouts, and stop a retry that starts after the deadline."""
    deadline = _deadline.get()
    if deadline is not None and time.monotonic() > deadline:
        raise _DeadlinePassed(_last_failure.get())
    policy = _active_policy
    timeouts = dict(request.extensions.get("timeout") or {})
    for key, limit in (
        ("connect", policy.connect),
        ("pool", policy.connect),
        ("read", policy.read),
        ("write", policy.read),
    ):
        current = timeouts.get(key)
        timeouts[key] = limit if current is None else min(current, limit)
    request.extensions["timeout"] = timeouts


def _failure(error: BaseException, policy: NetworkPolicy) -> tuple[str, float | None] | None:
    """What went wrong, when it is worth another try, and the wait the Hub asked for (``Retry-After``).

    Looks through the causes too: ``hf_hub_download`` reports a failed request as ``LocalEntryNotFoundError``
    raised from the real error.
    """
    seen: BaseException | None = error
    for _ in range(6):
        if seen is None:
            return None
        if isinstance(seen, _DeadlinePassed):
            budget = policy.connect + policy.read
            last = seen.args[0] if seen.args and seen.args[0] else "no complete answer"
            return f"{last} (still failing after {budget:g} s of huggingface_hub's own retries)", None
        if isinstance(seen, HfHubHTTPError) and seen.response is not None:
            status = seen.response.status_code
            if status in _RETRY_STATUSES:
                wait = seen.response.headers.get("Retry-After", "")
                asked = float(wait) if wait.isascii() and wait.isdigit() else None
                return f"the Hub answered HTTP {status}", asked
            return None
        names = {klass.__name__ for klass in type(seen).__mro__}
        if names & _TIMEOUT_CLASSES:
            if "ConnectTimeout" in names or "PoolTimeout" in names:
                return f"could not connect within {policy.connect:g} s", None
            return f"no answer within {policy.read:g} s (the read timeout)", None
        if "ConnectError" in names or isinstance(seen, ConnectionRefusedError):
            return "could not connect", None
        if names & _DROPPED_CLASSES:
            return "the connection was dropped before the answer was complete", None
        seen = seen.__cause__ or seen.__context__
    return None


# --- environment, read at every call (docs/loading.md) -----------------------------------------------------------------


def cache_dir() -> Path:
    """``KERNELS_CACHE``, else ``HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``."""
    return cache_location()[0]


def is_offline() -> bool:
    """Offline when ``HF_HUB_OFFLINE`` (else ``TRANSFORMERS_OFFLINE``) is on now, by ``huggingface_hub``'s rule,
    or ``huggingface_hub`` was imported in offline mode."""
    return hf_flag("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE") or bool(constants.HF_HUB_OFFLINE)


def telemetry_disabled() -> bool:
    return any(hf_flag(name) for name in ("HF_HUB_DISABLE_TELEMETRY", "DISABLE_TELEMETRY", "DO_NOT_TRACK"))


def user_agent(
    caller: str | Mapping[str, object] | None, details: Sequence[tuple[str, str | None]] = ()
) -> str | None:
    """The caller's parts, then ``details`` (``("python", "3.12")``, …) unless telemetry is disabled.

    ``huggingface_hub`` puts ``kernel_builder/<version>`` (the library name) in front. Empty parts are left
    out; ``None`` when nothing remains.
    """
    parts: list[str] = []
    if isinstance(caller, str):
        parts += [part.strip() for part in caller.split(";")]
    elif caller is not None:
        parts += [f"{key}/{value}" for key, value in caller.items() if str(key) and str(value)]
    if not telemetry_disabled():
        parts += [f"{key}/{value}" for key, value in details if value]
    parts = [part for part in parts if part]
    return "; ".join(parts) or None


def environment_details(
    backend: str, cpu: str, os_name: str, torch_version: tuple[int, int] | None
) -> list[tuple[str, str | None]]:
    """The loader's user-agent details: Python, backend, platform, file type and Torch version."""
    python = platform.python_version()
    torch = f"{torch_version[0]}.{torch_version[1]}" if torch_version else None
    return [
        ("python", python),
        ("backend", backend),
        ("platform", f"{cpu}-{os_name}"),
        ("file_type", "kernel"),
        ("torch", torch),
    ]


class CacheError(KernelBuilderError, OSError):
    """The Hub cache cannot be written: the directory the environment names is unusable, or a folder in it is a
    planted link. The message names the variable or the folder and what to do; nothing was written."""


class CacheLinkError(CacheError):
    """A folder the download would write into is a symbolic link (or not a folder): nothing is written.

    Anyone who can write to a shared cache could plant such a link to make the next download write elsewhere
    (docs/security.md). Downloads write through none, and say which one to remove.
    """


def _entries(folder: Path) -> set[Path]:
    """Everything below ``folder`` now (nothing when it does not exist)."""
    return set(folder.rglob("*")) if folder.is_dir() else set()


def _remove_partial(folder: Path, before: set[Path], blobs: Path) -> None:
    """Remove what a failed download added below ``folder`` (files first, then the folders it emptied) and its
    unfinished blobs; what was there ``before`` stays."""
    added = sorted(_entries(folder) - before, key=lambda path: len(path.parts), reverse=True)
    with contextlib.suppress(OSError):
        for path in added:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        if not before and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()
        for unfinished in blobs.glob("*.incomplete"):
            unfinished.unlink(missing_ok=True)


def _kind(mode: int) -> str:
    return "a regular file" if stat.S_ISREG(mode) else describe_mode(mode)


def _no_links_below(root: Path, folders: Sequence[Path]) -> None:
    """Refuse when any of ``folders`` (each below ``root``), or a folder between it and ``root``, is a symbolic
    link or an existing non-folder. ``root`` itself may be a link: the user chose where the cache lives."""
    checked: set[Path] = set()
    for folder in folders:
        relative = folder.relative_to(root)
        current = root
        for part in relative.parts:
            current = current / part
            if current in checked:
                continue
            checked.add(current)
            try:
                info = current.lstat()
            except FileNotFoundError:
                break  # created by the download, as a folder
            except OSError as error:
                raise CacheLinkError(
                    f"cannot inspect {current} in the cache: {error.strerror or error}"
                ) from None
            if stat.S_ISLNK(info.st_mode):
                raise CacheLinkError(
                    f"{current} in the Hub cache is a symbolic link (to {os.readlink(current)}); a download would "
                    f"write through it, outside the cache. Remove it (and check who can write to {root}); the "
                    f"next download recreates it as a folder."
                )
            if not stat.S_ISDIR(info.st_mode):
                raise CacheLinkError(
                    f"{current} in the Hub cache is not a folder ({_kind(info.st_mode)}); remove it and "
                    f"download again"
                )


class _QuietProgress(hf_tqdm):
    """No progress bars: the library is quiet, the CLI decides what to show."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["disable"] = True
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]


# --- repositories -------------------------------------------------------------------------------------------


@dataclass
class RemoteRepo:
    """A repo id and, once a call has found it, its type (``kernel`` or legacy ``model``)."""

    repo_id: str
    repo_type: str | None = None


def _legacy_warning(repo_id: str) -> str:
    return (
        f"{repo_id} is a model-type repository; kernels are now published as kernel-type repositories. "
        f"Loading it as a model repository still works, but ask its publisher to move it to a kernel repo."
    )


@dataclass(frozen=True)
class RemoteFile:
    """One file of a tree listing: its path, size, git blob SHA-1 and, if LFS-tracked, its SHA-256."""

    path: str
    size: int
    blob_id: str
    sha256: str | None = None

    @property
    def content_id(self) -> str:
        """What names the file's content: the LFS SHA-256, else the git blob SHA-1 (as the cache's blobs)."""
        return self.sha256 or self.blob_id


@dataclass(frozen=True)
class AddFile:
    """A commit operation: upload the local file ``source`` as ``path``."""

    path: str
    source: Path


@dataclass(frozen=True)
class DeleteFile:
    """A commit operation: delete the file ``path``."""

    path: str


@dataclass(frozen=True)
class CommitResult:
    """A commit made (or, with ``create_pr``, the pull request opened): its SHA and where to see it."""

    oid: str
    url: str
    pr_url: str | None = None
    pr_revision: str | None = None


Warn = Callable[[str, type[Warning]], None]


def _warn(message: str, category: type[Warning]) -> None:
    warnings.warn(message, category, stacklevel=4)


class Hub:
    """The Hub as one operation sees it: endpoint, cache, offline mode and user agent fixed at creation.

    ``warn`` emits the legacy-repository ``FutureWarning`` (the loader passes one that points at its caller).
    """

    def __init__(self, *, agent: str | None = None, offline: bool | None = None, warn: Warn = _warn) -> None:
        self.endpoint = endpoint()
        self.cache_dir, self.cache_source = cache_location()
        self.offline = is_offline() if offline is None else offline
        self.user_agent = agent
        self.network = NetworkPolicy.from_environment()
        if not self.offline:
            self.network.apply()
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
            "tqdm_class": _QuietProgress,
            "etag_timeout": self.network.read,
        }

    def _warn_legacy(self, repo_id: str) -> None:
        with self._lock:
            if repo_id in self._warned:
                return
            self._warned.add(repo_id)
        self._emit(_legacy_warning(repo_id), FutureWarning)

    def retrying(self, what: str, action: Callable[[], T], *, deadline: bool = True) -> T:
        """Run one read request, trying again after a timeout, a dropped connection, a 429 or a 5xx.

        Waits ``0.5 s``, ``1 s``, ``2 s``, … (or what ``Retry-After`` asks, at most 8 s) between attempts. When
        the last attempt fails the same way, raises :class:`HubConnectionError` naming the endpoint, ``what``
        was asked and what went wrong; any other error propagates unchanged at once.
        """
        attempts = self.network.retries + 1
        budget = self.network.connect + self.network.read
        for attempt in range(1, attempts + 1):
            token = _deadline.set(time.monotonic() + budget if deadline else None)
            last_token = _last_failure.set(None)
            try:
                return action()
            except Exception as error:
                failure = _failure(error, self.network)
                if failure is None:
                    raise
            finally:
                _last_failure.reset(last_token)
                _deadline.reset(token)
            reason, asked = failure
            if attempt == attempts:
                tried = "once" if attempts == 1 else f"{attempts} times"
                raise HubConnectionError(
                    f"{what} on {self.endpoint} failed: {reason} (tried {tried}). Check the network connection "
                    f"and HF_ENDPOINT (now {self.endpoint}); {CONNECT_TIMEOUT}, {READ_TIMEOUT} and {RETRIES} set "
                    f"the limits (docs/environment.md), HF_HUB_OFFLINE=1 loads from the cache alone."
                ) from None
            wait = min(_BACKOFF_MOST, asked if asked is not None else _BACKOFF_FIRST * 2 ** (attempt - 1))
            logger.info(
                "%s: %s; trying again in %.1f s (attempt %d of %d)", what, reason, wait, attempt + 1, attempts
            )
            time.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def call(
        self, repo: RemoteRepo, action: Callable[[str], T], what: str = "a request", *, deadline: bool = True
    ) -> T:
        """Run ``action(repo_type)`` with retries (:meth:`retrying`); the first call for ``repo`` falls back from
        ``kernel`` to ``model``. ``what`` names the request in errors (``list the branches``, …); downloads pass
        ``deadline=False``, since a large file may stream for longer than one request's time."""
        label = f"{repo.repo_id}: {what}"
        if repo.repo_type is not None:
            kind = repo.repo_type
            return self.retrying(label, lambda: action(kind), deadline=deadline)
        try:
            result = self.retrying(label, lambda: action(KERNEL), deadline=deadline)
        except RepositoryNotFoundError as kernel_error:
            if isinstance(kernel_error, GatedRepoError):  # it exists: only "not found" falls back
                raise
            try:
                result = self.retrying(label, lambda: action(MODEL), deadline=deadline)
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
            self._guard_cache(RemoteRepo(repo.repo_id, kind), sha, posixpath.dirname(filename))
            try:
                return Path(
                    hf_hub_download(repo.repo_id, filename, repo_type=kind, revision=sha, **self._common())
                )
            except RemoteEntryNotFoundError:
                return None

        return self.call(repo, download, f"download {filename} at {sha}")

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
            self._guard_cache(typed, sha, folder)
            partial = self.snapshot(typed, sha).joinpath(*folder.split("/"))
            before = _entries(partial)
            try:
                return str(fetch(kind))
            except OSError as error:
                # Never leave half a variant: a later load would find an incomplete folder.
                _remove_partial(partial, before, self.repo_folder(typed) / "blobs")
                if isinstance(error, HubConnectionError) or _failure(error, self.network) is not None:
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
            self.call(repo, download, what, deadline=False)
            if not self.offline
            else download(self._type(repo))
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
        url = self.api.create_repo(repo.repo_id, repo_type=self._type(repo), private=private, exist_ok=True)
        return str(url)

    def create_branch(self, repo: RemoteRepo, branch: str, revision: str) -> None:
        """Create ``branch`` at ``revision`` (an existing branch is fine)."""
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

    # -- the cache --

    def _type(self, repo: RemoteRepo) -> str:
        return repo.repo_type or KERNEL

    def writable_cache(self) -> None:
        """Make sure the cache directory exists and can be written, or raise :class:`CacheError` naming the
        variable that chose it (``KERNELS_CACHE``, ``HF_HUB_CACHE``, ``HF_HOME``) and what to do."""
        root = self.cache_dir
        chosen = (
            f"the cache directory {root}"
            if self.cache_source == "the default"
            else f"{self.cache_source} ({root})"
        )
        remedy = (
            "point KERNELS_CACHE at a writable directory, or set HF_HUB_OFFLINE=1 to load only what the cache "
            "already holds"
        )
        try:
            if not root.is_dir():
                root.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            pass
        except OSError as error:
            raise CacheError(f"{chosen} cannot be created: {error.strerror or error}; {remedy}") from None
        try:
            info = root.stat()
        except OSError as error:
            raise CacheError(f"{chosen} cannot be used: {error.strerror or error}; {remedy}") from None
        if not stat.S_ISDIR(info.st_mode):
            raise CacheError(f"{chosen} is not a directory ({_kind(info.st_mode)}); {remedy}")
        if not os.access(root, os.W_OK | os.X_OK):
            raise CacheError(f"{chosen} is not writable; {remedy}")

    def _guard_cache(self, repo: RemoteRepo, sha: str, folder: str) -> None:
        """Refuse a download whose cache folders include a planted link (:class:`CacheLinkError`).

        Covers what ``huggingface_hub`` writes for the repo: ``blobs``, ``snapshots/<sha>/<folder>``, ``refs``
        and its lock files under ``.locks``. Checked before each download: a link planted during one is a race
        this cannot close (docs/security.md).
        """
        self.writable_cache()
        top = self.repo_folder(repo)
        snapshot = self.snapshot(repo, sha)
        inner = snapshot.joinpath(*[part for part in folder.split("/") if part])
        locks = self.cache_dir / ".locks" / top.name
        _no_links_below(self.cache_dir, [top / "blobs", top / "refs", inner, locks])

    def repo_folder(self, repo: RemoteRepo) -> Path:
        return self.cache_dir / repo_folder_name(repo.repo_id, self._type(repo))

    def snapshot(self, repo: RemoteRepo, sha: str) -> Path:
        """``<repo folder>/snapshots/<sha>``; ``sha`` must be a 40-hex commit id (it becomes a path)."""
        if not is_commit_id(sha):
            raise ValueError(
                f"{repo.repo_id}: {sha!r} is not a 40-hex commit id; refusing to use it as a path"
            )
        return self.repo_folder(repo) / "snapshots" / sha

    def _ref_path(self, repo: RemoteRepo, name: str) -> Path:
        problem = ref_name_problem(name)
        if problem is not None:
            raise ValueError(f"{repo.repo_id}: {name!r} is not a branch, tag or commit id ({problem})")
        return self.repo_folder(repo) / "refs" / name

    def read_ref(self, repo: RemoteRepo, name: str) -> str | None:
        """The commit id cached for a named revision (``refs/<name>``), or ``None`` when there is none.

        A ref file that does not hold a 40-hex commit id (or is not a small regular file) raises ``ValueError``:
        its content would otherwise become a path.
        """
        path = self._ref_path(repo, name)
        if path.is_dir():
            return None  # refs/<a>/<b> exists: <a> is a folder of longer refs, not a ref
        try:
            text = read_bounded(path, _REF_FILE_LIMIT).decode("ascii", errors="replace").strip()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except (OSError, UnsafeFileError) as error:
            raise ValueError(f"{repo.repo_id}: cannot read the cached ref {name} ({path}): {error}") from None
        if not text:
            return None
        if not is_commit_id(text):
            raise ValueError(
                f"{repo.repo_id}: the cached ref {name} ({path}) does not hold a 40-hex commit id; delete it and "
                f"load the kernel online again"
            )
        return text

    def write_ref(self, repo: RemoteRepo, name: str, sha: str) -> None:
        """Record ``name → sha`` as ``huggingface_hub`` does: 40 hex, no newline, replaced atomically (docs/loading.md).

        The ref file is written inside the cache only (:func:`~kernel_builder.common.safe_fs.write_inside`).
        """
        path = self._ref_path(repo, name)
        if not is_commit_id(sha):
            raise ValueError(f"{repo.repo_id}: {sha!r} is not a 40-hex commit id; not recording it as {name}")
        try:
            if self.read_ref(repo, name) == sha:
                return
        except ValueError:
            pass  # a damaged ref is replaced
        write_inside(self.cache_dir, path.relative_to(self.cache_dir), sha.encode("ascii"))

    def find_cached(self, repo_id: str, present: Callable[[RemoteRepo], bool]) -> RemoteRepo | None:
        """Offline type detection: the first of ``kernel`` and ``model`` for which ``present`` holds."""
        for kind in REPO_TYPES:
            candidate = RemoteRepo(repo_id, kind)
            if present(candidate):
                if kind == MODEL:
                    self._warn_legacy(repo_id)
                return candidate
        return None
