"""Limits on what a build.toml may contain, checked before anything else reads it.

A build.toml can come from anyone; these bounds keep every later stage (the TOML reader, the migrations, the
generated CMake project, file names, metadata.json readers) within what it handles:

* the file is a regular file of at most :data:`MAX_FILE_BYTES` (see :func:`kernel_builder.common.safe_fs.read_bounded`);
* values and tables nest at most :data:`MAX_DEPTH` levels (the TOML reader and ``deepcopy`` recurse);
* no string or key holds a control character (a newline in a repo id or a version, an escape sequence in a
  flag) or a bidirectional-text override, and no string is longer than :data:`MAX_STRING` characters;
* no integer is larger than :data:`MAX_INT`, the largest value every metadata reader accepts.

Each problem is a diagnostic at its line, like every other configuration error.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from kernel_builder.config.context import Context, describe
from kernel_builder.config.positions import KeyPath

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_INT",
    "MAX_NAME",
    "MAX_STRING",
    "bracket_nesting",
    "check_document",
    "shown",
]

#: build.toml files are a few kilobytes; a megabyte leaves room for any real one.
MAX_FILE_BYTES = 1 << 20
#: Real files nest three or four levels (``[kernel.x]``, an array of strings).
MAX_DEPTH = 16
#: PATH_MAX on Linux: no path, flag or name needs more.
MAX_STRING = 4096
#: The kernel name and section names become Python identifiers, CMake targets and file names.
MAX_NAME = 64
#: The largest integer a signed or unsigned 32-bit reader of metadata.json accepts.
MAX_INT = 2**31 - 1

# Strings, comments and the brackets that open and close arrays, inline tables and headers.
_TOKEN_RE = re.compile(r'"""|\'\'\'|"|\'|#|[\[\]{}]')
_MULTILINE_BASIC_END_RE = re.compile(r'(?:[^"\\]|\\.|"(?!""))*"""', re.DOTALL)
_BASIC_END_RE = re.compile(r'(?:[^"\\\n]|\\.)*"')
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def bracket_nesting(text: str, limit: int = MAX_DEPTH) -> tuple[int, int] | None:
    """The ``(line, column)`` where brackets first nest deeper than ``limit``, or ``None``.

    A linear scan that skips strings and comments; run before the TOML reader, whose recursion a deeply
    nested value would exhaust. It counts ``[`` and ``{`` only, so dotted keys are checked after parsing.
    """
    depth = 0
    position = 0
    end = len(text)
    while position < end:
        match = _TOKEN_RE.search(text, position)
        if match is None:
            return None
        token = match.group()
        position = match.end()
        if token in ("[", "{"):
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, match.start()) + 1
                return line, match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
        elif token in ("]", "}"):
            depth = max(depth - 1, 0)
        elif token == "#":
            newline = text.find("\n", position)
            position = end if newline < 0 else newline
        elif token == '"""':
            closing = _MULTILINE_BASIC_END_RE.match(text, position)
            position = end if closing is None else closing.end()
        elif token == "'''":
            closing_at = text.find("'''", position)
            position = end if closing_at < 0 else closing_at + 3
        elif token == '"':
            closing = _BASIC_END_RE.match(text, position)
            position = end if closing is None else closing.end()
        else:  # a literal string ends at the next quote (or, if unterminated, the end of the line)
            stop = min(i for i in (text.find("'", position), text.find("\n", position), end) if i >= 0)
            position = stop + 1
    return None


def _bad_character(text: str) -> str | None:
    for char in text:
        if char in _BIDI or unicodedata.category(char) == "Cc":
            return f"U+{ord(char):04X}"
    return None


def shown(text: str) -> str:
    """``text`` with control characters escaped, to quote it in a message."""
    return text.encode("unicode_escape").decode("ascii") if _bad_character(text) else text


def _check_string(ctx: Context, value: str, path: KeyPath) -> None:
    bad = _bad_character(value)
    if bad is not None:
        ctx.error(f"{describe(path)} contains a control character ({bad})", path, "remove it")
    elif len(value) > MAX_STRING:
        ctx.error(f"{describe(path)} is longer than {MAX_STRING} characters", path, "shorten it")


def _check_key(ctx: Context, key: str, path: KeyPath) -> None:
    bad = _bad_character(key)
    if bad is not None:
        ctx.error(f"the key `{shown(key)}` contains a control character ({bad})", path, "rename it", key=True)
    elif len(key) > MAX_STRING:
        ctx.error(f"a key is longer than {MAX_STRING} characters", path, "shorten it", key=True)


def check_document(doc: dict[str, Any], ctx: Context) -> None:
    """Report every key and value of ``doc`` beyond the limits above (iteratively: no recursion)."""
    pending: list[tuple[KeyPath, Any]] = [((), doc)]
    deepest_reported = False
    while pending:
        path, value = pending.pop()
        if len(path) > MAX_DEPTH:
            if not deepest_reported:
                deepest_reported = True
                ctx.error(
                    f"tables are nested more than {MAX_DEPTH} levels deep",
                    path,
                    "a build.toml needs a few levels: flatten the structure",
                    key=True,
                )
            continue
        if isinstance(value, dict):
            for key, item in value.items():
                _check_key(ctx, key, (*path, key))
                pending.append(((*path, key), item))
        elif isinstance(value, list):
            pending.extend(((*path, index), item) for index, item in enumerate(value))
        elif isinstance(value, str):
            _check_string(ctx, value, path)
        elif isinstance(value, int) and not isinstance(value, bool) and value > MAX_INT:
            ctx.error(
                f"{describe(path)} must be between 0 and {MAX_INT}",
                path,
                "metadata.json readers accept 32-bit integers only",
            )
