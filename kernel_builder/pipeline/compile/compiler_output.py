"""Compiler output as the author can read it: paths as written in the project, the first error up front.

The compiler sees the project's sources through the generated CMake project, and the compiler cache rewrites
paths under the project to ones relative to the CMake build directory (``../../../src/relu.cpp``), so a raw
diagnostic names a file relative to a hidden folder. Ninja also prints each failed command (a kilobyte of flags)
before the compiler's message. :class:`Cleaner` rewrites every path that lies in the project to one relative to
the project root, and drops the failed commands unless verbose; :func:`first_error` finds the line to put in the
error's summary.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

# A path token: one or more ``../`` then a name, or an absolute path; not inside a longer word or path.
_PATH = re.compile(r"(?<![\w./+-])((?:\.\./)+[\w.+-][\w./+-]*|/[\w.+-][\w./+-]*)")

# gcc/clang (`file:line:col: error: ...`, also `fatal error:`) and nvcc/EDG (`file(line): error: ...`).
_ERROR = re.compile(
    r"^(?P<file>[^\s:()][^:()]*?)(?::(?P<line>\d+)(?::(?P<col>\d+))?:|\((?P<eline>\d+)\):) "
    r"(?:fatal )?error\b"
)


@dataclass
class Cleaner:
    """Rewrites compiler output line by line. ``build_dir`` is where the compiler ran; ``root`` the project;
    ``aliases`` directories that mirror it (the source stage, ``source_stage``), shown as the root too."""

    build_dir: Path
    root: Path
    verbose: bool = False
    aliases: tuple[Path, ...] = ()
    _after_failed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.build_dir = Path(os.path.abspath(self.build_dir))
        self.root = Path(os.path.abspath(self.root))
        self.aliases = tuple(Path(os.path.abspath(a)) for a in self.aliases)

    def _project_path(self, match: re.Match[str]) -> str:
        token = match[1]
        trail = ""
        while token and token[-1] in ".:":  # a sentence's full stop, or the colon before a line number
            token, trail = token[:-1], token[-1] + trail
        absolute = os.path.normpath(token if token.startswith("/") else self.build_dir / token)
        for base in (self.root, *self.aliases):
            if Path(absolute).is_relative_to(base):
                relative = Path(absolute).relative_to(base)
                return (relative.as_posix() if relative.parts else ".") + trail
        return match[0]

    def line(self, text: str) -> str | None:
        """The line to show, or None to drop it (the command after Ninja's ``FAILED:`` unless verbose)."""
        if self._after_failed:
            self._after_failed = False
            if not self.verbose:
                return None
        if text.startswith("FAILED: "):
            self._after_failed = True
        return _PATH.sub(self._project_path, text)


@dataclass(frozen=True)
class CompilerError:
    """The first error of a failed compilation: ``location`` is ``file:line[:col]`` as shown to the user."""

    location: str
    line: str


def first_error(lines: list[str]) -> CompilerError | None:
    """The first ``error`` diagnostic among ``lines`` (already cleaned), if any."""
    for text in lines:
        match = _ERROR.match(text)
        if match is None:
            continue
        number = match["line"] or match["eline"]
        location = f"{match['file']}:{number}" + (f":{match['col']}" if match["col"] else "")
        return CompilerError(location, text.strip())
    return None


#: Where Ninja's output about one failed step ends: the next step, or Ninja's own closing words.
_STEP_OR_NINJA = re.compile(r"^(\[\d+/\d+\]|ninja: |FAILED: )")


def compiler_diagnostics(lines: list[str]) -> list[str]:
    """The compiler's own lines among Ninja's output (already cleaned): what follows each ``FAILED:`` step up to
    the next step or Ninja's summary. CMake's messages (a re-run's ``library kineto not found``) and Ninja's
    lines are left out."""
    kept: list[str] = []
    inside = False
    for text in lines:
        if text.startswith("FAILED: "):
            inside = True
            continue
        if _STEP_OR_NINJA.match(text):
            inside = False
            continue
        if inside and text.strip():
            kept.append(text)
    return kept


def failure_message(status: int, lines: list[str], *, shown: bool, log_file: Path | None, command: str,
                    verbose: bool, explanation: str | None = None) -> str:  # fmt: skip
    """The error of a failed compilation: the first compiler error first; then, when the output was not shown
    as it came (parallel builds), its end; where the whole log is; the command only when verbose. A known
    mistake's ``explanation`` (``schema_types``) replaces all but the log's place."""
    error = first_error(lines)
    head = f"compilation failed: {error.line}" if error else f"compilation failed (exit status {status})"
    if explanation is not None:
        parts = [explanation]
        if log_file is not None:
            parts.append(f"full output: {log_file}")
        return "\n".join(parts)
    parts = [head]
    if not shown:
        tail = "\n".join(lines[-60:]).rstrip()
        if tail:
            parts.append(f"the end of the compiler output:\n{tail}")
    if log_file is not None:
        parts.append(f"full output: {log_file}")
    if verbose:
        parts.append(f"command: {command}")
    elif error is not None or not shown:
        parts.append("run with -v to see every compiler command")
    return "\n".join(parts)
