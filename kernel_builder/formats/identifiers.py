"""Repository ids, kernel names, commit ids and ref names: the one place that decides which of them are valid.

Every name that comes from a user, a configuration file, a lock file or a Hub answer passes through here
before it becomes part of a path, a request or a ``sys.modules`` key. A name that passes is safe to use as a
path below a root: a repo id becomes one directory name (``kernels--org--name``), a commit id is 40 hex
digits, and a ref name follows git's rules (no ``..`` component, no leading ``/``, no control characters), so
none of them can climb out of the directory they are joined to.
"""

from __future__ import annotations

import re

__all__ = [
    "KERNEL_NAME_RE",
    "MAX_REF_LENGTH",
    "Oid",
    "REPO_ID_PATTERN",
    "is_commit_id",
    "is_git_object_id",
    "is_kernel_name",
    "is_repo_id",
    "ref_name_problem",
    "repo_id_problem",
    "revision_problem",
]

#: The Hub's limit on each half of a repo id.
MAX_REPO_PART = 96
#: Longer refs cannot be stored as one file name component on common file systems.
MAX_REF_LENGTH = 255

_COMMIT_RE = re.compile(r"[0-9a-f]{40}")
_GIT_OBJECT_RE = re.compile(r"[0-9a-fA-F]{40}|[0-9a-fA-F]{64}")
_REPO_PART_RE = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?")
#: The shape of ``<org>/<name>`` as one anchored regular expression (for JSON Schema); :func:`repo_id_problem`
#: also limits the length and refuses ``--`` and ``..``.
REPO_ID_PATTERN = f"^{_REPO_PART_RE.pattern}/{_REPO_PART_RE.pattern}$"
KERNEL_NAME_RE = re.compile(r"^[a-z][-a-z0-9]*[a-z0-9]\Z")  # \Z: `$` would accept a final newline
"""A kernel's name (``build.toml``'s ``general.name``, ``metadata.json``'s ``name``): lower-case letters, digits
and ``-``, starting with a letter and not ending with ``-``; anchored, so ``match`` tests the whole string."""
# git check-ref-format: control characters, space and ~^:?*[\ are never part of a ref name.
_REF_FORBIDDEN_RE = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")


def is_commit_id(value: object) -> bool:
    """A full commit id: exactly 40 lower-case hex digits (what the Hub and the cache use)."""
    return isinstance(value, str) and _COMMIT_RE.fullmatch(value) is not None


def is_git_object_id(value: object) -> bool:
    """A full git object id of either hash: 40 (SHA-1) or 64 (SHA-256) hex digits, either case.

    What ``metadata.json``'s ``provenance`` may record as a commit (the source repository need not be on the Hub,
    nor use SHA-1); the ``kernels`` loader refuses metadata whose commit is abbreviated or a ref name.
    """
    return isinstance(value, str) and _GIT_OBJECT_RE.fullmatch(value) is not None


class Oid(str):
    """A full git object id (:func:`is_git_object_id`), in lower case: the type of ``RepoInfo.revision``, as in
    the ``kernels`` loader since 0.18 (``Oid.from_str``, ``str(oid)``, ``repr`` ``Oid("…")``).

    It is a ``str``, so code written when the revision was a plain string (comparisons, f-strings, ``.startswith``)
    keeps working; only a full id can be made, so an abbreviated id or a ref name never passes for a commit.
    """

    __slots__ = ()

    def __new__(cls, value: str) -> Oid:
        if not is_git_object_id(value):
            raise ValueError(f"invalid git object id {value!r}: expected 40 or 64 hexadecimal digits")
        return super().__new__(cls, value.lower())

    @classmethod
    def from_str(cls, value: str) -> Oid:
        """``Oid(value)``: the spelling of the ``kernels`` loader's constructor."""
        return cls(value)

    def __repr__(self) -> str:
        return f'Oid("{self}")'

    def __str__(self) -> str:
        return str.__str__(self)

    def __reduce__(self) -> tuple[type[Oid], tuple[str]]:
        return (Oid, (str(self),))


def is_kernel_name(value: object) -> bool:
    """Whether ``value`` is a kernel name (:data:`KERNEL_NAME_RE`)."""
    return isinstance(value, str) and KERNEL_NAME_RE.match(value) is not None


def repo_id_problem(value: object) -> str | None:
    """Why ``value`` is not a Hub repo id ``<org>/<name>``, or ``None`` when it is one.

    Each half: 1 to 96 letters, digits, ``_``, ``-`` and ``.``, starting and ending with a letter, digit or
    ``_``, without ``--`` or ``..`` (the Hub's own rules, which also keep the cache folder name unambiguous).
    """
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__}"
    parts = value.split("/")
    if len(parts) != 2:
        return "expected <org>/<name> (exactly one '/')"
    for part in parts:
        if not part:
            return "expected <org>/<name> (an empty half)"
        if len(part) > MAX_REPO_PART:
            return f"each half of <org>/<name> has at most {MAX_REPO_PART} characters"
        if not _REPO_PART_RE.fullmatch(part):
            return "each half of <org>/<name> uses letters, digits, '_', '-' and '.', not at its start or end"
        if "--" in part or ".." in part:
            return "'--' and '..' are not allowed in <org>/<name>"
    return None


def is_repo_id(value: object) -> bool:
    return repo_id_problem(value) is None


def ref_name_problem(value: object) -> str | None:
    """Why ``value`` is not a git ref name (a branch or tag, ``refs/pr/1``), or ``None`` when it is one.

    git's rules (``git check-ref-format --allow-onelevel``): no control characters, space, ``~ ^ : ? * [ \\``;
    no ``..`` and no ``@{``; not ``@``; no empty component (``//``, leading or trailing ``/``); no component
    that starts with ``.`` or ends with ``.lock``; not ending with ``.``. At most 255 characters.
    """
    if not isinstance(value, str):
        return f"expected a string, got {type(value).__name__}"
    if not value:
        return "it is empty"
    if len(value) > MAX_REF_LENGTH:
        return f"it is longer than {MAX_REF_LENGTH} characters"
    if _REF_FORBIDDEN_RE.search(value):
        return "it contains a control character, a space or one of ~ ^ : ? * [ \\"
    if ".." in value or "@{" in value or value == "@":
        return "it contains '..' or '@{', or is '@'"
    if value.endswith("."):
        return "it ends with '.'"
    for component in value.split("/"):
        if not component:
            return "it has an empty component (a leading, trailing or doubled '/')"
        if component.startswith(".") or component.endswith(".lock"):
            return "a component starts with '.' or ends with '.lock'"
    return None


def revision_problem(value: object) -> str | None:
    """Why ``value`` is neither a commit id nor a ref name, or ``None``."""
    if is_commit_id(value):
        return None
    return ref_name_problem(value)
