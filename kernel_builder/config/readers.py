"""Typed reads of raw TOML values, each reporting a wrong type (E4) at the value's line."""

from __future__ import annotations

from typing import Any

from kernel_builder.config.context import Context, describe
from kernel_builder.config.forms import type_name
from kernel_builder.config.positions import KeyPath
from kernel_builder.config.values import Version

_EXAMPLES = {
    "string": '"..."',
    "integer": "1",
    "array of strings": '["..."]',
    "version string": '"2.12"',
}


class Reader:
    """Reads one table's values; every problem becomes a diagnostic, never an exception."""

    def __init__(self, ctx: Context, table: dict[str, Any], path: KeyPath) -> None:
        self.ctx = ctx
        self.table = table
        self.path = path

    def has(self, key: str) -> bool:
        return key in self.table

    def _type_error(self, key: str, expected: str, value: object, example: str | None = None) -> None:
        shown = example or _EXAMPLES.get(expected, "...")
        self.ctx.error(
            f"{describe((*self.path, key))} must be {_article(expected)} {expected}, not {type_name(value)}",
            (*self.path, key),
            f"write `{key} = {shown}`",
        )

    def require(self, key: str, hint: str | None = None) -> bool:
        if key in self.table:
            return True
        self.ctx.error(
            f"{describe(self.path)} is missing required key `{key}`",
            self.path,
            hint or f"add `{key} = ...`",
            key=True,
        )
        return False

    def string(self, key: str, example: str | None = None) -> str | None:
        value = self.table.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self._type_error(key, "string", value, example)
            return None
        return value

    def integer(self, key: str, example: str | None = None) -> int | None:
        value = self.table.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self._type_error(key, "integer", value, example)
            return None
        return value

    def string_list(self, key: str, example: str | None = None) -> list[tuple[int, str]] | None:
        """``(index, value)`` of each string element; non-strings are reported and skipped."""
        value = self.table.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            if example is None and isinstance(value, str):
                example = f'["{value}"]'
            self._type_error(key, "array of strings", value, example)
            return None
        items: list[tuple[int, str]] = []
        for i, item in enumerate(value):
            if isinstance(item, str):
                items.append((i, item))
            else:
                self.ctx.error(
                    f"{describe((*self.path, key))} must hold strings, but element {i + 1} is {type_name(item)}",
                    (*self.path, key, i),
                    f'quote it: `"{item}"`' if isinstance(item, (int, float)) else "use strings only",
                )
        return items

    def version(self, key: str) -> Version | None:
        value = self.table.get(key)
        if value is None:
            return None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self.ctx.error(
                f"{describe((*self.path, key))} must be a version string, not {type_name(value)}",
                (*self.path, key),
                f'quote it: `{key} = "{value}"`',
            )
            return None
        if not isinstance(value, str):
            self._type_error(key, "version string", value)
            return None
        try:
            return Version.parse(value)
        except ValueError:
            self.ctx.error(
                f"invalid version `{value}` for {describe((*self.path, key))}",
                (*self.path, key),
                'a version is dot-separated numbers, e.g. "12.6" or "2.12"',
            )
            return None

    def unique(self, key: str, items: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """Drops duplicates with a warning (a warning; docs/build-toml.md)."""
        seen: set[str] = set()
        out: list[tuple[int, str]] = []
        for i, item in items:
            if item in seen:
                self.ctx.warning(
                    f"duplicate entry `{item}` in {describe((*self.path, key))} (ignored)",
                    (*self.path, key, i),
                )
                continue
            seen.add(item)
            out.append((i, item))
        return out


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"
