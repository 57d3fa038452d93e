"""A kernel that registers things with Torch when its package is imported, as deep-gemm does: a fake
implementation and an autograd formula for its compiled op, an op of its own defined in Python with
``torch.library.custom_op`` (with its fake), and one defined on a ``torch.library.Library`` of its namespace.
Torch refuses a second registration of these in one process (Torch 2.11 each of them; 2.13 still the second
``define``), so a second import of the variant into a process that imported it once fails, although the kernel
works.

The compiled op ``scale(Tensor x, float factor) -> Tensor`` has a CPU section (plain C++ with Torch's headers)
and a CUDA section; ``backends`` picks which the project builds.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

from cpu_projects import GENERAL, toml_list, write_tree

NAME = "kb-registers"
PY_NAME = "kb_registers"

_SECTIONS = {
    "cpu": """
        [kernel.scale_cpu]
        backend = "cpu"
        depends = ["torch"]
        src = ["scale/scale_cpu.cpp"]
    """,
    "cuda": """
        [kernel.scale_cuda]
        backend = "cuda"
        depends = ["torch"]
        src = ["scale/scale_cuda.cu"]
    """,
}

INIT = '''
"""Registers, at import: a fake and an autograd formula for the compiled `scale`, and the Python ops `shift`
(`custom_op`) and `twice` (`Library.define`)."""

import torch

from ._ops import add_op_namespace_prefix, ops


# As deep-gemm does, one fake per compiled op, in a loop.
for _op in ["scale"]:

    @torch.library.register_fake(add_op_namespace_prefix(_op))
    def _fake(x, factor):
        return torch.empty_like(x)


def _scale_setup(ctx, inputs, output):
    ctx.factor = inputs[1]


def _scale_backward(ctx, grad):
    return ops.scale(grad, ctx.factor), None


torch.library.register_autograd(add_op_namespace_prefix("scale"), _scale_backward, setup_context=_scale_setup)


@torch.library.custom_op(add_op_namespace_prefix("shift"), mutates_args=())
def shift(x: torch.Tensor, amount: float) -> torch.Tensor:
    return x + amount


@shift.register_fake
def _shift_fake(x, amount):
    return torch.empty_like(x)


# An op defined on a Library of the build's namespace (a second `define` of it fails in every Torch version;
# Torch 2.13 lets a second fake or custom_op replace the first, Torch 2.11 does not).
_lib = torch.library.Library(add_op_namespace_prefix("").rstrip(":"), "FRAGMENT")
_lib.define("twice(Tensor x) -> Tensor")
_lib.impl("twice", lambda x: x * 2, "CompositeExplicitAutograd")


def twice(x: torch.Tensor) -> torch.Tensor:
    return ops.twice(x)


def scale(x: torch.Tensor, factor: float) -> torch.Tensor:
    return ops.scale(x, factor)


__all__ = ["scale", "shift", "twice"]
'''


def registering_project(root: Path, *, backends: Sequence[str] = ("cpu",), init_extra: str = "") -> Path:
    """The project in ``root``, with the kernel sections of ``backends``; ``init_extra`` ends its ``__init__.py``."""
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name=NAME, backends=toml_list(backends))
            + textwrap.dedent(
                """
                [torch]
                src = ["torch-ext/torch_binding.cpp"]
                """
            )
            + "".join(textwrap.dedent(_SECTIONS[backend]) for backend in backends),
            "torch-ext/torch_binding.cpp": """
                #include <torch/library.h>

                #include "registration.h"

                at::Tensor scale(at::Tensor const &x, double factor);

                TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
                  ops.def("scale(Tensor x, float factor) -> Tensor");
                #if defined(CUDA_KERNEL)
                  ops.impl("scale", c10::kCUDA, &scale);
                #elif defined(CPU_KERNEL)
                  ops.impl("scale", c10::kCPU, &scale);
                #endif
                }

                REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
            """,
            "scale/scale_cpu.cpp": """
                #include <ATen/ATen.h>

                at::Tensor scale(at::Tensor const &x, double factor) { return x * factor; }
            """,
            "scale/scale_cuda.cu": """
                #include <ATen/ATen.h>
                #include <ATen/cuda/CUDAContext.h>

                __global__ void kb_scale_kernel(float const *x, float *out, float factor, int64_t n) {
                  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
                  if (i < n) out[i] = x[i] * factor;
                }

                at::Tensor scale(at::Tensor const &x, double factor) {
                  TORCH_CHECK(x.is_cuda() && x.scalar_type() == at::kFloat, "scale: a float32 CUDA tensor");
                  auto input = x.contiguous();
                  auto out = at::empty_like(input);
                  int64_t n = input.numel();
                  if (n == 0) return out;
                  int threads = 256;
                  auto blocks = static_cast<unsigned>((n + threads - 1) / threads);
                  kb_scale_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
                      input.data_ptr<float>(), out.data_ptr<float>(), static_cast<float>(factor), n);
                  return out;
                }
            """,
            f"torch-ext/{PY_NAME}/__init__.py": INIT.lstrip("\n") + init_extra,
        },
    )
