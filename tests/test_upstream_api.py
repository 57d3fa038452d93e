"""Public API parity with the installed upstream ``kernels`` package (the pinned 0.19.1, tests/upstream_kernels.py):
every name of ``kernels.__all__``
exists in ``kernel_builder``; every parameter of every upstream callable exists in ours with the same kind,
position and default, so a call written for upstream works unchanged (ours may add optional parameters); and
the table of docs/migrating.md lists exactly upstream's names. What the parameters do is compared in
test_upstream_loader_compat.py.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from upstream_kernels import PINNED

import kernel_builder

kernels = pytest.importorskip("kernels")

MIGRATING = Path(__file__).resolve().parents[1] / "docs" / "migrating.md"


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def upstream_names() -> list[str]:
    return sorted(kernels.__all__)


def signature(obj: Any) -> inspect.Signature | None:
    """The call signature; ``None`` for a class of upstream's Rust extension that has no constructor at all
    (``Metadata``: ``inspect`` reports ``()``, and calling it raises ``TypeError``)."""
    if isinstance(obj, type) and obj.__module__ == "builtins" and vars(obj).get("__init__") is None:
        return None
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def incompatibilities(theirs: inspect.Signature, ours: inspect.Signature) -> list[str]:
    """What a call valid for ``theirs`` could not do with ``ours``: a missing parameter, one that moved or
    changed kind, a default that differs, or a parameter of ours that such a call could not leave out."""
    problems: list[str] = []
    our_params = ours.parameters
    our_order = [p.name for p in our_params.values() if p.kind in _POSITIONAL]
    their_order = [p.name for p in theirs.parameters.values() if p.kind in _POSITIONAL]
    for name, param in theirs.parameters.items():
        if param.kind in _VARIADIC:
            if not any(p.kind == param.kind for p in our_params.values()):
                problems.append(f"no {param.kind.description} parameter (upstream's *{name})")
            continue
        mine = our_params.get(name)
        if mine is None:
            problems.append(f"missing parameter {name!r}")
            continue
        if param.kind in _POSITIONAL:
            if mine.kind not in _POSITIONAL or our_order.index(name) != their_order.index(name):
                problems.append(f"{name!r} is not positional at index {their_order.index(name)}")
        elif mine.kind not in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            problems.append(f"{name!r} cannot be passed by keyword")
        if param.default is not inspect.Parameter.empty and mine.default != param.default:
            problems.append(f"{name!r} defaults to {mine.default!r}, upstream to {param.default!r}")
    for name, mine in our_params.items():
        if name in theirs.parameters or mine.kind in _VARIADIC:
            continue
        if mine.default is inspect.Parameter.empty:
            problems.append(f"our extra parameter {name!r} is required")
        if mine.kind in _POSITIONAL and our_order.index(name) < len(their_order):
            problems.append(f"our extra parameter {name!r} takes a position upstream's parameters use")
    return problems


def test_the_comparison_is_against_the_pinned_release() -> None:
    assert kernels.__version__ == PINNED


def test_every_upstream_name_exists() -> None:
    missing = [name for name in upstream_names() if not hasattr(kernel_builder, name)]
    assert missing == []


@pytest.mark.parametrize("name", [n for n in upstream_names() if callable(getattr(kernels, n))])
def test_upstream_parameters_exist_with_the_same_meaning(name: str) -> None:
    theirs, ours = signature(getattr(kernels, name)), signature(getattr(kernel_builder, name))
    if theirs is None:  # upstream's Metadata: a builtin class, made by its reader, never called by users
        with pytest.raises(TypeError):
            getattr(kernels, name)()
        assert isinstance(getattr(kernel_builder, name), type)
        return
    assert ours is not None, f"kernel_builder.{name} has no signature; upstream's is {theirs}"
    assert incompatibilities(theirs, ours) == [], f"upstream {name}{theirs}\n     ours {name}{ours}"


def test_the_comparison_catches_what_would_break_a_call() -> None:
    """The checker itself, on hand-made signatures: each kind of break is reported."""

    def upstream(repo_id: str, *, version: int | None = None, check_arch: bool = True) -> None: ...

    def missing(repo_id: str, *, version: int | None = None) -> None: ...

    def other_default(repo_id: str, *, version: int | None = None, check_arch: bool = False) -> None: ...

    def moved(*, repo_id: str, version: int | None = None, check_arch: bool = True) -> None: ...

    def required_extra(
        repo_id: str, *, version: int | None = None, check_arch: bool = True, x: int
    ) -> None: ...

    def superset(
        repo_id: str,
        backend: str | None = None,
        *,
        version: int | None = None,
        check_arch: bool = True,
        y: int = 0,
    ) -> None: ...

    base = inspect.signature(upstream)
    assert incompatibilities(base, inspect.signature(missing)) == ["missing parameter 'check_arch'"]
    assert incompatibilities(base, inspect.signature(other_default)) == [
        "'check_arch' defaults to False, upstream to True"
    ]
    assert incompatibilities(base, inspect.signature(moved)) == ["'repo_id' is not positional at index 0"]
    assert incompatibilities(base, inspect.signature(required_extra)) == [
        "our extra parameter 'x' is required"
    ]
    assert incompatibilities(base, inspect.signature(superset)) == []


# --- docs/migrating.md ----------------------------------------------------------------------------------------


def table_names() -> list[str]:
    """The first-column names of the table under ``## The `kernels` API`` in docs/migrating.md."""
    text = MIGRATING.read_text(encoding="utf-8")
    section = text.split("## The `kernels` API", 1)[1].split("\n## ", 1)[0]
    return [m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", section, re.MULTILINE)]


def test_migrating_table_lists_exactly_upstreams_names() -> None:
    names = table_names()
    assert len(names) == len(set(names)), "a name is listed twice"
    assert sorted(set(upstream_names()) - set(names)) == [], "upstream names missing from the table"
    assert sorted(set(names) - set(upstream_names())) == [], "stale names: not in kernels.__all__"
