"""Sources that check, as they compile, what the build gave them: the ``kb-probe`` project (compile
definitions, flags, include directories and capabilities per component, each checked with ``#error`` and
``static_assert``) and a source that compiles ``registration.h`` directly.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from cpu_projects import GENERAL, toml_list, write_tree

# --- the probe project: compile definitions, flags and includes per component  -------

#: The probe's unique id (passed with --unique-id), so the sources can check the exact extension name.
PROBE_ID = "probe"


@dataclass(frozen=True)
class ProbeComponent:
    name: str  # "torch" for the binding component, else the kernel section
    backend: str | None  # None: compiled into every variant (the binding)
    cxx_canary: str
    cu_canary: str | None = None
    capabilities: tuple[str, ...] = ()

    @property
    def include_header(self) -> str:
        return f"inc_{self.name}.h"

    @property
    def include_dir(self) -> str:
        return "torch-ext/include" if self.name == "torch" else f"{self.name}/include"


#: Each CUDA kernel section is one tiny .cu with its own capability list . cuda_a also has a
#: C++ file, to show its cxx-flags reach that file and not its .cu.
PROBE_COMPONENTS = (
    ProbeComponent("torch", None, "CANARY_TORCH_CXX"),
    ProbeComponent("probe_cpu", "cpu", "CANARY_PROBE_CPU_CXX"),
    ProbeComponent("cuda_a", "cuda", "CANARY_CUDA_A_CXX", "CANARY_CUDA_A_CU", ("8.0", "9.0a")),
    ProbeComponent("cuda_b", "cuda", "CANARY_CUDA_B_CXX", "CANARY_CUDA_B_CU", ("9.0+PTX",)),
    ProbeComponent("cuda_c", "cuda", "CANARY_CUDA_C_CXX", "CANARY_CUDA_C_CU", ("8.0", "9.0+PTX")),
    ProbeComponent("cuda_d", "cuda", "CANARY_CUDA_D_CXX", "CANARY_CUDA_D_CU", ("7.0", "7.5", "8.0")),
    ProbeComponent("cuda_e", "cuda", "CANARY_CUDA_E_CXX", "CANARY_CUDA_E_CU", ("8.0", "10.0f")),
    ProbeComponent("cuda_f", "cuda", "CANARY_CUDA_F_CXX", "CANARY_CUDA_F_CU", ("7.0", "8.0")),
)
PROBE_CUDA = tuple(c for c in PROBE_COMPONENTS if c.backend == "cuda")
#: The effective lists on CUDA 13.0 . In cuda_d, 7.5 serves the 7.5 target
#: (the largest same-major entry wins), so 7.0 is never chosen; in cuda_f, 7.0 would serve 7.5 but CUDA 13
#: cannot target it: it is dropped with a warning.
PROBE_EFFECTIVE = {
    "cuda_a": ("8.0", "9.0a"),
    "cuda_b": ("9.0+PTX",),
    "cuda_c": ("8.0", "9.0+PTX"),
    "cuda_d": ("7.5", "8.0"),
    "cuda_e": ("8.0", "10.0f"),
    "cuda_f": ("8.0",),
}
#: The CUDA file of the binding component and its effective list on CUDA 13.0: the union of the kernels' lists.
PROBE_BINDING_CU = "torch-ext/torch_binding_cuda.cu"
PROBE_UNION = ("7.5", "8.0", "9.0+PTX", "9.0a", "10.0f")
#: An included header that no `src` lists .
PROBE_UNLISTED_HEADER = "probe_cpu/unlisted_helper.h"


def probe_checks(component: ProbeComponent, language: str) -> str:
    """Preprocessor checks that ``#error`` unless this file sees exactly what it should ."""
    lines = [
        f"// Probe checks for component {component.name}, compiled as {language}.",
        "#if !defined(TORCH_EXTENSION_NAME)",
        '#error "TORCH_EXTENSION_NAME is not defined"',
        "#endif",
        "#if !defined(Py_LIMITED_API) || Py_LIMITED_API != 0x03090000",
        '#error "Py_LIMITED_API is not 0x03090000"',
        "#endif",
        "#if __cplusplus != 202002L",
        '#error "not compiled as C++20"',
        "#endif",
        (
            "#if (defined(CPU_KERNEL) + defined(CUDA_KERNEL) + defined(ROCM_KERNEL) + defined(METAL_KERNEL) + "
            "defined(XPU_KERNEL)) != 1"
        ),
        '#error "not exactly one *_KERNEL definition"',
        "#endif",
        "#if defined(CUDA_KERNEL) && !(defined(USE_CUDA) && USE_CUDA == 1)",
        '#error "a cuda variant without USE_CUDA=1"',
        "#endif",
        "#if defined(CPU_KERNEL) && (defined(USE_CUDA) || defined(USE_ROCM) || defined(USE_XPU))",
        '#error "a cpu variant with a GPU USE_* definition"',
        "#endif",
    ]
    if component.backend is not None:
        macro = f"{component.backend.upper()}_KERNEL"
        lines += [f"#if !defined({macro})", f'#error "{macro} is not defined"', "#endif"]
    own = component.cu_canary if language == "CUDA" else component.cxx_canary
    for other in PROBE_COMPONENTS:
        for canary in (other.cxx_canary, other.cu_canary):
            if canary is None:
                continue
            if canary == own:
                lines += [f"#if !defined({canary})", f'#error "{canary} should reach this file"', "#endif"]
            else:
                lines += [f"#if defined({canary})", f'#error "{canary} must not reach this file"', "#endif"]
        header = other.include_header
        if other is component:
            lines += [
                f'#if !__has_include("{header}")',
                f'#error "own include dir missing ({header})"',
                "#endif",
            ]
        elif component.backend is None and other.backend is not None:
            # The binding sees the include directories of the variant's kernel sections, and only those.
            macro = f"{other.backend.upper()}_KERNEL"
            lines += [
                f'#if defined({macro}) && !__has_include("{header}")',
                f'#error "the binding does not see the include dir of {other.name}"',
                "#endif",
                f'#if !defined({macro}) && __has_include("{header}")',
                f'#error "include dir of {other.name} leaked into another backend\'s binding"',
                "#endif",
            ]
        else:
            lines += [
                f'#if __has_include("{header}")',
                f'#error "include dir of {other.name} leaked"',
                "#endif",
            ]
    lines += [
        "#define KB_PROBE_STR2(x) #x",
        "#define KB_PROBE_STR(x) KB_PROBE_STR2(x)",
        "namespace {",
        "constexpr bool kb_probe_same(const char *a, const char *b) {",
        "  while (*a != 0 && *a == *b) { ++a; ++b; }",
        "  return *a == *b;",
        "}",
        "}  // namespace",
        "#if defined(CPU_KERNEL)",
        (
            f'static_assert(kb_probe_same(KB_PROBE_STR(TORCH_EXTENSION_NAME), "_kb_probe_cpu_{PROBE_ID}"), '
            '"wrong TORCH_EXTENSION_NAME");'
        ),
        "#elif defined(CUDA_KERNEL)",
        (
            f'static_assert(kb_probe_same(KB_PROBE_STR(TORCH_EXTENSION_NAME), "_kb_probe_cuda_{PROBE_ID}"), '
            '"wrong TORCH_EXTENSION_NAME");'
        ),
        "#endif",
        f'#include "{component.include_header}"',
    ]
    return "\n".join(lines) + "\n"


def probe_project(root: Path) -> Path:
    """``kb-probe``: a binding, a cpu kernel and five one-file cuda kernels, every file a probe."""
    sections = []
    files: dict[str, str] = {}
    for index, component in enumerate(PROBE_COMPONENTS):
        files[f"{component.include_dir}/{component.include_header}"] = (
            f"#pragma once\n#define {component.name.upper()}_TAG {index + 1}\n"
        )
        if component.backend is None:
            continue
        src = [f"{component.name}/{component.name}.{'cpp' if component.backend == 'cpu' else 'cu'}"]
        if component.name == "cuda_a":
            src.append("cuda_a/cuda_a_host.cpp")
        src.append(f"{component.include_dir}/{component.include_header}")
        section = [
            f"[kernel.{component.name}]",
            f'backend = "{component.backend}"',
            "depends = []",
            f"src = {toml_list(src)}",
            f'include = ["{component.include_dir}"]',
            f'cxx-flags = ["-D{component.cxx_canary}=1"]',
        ]
        if component.backend == "cuda":
            section += [
                f'cuda-flags = ["-D{component.cu_canary}=1"]',
                f"cuda-capabilities = {toml_list(component.capabilities)}",
            ]
        sections.append("\n".join(section))
    for component in PROBE_CUDA:
        tag = f"{component.name.upper()}_TAG"
        files[f"{component.name}/{component.name}.cu"] = (
            probe_checks(component, "CUDA")
            + f"\n__global__ void kb_probe_{component.name}_kernel(int *out) {{ *out = {tag}; }}\n\n"
            f"int kb_probe_{component.name}_tag() {{ return {tag}; }}\n"
        )
    files["cuda_a/cuda_a_host.cpp"] = (
        probe_checks(PROBE_COMPONENTS[2], "C++")
        + "\n#include <cstdint>\n\n"
        + "".join(f"int kb_probe_{c.name}_tag();\n" for c in PROBE_CUDA)
        + "\nint64_t kb_probe_cuda_value(int64_t x) {\n  return x * 1000"
        + "".join(f" + kb_probe_{c.name}_tag()" for c in PROBE_CUDA)
        + ";\n}\n"
    )
    files["probe_cpu/probe_cpu.cpp"] = (
        probe_checks(PROBE_COMPONENTS[1], "C++")
        + '#include "unlisted_helper.h"\n#include <cstdint>\n\n'
        + "int64_t kb_probe_cpu_value(int64_t x) { return x * 1000 + PROBE_CPU_TAG + kb_probe_helper(); }\n"
    )
    files[PROBE_UNLISTED_HEADER] = "#pragma once\ninline int kb_probe_helper() { return 0; }\n"
    # A .cu in [torch] src: compiled only into cuda variants, with the union of the kernels' capabilities, the
    # binding's include directories and neither cxx-flags nor any kernel's cuda-flags.
    files[PROBE_BINDING_CU] = (
        probe_checks(PROBE_COMPONENTS[0], "CUDA")
        + "\n__global__ void kb_probe_binding_kernel(int *out) { *out = TORCH_TAG; }\n"
    )
    files["torch-ext/torch_binding.h"] = (
        "#pragma once\n#include <cstdint>\n\n"
        "int64_t kb_probe_cpu_value(int64_t x);\nint64_t kb_probe_cuda_value(int64_t x);\n"
    )
    files["torch-ext/torch_binding.cpp"] = probe_checks(PROBE_COMPONENTS[0], "C++") + textwrap.dedent(
        """
        #include <string>

        #include <torch/library.h>

        #include "registration.h"
        #include "torch_binding.h"

        std::string kb_probe_extension_name() { return STRINGIFY(TORCH_EXTENSION_NAME); }

        TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
          ops.def("extension_name() -> str", &kb_probe_extension_name);
        #if defined(CPU_KERNEL)
          ops.def("value(int x) -> int", &kb_probe_cpu_value);
        #elif defined(CUDA_KERNEL)
          ops.def("value(int x) -> int", &kb_probe_cuda_value);
        #endif
        }

        REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
        """
    )
    files["torch-ext/kb_probe/__init__.py"] = '''
        """The probe kernel: its ops report what the build gave them."""

        from ._ops import add_op_namespace_prefix, ops


        def value(x: int) -> int:
            return ops.value(x)


        __all__ = ["add_op_namespace_prefix", "ops", "value"]
    '''
    build_toml = GENERAL.format(name="kb-probe", backends='["cpu", "cuda"]') + textwrap.dedent(
        """
        [torch]
        src = [
          "torch-ext/torch_binding.cpp",
          "torch-ext/torch_binding_cuda.cu",
          "torch-ext/torch_binding.h",
          "torch-ext/include/inc_torch.h",
        ]
        include = ["torch-ext/include"]
        cxx-flags = ["-DCANARY_TORCH_CXX=1"]
        """
    )
    files["build.toml"] = build_toml + "\n" + "\n\n".join(sections) + "\n"
    return write_tree(root, files)


def probe_value(x: int, backend: str) -> int:
    """What the probe's ``value`` op returns: ``x * 1000`` plus the tags of the components compiled in."""
    tags = {c.name: i + 1 for i, c in enumerate(PROBE_COMPONENTS)}
    if backend == "cpu":
        return x * 1000 + tags["probe_cpu"]
    return x * 1000 + sum(tags[c.name] for c in PROBE_CUDA)


# --- registration.h compiled directly  -------------------------------------------------------

REGISTRATION_PROBE = """
#include <torch/library.h>

#include "registration.h"

#define KB_EXPECT(cond) static_assert(cond, #cond)
namespace {
constexpr bool kb_same(const char *a, const char *b) {
  while (*a != 0 && *a == *b) { ++a; ++b; }
  return *a == *b;
}
}  // namespace
#define KB_PASTED_abc 1
KB_EXPECT(CONCAT(KB_PASTED_, abc) == 1);
KB_EXPECT(kb_same(STRINGIFY(TORCH_EXTENSION_NAME), "_kb_direct_cpu_0123456789"));
KB_EXPECT(kb_same(_STRINGIFY(TORCH_EXTENSION_NAME), "TORCH_EXTENSION_NAME"));

int64_t kb_direct_one(int64_t x) { return x + 1; }

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, m) { m.def("one(int x) -> int", &kb_direct_one); }
TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, m) {}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""
