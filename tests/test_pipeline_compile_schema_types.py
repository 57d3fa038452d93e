"""A C++ op parameter whose type no schema can express (``float``, ``int``) is one paragraph at the author's
declaration, not fifty lines of template errors pointing into Torch's ``infer_schema.h``. Real compiles with the
tests' CPU torch; the ``int`` case reads the compiler's lines of such a compile."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from build_runs import run_cli

from kernel_builder.authoring.scaffold import InitOptions, init_project
from kernel_builder.pipeline.compile import schema_types

REPO = Path(__file__).resolve().parent.parent
DECLARATION = "void relu(at::Tensor &out, at::Tensor const &input);"
DEFINITION = "void relu(at::Tensor &out, at::Tensor const &input) {"


def project(root: Path, kind: str, schema: str) -> Path:
    """The ``init`` CPU template, its op given a third parameter ``alpha`` of C++ type ``kind``."""
    init_project(root, InitOptions(name="my-relu", backends=("cpu",)))
    header = root / "torch-ext" / "torch_binding.h"
    header.write_text(header.read_text().replace(DECLARATION, DECLARATION[:-2] + f", {kind} alpha);"))
    kernel = root / "my_relu_cpu" / "relu_cpu.cpp"
    kernel.write_text(kernel.read_text().replace(DEFINITION, DEFINITION[:-3] + f", {kind} alpha) {{"))
    binding = root / "torch-ext" / "torch_binding.cpp"
    binding.write_text(
        binding.read_text().replace("Tensor input) -> ()", f"Tensor input, {schema} alpha) -> ()")
    )
    return root


def line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.slow
def test_a_float_parameter_is_told_at_the_declaration(tmp_path: Path) -> None:
    root = project(tmp_path / "my-relu", "float", "float")
    result = run_cli(["build", str(root), "--backend", "cpu", "--no-color"])
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    header_line = line_of(root / "torch-ext" / "torch_binding.h", "float alpha")
    kernel_line = line_of(root / "my_relu_cpu" / "relu_cpu.cpp", "float alpha")
    impl_line = line_of(root / "torch-ext" / "torch_binding.cpp", "c10::kCPU, &relu")
    assert errors[0].split(": ", 2)[2] == (
        f"torch-ext/torch_binding.h:{header_line}: error: parameter 3 of `relu`, `float alpha`, has a type no op "
        "schema can express: a schema's `float` is `double` in C++. Declare it `double alpha` here and in "
        f"my_relu_cpu/relu_cpu.cpp:{kernel_line}, and keep `float` in the schema string of `ops.def` (the op is "
        f"registered at torch-ext/torch_binding.cpp:{impl_line})."
    )
    assert "infer_schema.h" not in errors[0]


def test_an_int_parameter_is_told_with_int64_t(tmp_path: Path) -> None:
    """GCC's lines for ``int`` (the same instantiation, the integral assertion)."""
    root = project(tmp_path / "my-relu", "int", "int")
    impl_line = line_of(root / "torch-ext" / "torch_binding.cpp", "c10::kCPU, &relu")
    torch = "/site-packages/torch/include/ATen/core/op_registration/infer_schema.h"
    lines = [
        f"{torch}: In instantiation of ‘constexpr int c10::detail::infer_schema::checkStaticTypes() [with Types = "
        "{at::Tensor&, const at::Tensor&, int}]’:",
        f"torch-ext/torch_binding.cpp:{impl_line}:11:   required from here",
        f"{torch}:38:21: error: static assertion failed: INVALID TYPE: Only int8_t, int64_t and bool are "
        "supported as an integral argument type",
    ]
    text = schema_types.explain(lines, root)
    assert text is not None
    assert text.startswith(
        f"torch-ext/torch_binding.h:{line_of(root / 'torch-ext' / 'torch_binding.h', 'int alpha')}: error: "
        "parameter 3 of `relu`, `int alpha`, has a type no op schema can express: a schema's `int` is "
        "`int64_t` in C++. Declare it `int64_t alpha`"
    ), text
    assert schema_types.explain(lines[:1], root) is None  # no assertion: another error, left as it is


LOAD = """
import sys, kernel_builder
from kernel_builder.errors import CompileError
try:
    kernel_builder.load(sys.argv[1])
except CompileError as error:
    print(str(error))
    print("LOG", error.log_file, error.location)
    sys.exit(3)
"""


@pytest.mark.slow
def test_load_raises_the_compilers_diagnostics_only(tmp_path: Path) -> None:
    root = tmp_path / "my-relu"
    init_project(root, InitOptions(name="my-relu", backends=("cpu",)))
    kernel = root / "my_relu_cpu" / "relu_cpu.cpp"
    kernel.write_text(kernel.read_text().replace(DEFINITION, DEFINITION + "\n  undeclared_name = 1;"))
    broken_line = line_of(kernel, "undeclared_name")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    result = subprocess.run(
        [sys.executable, "-c", LOAD, str(root)], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 3, result.stdout + result.stderr
    text, _, log_line = result.stdout.rstrip("\n").rpartition("\n")
    first, *diagnostics = text.splitlines()
    assert first.startswith("torch") and first.endswith(
        f": compilation failed at my_relu_cpu/relu_cpu.cpp:{broken_line}:3"
    ), text
    assert any(
        f"my_relu_cpu/relu_cpu.cpp:{broken_line}:3: error: ‘undeclared_name’" in d for d in diagnostics
    )
    for noise in ("kineto", "KB_LINKER_GOLD", "run with -v", "FAILED:", "ninja:", "[1/", "-- "):
        assert noise not in text, (noise, text)
    _, log_file, location = log_line.split(" ")
    assert Path(log_file).is_file() and "undeclared_name" in Path(log_file).read_text()
    assert location == f"my_relu_cpu/relu_cpu.cpp:{broken_line}:3"
