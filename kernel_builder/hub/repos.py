"""The values the Hub operations take and give: a repository (and, once found, its type), a file of a tree
listing, the operations of a commit and its result."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "KERNEL",
    "MODEL",
    "REPO_TYPES",
    "AddFile",
    "CommitResult",
    "DeleteFile",
    "RemoteFile",
    "RemoteRepo",
]

KERNEL = "kernel"
MODEL = "model"
REPO_TYPES = (KERNEL, MODEL)


@dataclass
class RemoteRepo:
    """A repo id and, once a call has found it, its type (``kernel`` or legacy ``model``)."""

    repo_id: str
    repo_type: str | None = None


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
