"""The one exception root of kernel-builder and its exit codes.

Library code raises these; only the CLI's ``main()`` turns them into a message and an exit status
(0 success, 1 the operation failed, 2 usage or configuration error).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kernel_builder.common.diagnostics import Diagnostic


class KernelBuilderError(Exception):
    """An error the user can act on; ``str(err)`` is the whole message (no traceback needed)."""

    exit_code = 1


class UsageError(KernelBuilderError):
    """A bad flag, argument or path given on the command line."""

    exit_code = 2


class ConfigError(KernelBuilderError):
    """``build.toml`` (or another configuration file) is invalid.

    Carries every diagnostic of the run, warnings included, so the caller can print them in line order.
    """

    exit_code = 2

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        super().__init__("\n".join(d.render() for d in diagnostics))


class BuildError(KernelBuilderError):
    """A build step failed (compiler error, missing toolchain, ...)."""

    exit_code = 1
