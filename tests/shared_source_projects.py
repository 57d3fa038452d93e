"""A kernel whose two sections list one source file, as kernels-community's flash-mla lists ``api_impl.cu`` in its
SM100 and its SM90 section (docs/build-toml.md, "Shared sources").

``kb-shared`` has the sections ``twice_a`` and ``twice_b``, each with a file of its own and a flag of its own
(``-DKB_FROM_A``, ``-DKB_FROM_B``), and both list ``csrc/shared.<ext>``, which defines ``kb_shared_add`` and stops
the compile unless both sections' flags reach it. The binding registers one op per section; each doubles its
input through its own file and adds one through the shared file. Compiled once per section, the shared file's
function would be defined twice and the extension would not link.

The CPU flavour (``backend="cpu"``) builds and runs here; the CUDA one (sections for 9.0a and for 8.0 and 9.0)
needs a GPU to run (tests/test_gpu_shared_sources.py). Neither kernel file includes a Torch header.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from cpu_projects import GENERAL, toml_list, write_tree

NAME = "kb-shared"
PY_NAME = "kb_shared"
SHARED = "csrc/shared"
#: Section name -> (its flag, its CUDA capabilities).
SECTIONS = {"twice_a": ("-DKB_FROM_A", ("9.0a",)), "twice_b": ("-DKB_FROM_B", ("8.0", "9.0"))}

_CPU_SHARED = """
#include <cstdint>
#if !defined(KB_FROM_A) || !defined(KB_FROM_B)
#error "the shared file must be compiled with both sections' flags"
#endif
void kb_shared_add(float *x, float value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += value;
}
"""

_CPU_SECTION = """
#include <cstdint>
void kb_shared_add(float *x, float value, int64_t n);
char const *kb_{name}(float *x, int64_t n) {{
  for (int64_t i = 0; i < n; ++i) x[i] *= 2.0f;
  kb_shared_add(x, 1.0f, n);
  return nullptr;
}}
"""

_CUDA_SHARED = """
#include <cstdint>
#include <cuda_runtime.h>
#if !defined(KB_FROM_A) || !defined(KB_FROM_B)
#error "the shared file must be compiled with both sections' flags"
#endif
namespace {
__global__ void add_kernel(float *x, float value, int64_t n) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += value;
}
}  // namespace
void kb_shared_add(float *x, float value, int64_t n) {
  if (n > 0) add_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(x, value, n);
}
"""

_CUDA_SECTION = """
#include <cstdint>
#include <cuda_runtime.h>
void kb_shared_add(float *x, float value, int64_t n);
namespace {{
__global__ void twice_kernel(float *x, int64_t n) {{
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}}
}}  // namespace
// nullptr on success, else CUDA's description of the failed launch.
char const *kb_{name}(float *x, int64_t n) {{
  if (n == 0) return nullptr;
  twice_kernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(x, n);
  kb_shared_add(x, 1.0f, n);
  cudaError_t error = cudaGetLastError();
  return error == cudaSuccess ? nullptr : cudaGetErrorString(error);
}}
"""


def shared_source_project(root: Path, backend: str = "cpu") -> Path:
    """``kb-shared`` for ``backend`` (``cpu`` or ``cuda``) in ``root``."""
    cuda = backend == "cuda"
    ext = "cu" if cuda else "cpp"
    toml = (
        GENERAL.format(name=NAME, backends=toml_list([backend]))
        + '\n[torch]\nsrc = ["torch-ext/binding.cpp"]\n'
    )
    for name, (flag, capabilities) in SECTIONS.items():
        toml += f'\n[kernel.{name}]\nbackend = "{backend}"\ndepends = []\n'
        toml += f'src = ["csrc/{name}.{ext}", "{SHARED}.{ext}"]\n'
        toml += f"{'cuda' if cuda else 'cxx'}-flags = {toml_list([flag])}\n"
        if cuda:
            toml += f"cuda-capabilities = {toml_list(capabilities)}\n"
    files = {f"{SHARED}.{ext}": _CUDA_SHARED if cuda else _CPU_SHARED}
    for name in SECTIONS:
        files[f"csrc/{name}.{ext}"] = (_CUDA_SECTION if cuda else _CPU_SECTION).format(name=name)
    device = "kCUDA" if cuda else "kCPU"
    wrappers = "".join(
        f"""
        char const *kb_{name}(float *x, int64_t n);
        void {name}(at::Tensor &x) {{
          TORCH_CHECK(x.scalar_type() == at::kFloat && x.is_contiguous(), "{name}: a contiguous float32 tensor");
          char const *error = kb_{name}(x.data_ptr<float>(), x.numel());
          TORCH_CHECK(error == nullptr, "{name}: ", error);
        }}
        """
        for name in SECTIONS
    )
    defs = "".join(
        f'  ops.def("{n}(Tensor! x) -> ()");\n  ops.impl("{n}", c10::{device}, &{n});\n' for n in SECTIONS
    )
    files["torch-ext/binding.cpp"] = (
        '#include <ATen/ATen.h>\n#include <torch/library.h>\n\n#include "registration.h"\n'
        + textwrap.dedent(wrappers)
        + "\nTORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {\n"
        + defs
        + "}\n\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n"
    )
    files[f"torch-ext/{PY_NAME}/__init__.py"] = (
        "from ._ops import ops\n\n\n"
        + "".join(f"def {n}(x):\n    ops.{n}(x)\n    return x\n\n\n" for n in SECTIONS)
        + f"__all__ = {sorted(SECTIONS)!r}\n"
    )
    write_tree(root, {"build.toml": toml})
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
