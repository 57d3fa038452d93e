"""Binding mistakes explained (``kernel_builder.pipeline.check.import_failure``): a schema that disagrees with its C++
function, and a declaration that disagrees with its definition, each fail the import check with one paragraph
that says what is wrong, where, and what to check; no C++ stack frames, no Python traceback, no mangled name.

Each case is a real CPU build of an ``init``-generated project with the mistake made by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from build_runs import run_cli

from kernel_builder.pipeline.check.import_failure import demangle, explain

CPP = "my_relu_cpu/relu_cpu.cpp"
HEADER = "torch-ext/torch_binding.h"
DEFINITION = "void relu(at::Tensor &out, at::Tensor const &input) {"
DECLARATION = "void relu(at::Tensor &out, at::Tensor const &input);"
WITH_ALPHA = ("void relu(at::Tensor &out, at::Tensor const &input, double alpha) {",
              "void relu(at::Tensor &out, at::Tensor const &input, double alpha);")  # fmt: skip


def project(tmp_path: Path) -> Path:
    root = tmp_path / "my-relu"
    run_cli(["init", root, "--name", "my-relu", "--backends", "cpu"]).check()
    return root


def edit(root: Path, relative: str, old: str, new: str) -> int:
    """Replace ``old`` by ``new`` in a project file; the 1-based line of the edit."""
    path = root / relative
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{relative} no longer has {old!r}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def test_demangle_gives_the_cpp_signature() -> None:
    assert demangle("_Z4reluRN2at6TensorERKS0_d") == "relu(at::Tensor&, at::Tensor const&, double)"
    assert demangle("not_mangled") == "not_mangled"


def test_other_failures_keep_their_text_without_stack_frames(tmp_path: Path) -> None:
    output = (
        "UserWarning: Failed to initialize NumPy: _ARRAY_API not found\n"
        "RuntimeError: kernel bug\n"
        "Exception raised from foo at bar.cpp:1 (most recent call first):\n"
        "frame #0: c10::Error::Error() + 0x1\n"
        "frame #1: <unknown function>\n"
    )
    assert explain(output, tmp_path) == "the assembled variant does not load:\nRuntimeError: kernel bug"


@pytest.mark.slow
def test_a_schema_that_disagrees_with_the_function(tmp_path: Path) -> None:
    root = project(tmp_path)
    # The function and its declaration take a third parameter; the schema still lists two.
    edit(root, CPP, DEFINITION, WITH_ALPHA[0])
    edit(root, HEADER, DECLARATION, WITH_ALPHA[1])
    schema_line = edit(root, "torch-ext/torch_binding.cpp", "TORCH_LIBRARY_EXPAND", "TORCH_LIBRARY_EXPAND")
    run = run_cli(["build", root])
    assert run.returncode == 1, run.output
    (error,) = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert (
        "import check failed: the op `relu` is declared with the schema `relu(Tensor! out, Tensor input) -> ()`"
        in error
    )
    assert f"(torch-ext/torch_binding.cpp:{schema_line})" in error
    assert "takes `(Tensor _0, Tensor _1, float _2) -> ()`" in error
    assert "the number of arguments is different (the schema has 2, the function 3)" in error
    assert "float is `double`" in error
    assert "frame #" not in run.stderr and "NumPy" not in run.stderr and "Traceback" not in run.stderr
    assert "full output: .kernel-builder/import-check.log" in run.stderr
    assert "frame #" in (root / ".kernel-builder" / "import-check.log").read_text(encoding="utf-8")


@pytest.mark.slow
def test_a_declaration_that_disagrees_with_its_definition(tmp_path: Path) -> None:
    root = project(tmp_path)
    definition_line = edit(root, CPP, DEFINITION, DEFINITION)
    declaration_line = edit(root, HEADER, DECLARATION, WITH_ALPHA[1])  # declared with alpha, defined without
    run = run_cli(["build", root])
    assert run.returncode == 1, run.output
    (error,) = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert (
        "import check failed: the extension uses `relu(at::Tensor&, at::Tensor const&, double)` "
        "(symbol `_Z4reluRN2at6TensorERKS0_d`), which none of the kernel's compiled sources define"
    ) in error
    assert f"{CPP}:{definition_line} (definition) `{DEFINITION}`" in error
    assert f"{HEADER}:{declaration_line} (declaration) `{WITH_ALPHA[1]}`" in error
    assert "Make the declaration match the definition" in error
    assert "Traceback" not in run.stderr and "loader/importer.py" not in run.stderr
