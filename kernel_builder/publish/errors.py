"""Errors of the publishing commands; the CLI turns them into messages and exit codes."""

from __future__ import annotations

from kernel_builder.errors import KernelBuilderError

__all__ = ["ProjectConfigError", "PublishError", "describe"]


class PublishError(KernelBuilderError):
    """An upload, lock or download failed, or the variants to upload were refused (exit 1)."""

    exit_code = 1


class ProjectConfigError(KernelBuilderError):
    """``pyproject.toml`` or ``kernels.lock`` is missing or invalid (exit 2)."""

    exit_code = 2


def describe(error: BaseException) -> str:
    """A failed request's message in one line: huggingface_hub's first line (status) and its last (the
    specific note: which repo, what was tried); other errors as they are."""
    from kernel_builder.hub import HTTP_ERRORS

    text = str(error).strip()
    if not text:
        return type(error).__name__
    if not isinstance(error, HTTP_ERRORS):
        return text
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return f"{lines[0]} {lines[-1]}" if len(lines) > 2 else " ".join(lines)
