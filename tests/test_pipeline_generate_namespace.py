"""Which files of a ``kernel_builder.load`` build get the op namespace, and how (``pipeline/generate/namespace.py``).

The compiled end to end check (an edit recompiles the edited file and the generated namespace source only, and
both builds load in one process) is in test_authoring_dev.py.
"""

from __future__ import annotations

from pathlib import Path

from stage_fixtures import write_files

from kernel_builder.pipeline.generate.namespace import (
    NamespaceUse,
    namespace_use,
    registration_source,
    without_comments,
)
from kernel_builder.pipeline.generate.registration import registration_header

BINDING = """// TORCH_EXTENSION_NAME is the build's op namespace (a comment: does not count).
#include <torch/library.h>
#include "registration.h"
/* TORCH_EXTENSION_NAME
   in a block comment */
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("relu(Tensor! out, Tensor input) -> ()");
}
TORCH_LIBRARY_IMPL_EXPAND( TORCH_EXTENSION_NAME , CPU, ops) { ops.impl("relu", &relu); }
REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""
KERNEL = "int kernel(int x) { return x + 1; }  // knows no TORCH_EXTENSION_NAME\n"
SOURCES = ["torch-ext/torch_binding.cpp", "k_cpu/k.cpp"]


def project(tmp_path: Path, binding: str = BINDING, **extra: str) -> Path:
    return write_files(
        tmp_path / "k", {"torch-ext/torch_binding.cpp": binding, "k_cpu/k.cpp": KERNEL, **extra}
    )


def test_a_binding_that_only_registers_gets_the_namespace_at_link(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert namespace_use(root, SOURCES) == NamespaceUse(defined=(), at_link=("torch-ext/torch_binding.cpp",))


def test_no_file_names_the_macro(tmp_path: Path) -> None:
    root = project(tmp_path, binding="// TORCH_EXTENSION_NAME only in a comment\nint x;\n")
    assert namespace_use(root, SOURCES) == NamespaceUse(defined=())


def test_another_use_of_the_macro_keeps_the_definition(tmp_path: Path) -> None:
    """The name is needed in the text (a string, a symbol, a test): that file is compiled with it."""
    for other in (
        "const char *n = STRINGIFY(TORCH_EXTENSION_NAME);\n",
        "#ifndef TORCH_EXTENSION_NAME\n#error no name\n#endif\n",
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n",
    ):
        root = project(tmp_path / str(len(other)), binding=BINDING + other)
        assert namespace_use(root, SOURCES) == NamespaceUse(defined=("torch-ext/torch_binding.cpp",)), other


def test_a_registration_macro_with_another_namespace_keeps_the_definition(tmp_path: Path) -> None:
    """``registration.h``'s at-link macros ignore their namespace argument: only the macro's name may be it."""
    root = project(tmp_path, binding=BINDING + "TORCH_LIBRARY_EXPAND(fixed_ns, m) {}\n")
    assert namespace_use(root, SOURCES).defined == ("torch-ext/torch_binding.cpp",)


def test_the_module_init_function_must_come_from_exactly_one_file(tmp_path: Path) -> None:
    root = project(tmp_path, binding=BINDING.replace("REGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n", ""))
    assert namespace_use(root, SOURCES).defined == ("torch-ext/torch_binding.cpp",)
    twice = project(tmp_path / "twice", **{"k_cpu/k.cpp": "REGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n"})
    assert namespace_use(twice, SOURCES).defined == tuple(SOURCES)


def test_a_header_that_names_the_macro_defines_it_everywhere(tmp_path: Path) -> None:
    root = project(tmp_path, **{"k_cpu/k.h": "#define NS TORCH_EXTENSION_NAME\n"})
    assert namespace_use(root, SOURCES) == NamespaceUse(defined=None)
    commented = project(tmp_path / "c", **{"k_cpu/k.h": "// TORCH_EXTENSION_NAME: not here\n"})
    assert namespace_use(commented, SOURCES).at_link == ("torch-ext/torch_binding.cpp",)


def test_a_projects_own_registration_header_keeps_the_definition(tmp_path: Path) -> None:
    """Its macros are not ours: without the name they would register the wrong namespace."""
    root = project(
        tmp_path, **{"torch-ext/registration.h": "#define TORCH_LIBRARY_EXPAND(N, M) TORCH_LIBRARY(N, M)\n"}
    )
    assert namespace_use(root, SOURCES) == NamespaceUse(defined=("torch-ext/torch_binding.cpp",))
    # The copy the build writes there is ours.
    generated = project(tmp_path / "g", **{"torch-ext/registration.h": registration_header()})
    assert namespace_use(generated, SOURCES).at_link == ("torch-ext/torch_binding.cpp",)


def test_without_comments_keeps_literals() -> None:
    text = 'a("// not a comment", \'/\'); /* gone\n */ b(); // gone\nc("/* kept */");\n'
    assert without_comments(text) == 'a("// not a comment", \'/\');   b();  \nc("/* kept */");\n'


def test_registration_source_names_the_namespace_once_per_use() -> None:
    text = registration_source("_k_cpu_0123456789")
    assert 'return "_k_cpu_0123456789";' in text
    assert "PyMODINIT_FUNC PyInit__k_cpu_0123456789(void)" in text
    assert 'PyModuleDef_HEAD_INIT, "_k_cpu_0123456789", NULL, 0,' in text
    assert 'visibility("hidden")' in text  # two builds in one process never share it
