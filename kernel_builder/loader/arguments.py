"""Argument checks shared by the Hub loads and the layer repositories that name a Hub kernel.

Kept apart from :mod:`~kernel_builder.loader.remote` so that code which only describes a kernel (a
``LayerRepository`` built while a model library is imported) can validate its arguments without importing
``huggingface_hub``.
"""

from __future__ import annotations

import warnings

from kernel_builder.formats.identifiers import repo_id_problem, revision_problem

__all__ = ["check_repo_id", "check_revision_arguments", "check_trust_argument", "trusted_by_caller"]


def check_revision_arguments(version: object, revision: object) -> None:
    """Exactly one of ``version`` (an ``int`` ≥ 0, not a ``bool``) and ``revision`` (a non-empty string)."""
    if (version is None) == (revision is None):
        given = "both were given" if version is not None else "neither was given"
        raise ValueError(
            f"exactly one of version and revision is required ({given}): pass version=<N> to load the latest "
            f"build of major version N (branch v<N>), or revision=<branch, tag or commit SHA>"
        )
    if version is not None:
        if isinstance(version, bool) or not isinstance(version, int):
            raise TypeError(f"version must be an int N (branch v<N>), got {version!r}; pass version=<N>")
        if version < 0:
            raise ValueError(f"version must be 0 or more, got {version}; pass version=<N>")
    elif not isinstance(revision, str) or not revision.strip():
        raise ValueError(f"revision must be a branch, tag or commit SHA, got {revision!r}")
    else:
        problem = revision_problem(revision)  # it becomes a cache path and a request: git's rules
        if problem is not None:
            raise ValueError(f"revision {revision!r} is not a branch, tag or commit id ({problem})")


def check_repo_id(repo_id: object) -> str:
    """``repo_id`` itself when it is a Hub repo id ``<org>/<name>``; ``ValueError`` saying why otherwise."""
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise ValueError(f"invalid kernel repo id {repo_id!r}: {problem}")
    assert isinstance(repo_id, str)
    return repo_id


def check_trust_argument(trust_remote_code: object) -> bool | frozenset[str]:
    """Validate ``trust_remote_code``: ``True``, ``False`` or a list of repo ids (``<org>/<name>``).

    Returns the argument in the form :func:`trusted_by_caller` reads (a list becomes a ``frozenset``). Raises
    ``TypeError`` for any other type or a list item that is not a string, before any request is made; an item
    that is not a repo id (an organization name, say) is kept, as upstream keeps it, with a warning that it
    matches nothing.
    """
    if isinstance(trust_remote_code, bool):
        return trust_remote_code
    if isinstance(trust_remote_code, (list, tuple)):
        for item in trust_remote_code:
            if not isinstance(item, str):
                raise TypeError(
                    f"trust_remote_code lists {item!r}, which is not a string; list the repo ids "
                    f"(<org>/<name>) to load without a trusted publisher"
                )
            problem = repo_id_problem(item)
            if problem is not None:  # upstream ignores such an entry; it can never match, so say so
                warnings.warn(
                    f"trust_remote_code lists {item!r}, which is not a repo id ({problem}) and matches no "
                    f"repository; list repo ids (<org>/<name>), or pass True to trust every publisher",
                    UserWarning,
                    stacklevel=3,
                )
        return frozenset(trust_remote_code)
    raise TypeError(
        f"trust_remote_code must be True, False or a list of repo ids (<org>/<name>), got {trust_remote_code!r}"
    )


def trusted_by_caller(trust: bool | frozenset[str], repo_id: str) -> bool:
    """Whether the caller's ``trust_remote_code`` (as :func:`check_trust_argument` returns it) lets
    ``repo_id`` load without the publisher check."""
    return trust is True or (isinstance(trust, frozenset) and repo_id in trust)
