// Helpers shared by the CPU activation kernels.
#pragma once

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

// float32, float16 and bfloat16 (and float64). Half and bfloat16 values are
// computed in float (at::opmath_type), float64 in double.
#define ACTIVATION_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...)                  \
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half,                      \
                                  at::ScalarType::BFloat16, TYPE, NAME,      \
                                  __VA_ARGS__)

namespace activation_cpu {

// Minimum number of output elements per parallel task.
constexpr int64_t kGrainSize = 32768;

// Checks shared by every op: both tensors on the CPU, same dtype, contiguous.
// Shapes are checked by each op.
inline void check_tensors(char const *op, at::Tensor const &out,
                          at::Tensor const &input) {
  TORCH_CHECK(input.device().is_cpu(), op,
              ": input must be a CPU tensor, got one on ", input.device());
  TORCH_CHECK(out.device() == input.device(), op,
              ": out and input must be on the same device, got out on ",
              out.device(), " and input on ", input.device());
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), op,
              ": out and input must have the same dtype, got out ",
              out.scalar_type(), " and input ", input.scalar_type());
  TORCH_CHECK(input.is_contiguous(), op, ": input must be contiguous");
  TORCH_CHECK(out.is_contiguous(), op, ": out must be contiguous");
}

}  // namespace activation_cpu
