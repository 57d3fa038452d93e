"""Line numbers for the keys and values of a TOML document.

The values themselves come from ``tomllib`` (strict TOML 1.0, fast to import); this module only answers
"on which line is ``kernel.gelu.src[2]``?" for diagnostics. It scans text that ``tomllib`` has already
accepted, so it can assume valid syntax and stays small.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KeyPath = tuple[str | int, ...]

_ESCAPES = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b", '"': '"', "\\": "\\"}
_BASIC_STOPS = {False: re.compile(r'[\\"]'), True: re.compile(r'\\|"""')}
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SPACE = re.compile(r"[ \t\r]*")
_SPACE_AND_COMMENTS = re.compile(r"(?:[ \t\r\n]+|#[^\n]*)*")


@dataclass
class Positions:
    """``keys[path]`` is the line of a key or table header; ``values[path]`` where its value starts."""

    keys: dict[KeyPath, int] = field(default_factory=dict)
    values: dict[KeyPath, int] = field(default_factory=dict)

    _firsts: dict[str | int, int] | None = field(default=None, repr=False, compare=False)

    def line(self, path: KeyPath) -> int | None:
        """The line of the value at ``path``, else of its key, else of the nearest enclosing table."""
        probe = tuple(path)
        while probe:
            if probe in self.values and isinstance(path[-1], int):
                return self.values[probe]
            if probe in self.keys:
                return self.keys[probe]
            if probe in self.values:
                return self.values[probe]
            probe = probe[:-1]
        return self._first_under(tuple(path[:1]))

    def _first_under(self, prefix: KeyPath) -> int | None:
        """Implicit tables (``[kernels.x]`` defines ``kernels``) have no line: use their first child's.

        Only one-element prefixes are asked for; their lines are computed once (many diagnostics ask).
        """
        if not prefix:
            return None
        if self._firsts is None:
            firsts: dict[str | int, int] = {}
            for key_path, line in self.keys.items():
                if key_path and (key_path[0] not in firsts or line < firsts[key_path[0]]):
                    firsts[key_path[0]] = line
            self._firsts = firsts
        if len(prefix) == 1:
            return self._firsts.get(prefix[0])
        lines = [line for p, line in self.keys.items() if p[: len(prefix)] == prefix]
        return min(lines) if lines else None

    def key_line(self, path: KeyPath) -> int | None:
        """The line of the key itself (for arrays spanning lines, the line holding ``key =``)."""
        probe = tuple(path)
        while probe:
            if probe in self.keys:
                return self.keys[probe]
            probe = probe[:-1]
        return self._first_under(tuple(path[:1]))


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1
        self.out = Positions()
        self.array_tables: dict[KeyPath, int] = {}

    # -- low level -------------------------------------------------------------------------------
    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.text[i] if i < len(self.text) else ""

    def advance(self, n: int = 1) -> None:
        end = min(self.pos + n, len(self.text))
        self.line += self.text.count("\n", self.pos, end)
        self.pos = end

    def skip_ws(self, newlines: bool) -> None:
        match = (_SPACE_AND_COMMENTS if newlines else _SPACE).match(self.text, self.pos)
        if match is not None:
            self.advance(match.end() - self.pos)

    def read_string(self) -> str:
        quote = self.peek()
        triple = self.text.startswith(quote * 3, self.pos)
        delim = quote * 3 if triple else quote
        self.advance(len(delim))
        stops = _BASIC_STOPS[triple] if quote == '"' else None
        chars: list[str] = []
        while self.pos < len(self.text):
            if stops is None:
                found = self.text.find(delim, self.pos)
                at = len(self.text) if found < 0 else found
            else:
                match = stops.search(self.text, self.pos)
                at = len(self.text) if match is None else match.start()
            chars.append(self.text[self.pos : at])
            self.advance(at - self.pos)
            if self.pos >= len(self.text):
                break
            if self.peek() == "\\":
                self.read_escape(chars)
                continue
            # a closing """ may be followed by up to two more quotes that belong to the content
            while triple and self.text.startswith(delim + quote, self.pos):
                chars.append(quote)
                self.advance()
            self.advance(len(delim))
            return "".join(chars)
        return "".join(chars)

    def read_escape(self, chars: list[str]) -> None:
        """One escape of a basic string, decoded (keys may be quoted with escapes: ``"a\\nb"``)."""
        c = self.peek(1)
        if c in _ESCAPES:
            chars.append(_ESCAPES[c])
            self.advance(2)
        elif c in ("u", "U"):
            width = 4 if c == "u" else 8
            digits = self.text[self.pos + 2 : self.pos + 2 + width]
            try:
                chars.append(chr(int(digits, 16)))
            except ValueError:
                chars.append(digits)
            self.advance(2 + width)
        else:  # a line-ending backslash in a multi-line string: the whitespace up to the next text goes
            self.advance(1)
            while self.peek() in (" ", "\t", "\r", "\n"):
                self.advance()

    def read_key(self) -> list[str]:
        parts: list[str] = []
        while True:
            self.skip_ws(newlines=False)
            c = self.peek()
            if c in ('"', "'"):
                parts.append(self.read_string())
            else:
                match = _BARE_KEY.match(self.text, self.pos)
                end = self.pos if match is None else match.end()
                parts.append(self.text[self.pos : end])
                self.pos = end  # a bare key holds no newline
            self.skip_ws(newlines=False)
            if self.peek() == ".":
                self.advance()
                continue
            return parts

    # -- grammar ---------------------------------------------------------------------------------
    def document(self) -> Positions:
        table: KeyPath = ()
        while True:
            self.skip_ws(newlines=True)
            c = self.peek()
            if c == "":
                return self.out
            if c == "[":
                table = self.header()
            else:
                self.keyval(table)

    def header(self) -> KeyPath:
        line = self.line
        is_array = self.text.startswith("[[", self.pos)
        self.advance(2 if is_array else 1)
        path: KeyPath = tuple(self.read_key())
        self.advance(2 if is_array else 1)
        if is_array:
            index = self.array_tables.get(path, -1) + 1
            self.array_tables[path] = index
            self.out.keys.setdefault(path, line)
            path = (*path, index)
        self.out.keys.setdefault(path, line)
        return path

    def keyval(self, table: KeyPath) -> None:
        line = self.line
        path: KeyPath = (*table, *self.read_key())
        self.out.keys.setdefault(path, line)
        self.advance()  # '='
        self.value(path)

    def value(self, path: KeyPath) -> None:
        self.skip_ws(newlines=False)
        self.out.values.setdefault(path, self.line)
        c = self.peek()
        if c in ('"', "'"):
            self.read_string()
        elif c == "[":
            self.advance()
            index = 0
            while True:
                self.skip_ws(newlines=True)
                if self.peek() == "]":
                    self.advance()
                    return
                self.value((*path, index))
                index += 1
                self.skip_ws(newlines=True)
                if self.peek() == ",":
                    self.advance()
        elif c == "{":
            self.advance()
            while True:
                self.skip_ws(newlines=False)
                if self.peek() == "}":
                    self.advance()
                    return
                self.keyval(path)
                self.skip_ws(newlines=False)
                if self.peek() == ",":
                    self.advance()
        else:
            while self.peek() not in ("", "\n", ",", "]", "}", "#"):
                self.advance()


def scan_positions(text: str) -> Positions:
    """Map every key path (tables, keys, array elements by index) to its 1-based line."""
    return _Scanner(text).document()
