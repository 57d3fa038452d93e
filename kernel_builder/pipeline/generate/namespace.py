"""Which compiled files of a ``kernel_builder.load`` build see the op namespace, and how.

Every build has its own op namespace (``_<name>_<backend>_<id>``, new whenever the sources change), so that two
versions of a kernel load in one process. ``kernel-builder build`` defines ``TORCH_EXTENSION_NAME`` in every
compiled file, as upstream does. ``kernel_builder.load`` recompiles as little as an edit allows:

- a file that never names the macro (outside comments) compiles without it, so an edit elsewhere leaves it alone;
- a file that names it only as ``TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, m)``,
  ``TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, KEY, m)`` and ``REGISTER_EXTENSION(TORCH_EXTENSION_NAME)``
  (the binding of every template and example) does not get the name at all: ``registration.h`` registers its
  ops under the name that a generated one-line source (:func:`registration_source`) returns, and that source
  defines the module's ``PyInit_<namespace>``. An edit then recompiles the edited file and that source (a
  fraction of a second), not the binding, whose Torch headers cost seconds;
- any other use (``STRINGIFY(TORCH_EXTENSION_NAME)``, ``#ifdef``, a header that names it, a project's own
  ``registration.h``) keeps the plain definition, in the files that name it or, for a header, in every file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.pipeline.generate.registration import is_generated

NAMESPACE_MACRO = "TORCH_EXTENSION_NAME"
#: Defined (to 1) in the files whose registration macros take the namespace at link time (``registration.h``).
AT_LINK_DEFINE = "KERNEL_BUILDER_NAMESPACE_AT_LINK"
#: The generated source that carries the namespace, in the CMake project directory.
REGISTRATION_SOURCE = "namespace/kb_namespace.cpp"
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl")

_MACRO = re.compile(rf"\b{NAMESPACE_MACRO}\b")
_REGISTRATION_USE = re.compile(
    r"\b(TORCH_LIBRARY_EXPAND|TORCH_LIBRARY_IMPL_EXPAND|REGISTER_EXTENSION)\s*\(\s*([A-Za-z_]\w*)\s*[,)]"
)
# Comments, and the string and character literals that may hold comment markers.
_LEXEMES = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)


@dataclass(frozen=True)
class NamespaceUse:
    """How a ``load`` build's files get the namespace: ``defined`` lists those compiled with
    ``-DTORCH_EXTENSION_NAME=...`` (None: every file), ``at_link`` those compiled with :data:`AT_LINK_DEFINE`
    instead (then the project also compiles :func:`registration_source`)."""

    defined: tuple[str, ...] | None
    at_link: tuple[str, ...] = ()


def without_comments(text: str) -> str:
    """C/C++ text with its comments blanked (string and character literals kept)."""
    return _LEXEMES.sub(lambda m: m[0] if m[0][0] in "\"'" else " ", text)


def _code(path: Path) -> str | None:
    try:
        return without_comments(path.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return None


def _names_macro(code: str | None) -> bool:
    return code is None or _MACRO.search(code) is not None


def _only_registration_uses(code: str) -> tuple[bool, int]:
    """Whether every use of the macro is a registration macro's namespace argument, and every registration
    macro's namespace is the macro; and how many ``REGISTER_EXTENSION`` the text has."""
    uses = list(_REGISTRATION_USE.finditer(code))
    if any(m[2] != NAMESPACE_MACRO for m in uses):
        return False, 0
    if len(_MACRO.findall(code)) != len(uses):
        return False, 0
    return True, sum(1 for m in uses if m[1] == "REGISTER_EXTENSION")


def _project_files(root: Path) -> list[Path]:
    """The project's files, build output and hidden directories left out."""
    found = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] in ("build", "result") or any(p.startswith(".") for p in rel.parts):
            continue
        if path.is_file():
            found.append(path)
    return found


def namespace_use(root: Path, sources: Sequence[str]) -> NamespaceUse:
    """How the compiled ``sources`` (relative to ``root``) of a ``load`` build get the namespace (module doc).

    Headers are all those under the project root (listed in a ``src`` or not), except build output and the
    generated ``registration.h``; headers outside the project (torch, dependencies) do not use the macro.
    """
    own_registration = False
    for path in _project_files(root):
        if path.suffix in HEADER_SUFFIXES and not is_generated(path):
            if path.name == "registration.h":
                own_registration = True
            elif _names_macro(_code(path)):
                return NamespaceUse(defined=None)
    named = [(s, _code(root / s)) for s in sources]
    naming = [(s, code) for s, code in named if _names_macro(code)]
    if not naming:
        return NamespaceUse(defined=())
    files = tuple(s for s, _ in naming)
    if own_registration:  # its macros are not ours: they need the name
        return NamespaceUse(defined=files)
    checked = [_only_registration_uses(code) for _, code in naming if code is not None]
    registers = sum(count for _, count in checked)
    if len(checked) == len(naming) and all(ok for ok, _ in checked) and registers == 1:
        return NamespaceUse(defined=(), at_link=files)
    return NamespaceUse(defined=files)


def registration_source(ops_name: str) -> str:
    """The generated source of an at-link build: the namespace, and the module's init function."""
    return f"""// Generated by kernel-builder: the op namespace of this build. An edit of the kernel recompiles only this
// file and the edited one: the bindings' registration.h macros read the namespace from here.
#include <Python.h>

#if defined(__GNUC__) || defined(__clang__)
#define KB_HIDDEN __attribute__((visibility("hidden")))
#else
#define KB_HIDDEN
#endif

extern "C" KB_HIDDEN const char *kernel_builder_ops_namespace(void) {{ return "{ops_name}"; }}

PyMODINIT_FUNC PyInit_{ops_name}(void) {{
  static struct PyModuleDef kb_module_def = {{
      PyModuleDef_HEAD_INIT, "{ops_name}", NULL, 0, NULL, NULL, NULL, NULL, NULL}};
  return PyModule_Create(&kb_module_def);
}}
"""
