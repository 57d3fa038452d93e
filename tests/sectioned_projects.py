"""A CUDA kernel with sections for different GPUs, as sage-attention and flash-mla have: ``add_sm90`` for 9.0a
only, ``add_sm100`` for 10.0a only, and ``add_generic`` for 8.0 and up. Its binding registers the three ops
unconditionally, so every section must be compiled (for some capability) for the extension to link and load.

Each op adds a number to a float32 CUDA tensor in place. The kernels include no Torch header (nvcc takes a few
seconds per capability); the launcher reports a failed launch (``no kernel image is available for execution on
the device`` on a GPU the section was not compiled for) as its return value, which the binding raises as a
Torch error naming the op.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from cpu_projects import GENERAL, toml_list, write_tree

NAME = "kb-sections"
PY_NAME = "kb_sections"

#: Section name -> its ``cuda-capabilities``.
SECTIONS = {
    "add_sm90": ("9.0a",),
    "add_sm100": ("10.0a",),  # with cuda-minver = "12.8"
    "add_generic": ("8.0", "8.9", "9.0", "10.0", "12.0"),
}

_KERNEL = """
#include <cstdint>
#include <cuda_runtime.h>

namespace {{
__global__ void add_kernel(float *x, float value, int64_t n) {{
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += value;
}}
}}  // namespace

// nullptr on success, else CUDA's description of the failed launch.
char const *kb_{name}(float *x, float value, int64_t n) {{
  if (n == 0) return nullptr;
  add_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(x, value, n);
  cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}}
"""


def sectioned_project(root: Path) -> Path:
    toml = GENERAL.format(name=NAME, backends='["cuda"]') + textwrap.dedent(
        """
        [torch]
        src = ["torch-ext/torch_binding.cpp", "torch-ext/sections.h"]
        """
    )
    files: dict[str, str] = {}
    for name, capabilities in SECTIONS.items():
        toml += textwrap.dedent(
            f"""
            [kernel.{name}]
            backend = "cuda"
            depends = []
            src = ["csrc/{name}.cu"]
            cuda-capabilities = {toml_list(capabilities)}
            """
        )
        if "10.0a" in capabilities:
            toml += 'cuda-minver = "12.8"\n'  # CUDA 12.6 has no 10.0a
        files[f"csrc/{name}.cu"] = _KERNEL.format(name=name)
    declarations = "".join(f"char const *kb_{name}(float *x, float value, int64_t n);\n" for name in SECTIONS)
    wrappers = "".join(
        f"""
        void {name}(at::Tensor &x, double value) {{
          check(x, "{name}");
          char const *error = kb_{name}(x.data_ptr<float>(), static_cast<float>(value), x.numel());
          TORCH_CHECK(error == nullptr, "{name}: the kernel did not launch: ", error);
        }}
        """
        for name in SECTIONS
    )
    defs = "".join(
        f'  ops.def("{name}(Tensor! x, float value) -> ()");\n  ops.impl("{name}", c10::kCUDA, &{name});\n'
        for name in SECTIONS
    )
    files["torch-ext/sections.h"] = "#pragma once\n#include <cstdint>\n\n" + declarations
    files["torch-ext/torch_binding.cpp"] = (
        "#include <ATen/ATen.h>\n#include <torch/library.h>\n\n"
        '#include "registration.h"\n#include "sections.h"\n\n'
        "static void check(at::Tensor const &x, char const *op) {\n"
        "  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat && x.is_contiguous(), op,\n"
        '              ": a contiguous float32 CUDA tensor");\n'
        "}\n"
        + textwrap.dedent(wrappers)
        + "\n// Every section's op, whatever GPUs the build is for (as sage-attention's binding does).\n"
        + "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {\n"
        + defs
        + "}\n\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n"
    )
    files[f"torch-ext/{PY_NAME}/__init__.py"] = (
        "from ._ops import ops\n\n\n"
        + "".join(f"def {name}(x, value):\n    ops.{name}(x, value)\n    return x\n\n\n" for name in SECTIONS)
        + f"__all__ = {sorted(SECTIONS)!r}\n"
    )
    write_tree(root, {"build.toml": toml})
    for rel, text in files.items():  # already laid out: no dedent
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
