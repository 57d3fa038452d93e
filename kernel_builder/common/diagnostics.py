"""Diagnostics: one problem with its place in a file, rendered the way compilers do.

``<path>:<line>: error: <what>`` followed by ``  hint: <what to do>``. They are collected in one pass so a
user sees every problem at once, ordered by line. A diagnostic may carry a ``kind``: a stable name of what it
reports, so that code which passes on some of its own findings and not others picks them by kind, never by
their wording (which is for people, and changes).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Diagnostic:
    severity: Severity
    message: str
    path: str
    line: int | None = None
    col: int | None = None
    hint: str | None = None
    #: What it reports, for code that filters diagnostics (``"off-matrix"``); not part of its identity: the same
    #: problem at the same place is one diagnostic.
    kind: str | None = field(default=None, compare=False)

    def render(self) -> str:
        where = self.path
        if self.line is not None:
            where += f":{self.line}"
            if self.col is not None:
                where += f":{self.col}"
        text = f"{where}: {self.severity.value}: {self.message}"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


@dataclass
class DiagnosticList:
    """Collects diagnostics for one file; ``sorted()`` gives them in reading order."""

    path: str
    items: list[Diagnostic] = field(default_factory=list)
    _seen: set[Diagnostic] = field(default_factory=set, repr=False, compare=False)

    def add(
        self,
        severity: Severity,
        message: str,
        line: int | None = None,
        hint: str | None = None,
        col: int | None = None,
        kind: str | None = None,
    ) -> None:
        diagnostic = Diagnostic(severity, message, self.path, line, col, hint, kind)
        if diagnostic not in self._seen:  # a set: thousands of problems must not cost quadratic time
            self._seen.add(diagnostic)
            self.items.append(diagnostic)

    def error(self, message: str, line: int | None = None, hint: str | None = None) -> None:
        self.add(Severity.ERROR, message, line, hint)

    def warning(
        self, message: str, line: int | None = None, hint: str | None = None, *, kind: str | None = None
    ) -> None:
        self.add(Severity.WARNING, message, line, hint, kind=kind)

    def note(self, message: str, line: int | None = None, hint: str | None = None) -> None:
        self.add(Severity.NOTE, message, line, hint)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.items if d.severity is Severity.ERROR]

    def sorted(self) -> list[Diagnostic]:
        return sorted(self.items, key=lambda d: (d.line or 0, d.col or 0))
