"""Repo ids, commit ids and ref names: what may become part of a path or a request (docs/security.md)."""

from __future__ import annotations

import pickle

import pytest

from kernel_builder.formats.identifiers import (
    Oid,
    is_commit_id,
    is_git_object_id,
    is_repo_id,
    ref_name_problem,
    repo_id_problem,
    revision_problem,
)


@pytest.mark.parametrize(
    "value", ["org/relu", "kernels-community/activation", "a/b", "_x/y_", "A.b/c-d.e", f"{'o' * 96}/n"]
)
def test_valid_repo_ids(value: str) -> None:
    assert repo_id_problem(value) is None and is_repo_id(value)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("relu", "expected <org>/<name> (exactly one '/')"),
        ("a/b/c", "expected <org>/<name> (exactly one '/')"),
        ("/relu", "expected <org>/<name> (an empty half)"),
        ("org/", "expected <org>/<name> (an empty half)"),
        (
            "../relu",
            "each half of <org>/<name> uses letters, digits, '_', '-' and '.', not at its start or end",
        ),
        (
            "org/..",
            "each half of <org>/<name> uses letters, digits, '_', '-' and '.', not at its start or end",
        ),
        (
            "org/-x",
            "each half of <org>/<name> uses letters, digits, '_', '-' and '.', not at its start or end",
        ),
        (
            "org/re lu",
            "each half of <org>/<name> uses letters, digits, '_', '-' and '.', not at its start or end",
        ),
        (
            "org/relu\n",
            "each half of <org>/<name> uses letters, digits, '_', '-' and '.', not at its start or end",
        ),
        ("org/re--lu", "'--' and '..' are not allowed in <org>/<name>"),
        ("org/re..lu", "'--' and '..' are not allowed in <org>/<name>"),
        (f"{'o' * 97}/n", "each half of <org>/<name> has at most 96 characters"),
        (None, "expected a string, got NoneType"),
    ],
)
def test_invalid_repo_ids(value: object, problem: str) -> None:
    assert repo_id_problem(value) == problem
    assert not is_repo_id(value)


def test_commit_ids() -> None:
    assert is_commit_id("0123456789abcdef0123456789abcdef01234567")
    for value in (
        "0123456789ABCDEF0123456789abcdef01234567",
        "abc",
        "a" * 41,
        "a" * 39 + "\n",
        None,
        "../" + "a" * 37,
    ):
        assert not is_commit_id(value)


@pytest.mark.parametrize(
    "value", ["main", "v1", "refs/pr/12", "feature/x.y", "release-2.0", "a@b", "x.lock.y"]
)
def test_valid_ref_names(value: str) -> None:
    assert ref_name_problem(value) is None
    assert revision_problem(value) is None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("", "it is empty"),
        ("x" * 256, "it is longer than 255 characters"),
        ("a b", "it contains a control character, a space or one of ~ ^ : ? * [ \\"),
        ("a\nb", "it contains a control character, a space or one of ~ ^ : ? * [ \\"),
        ("a\x7f", "it contains a control character, a space or one of ~ ^ : ? * [ \\"),
        ("HEAD~1", "it contains a control character, a space or one of ~ ^ : ? * [ \\"),
        ("a:b", "it contains a control character, a space or one of ~ ^ : ? * [ \\"),
        ("a\\b", "it contains a control character, a space or one of ~ ^ : ? * [ \\"),
        ("v*", "it contains a control character, a space or one of ~ ^ : ? * [ \\"),
        ("../x", "it contains '..' or '@{', or is '@'"),
        ("a/../b", "it contains '..' or '@{', or is '@'"),
        ("a@{1}", "it contains '..' or '@{', or is '@'"),
        ("@", "it contains '..' or '@{', or is '@'"),
        ("main.", "it ends with '.'"),
        ("/main", "it has an empty component (a leading, trailing or doubled '/')"),
        ("main/", "it has an empty component (a leading, trailing or doubled '/')"),
        ("a//b", "it has an empty component (a leading, trailing or doubled '/')"),
        (".hidden", "a component starts with '.' or ends with '.lock'"),
        ("a/.b", "a component starts with '.' or ends with '.lock'"),
        ("main.lock", "a component starts with '.' or ends with '.lock'"),
        (1, "expected a string, got int"),
    ],
)
def test_invalid_ref_names(value: object, problem: str) -> None:
    assert ref_name_problem(value) == problem
    assert revision_problem(value) == problem


def test_a_commit_id_is_a_revision() -> None:
    assert revision_problem("f" * 40) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [("a" * 40, True), ("A" * 40, True), ("0" * 64, True), ("abcdef1", False), ("g" * 40, False), ("", False),
     ("a" * 41, False), ("HEAD", False)],
)  # fmt: skip
def test_git_object_ids_of_provenance(text: str, expected: bool) -> None:
    """What metadata.json may record as a commit: either hash, either case (not only the Hub's form)."""
    assert is_git_object_id(text) is expected


def test_oid_is_a_full_object_id_and_a_str() -> None:
    """``RepoInfo.revision``'s type: built from 40 or 64 hex digits (lower-cased), spelled as the ``kernels``
    loader spells its ``Oid``, and still a ``str`` for code that treats the revision as one."""
    oid = Oid.from_str("A" * 40)
    assert (str(oid), repr(oid), oid == "a" * 40, isinstance(oid, str)) == (
        "a" * 40,
        f'Oid("{"a" * 40}")',
        True,
        True,
    )
    assert Oid("b" * 64) == "b" * 64
    assert pickle.loads(pickle.dumps(oid)) == oid and type(pickle.loads(pickle.dumps(oid))) is Oid
    for bad in ("a" * 39, "g" * 40, " " + "a" * 40, "v1", "main"):
        with pytest.raises(ValueError, match="expected 40 or 64 hexadecimal digits"):
            Oid(bad)
