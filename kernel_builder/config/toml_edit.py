"""Placing keys in a tomlkit document: the few edits ``update-build`` makes that tomlkit has no public call for.

tomlkit's public API adds a key at the end of its table; ``update-build`` must put ``version`` right after
``name``, a companion ``[kernel.<name>_rocm]`` right after its section, and so on. The container's positional
insert and replace exist in every tomlkit release the dependency range allows (0.13.0 to 0.15.x), but they are
private and their helpers have changed between releases (0.15 dropped ``_insert_after``), so where a key lands
must not depend on them: this module computes every position itself from the container's body and calls only
the two primitives every release has. tests/test_config_toml_edit.py runs update-build under the oldest and the
newest release of the range and asserts the same bytes.
"""

from __future__ import annotations

from typing import Any


def key_index(container: Any, key: str) -> int:
    """The position of ``key`` in ``container``'s body (a table's or the document's), or -1 (also where
    ``container`` keeps no body: the table of dotted keys, ``general.name = ...``)."""
    for i, (k, _) in enumerate(getattr(container, "body", ())):
        if k is not None and k.key == key:
            return i
    return -1


def insert_at(container: Any, index: int, key: str, value: Any) -> None:
    """Insert ``key = value`` at ``index`` of the body; past the end is an append."""
    if index >= len(container.body):
        container.append(key, value)
    else:
        container._insert_at(index, key, value)


def insert_after(container: Any, anchor: str, key: str, value: Any) -> None:
    """Insert ``key = value`` on the line after ``anchor``'s."""
    index = key_index(container, anchor)
    if index < 0:
        raise KeyError(anchor)
    insert_at(container, index + 1, key, value)


def replace_key(container: Any, old: str, new: str, value: Any) -> None:
    """Put ``value`` under the key ``new`` where ``old`` stood."""
    index = key_index(container, old)
    if index < 0:
        raise KeyError(old)
    container._replace_at(index, new, value)
