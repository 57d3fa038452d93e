"""What went wrong when a built variant does not import, in the author's terms.

The import check loads the variant in a fresh interpreter; when that fails, the raw output is a C++ exception
with dozens of stack frames, or a Python traceback through the loader ending in a mangled symbol. Two binding
mistakes account for most of these, and each gets one paragraph here: what is wrong, where, and what to check.

- The op's schema (``ops.def("relu(Tensor! out, Tensor input) -> ()")``) disagrees with the C++ function
  registered for it: PyTorch compares the two when the library loads.
- A declaration disagrees with its definition (``void relu(at::Tensor&, at::Tensor const&, double)`` declared,
  ``void relu(at::Tensor&, at::Tensor const&)`` defined): the extension links, since a shared library may leave
  symbols undefined, and the loader then fails on the mangled name, shown here demangled.

Any other failure keeps its text, without the C++ stack frames and the interpreter's unrelated warnings.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import re
import shutil
import subprocess
from pathlib import Path

from kernel_builder.common.source_lines import source_lines

_SCHEMA = re.compile(
    r"Inferred operator schema for a C\+\+ kernel function doesn't match the expected function schema\.\s*\n"
    r"\s*operator: (?P<op>\S+)\s*\n"
    r"\s*expected schema: (?P<expected>[^\n]+)\n"
    r"\s*registered at (?P<expected_at>[^\n]+)\n"
    r"\s*inferred schema: (?P<inferred>[^\n]+)\n"
    r"\s*registered at (?P<inferred_at>[^\n]+)\n"
    r"\s*reason: (?P<reason>[^\n]+)"
)
_UNDEFINED = re.compile(r"undefined symbol: (?P<symbol>[A-Za-z_][\w.$@]*)")
_NOISE = re.compile(
    r"^(frame #\d+:|<omitting python frames>|Exception raised from |.*Failed to initialize NumPy|"
    r".*_ARRAY_API not found|.*numpy.*(UserWarning|module compiled against))"
)
_SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".cuh", ".c", ".cc", ".cpp", ".cxx", ".cu", ".mm", ".metal")
#: How schema types are written in C++ (the rule PyTorch checks), for the schema paragraph.
_TYPES = "Tensor! is `at::Tensor &`, Tensor is `at::Tensor const &`, float is `double`, int is `int64_t`"


def explain(output: str, root: Path) -> str:
    """The import check's failure ``output`` as one paragraph for a known binding mistake, else the output
    without stack frames and unrelated warnings. ``root``: the project, whose sources are searched."""
    schema = _SCHEMA.search(output)
    if schema is not None:
        return _schema_mismatch(schema)
    undefined = _UNDEFINED.search(output)
    if undefined is not None:
        return _undefined_symbol(undefined["symbol"], root)
    kept = [line for line in output.splitlines() if not _NOISE.match(line.strip())]
    return "the assembled variant does not load:\n" + "\n".join(kept).strip()


def _schema_mismatch(match: re.Match[str]) -> str:
    op = match["op"].rpartition("::")[2]
    expected = re.sub(r"\(\$\d+! -> \)", "!", match["expected"].strip())
    expected = re.sub(r"^[\w]+::", "", expected)
    inferred = match["inferred"].strip()
    where = _project_location(match["expected_at"])
    counts = f" (the schema has {_arity(expected)}, the function {_arity(inferred)})"
    reason = match["reason"].strip().rstrip(".")
    if "number of arguments" in reason:
        reason = re.sub(r"\.?\s*\d+ vs \d+$", "", reason)
    else:
        counts = ""
    return (
        f"the op `{op}` is declared with the schema `{expected}` ({where}), but the C++ function registered "
        f"for it takes `{inferred}`: {reason[0].lower() + reason[1:]}{counts}. Make the schema string in "
        f"`ops.def` and the parameters of the function (its definition and the declaration the binding "
        f"includes) agree, in number and type: {_TYPES}."
    )


def _arity(schema: str) -> int:
    inside = schema[schema.index("(") + 1 : schema.index(")")] if "(" in schema and ")" in schema else ""
    return len([part for part in inside.split(",") if part.strip()])


def _project_location(text: str) -> str:
    """``./torch-ext/torch_binding.cpp:12`` (the build maps the project root to ``.``) as ``torch-ext/...``."""
    text = text.strip()
    return text[2:] if text.startswith("./") else text


def _undefined_symbol(symbol: str, root: Path) -> str:
    demangled = demangle(symbol)
    name = demangled.partition("(")[0].rpartition("::")[2].split("<")[0] if demangled != symbol else ""
    readable = f"`{demangled}` (symbol `{symbol}`)" if name else f"`{symbol}`"
    where = ""
    if name:
        found = _mentions(name, root)
        if found:
            where = f" `{name}` appears in: " + "; ".join(found) + "."
    return (
        f"the extension uses {readable}, which none of the kernel's compiled sources define. A declaration "
        f"(in a header the binding includes) and the definition differ in their parameters, `const`, or "
        f"namespace, or the file that defines it is missing from the kernel's `src`.{where} Make the "
        f"declaration match the definition exactly, then build again."
    )


def _mentions(name: str, root: Path, limit: int = 6) -> list[str]:
    """``file:line (kind) `text``` for the project's source lines that declare, define or call ``name(`` (not
    the binding's ``ops.def``/``ops.impl`` lines, which name the op, not the function)."""
    pattern = re.compile(rf"(?<![\w.>:]){re.escape(name)}\s*\(")
    found: list[str] = []
    for relative, number, text in source_lines(root, _SOURCE_SUFFIXES):
        if not pattern.search(text) or text.startswith(("//", "*", "#")) or "ops." in text:
            continue
        kind = "declaration" if text.endswith(";") else "definition" if text.endswith("{") else "use"
        found.append(f"{relative}:{number} ({kind}) `{text}`")
        if len(found) == limit:
            return found
    return found


@functools.cache
def _cxa_demangle() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    name = ctypes.util.find_library("stdc++") or "libstdc++.so.6"
    try:
        function = ctypes.CDLL(name).__cxa_demangle
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    return function


def demangle(symbol: str) -> str:
    """``symbol`` as C++ source spells it, by the C++ runtime's demangler (or ``c++filt``); else unchanged."""
    function = _cxa_demangle()
    if function is not None:
        status = ctypes.c_int()
        pointer = function(symbol.encode(), None, None, ctypes.byref(status))
        if pointer:
            try:
                return ctypes.string_at(pointer).decode("utf-8", "replace")
            finally:
                ctypes.CDLL(None).free(ctypes.c_void_p(pointer))
    tool = shutil.which("c++filt")
    if tool is not None:
        result = subprocess.run([tool, symbol], capture_output=True, text=True, check=False)
        if result.returncode == 0 and result.stdout.strip():
            return result.stdout.strip()
    return symbol
