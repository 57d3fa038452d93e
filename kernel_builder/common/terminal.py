"""Colour and live displays follow the terminal conventions: on a terminal, and never when asked not to.

Colour (and ``rich``'s live progress tables) only when the stream is a terminal; never when ``NO_COLOR`` is set
to any non-empty value (no-color.org), with ``kernel-builder --no-color``, or with ``TERM=dumb``. Piped or
redirected output is plain text, so logs and ``grep`` see exactly the words.
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

#: ANSI SGR codes of the few styles the command line uses.
_STYLES = {"error": "1;31", "warning": "1;33", "note": "1;36", "hint": "32", "bold": "1", "dim": "2"}

_disabled = False


def configure(*, no_color: bool) -> None:
    """``--no-color`` (given or not) for the command that runs now; every command line sets it afresh."""
    global _disabled
    _disabled = no_color


def color_wanted() -> bool:
    """Whether the user allows colour at all (``--no-color``, ``NO_COLOR``, ``TERM=dumb``)."""
    return not (_disabled or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb")


def is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def use_color(stream: TextIO | None = None) -> bool:
    """Whether text written to ``stream`` (default: standard error) is coloured."""
    return color_wanted() and is_terminal(sys.stderr if stream is None else stream)


def style(text: str, kind: str, stream: TextIO | None = None) -> str:
    """``text`` in the style ``kind`` (``error``, ``warning``, ``note``, ``hint``, ``bold``, ``dim``) when
    ``stream`` (default: standard error) is coloured, else unchanged."""
    if not use_color(stream):
        return text
    return f"\033[{_STYLES[kind]}m{text}\033[0m"


def color_labels(text: str, stream: TextIO | None = None) -> str:
    """``text`` with the labels of its lines coloured: ``error:``, ``warning:``, ``note:`` after the location
    (or at the start), and ``hint:``, as compilers colour theirs."""
    if not use_color(stream):
        return text
    import re

    label = re.compile(r"^(?P<head>(?:\S*: )?)(?P<label>error|warning|note)(?P<rest>:.*)$")
    lines = []
    for line in text.split("\n"):
        stripped = line.lstrip()
        if stripped.startswith("hint:"):
            indent = line[: len(line) - len(stripped)]
            line = indent + style("hint:", "hint", stream) + stripped[len("hint:") :]
        else:
            match = label.match(line)
            if match is not None:
                head = style(match["head"], "bold", stream) if match["head"] else ""
                line = head + style(match["label"], match["label"], stream) + match["rest"]
        lines.append(line)
    return "\n".join(lines)
