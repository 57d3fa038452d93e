"""The one exception hierarchy of kernel-builder and the one place that maps it to exit statuses.

Library code raises these; only the CLI's ``main()`` turns them into a message and an exit status:

- :class:`KernelBuilderError` and every subclass not listed below: the operation failed (exit 1) —
  :class:`BuildError`, :class:`HubError`, the loader's and ``kernelize``'s errors.
- :class:`UsageError` and its subclass :class:`ConfigError`: the user asked for something invalid — a bad
  flag, argument or path, or an invalid configuration file (exit 2).

Only these two classes set ``exit_code``; every other class inherits it, so the mapping lives here alone. The
loader's and ``kernelize``'s errors also derive from the builtin exception upstream's ``kernels`` raises in
the same situation (``ValueError``, ``FileNotFoundError``, ...), so ``except ValueError`` keeps catching them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from kernel_builder.common.diagnostics import Diagnostic

__all__ = [
    "BuildError",
    "CompileError",
    "ConfigError",
    "HubConnectionError",
    "HubError",
    "KernelBuilderError",
    "UsageError",
    "exit_status",
]

#: The exit statuses (0 is success).
FAILED = 1
USAGE = 2


class KernelBuilderError(Exception):
    """An error the user can act on; ``str(err)`` is the whole message (no traceback needed)."""

    exit_code = FAILED


class UsageError(KernelBuilderError):
    """A bad flag, argument or path given on the command line (exit 2)."""

    exit_code = USAGE


class ConfigError(UsageError):
    """``build.toml``, ``pyproject.toml``, ``kernels.lock`` (or another configuration file) is invalid (exit 2).

    Built from a message, or from every diagnostic of the run (warnings included) so that the caller can print
    them in line order.
    """

    def __init__(self, problem: str | Sequence[Diagnostic]) -> None:
        if isinstance(problem, str):
            self.diagnostics: list[Diagnostic] = []
            super().__init__(problem)
        else:
            self.diagnostics = list(problem)
            super().__init__("\n".join(d.render() for d in self.diagnostics))


class BuildError(KernelBuilderError):
    """A build step failed (compiler error, missing toolchain, ...)."""


class CompileError(BuildError):
    """The compiler rejected the kernel's sources.

    ``str(err)`` is the command line's message; ``diagnostics`` holds the compiler's own lines for the failed
    files and nothing else (no CMake or Ninja output), ``location`` the ``file:line[:col]`` of the first error (or
    ``None``), and ``log_file`` the full output of the build (or ``None`` when it went to the terminal).
    """

    def __init__(
        self,
        message: str,
        *,
        diagnostics: str = "",
        location: str | None = None,
        log_file: Path | None = None,
    ) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics
        self.location = location
        self.log_file = log_file


class HubError(KernelBuilderError):
    """An upload, lock or download failed, or the variants to upload were refused."""


class HubConnectionError(HubError, ConnectionError):
    """The Hub could not be reached, stopped answering, or kept failing (429, 5xx) after the retries.

    The message names the endpoint, the repository and the request, and what went wrong (could not connect,
    no answer within the read timeout, a dropped connection, the last HTTP status). A ``ConnectionError``
    too, so ``except OSError`` around a load keeps catching network failures.
    """


def exit_status(error: BaseException) -> int:
    """The exit status for an error that reached the command line: its class's, or 1 for any other error."""
    return error.exit_code if isinstance(error, KernelBuilderError) else FAILED
