// Helpers shared by the CUDA activation kernels: argument checks, 16-byte
// vectors and their alignment, launch configuration, dtype dispatch and
// float/double math.
//
// The activations are bound by memory bandwidth: each thread moves 16 bytes
// per load and store, over a grid of one thread per vector (grid-stride loops
// cover inputs too large for one grid).
#pragma once

// Only the headers these files need: ATen/cuda/CUDAContext.h would bring in
// cuBLAS and cuSPARSE and slow every compile down.
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

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
// 16-byte vectors each thread loads before it stores any.
constexpr int kUnroll = 4;
constexpr int kVectorBytes = 16;
// Largest x-dimension of a grid.
constexpr int64_t kMaxBlocks = 2147483647;

template <typename scalar_t>
struct alignas(kVectorBytes) Vector {
  static constexpr int kSize = kVectorBytes / sizeof(scalar_t);
  scalar_t values[kSize];
};

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
  TORCH_CHECK(input.is_contiguous(), op,
              ": input must be contiguous (call .contiguous() first)");
  TORCH_CHECK(out.is_contiguous(), op, ": out must be contiguous");
}

inline bool is_aligned(void const *pointer) {
  return reinterpret_cast<std::uintptr_t>(pointer) % kVectorBytes == 0;
}

// Elements before `input` reaches a 16-byte boundary, or -1 when `out` and
// `input` sit at different offsets from one, so no vector fits both.
template <typename scalar_t>
int64_t aligned_head(scalar_t const *out, scalar_t const *input) {
  auto const out_address = reinterpret_cast<std::uintptr_t>(out);
  auto const in_address = reinterpret_cast<std::uintptr_t>(input);
  if (out_address % kVectorBytes != in_address % kVectorBytes ||
      in_address % sizeof(scalar_t) != 0) {
    return -1;
  }
  std::uintptr_t const misaligned = in_address % kVectorBytes;
  return misaligned == 0 ? 0 : (kVectorBytes - misaligned) / sizeof(scalar_t);
}

// Grid for a kernel whose threads each take one of `work_items` (> 0)
// items: one block per kThreadsPerBlock items, so every thread moves one
// vector and the kernel ends after a single pass. On an H100 this one-shot grid
// matched torch's own elementwise kernels at 64 MiB and 1 GiB, while a grid
// capped at one wave of resident blocks (each thread looping) was 5-8% slower.
// The kernels keep their grid-stride loops for inputs beyond kMaxBlocks blocks.
template <auto Kernel>
dim3 grid_for(int64_t work_items) {
  int64_t const needed = (work_items + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return dim3(static_cast<unsigned int>(
      std::max<int64_t>(1, std::min(needed, kMaxBlocks))));
}

// out[i] = op(input[i]) for every element: elements [0, head) and
// [head + vectors * kSize, numel) one by one, the `vectors` aligned 16-byte
// vectors starting at element `head` in between (head = numel and
// vectors = 0 when no vector fits both pointers).
template <typename scalar_t, typename Op>
__global__ void __launch_bounds__(kThreadsPerBlock)
    unary_kernel(scalar_t *__restrict__ out, scalar_t const *__restrict__ input,
                 int64_t numel, int64_t head, int64_t vectors) {
  using vector_t = Vector<scalar_t>;
  Op const op;
  int64_t const thread = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t const stride = static_cast<int64_t>(blockDim.x) * gridDim.x;

  int64_t const body_end = head + vectors * vector_t::kSize;
  int64_t const scalars = head + (numel - body_end);
  for (int64_t i = thread; i < scalars; i += stride) {
    int64_t const index = i < head ? i : body_end + (i - head);
    out[index] = op(input[index]);
  }

  vector_t *__restrict__ out_vectors = reinterpret_cast<vector_t *>(out + head);
  vector_t const *__restrict__ in_vectors =
      reinterpret_cast<vector_t const *>(input + head);
  int64_t v = thread;
  for (; v + (kUnroll - 1) * stride < vectors; v += kUnroll * stride) {
    vector_t loaded[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      loaded[k] = in_vectors[v + k * stride];
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
#pragma unroll
      for (int e = 0; e < vector_t::kSize; ++e) {
        loaded[k].values[e] = op(loaded[k].values[e]);
      }
      out_vectors[v + k * stride] = loaded[k];
    }
  }
  for (; v < vectors; v += stride) {
    vector_t value = in_vectors[v];
#pragma unroll
    for (int e = 0; e < vector_t::kSize; ++e) {
      value.values[e] = op(value.values[e]);
    }
    out_vectors[v] = value;
  }
}

// Launches unary_kernel<scalar_t, Op> over `input` into `out` (same shape,
// contiguous, non-empty) on `stream`.
template <typename scalar_t, typename Op>
void launch_unary(at::Tensor &out, at::Tensor const &input,
                  cudaStream_t stream) {
  using vector_t = Vector<scalar_t>;
  int64_t const numel = input.numel();
  scalar_t *out_ptr = out.data_ptr<scalar_t>();
  scalar_t const *in_ptr = input.const_data_ptr<scalar_t>();
  int64_t head = aligned_head(out_ptr, in_ptr);
  int64_t vectors = 0;
  if (head < 0 || head >= numel) {
    head = numel;
  } else {
    vectors = (numel - head) / vector_t::kSize;
  }
  // One thread per vector up to a full wave: only larger tensors loop.
  int64_t const items = vectors > 0 ? vectors : numel;
  dim3 const grid = grid_for<unary_kernel<scalar_t, Op>>(items);
  unary_kernel<scalar_t, Op><<<grid, kThreadsPerBlock, 0, stream>>>(
      out_ptr, in_ptr, numel, head, vectors);
}

__device__ __forceinline__ float device_exp(float x) { return expf(x); }
__device__ __forceinline__ double device_exp(double x) { return exp(x); }
__device__ __forceinline__ float device_tanh(float x) { return tanhf(x); }
__device__ __forceinline__ double device_tanh(double x) { return tanh(x); }

}  // namespace activation
