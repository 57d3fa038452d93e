"""The generate stage of one compiled variant: check that the build interpreter's torch and the toolchain can
build it, then write its CMake project (:func:`kernel_builder.pipeline.generate.cmake.write_project`).

Shared by ``kernel-builder build`` (before configuring) and ``kernel-builder generate``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from kernel_builder import backends
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment import toolchain
from kernel_builder.pipeline.environment.cutlass import dependency_includes
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, torch_details
from kernel_builder.pipeline.generate.cmake import ProjectOptions, write_project
from kernel_builder.pipeline.options import BuildOptions
from kernel_builder.pipeline.plan.planner import VariantPlan


def write_variant_project(
    project: KernelProject,
    variant: VariantPlan,
    interpreter: BuildInterpreter,
    project_dir: Path,
    options: BuildOptions,
    log: Callable[[str], None],
    *,
    compiler_cache: str | None = None,
    python_headers: bool = False,
    source_stage: Path | None = None,
) -> bool:
    """Checks torch and the toolchain, then writes the project into ``project_dir``; True for a CUDA project.
    ``python_headers``: the project takes the interpreter's Python headers as found here (checked) instead of
    running CMake's FindPython."""
    details = torch_details(interpreter)
    if sys.platform == "linux" and not details.cxx11_abi:
        raise BuildError(
            f"torch {details.version} was not built with the C++11 ABI; kernel-builder needs one that is"
        )
    toolkit = None
    if backends.get(variant.backend).needs_nvcc:
        toolkit = toolchain.toolkit_for(interpreter)
        toolchain.check_cuda_match(toolkit, interpreter.backend_version_text)
    compiler = toolchain.compiler_for(interpreter.target).path
    if sys.platform == "linux":
        from kernel_builder.pipeline.generate.manylinux import check_compiler

        check_compiler(compiler)
    python_include = None
    if python_headers or interpreter.target is not None:  # a target's Torch comes without its Python
        python_include = interpreter.python_include
        if not (python_include / "Python.h").is_file():
            raise BuildError(
                f"the build interpreter {interpreter.python} has no Python headers ({python_include}/Python.h "
                "is missing): install its development package (e.g. python3-dev) or use a Python that has them"
            )
    project_options = ProjectOptions(
        build_type=options.build_type,
        nvcc_threads=options.nvcc_threads,
        gnu_unique_flag=toolchain.compiler_accepts("-fno-gnu-unique", interpreter.target),
        dependency_includes=dependency_includes(
            (d for c in variant.components for d in c.depends), interpreter, log, offline=options.offline
        ),
        manylinux_compiler=compiler if sys.platform == "linux" else None,
        namespace_where_used=options.namespace_where_used,
        development=options.namespace_where_used,  # kernel_builder.load: the edit → load loop
        debug_info=options.debug_build,
        compiler_cache=compiler_cache,
        python_include=python_include,
        source_stage=source_stage,
    )
    write_project(project_dir, project.root, variant, interpreter, details, toolkit, project_options)
    return toolkit is not None
