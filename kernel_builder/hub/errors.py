"""What a failed Hub request means: which exceptions are request failures, which are worth another try, and
the one-line reason the errors of :mod:`kernel_builder.hub` give (docs/environment.md)."""

from __future__ import annotations

from dataclasses import dataclass

from huggingface_hub.errors import HfHubHTTPError

__all__ = [
    "HTTP_ERRORS",
    "REQUEST_ERRORS",
    "RETRY_STATUSES",
    "DeadlinePassed",
    "Failure",
    "describe_error",
    "failure",
]

# What a failed Hub request raises: HTTP errors, and the transport errors of the HTTP library under
# huggingface_hub (the base class its HfHubHTTPError extends, found without naming that library); with
# OSError, for requests that fail locally (a full disk, an unreadable file to upload).
HTTP_ERRORS: tuple[type[Exception], ...] = (
    HfHubHTTPError,
    *(base for base in HfHubHTTPError.__mro__[1:] if base.__name__ == "HTTPError"),
)
REQUEST_ERRORS: tuple[type[Exception], ...] = (*HTTP_ERRORS, OSError)

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
# Transport failures by the class names of the HTTP library under huggingface_hub (it has changed library
# before): worth another try, and reported as a network problem rather than a traceback.
_TIMEOUT_CLASSES = frozenset({"TimeoutException", "Timeout"})
_DROPPED_CLASSES = frozenset({"NetworkError", "RemoteProtocolError", "ConnectError", "ConnectionError"})


class DeadlinePassed(Exception):
    """Raised from the request hook when a request (huggingface_hub retrying on its own, or the next file of a
    folder download) would start after the operation's deadline. ``args[0]``: the reason, for the message."""


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


@dataclass(frozen=True)
class Failure:
    """A failure worth another try: why, in words, and the wait the Hub asked for (``Retry-After``)."""

    reason: str
    asked_wait: float | None = None


def failure(
    error: BaseException, *, connect: float, read: float, read_limit: str = "the read timeout"
) -> Failure | None:
    """What went wrong when it is worth another try; ``None`` for any other error (it propagates as it is).

    ``connect`` and ``read`` are the timeouts the failed try ran under; ``read_limit`` names what set ``read``. Looks through the causes too:
    ``hf_hub_download`` reports a failed request as ``LocalEntryNotFoundError`` raised from the real error.
    """
    seen: BaseException | None = error
    for _ in range(6):
        if seen is None:
            return None
        if isinstance(seen, DeadlinePassed):
            return Failure(str(seen.args[0]) if seen.args else "the deadline passed")
        if isinstance(seen, HfHubHTTPError) and seen.response is not None:
            status = seen.response.status_code
            if status in RETRY_STATUSES:
                wait = seen.response.headers.get("Retry-After", "")
                asked = float(wait) if wait.isascii() and wait.isdigit() else None
                return Failure(f"the Hub answered HTTP {status}", asked)
            return None
        names = {klass.__name__ for klass in type(seen).__mro__}
        if names & _TIMEOUT_CLASSES:
            if "ConnectTimeout" in names or "PoolTimeout" in names:
                return Failure(f"could not connect within {connect:.3g} s")
            return Failure(f"no answer within {read:.3g} s ({read_limit})")
        if "ConnectError" in names or isinstance(seen, ConnectionRefusedError):
            return Failure("could not connect")
        if names & _DROPPED_CLASSES:
            return Failure("the connection was dropped before the answer was complete")
        seen = seen.__cause__ or seen.__context__
    return None
