// CUDA implementation of `gelu_tanh(Tensor! out, Tensor input) -> ()`:
// out = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).

#include "dispatch.cuh"

namespace {

template <typename scalar_t, typename opmath_t = at::opmath_type<scalar_t>>
__global__ void gelu_tanh_kernel(scalar_t *__restrict__ out,
                                 scalar_t const *__restrict__ input,
                                 int64_t numel) {
  constexpr opmath_t kSqrt2OverPi = opmath_t(0.7978845608028654);
  constexpr opmath_t kCoeff = opmath_t(0.044715);
  int64_t const stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < numel; i += stride) {
    opmath_t const x = static_cast<opmath_t>(input[i]);
    opmath_t const inner = kSqrt2OverPi * (x + kCoeff * x * x * x);
    out[i] = static_cast<scalar_t>(opmath_t(0.5) * x *
                                   (opmath_t(1) + activation::device_tanh(inner)));
  }
}

}  // namespace

void gelu_tanh(at::Tensor &out, at::Tensor const &input) {
  activation::check_tensors("gelu_tanh", out, input);
  TORCH_CHECK(out.sizes() == input.sizes(),
              "gelu_tanh: out and input must have the same shape, got out ",
              out.sizes(), " and input ", input.sizes());

  int64_t const numel = input.numel();
  if (numel == 0) {
    return;
  }

  c10::cuda::CUDAGuard const device_guard(input.device());
  cudaStream_t const stream = at::cuda::getCurrentCUDAStream();
  dim3 const grid = activation::grid_for(numel);
  dim3 const block(activation::kThreadsPerBlock);

  ACTIVATION_DISPATCH_FLOATING_TYPES(input.scalar_type(), "gelu_tanh_cuda", [&] {
    gelu_tanh_kernel<scalar_t><<<grid, block, 0, stream>>>(
        out.data_ptr<scalar_t>(), input.const_data_ptr<scalar_t>(), numel);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
