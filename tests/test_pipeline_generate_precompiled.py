"""The precompiled Torch headers of a ``kernel_builder.load`` build (``pipeline/generate/precompiled.py``), and the
CMake project of such a build: which components get one, which files use it, and a project that stays the same
text from one edit to the next.

That the compiler uses the header, an edit does not rebuild it, and the kernel still computes the same is checked
end to end in test_authoring_dev.py.
"""

from __future__ import annotations

import re
from pathlib import Path

from stage_fixtures import CU130_213, fake_interpreter, load, write_files

from kernel_builder.pipeline.environment.interpreter import TorchDetails
from kernel_builder.pipeline.environment.toolchain import CudaToolkit
from kernel_builder.pipeline.generate.cmake import ProjectOptions, write_project
from kernel_builder.pipeline.generate.precompiled import Precompiled, choose_precompiled, leading_includes
from kernel_builder.pipeline.plan.planner import plan_build
from kernel_builder.pipeline.state import LOAD_EXTENSION_TARGET

KERNEL = """// The kernel (a comment first, as in the init template).
/* a block
   comment */
#include <ATen/Dispatch.h>

#include <ATen/core/Tensor.h>  // the Tensor type
#include <cstdint>
#include "helper.h"

void relu(at::Tensor &out, at::Tensor const &input) {}
"""


def test_leading_includes_stop_at_the_first_other_line() -> None:
    assert leading_includes(KERNEL) == ("ATen/Dispatch.h", "ATen/core/Tensor.h", "cstdint")
    # A macro defined first could change what the headers mean: no run at all.
    assert (
        leading_includes("#define TORCH_ASSERT_ONLY_METHOD_OPERATORS\n#include <ATen/core/Tensor.h>\n") == ()
    )
    assert leading_includes('#include "local.h"\n#include <ATen/core/Tensor.h>\n') == ()
    assert leading_includes("int x;\n#include <ATen/core/Tensor.h>\n") == ()
    assert leading_includes("") == ()


def test_the_header_is_the_run_the_most_files_begin_with(tmp_path: Path) -> None:
    root = write_files(
        tmp_path,
        {
            "k/a.cpp": KERNEL,
            "k/b.cpp": "#include <ATen/Dispatch.h>\n#include <ATen/core/Tensor.h>\nint b;\n",
            "k/c.cpp": "#include <ATen/Parallel.h>\nint c;\n",  # begins otherwise: compiles without it
            "k/plain.cpp": "#include <vector>\nint plain;\n",  # no Torch header
            "k/first.cpp": "#define X 1\n#include <ATen/Dispatch.h>\n",  # a macro first
            "k/k.cu": KERNEL,  # not C++ to CMake: never given one
        },
    )
    sources = ["k/a.cpp", "k/b.cpp", "k/c.cpp", "k/plain.cpp", "k/first.cpp", "k/k.cu"]
    # a.cpp's run, cut after its last Torch header, is b.cpp's whole run: both use it.
    assert choose_precompiled(root, sources) == Precompiled(
        headers=("ATen/Dispatch.h", "ATen/core/Tensor.h"),
        sources=("k/a.cpp", "k/b.cpp"),
        skipped=("k/c.cpp", "k/plain.cpp", "k/first.cpp", "k/k.cu"),
    )
    # A shorter run that begins more files wins: every file that begins with <ATen/Dispatch.h> uses it.
    write_files(root, {"k/c.cpp": "#include <ATen/Dispatch.h>\nint c;\n"})
    assert choose_precompiled(root, sources) == Precompiled(
        headers=("ATen/Dispatch.h",),
        sources=("k/a.cpp", "k/b.cpp", "k/c.cpp"),
        skipped=("k/plain.cpp", "k/first.cpp", "k/k.cu"),
    )


def test_no_header_without_a_file_that_begins_with_torch(tmp_path: Path) -> None:
    root = write_files(tmp_path, {"k/plain.cpp": "#include <vector>\nint plain;\n", "k/k.cu": KERNEL})
    assert choose_precompiled(root, ["k/plain.cpp", "k/k.cu", "k/missing.cpp"]) is None


# --- the generated project --------------------------------------------------------------------------------------

TOML = """\
[general]
name = "pch"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.pch_cpu]
backend = "cpu"
depends = ["torch"]
src = ["pch_cpu/relu.cpp", "pch_cpu/helper.cpp"]
"""
BINDING = """#include <torch/library.h>
#include "registration.h"
#include "torch_binding.h"
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { ops.def("relu(Tensor! out, Tensor input) -> ()"); }
REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""
DETAILS = TorchDetails("/opt/torch/share/cmake", True, (), "2.13.0")


def project_text(
    tmp_path: Path, unique_id: str, options: ProjectOptions, binding: str = BINDING, *, cuda: bool = False
) -> str:
    toml = TOML.replace('"cpu"', '"cuda"').replace('"pch_cpu/helper.cpp"', '"pch_cpu/k.cu"') if cuda else TOML
    root = write_files(
        tmp_path / "pch",
        {
            "build.toml": toml,
            "pch_cpu/k.cu": "__global__ void k() {}\n",
            "torch-ext/torch_binding.cpp": binding,
            "torch-ext/torch_binding.h": "#pragma once\n#include <ATen/core/Tensor.h>\n",
            "torch-ext/pch/__init__.py": "",
            "pch_cpu/relu.cpp": KERNEL,
            "pch_cpu/helper.cpp": "int helper(int x) { return x + 1; }\n",
        },
    )
    interpreter = CU130_213 if cuda else fake_interpreter("2.13.0+cpu")
    toolkit = (
        CudaToolkit(Path("/opt/cuda/bin/nvcc"), (13, 0), Path("/opt/cuda"), "Build cuda_13.0")
        if cuda
        else None
    )
    [variant] = [v for v in plan_build(load(root), interpreter, unique_id).variants if v.aot]
    project_dir = tmp_path / "out" / "project"
    write_project(project_dir, root, variant, interpreter, DETAILS, toolkit, options)
    return (project_dir / "CMakeLists.txt").read_text(encoding="utf-8")


def call(text: str, start: str) -> str:
    """The call that begins with ``start`` (e.g. ``kb_component(kb_binding``), to its closing parenthesis."""
    match = re.search(rf"^{re.escape(start)}(.*?)\)$", text, re.MULTILINE | re.DOTALL)
    assert match is not None, f"no {start} in:\n{text}"
    return match[1]


LOAD = ProjectOptions(namespace_where_used=True, development=True)


def test_a_load_build_precompiles_the_kernel_and_not_the_binding(tmp_path: Path) -> None:
    text = project_text(tmp_path, "0123456789", LOAD)
    kernel = call(text, "kb_component(kb_kernel_pch_cpu")
    assert 'PRECOMPILE_HEADERS "<ATen/Dispatch.h\\$<ANGLE-R>" "<ATen/core/Tensor.h\\$<ANGLE-R>"' in kernel
    assert f'PRECOMPILE_SKIP "{tmp_path}/pch/pch_cpu/helper.cpp"' in kernel
    # Its namespace comes at link time: the binding compiles once, a header would only slow the first load.
    assert "PRECOMPILE" not in call(text, "kb_component(kb_binding")
    assert f"kb_extension({LOAD_EXTENSION_TARGET} FAST_LINK)" in text


def test_a_load_project_is_the_same_text_at_every_edit(tmp_path: Path) -> None:
    """No file names the namespace (it is in the generated source): Ninja need not run CMake after an edit."""
    first = project_text(tmp_path / "a", "0123456789", LOAD)
    second = project_text(tmp_path / "a", "abcdef0123", LOAD)
    assert first == second
    assert "0123456789" not in first and f"project({LOAD_EXTENSION_TARGET} " in first


def test_a_binding_given_the_namespace_is_precompiled_too(tmp_path: Path) -> None:
    # STRINGIFY(TORCH_EXTENSION_NAME): the binding gets the definition, and so recompiles at every edit.
    binding = BINDING + "const char *name = STRINGIFY(TORCH_EXTENSION_NAME);\n"
    text = project_text(tmp_path, "0123456789", LOAD, binding)
    assert 'PRECOMPILE_HEADERS "<torch/library.h\\$<ANGLE-R>"' in call(text, "kb_component(kb_binding")
    # The definition is the binding's own (its header's compile is the same at every edit); the project names it.
    assert "_pch_cpu_0123456789" in text and "kb_extension(_pch_cpu_0123456789 FAST_LINK)" in text


def test_kernel_builder_build_has_none(tmp_path: Path) -> None:
    text = project_text(tmp_path, "0123456789", ProjectOptions())
    assert "PRECOMPILE" not in text and "FAST_LINK" not in text and "CXX_FORCE_INCLUDE" not in text
    assert "kb_extension(_pch_cpu_0123456789)" in text


def test_a_cuda_load_build_has_none(tmp_path: Path) -> None:
    """nvcc's objects and their link were not measured with a precompiled header or gold: CUDA variants keep the
    plain build (and still the same project text at every edit)."""
    text = project_text(tmp_path, "0123456789", LOAD, cuda=True)
    assert "LANGUAGES CXX CUDA" in text
    assert "PRECOMPILE" not in text and "FAST_LINK" not in text and "CXX_FORCE_INCLUDE" not in text
    assert f"kb_extension({LOAD_EXTENSION_TARGET})" in text
