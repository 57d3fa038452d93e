"""How long a Hub request may take, how often it is tried, and when a whole operation gives up
(docs/environment.md).

The limits apply to our own requests only. ``huggingface_hub`` sends every request through one shared HTTP
client, and neither ``HfApi`` nor ``hf_hub_download`` takes a client per call, so the bounds are set by a
request hook on that client which acts only inside :func:`scope`: a context variable says that the request
belongs to one of our operations. Any other request of the process (a model download by ``transformers``, a
dataset by ``datasets``) passes the hook untouched: same timeouts, same retries, same exceptions as without
kernel_builder.

An operation is one request of ours with all its tries (``list the branches``, ``download build/<variant>``).
It has a deadline: no try starts after it, each try's timeouts are cut to what is left of it, and
``huggingface_hub``'s own retries stop at it. For a transfer the deadline counts time without progress: each
byte beyond the most the transfer had received moves it forward, so a large download that keeps arriving is
never cut off, while one that stalls fails like any other request.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from huggingface_hub.utils.tqdm import tqdm as hf_tqdm

from kernel_builder.errors import HubConnectionError, UsageError
from kernel_builder.hub.errors import RETRY_STATUSES, DeadlinePassed, failure

__all__ = [
    "CONNECT_TIMEOUT",
    "DEADLINE",
    "READ_TIMEOUT",
    "RETRIES",
    "NetworkPolicy",
    "Operation",
    "install_hooks",
    "progress_class",
    "retrying",
    "scope",
]

logger = logging.getLogger("kernel_builder")
T = TypeVar("T")

CONNECT_TIMEOUT = "KERNEL_BUILDER_HUB_CONNECT_TIMEOUT"
READ_TIMEOUT = "KERNEL_BUILDER_HUB_READ_TIMEOUT"
RETRIES = "KERNEL_BUILDER_HUB_RETRIES"
DEADLINE = "KERNEL_BUILDER_HUB_DEADLINE"
BACKOFF_FIRST = 0.5  # seconds before the first retry; doubled each time
BACKOFF_MOST = 8.0  # no single wait is longer, whatever Retry-After asks


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
    """How long a Hub request may take, how often a failed one is tried again, and how long one operation may
    wait in all (docs/environment.md).

    ``connect``: seconds to open a connection; ``read``: seconds to wait for any byte of an answer; ``retries``:
    further attempts after a timeout, a dropped connection, a 429 or a 5xx, with exponential back-off;
    ``deadline``: seconds one operation may take with all its tries (for a transfer: without progress).
    """

    connect: float = 10.0
    read: float = 30.0
    retries: int = 2
    deadline: float = 50.0

    @classmethod
    def from_environment(cls) -> NetworkPolicy:
        text = os.environ.get(RETRIES, "").strip()
        retries = cls.retries
        if text:
            if not (text.isascii() and text.isdigit()) or int(text) > 20:
                raise UsageError(f"{RETRIES}={text!r} is not a whole number from 0 to 20; set it to e.g. 2")
            retries = int(text)
        return cls(
            _seconds(CONNECT_TIMEOUT, cls.connect),
            _seconds(READ_TIMEOUT, cls.read),
            retries,
            _seconds(DEADLINE, cls.deadline),
        )


@dataclass
class Operation:
    """One operation in flight: its policy, its deadline (monotonic seconds), and what the current try saw."""

    policy: NetworkPolicy
    transfer: bool = False
    deadline: float = math.inf
    try_deadline: float = (
        math.inf
    )  # the current try's: connect + read for all of huggingface_hub's own retries
    read: float = 0.0  # the read timeout the latest request was sent with
    connect: float = 0.0
    last_failure: str | None = None  # the latest answer worth a retry (429, 5xx), for the message
    tries: list[str] = field(default_factory=list)

    def remaining(self) -> float:
        """Seconds left to the current try (``huggingface_hub`` retrying on its own included)."""
        return min(self.deadline, self.try_deadline) - time.monotonic()

    def start_try(self) -> None:
        self.try_deadline = time.monotonic() + self.policy.connect + self.policy.read
        self.last_failure = None
        self.read, self.connect = self.policy.read, self.policy.connect

    def progressed(self) -> None:
        """New bytes arrived: a transfer's deadlines move to whole ones from now."""
        if self.transfer:
            now = time.monotonic()
            self.deadline = max(self.deadline, now + self.policy.deadline)
            self.try_deadline = max(self.try_deadline, now + self.policy.connect + self.policy.read)


_current: ContextVar[Operation | None] = ContextVar("kernel_builder_hub_operation", default=None)


@contextmanager
def scope(operation: Operation) -> Iterator[Operation]:
    """Requests sent in this context belong to ``operation``: the hooks bound them (outside, they do nothing)."""
    token = _current.set(operation)
    try:
        yield operation
    finally:
        _current.reset(token)


def _bound_request(request: Any) -> None:
    """The request hook: for our requests only, stop one that starts after the deadline and cap its timeouts
    (the lower of the request's own and ours wins)."""
    operation = _current.get()
    if operation is None:
        return
    policy = operation.policy
    left = operation.remaining()
    if left <= 0:
        last = operation.last_failure or "no complete answer"
        if operation.deadline <= operation.try_deadline:
            raise DeadlinePassed(f"{last}, and the {policy.deadline:g} s deadline passed")
        budget = policy.connect + policy.read
        raise DeadlinePassed(f"{last} (still failing after {budget:g} s of huggingface_hub's own retries)")
    timeouts = dict(request.extensions.get("timeout") or {})
    for key, limit in (
        ("connect", policy.connect),
        ("pool", policy.connect),
        ("read", policy.read),
        ("write", policy.read),
    ):
        current = timeouts.get(key)
        timeouts[key] = min(limit, left) if current is None else min(current, limit, left)
    request.extensions["timeout"] = timeouts
    operation.read, operation.connect = timeouts["read"], timeouts["connect"]


def _note_response(response: Any) -> None:
    operation = _current.get()
    if operation is not None and response.status_code in RETRY_STATUSES:
        operation.last_failure = f"the Hub answered HTTP {response.status_code}"


def install_hooks() -> None:
    """Put the two hooks on ``huggingface_hub``'s shared client (once; again if it made a new client). They act
    only on requests sent inside :func:`scope`."""
    from huggingface_hub import get_session

    hooks = get_session().event_hooks
    if _bound_request not in hooks["request"]:
        hooks["request"].append(_bound_request)
    if _note_response not in hooks["response"]:
        hooks["response"].append(_note_response)


class _QuietProgress(hf_tqdm):
    """No progress bars (the library is quiet, the CLI decides what to show); counts a transfer's progress.

    ``operation`` is set on a class made per operation (:func:`progress_class`). ``snapshot_download`` downloads
    in worker threads that start with an empty context; they call :meth:`set_lock` first, which puts them in
    the operation's scope too.
    """

    operation: Operation | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["disable"] = True
        super().__init__(*args, **kwargs)  # type: ignore[no-untyped-call]
        self._position = float(kwargs.get("initial") or 0)
        self._most = self._position
        # Only bars that count bytes measure progress: ``snapshot_download`` also counts finished files on a bar of
        # this class, and a file taken from the cache is no byte from the Hub (counting it gave every retry of a
        # folder download with one stalled file a whole new deadline).
        self._bytes = kwargs.get("unit") == "B"

    def update(self, n: float | None = 1) -> bool | None:
        # A resumed download that restarts from 0 counts down first: only bytes past the most count.
        self._position += n or 0
        if self._bytes and self._position > self._most:
            self._most = self._position
            if self.operation is not None:
                self.operation.progressed()
        return super().update(n)  # type: ignore[no-any-return]

    @classmethod
    def set_lock(cls, lock: Any) -> None:
        super().set_lock(lock)
        if cls.operation is not None:
            _current.set(cls.operation)


def progress_class() -> type[hf_tqdm]:
    """The progress class for a download inside the current operation (quiet; it counts the bytes)."""
    return type("_OperationProgress", (_QuietProgress,), {"operation": _current.get()})


def _read_limit(operation: Operation) -> str:
    """What set the read timeout of the try's last request, for the message."""
    policy = operation.policy
    if operation.read >= policy.read:
        return "the read timeout"
    if operation.deadline <= operation.try_deadline:
        return f"what was left of the {policy.deadline:g} s deadline"
    return f"what was left of the try's {policy.connect + policy.read:g} s"


def retrying(
    what: str, action: Callable[[], T], policy: NetworkPolicy, *, endpoint: str, transfer: bool = False
) -> T:
    """Run ``action`` as one operation: try again after a timeout, a dropped connection, a 429 or a 5xx, until
    the tries are spent or the deadline has passed.

    Waits ``0.5 s``, ``1 s``, ``2 s``, … (or what ``Retry-After`` asks, at most 8 s, never past the deadline)
    between tries. When the last try fails the same way, raises :class:`HubConnectionError` naming the endpoint,
    ``what`` was asked, the last cause and every try; any other error propagates unchanged at once.
    """
    attempts = policy.retries + 1
    start = time.monotonic()
    operation = Operation(policy, transfer, start + policy.deadline)
    for attempt in range(1, attempts + 1):
        operation.start_try()
        with scope(operation):
            try:
                return action()
            except Exception as error:
                found = failure(
                    error, connect=operation.connect, read=operation.read, read_limit=_read_limit(operation)
                )
                if found is None:
                    raise
        operation.tries.append(found.reason)
        wait = min(
            BACKOFF_MOST,
            found.asked_wait if found.asked_wait is not None else BACKOFF_FIRST * 2 ** (attempt - 1),
        )
        out_of_time = operation.deadline - time.monotonic() - wait <= 0
        if attempt == attempts or out_of_time:
            tried = "once" if attempt == 1 else f"{attempt} times"
            stopped = (
                f"; the {policy.deadline:g} s deadline ended the tries"
                if out_of_time and attempt < attempts
                else ""
            )
            each = "; ".join(f"try {number}: {reason}" for number, reason in enumerate(operation.tries, 1))
            raise HubConnectionError(
                f"{what} on {endpoint} failed: {found.reason} (tried {tried}). In {time.monotonic() - start:.0f} s: "
                f"{each}{stopped}. Check the network connection and HF_ENDPOINT (now {endpoint}); "
                f"{CONNECT_TIMEOUT}, {READ_TIMEOUT}, {RETRIES} and {DEADLINE} set the limits "
                f"(docs/environment.md), HF_HUB_OFFLINE=1 loads from the cache alone."
            ) from None
        logger.info(
            "%s: %s; trying again in %.1f s (attempt %d of %d)",
            what,
            found.reason,
            wait,
            attempt + 1,
            attempts,
        )
        time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover


@contextmanager
def unbounded_scope(policy: NetworkPolicy) -> Iterator[Operation]:
    """Our requests without a deadline (uploads: a commit may take long); the per-request timeouts apply."""
    with scope(Operation(policy)) as operation:
        yield operation
