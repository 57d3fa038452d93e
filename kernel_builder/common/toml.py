"""Reading TOML: the standard library's ``tomllib`` (Python 3.11 and later) or its backport ``tomli``.

The one place that chooses between the two, so that every reader (``build.toml``, ``pyproject.toml``, a Hub
repository's redirect file) parses the same TOML 1.0 and catches the same :class:`TOMLDecodeError`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib as _reader
else:  # pragma: no cover
    import tomli as _reader  # type: ignore[import-not-found,unused-ignore]

__all__ = ["TOMLDecodeError", "loads", "read_toml"]

TOMLDecodeError = _reader.TOMLDecodeError
"""Raised for text that is not valid TOML; its message ends with ``(at line L, column C)`` where known."""


def loads(text: str) -> dict[str, Any]:
    """The table a TOML document holds. Raises :class:`TOMLDecodeError`."""
    table: dict[str, Any] = _reader.loads(text)
    return table


def read_toml(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The table of the UTF-8 TOML file at ``path``.

    Raises ``OSError`` (``FileNotFoundError``, ...), ``UnicodeDecodeError`` and :class:`TOMLDecodeError`.
    """
    with open(path, encoding="utf-8") as handle:
        return loads(handle.read())
