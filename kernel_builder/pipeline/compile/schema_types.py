"""A C++ op parameter whose type no op schema can express, told at the author's declaration.

PyTorch infers an op's schema from the C++ function registered with ``ops.impl``, and refuses, with a static
assertion deep in ``infer_schema.h``, a ``float`` parameter (schemas have no 32-bit float: ``double``) and any
integer other than ``int64_t``, ``int8_t`` and ``bool`` (``int``, ``int32_t``, ``size_t``...). GCC prints some
fifty lines of template instantiations for it, and the first error names Torch's header. The instantiation
lines name the parameter types and the author's registration line (``required from here``); this module reads
them and finds the function's declaration in the project, and says, in one paragraph, which parameter of which
function to change to which type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.common.source_lines import source_lines

_ASSERTION = re.compile(r"static assertion failed: INVALID TYPE: (?P<what>.+)$")
_TYPES = re.compile(r"checkStaticTypes\(\) \[with Types = \{(?P<types>.*)\}\]")
_HERE = re.compile(r"^(?P<file>[^\s:][^:]*):(?P<line>\d+)(?::\d+)?:\s+required from here")
#: The integer types a schema refuses, as GCC spells them (``int64_t`` is ``long int``, ``int8_t`` ``signed
#: char``: those are taken, as is ``bool``).
_INTEGERS = {
    "char", "unsigned char", "short int", "short unsigned int", "int", "unsigned int", "long unsigned int",
    "long long int", "long long unsigned int",
}  # fmt: skip
_SUFFIXES = (".h", ".hh", ".hpp", ".cuh", ".cc", ".cpp", ".cxx", ".cu")


@dataclass(frozen=True)
class Place:
    path: str  # relative to the project root
    line: int
    text: str  # the parameter as written there (``float alpha``)


def _unsupported(kind: str) -> tuple[str, str] | None:
    """(the schema's name for it, the C++ type to use) when ``kind`` cannot be an op parameter, else None."""
    if kind == "float":
        return "float", "double"
    if kind in _INTEGERS or re.fullmatch(r"u?int(16|32)_t|size_t|ssize_t", kind):
        return "int", "int64_t"
    return None


def _split_parameters(text: str) -> list[str]:
    """A parameter list split at its top-level commas (templates and parentheses kept whole)."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "<([{":
            depth += 1
        elif char in ">)]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts


def _declarations(name: str, root: Path, index: int) -> list[Place]:
    """The project's declarations and definitions of a function ``name``, each with its parameter ``index``."""
    pattern = re.compile(rf"(?<![\w.>:]){re.escape(name)}\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)\s*(;|\{{|$)")
    found: list[Place] = []
    for relative, number, text in source_lines(root, _SUFFIXES):
        if text.startswith(("//", "*", "#")) or "ops." in text or "return" in text:
            continue
        match = pattern.search(text)
        if match is None or not re.match(r"^[\w:<>,\s&*]+\s", text[: match.start()] + " "):
            continue  # a call, not a declaration: no return type before the name
        parameters = _split_parameters(match[1])
        if len(parameters) > index:
            found.append(Place(relative, number, parameters[index]))
    return found


def explain(lines: list[str], root: Path) -> str | None:
    """The paragraph for a schema-type static assertion among the compiler's ``lines`` (paths already relative
    to ``root``), or None when there is none."""
    if not any(_ASSERTION.search(line) for line in lines):
        return None
    types_match = next((m for m in map(_TYPES.search, lines) if m is not None), None)
    if types_match is None:
        return None
    types = _split_parameters(types_match["types"])
    bad = [(i, t, fix) for i, t in enumerate(types) if (fix := _unsupported(t)) is not None]
    if not bad:
        return None
    here = next((m for m in map(_HERE.match, lines) if m is not None and not m["file"].startswith("/")), None)
    registered = f"{here['file']}:{here['line']}" if here is not None else None
    function = _registered_function(root, here["file"], int(here["line"])) if here is not None else None
    index, kind, (schema, use) = bad[0]
    # The declaration the binding includes (a header) first: that is the one the author wrote for the op.
    places = sorted(
        _declarations(function, root, index) if function else [],
        key=lambda p: (not p.path.endswith((".h", ".hh", ".hpp", ".cuh")), p.path, p.line),
    )
    parameter = places[0].text if places else kind
    replaced = re.sub(rf"^{re.escape(kind)}\b", use, parameter) if parameter.startswith(kind) else use
    where = f"{places[0].path}:{places[0].line}" if places else registered or "the kernel's binding"
    named = f"`{function}`" if function else "the function registered for the op"
    also = [f"{p.path}:{p.line}" for p in places[1:]]
    text = (
        f"{where}: error: parameter {index + 1} of {named}, `{parameter}`, has a type no op schema can "
        f"express: a schema's `{schema}` is `{use}` in C++. Declare it `{replaced}`"
    )
    text += f" here and in {', '.join(also)}" if also else ""
    text += f", and keep `{schema}` in the schema string of `ops.def`"
    text += f" (the op is registered at {registered})." if registered else "."
    if len(bad) > 1:
        others = ", ".join(f"{i + 1} (`{t}`)" for i, t, _ in bad[1:])
        text += f" Parameters {others} need the same change."
    return text


def _registered_function(root: Path, file: str, line: int) -> str | None:
    """The function ``ops.impl`` registers at ``file:line`` (``&relu`` → ``relu``)."""
    try:
        text = (root / file).read_text(encoding="utf-8", errors="replace").splitlines()[line - 1]
    except (OSError, IndexError):
        return None
    match = re.search(r"&\s*([\w:]+)\s*\)", text) or re.search(r",\s*([\w:]+)\s*\)\s*;", text)
    return match[1].rpartition("::")[2] if match else None
