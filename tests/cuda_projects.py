"""Tiny CUDA kernel projects for the end-to-end build tests: kernel sources are ``.cu`` files without Torch
headers, so nvcc spends a few seconds per architecture on them.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from cpu_projects import GENERAL, toml_list, write_tree

# --- tiny CUDA projects without a Torch-including file  ---------------------------------


def tiny_cuda_project(
    root: Path, *, name: str = "kb-tiny", depends: Sequence[str] = (), body: str = ""
) -> Path:
    """One kernel section with one ``.cu`` (capability 8.0) that also defines the module init function.

    No file includes a Torch header, so the whole build is a configure plus a few seconds of nvcc.
    """
    py_name = name.replace("-", "_")
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name=name, backends='["cuda"]')
            + textwrap.dedent(
                f"""
                [torch]

                [kernel.tiny]
                backend = "cuda"
                depends = {toml_list(depends)}
                src = ["tiny/tiny.cu"]
                cuda-capabilities = ["8.0"]
                """
            ),
            "tiny/tiny.cu": body
            + textwrap.dedent(
                """
                #include "registration.h"

                __global__ void kb_tiny_kernel(float *out) { out[threadIdx.x] = 1.0f; }

                REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
                """
            ),
            f"torch-ext/{py_name}/__init__.py": "from ._ops import ops\n",
        },
    )


def many_cuda_project(root: Path, *, files: int = 32, name: str = "kb-many") -> Path:
    """One kernel section of ``files`` small ``.cu`` files (capability 8.0) sharing one header, plus the file
    that defines the module init function: a kernel whose build time is in nvcc's per-file steps (each file
    instantiates a templated elementwise kernel for three types), for measuring compiler caches and
    distributed compiles (``benchmarks/scaling.py``). Like :func:`tiny_cuda_project`, no Torch header."""
    py_name = name.replace("-", "_")
    sources = [f"many/k{index:03d}.cu" for index in range(files)]
    tree = {
        "build.toml": GENERAL.format(name=name, backends='["cuda"]')
        + textwrap.dedent(
            f"""
            [torch]

            [kernel.many]
            backend = "cuda"
            depends = []
            src = {toml_list(["many/common.cuh", "many/register.cu", *sources])}
            cuda-capabilities = ["8.0"]
            """
        ),
        "many/common.cuh": textwrap.dedent(
            """
            #pragma once
            #include <cuda_fp16.h>

            template <typename T, int K>
            __device__ __forceinline__ T kb_many_step(T x) {
              float v = static_cast<float>(x);
            #pragma unroll
              for (int i = 0; i < 8; ++i) v = v * (1.0f + K * 1e-3f) + 0.5f * i;
              return static_cast<T>(v);
            }

            template <typename T, int K>
            __global__ void kb_many_kernel(T *out, const T *in, int n) {
              for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
                out[i] = kb_many_step<T, K>(in[i]);
            }
            """
        ),
        "many/register.cu": '#include "registration.h"\n\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n',
        f"torch-ext/{py_name}/__init__.py": "from ._ops import ops\n",
    }
    for index, source in enumerate(sources):
        tree[source] = textwrap.dedent(
            f"""
            #include "common.cuh"

            template __global__ void kb_many_kernel<float, {index}>(float *, const float *, int);
            template __global__ void kb_many_kernel<double, {index}>(double *, const double *, int);
            template __global__ void kb_many_kernel<__half, {index}>(__half *, const __half *, int);
            """
        )
    return write_tree(root, tree)


#: Device code as real kernels write it: an ``AT_DISPATCH``-style macro that runs a lambda per dtype, a
#: ``__device__`` lambda defined in host code and handed to a kernel template (needs nvcc's
#: ``--extended-lambda``), and a ``constexpr`` host function called from device code (``--expt-relaxed-constexpr``).
#: ``kb_lambda_fill(out, n, dtype)`` writes ``i * 2 + 1`` to ``out[i]`` (float: dtype 0, double: dtype 1).
LAMBDA_KERNEL = """
#include <cstdint>

constexpr int kb_lambda_scale() { return 2; }  // host-only constexpr, used on the device

template <typename scalar_t, typename F>
__global__ void kb_lambda_apply(scalar_t *out, int64_t n, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = f(static_cast<scalar_t>(i));
}

#define KB_DISPATCH_CASE(value, type, ...) \\
  case value: {                           \\
    using scalar_t = type;                \\
    __VA_ARGS__();                        \\
    break;                                \\
  }
#define KB_DISPATCH_FLOATING(dtype, ...)          \\
  switch (dtype) {                                \\
    KB_DISPATCH_CASE(0, float, __VA_ARGS__)       \\
    KB_DISPATCH_CASE(1, double, __VA_ARGS__)      \\
    default:                                      \\
      break;                                      \\
  }

void kb_lambda_fill(void *out, int64_t n, int dtype) {
  if (n == 0) return;
  KB_DISPATCH_FLOATING(dtype, [&] {
    auto affine = [] __device__(scalar_t x) { return x * kb_lambda_scale() + scalar_t(1); };
    int threads = 128;
    int blocks = static_cast<int>((n + threads - 1) / threads);
    kb_lambda_apply<<<blocks, threads>>>(static_cast<scalar_t *>(out), n, affine);
  });
}
"""


def lambda_project(root: Path, *, binding: bool = False, capabilities: Sequence[str] = ("8.0",)) -> Path:
    """``kb-lambda``: :data:`LAMBDA_KERNEL` in a cuda kernel section.

    Without ``binding`` no file includes a Torch header (a few seconds of nvcc: compile checks only); with it,
    ``torch-ext/torch_binding.cpp`` registers ``fill(Tensor out) -> ()`` so a GPU can run the kernel.
    """
    files = {
        "build.toml": GENERAL.format(name="kb-lambda", backends='["cuda"]')
        + textwrap.dedent(
            f"""
            [torch]
            {'src = ["torch-ext/torch_binding.cpp"]' if binding else ""}

            [kernel.lambda]
            backend = "cuda"
            depends = []
            src = ["lambda/lambda.cu"]
            cuda-capabilities = {toml_list(capabilities)}
            """
        ),
        "lambda/lambda.cu": LAMBDA_KERNEL
        + ("" if binding else '\n#include "registration.h"\n\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n'),
        "torch-ext/kb_lambda/__init__.py": """
            from ._ops import ops


            def fill(out):
                ops.fill(out)
                return out
        """,
    }
    if binding:
        files["torch-ext/torch_binding.cpp"] = """
            #include <torch/library.h>
            #include <ATen/core/Tensor.h>

            #include "registration.h"

            void kb_lambda_fill(void *out, int64_t n, int dtype);

            void kb_fill(at::Tensor &out) {
              TORCH_CHECK(out.is_cuda() && out.is_contiguous(), "out must be a contiguous CUDA tensor");
              TORCH_CHECK(out.scalar_type() == at::kFloat || out.scalar_type() == at::kDouble, "float or double");
              kb_lambda_fill(out.data_ptr(), out.numel(), out.scalar_type() == at::kFloat ? 0 : 1);
            }

            TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
              ops.def("fill(Tensor(a!) out) -> ()");
              ops.impl("fill", c10::DeviceType::CUDA, &kb_fill);
            }

            REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
        """
    return write_tree(root, files)
