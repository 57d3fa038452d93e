// Helpers shared by the CUDA activation kernels: argument checks, launch
// configuration, dtype dispatch and float/double math.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

// float32, float16 and bfloat16 (and float64). Half and bfloat16 values are
// computed in float (at::opmath_type), float64 in double.
#define ACTIVATION_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                  \
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half,                      \
                                  at::ScalarType::BFloat16, TYPE, NAME,      \
                                  __VA_ARGS__)

namespace activation {

constexpr int kThreadsPerBlock = 256;

// Checks shared by every op: both tensors on the same CUDA device, same
// dtype, contiguous. Shapes are checked by each op.
inline void check_tensors(char const *op, at::Tensor const &out,
                          at::Tensor const &input) {
  TORCH_CHECK(input.is_cuda(), op, ": input must be a CUDA tensor, got one on ",
              input.device());
  TORCH_CHECK(out.device() == input.device(), op,
              ": out and input must be on the same device, got out on ",
              out.device(), " and input on ", input.device());
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), op,
              ": out and input must have the same dtype, got out ",
              out.scalar_type(), " and input ", input.scalar_type());
  TORCH_CHECK(input.is_contiguous(), op, ": input must be contiguous");
  TORCH_CHECK(out.is_contiguous(), op, ": out must be contiguous");
}

// Grid for a grid-stride loop over `work_items` (> 0) items: enough blocks to
// cover them, capped at a few waves so huge tensors loop instead.
inline dim3 grid_for(int64_t work_items) {
  int64_t const needed = (work_items + kThreadsPerBlock - 1) / kThreadsPerBlock;
  int64_t const cap = std::max<int64_t>(
      1, int64_t{at::cuda::getCurrentDeviceProperties()->multiProcessorCount} * 32);
  return dim3(static_cast<unsigned int>(std::min(needed, cap)));
}

__device__ __forceinline__ float device_exp(float x) { return expf(x); }
__device__ __forceinline__ double device_exp(double x) { return exp(x); }
__device__ __forceinline__ float device_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double device_tanh(double x) { return tanh(x); }

}  // namespace activation
