// CUDA implementation of `silu_and_mul(Tensor! out, Tensor input) -> ()`:
// out[..., i] = silu(input[..., i]) * input[..., d + i], input [..., 2d].

#include "dispatch.cuh"

namespace {

template <typename scalar_t, typename opmath_t = at::opmath_type<scalar_t>>
__global__ void silu_and_mul_kernel(scalar_t *__restrict__ out,
                                    scalar_t const *__restrict__ input,
                                    int64_t rows, int64_t d) {
  int64_t const total = rows * d;
  int64_t const stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < total; i += stride) {
    int64_t const row = i / d;
    int64_t const col = i - row * d;
    scalar_t const *row_in = input + row * 2 * d;
    opmath_t const gate = static_cast<opmath_t>(row_in[col]);
    opmath_t const up = static_cast<opmath_t>(row_in[d + col]);
    opmath_t const silu =
        gate / (opmath_t(1) + activation::device_exp(-gate));
    out[i] = static_cast<scalar_t>(silu * up);
  }
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

  int64_t const total = out.numel();
  if (total == 0) {
    return;
  }
  int64_t const rows = total / d;

  c10::cuda::CUDAGuard const device_guard(input.device());
  cudaStream_t const stream = at::cuda::getCurrentCUDAStream();
  dim3 const grid = activation::grid_for(total);
  dim3 const block(activation::kThreadsPerBlock);

  ACTIVATION_DISPATCH_FLOATING_TYPES(
      input.scalar_type(), "silu_and_mul_cuda", [&] {
        silu_and_mul_kernel<scalar_t><<<grid, block, 0, stream>>>(
            out.data_ptr<scalar_t>(), input.const_data_ptr<scalar_t>(), rows,
            d);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
