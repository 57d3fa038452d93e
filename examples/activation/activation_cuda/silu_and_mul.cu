// CUDA implementation of `silu_and_mul(Tensor! out, Tensor input) -> ()`:
// out[..., i] = silu(input[..., i]) * input[..., d + i], input [..., 2d].

#include <limits>

#include "dispatch.cuh"

namespace {

template <typename scalar_t, typename opmath_t = at::opmath_type<scalar_t>>
__device__ __forceinline__ scalar_t silu_mul(scalar_t gate_value,
                                             scalar_t up_value) {
  opmath_t const gate = static_cast<opmath_t>(gate_value);
  opmath_t const up = static_cast<opmath_t>(up_value);
  opmath_t const silu = gate / (opmath_t(1) + activation::device_exp(-gate));
  return static_cast<scalar_t>(silu * up);
}

// Any layout: one element per thread and step. `index_t` is 32-bit when the
// input's element count allows it (division is much cheaper).
template <typename scalar_t, typename index_t>
__global__ void __launch_bounds__(activation::kThreadsPerBlock)
    silu_and_mul_kernel(scalar_t *__restrict__ out,
                        scalar_t const *__restrict__ input, index_t total,
                        index_t d) {
  index_t const stride = static_cast<index_t>(blockDim.x) * gridDim.x;
  for (index_t i = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    index_t const row = i / d;
    index_t const col = i - row * d;
    scalar_t const *row_in = input + row * 2 * d;
    out[i] = silu_mul(row_in[col], row_in[d + col]);
  }
}

// Both pointers 16-byte aligned and d a whole number of vectors: every row
// of input, its second half and every row of out start on a 16-byte
// boundary, so the whole op runs on vectors (`row_vectors` = d / kSize).
template <typename scalar_t, typename index_t>
__global__ void __launch_bounds__(activation::kThreadsPerBlock)
    silu_and_mul_vector_kernel(scalar_t *__restrict__ out,
                               scalar_t const *__restrict__ input,
                               index_t vectors, index_t row_vectors) {
  using vector_t = activation::Vector<scalar_t>;
  constexpr int kUnroll = activation::kUnroll;
  auto *__restrict__ out_vectors = reinterpret_cast<vector_t *>(out);
  auto const *__restrict__ in_vectors = reinterpret_cast<vector_t const *>(input);
  index_t const stride = static_cast<index_t>(blockDim.x) * gridDim.x;

  auto compute = [&](vector_t const &gate, vector_t const &up) {
    vector_t result;
#pragma unroll
    for (int e = 0; e < vector_t::kSize; ++e) {
      result.values[e] = silu_mul(gate.values[e], up.values[e]);
    }
    return result;
  };
  auto gate_index = [&](index_t v) {
    index_t const row = v / row_vectors;
    return v + row * row_vectors;  // row * 2 * row_vectors + (v - row * row_vectors)
  };

  index_t v = static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (; v + (kUnroll - 1) * stride < vectors; v += kUnroll * stride) {
    vector_t gate[kUnroll];
    vector_t up[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      index_t const g = gate_index(v + k * stride);
      gate[k] = in_vectors[g];
      up[k] = in_vectors[g + row_vectors];
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      out_vectors[v + k * stride] = compute(gate[k], up[k]);
    }
  }
  for (; v < vectors; v += stride) {
    index_t const g = gate_index(v);
    out_vectors[v] = compute(in_vectors[g], in_vectors[g + row_vectors]);
  }
}

template <typename scalar_t, typename index_t>
void launch(at::Tensor &out, at::Tensor const &input, int64_t d,
            cudaStream_t stream) {
  using vector_t = activation::Vector<scalar_t>;
  scalar_t *out_ptr = out.data_ptr<scalar_t>();
  scalar_t const *in_ptr = input.const_data_ptr<scalar_t>();
  auto const total = static_cast<index_t>(out.numel());
  if (d % vector_t::kSize == 0 && activation::is_aligned(out_ptr) &&
      activation::is_aligned(in_ptr)) {
    auto const vectors = static_cast<index_t>(total / vector_t::kSize);
    auto const row_vectors = static_cast<index_t>(d / vector_t::kSize);
    dim3 const grid = activation::grid_for<
        silu_and_mul_vector_kernel<scalar_t, index_t>>(vectors);
    silu_and_mul_vector_kernel<scalar_t, index_t>
        <<<grid, activation::kThreadsPerBlock, 0, stream>>>(
            out_ptr, in_ptr, vectors, row_vectors);
    return;
  }
  dim3 const grid =
      activation::grid_for<silu_and_mul_kernel<scalar_t, index_t>>(total);
  silu_and_mul_kernel<scalar_t, index_t>
      <<<grid, activation::kThreadsPerBlock, 0, stream>>>(
          out_ptr, in_ptr, total, static_cast<index_t>(d));
}

}  // namespace

void silu_and_mul(at::Tensor &out, at::Tensor const &input) {
  activation::check_tensors("silu_and_mul", out, input);
  TORCH_CHECK(input.dim() >= 1,
              "silu_and_mul: input must have at least one dimension");
  int64_t const two_d = input.size(-1);
  TORCH_CHECK(two_d % 2 == 0,
              "silu_and_mul: the last dimension of input must be even, got ",
              two_d);
  int64_t const d = two_d / 2;
  auto expected = input.sizes().vec();
  expected.back() = d;
  TORCH_CHECK(out.sizes() == at::IntArrayRef(expected),
              "silu_and_mul: out must have shape ", at::IntArrayRef(expected),
              " (input's shape with the last dimension halved), got ",
              out.sizes());
  if (out.numel() == 0) {
    return;
  }

  c10::cuda::CUDAGuard const device_guard(input.device());
  cudaStream_t const stream = c10::cuda::getCurrentCUDAStream();
  // Indices reach the input's element count (plus a grid's worth of stride).
  bool const narrow = input.numel() <= std::numeric_limits<uint32_t>::max() / 2;
  ACTIVATION_DISPATCH_FLOATING_TYPES(
      input.scalar_type(), "silu_and_mul_cuda", [&] {
        if (narrow) {
          launch<scalar_t, uint32_t>(out, input, d, stream);
        } else {
          launch<scalar_t, int64_t>(out, input, d, stream);
        }
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
