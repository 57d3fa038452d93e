"""Kernel section names as real kernels write them: ``[kernel._qattn_sm90]``, ``[kernel._fused]``, and names that
spell a generated or CMake target (``_torch_binding``, ``kb_binding``, ``all``). ``check-config`` accepts them
all and they build: every section's CMake target is ``kb_kernel_<name>``, so no section name can collide with the
binding (``kb_binding``), the shared settings (``kb_common``), the manylinux source (``kb_manylinux``), the
extension (the op namespace, ``_<name>_<backend>_<id>``) or CMake's own targets.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from build_runs import NO_IMPORT_CHECK, build, cpu_python, run_json
from conftest import MakeProject
from cpu_projects import GENERAL, write_tree
from matrix_data import CPU_VARIANT

from kernel_builder.cli import main
from kernel_builder.pipeline.generate.cmake import (
    BINDING_TARGET,
    MANYLINUX_TARGET,
    SECTION_TARGET_PREFIX,
    component_target,
)
from kernel_builder.pipeline.plan.components import Component

#: Upstream kernels' section names starting with `_`, then names that are (or were) our generated targets'
#: and CMake's own.
UPSTREAM_NAMES = ("_qattn_sm90", "_fused", "_fp4attn_sm100")
COLLIDING_NAMES = (
    "_torch_binding",
    "kb_binding",
    "kb_common",
    "kb_manylinux",
    "kb_kernel_x",
    "all",
    "install",
)

CHECK_TOML = """\
[general]
name = "names"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp"]
""" + "".join(
    f'\n[kernel.{name}]\nbackend = "cuda"\ndepends = ["torch"]\nsrc = ["csrc/{name}.cu"]\n'
    for name in UPSTREAM_NAMES
)


def test_check_config_accepts_sections_starting_with_underscore(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(CHECK_TOML)
    assert main(["check-config", "kernel"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out.endswith(
        "  kernels:\n"
        "    _qattn_sm90     cuda   capabilities: default list of each CUDA version\n"
        "    _fused          cuda   capabilities: default list of each CUDA version\n"
        "    _fp4attn_sm100  cuda   capabilities: default list of each CUDA version\n"
    ), out


@pytest.mark.parametrize("name", COLLIDING_NAMES)
def test_check_config_accepts_names_of_generated_and_cmake_targets(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    make_project(CHECK_TOML.replace("[kernel._fused]", f"[kernel.{name}]").replace("_fused.cu", f"{name}.cu"))
    assert main(["check-config", "kernel"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and f"    {name} " in out


def test_section_targets_cannot_be_generated_targets() -> None:
    """Every name the section syntax allows maps to a target in ``kb_kernel_``, which no generated one is in."""
    generated = {BINDING_TARGET, MANYLINUX_TARGET, "kb_common"}
    assert not any(target.startswith(SECTION_TARGET_PREFIX) for target in generated)
    binding = Component("_torch_binding", ("torch-ext/torch_binding.cpp",), binding=True)
    assert component_target(binding) == BINDING_TARGET
    for name in (*UPSTREAM_NAMES, *COLLIDING_NAMES):
        assert component_target(Component(name, ("x.cpp",))) == SECTION_TARGET_PREFIX + name


def names_project(root: Path) -> Path:
    """A cpu kernel whose sections have every troublesome name; each defines one function the binding sums up,
    so the op's result shows every section was compiled and linked once."""
    sections = {name: index + 1 for index, name in enumerate((*UPSTREAM_NAMES, *COLLIDING_NAMES))}
    files = {
        "build.toml": GENERAL.format(name="kb-names", backends='["cpu"]')
        + '\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n'
        + "".join(
            f'\n[kernel.{name}]\nbackend = "cpu"\ndepends = []\nsrc = ["{name}/part.cpp"]\n'
            for name in sections
        ),
        "torch-ext/kb_names/__init__.py": 'from ._ops import ops\n\n__all__ = ["ops"]\n',
        "torch-ext/torch_binding.cpp": "#include <cstdint>\n\n#include <torch/library.h>\n\n"
        '#include "registration.h"\n\n'
        + "".join(f"int64_t kb_part_{index}();\n" for index in sections.values())
        + "\nint64_t kb_sum_parts() { return 0"
        + "".join(f" + kb_part_{index}()" for index in sections.values())
        + "; }\n\nTORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {\n"
        '  ops.def("sum_parts() -> int", &kb_sum_parts);\n}\n\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n',
    }
    for name, index in sections.items():
        files[f"{name}/part.cpp"] = (
            f"#include <cstdint>\n\nint64_t kb_part_{index}() {{ return {index * index}; }}\n"
        )
    return write_tree(root, files)


@pytest.mark.slow
def test_sections_with_any_name_build_and_load(tmp_path: Path) -> None:
    names = (*UPSTREAM_NAMES, *COLLIDING_NAMES)
    root = names_project(tmp_path / "kb-names")
    build(root, NO_IMPORT_CHECK)  # loaded below, in a fresh interpreter
    lists = (root / ".kernel-builder" / CPU_VARIANT / "project" / "CMakeLists.txt").read_text(
        encoding="utf-8"
    )
    for name in names:
        assert f"kb_component({SECTION_TARGET_PREFIX}{name}\n" in lists
    assert f"kb_component({BINDING_TARGET}\n" in lists
    objects = root / ".kernel-builder" / CPU_VARIANT / "cmake-build" / "CMakeFiles"
    for name in names:
        assert list((objects / f"{SECTION_TARGET_PREFIX}{name}.dir").rglob("part.cpp.o")), name
    result = run_json(
        cpu_python(),
        """
        import json, sys
        import kernel_builder
        kernel = kernel_builder.get_local_kernel(sys.argv[1])
        print(json.dumps(kernel.ops.sum_parts()))
        """,
        root / "build" / CPU_VARIANT,
    )
    assert result == sum(index * index for index in range(1, len(names) + 1))
