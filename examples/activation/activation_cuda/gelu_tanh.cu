// CUDA implementation of `gelu_tanh(Tensor! out, Tensor input) -> ()`:
// out = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).

#include "dispatch.cuh"

namespace {

template <typename scalar_t>
struct GeluTanh {
  using opmath_t = at::opmath_type<scalar_t>;

  __device__ __forceinline__ scalar_t operator()(scalar_t value) const {
    constexpr opmath_t kSqrt2OverPi = opmath_t(0.7978845608028654);
    constexpr opmath_t kCoeff = opmath_t(0.044715);
    opmath_t const x = static_cast<opmath_t>(value);
    opmath_t const inner = kSqrt2OverPi * (x + kCoeff * x * x * x);
    return static_cast<scalar_t>(opmath_t(0.5) * x *
                                 (opmath_t(1) + activation::device_tanh(inner)));
  }
};

}  // namespace

void gelu_tanh(at::Tensor &out, at::Tensor const &input) {
  activation::check_tensors("gelu_tanh", out, input);
  TORCH_CHECK(out.sizes() == input.sizes(),
              "gelu_tanh: out and input must have the same shape, got out ",
              out.sizes(), " and input ", input.sizes());
  if (input.numel() == 0) {
    return;
  }

  c10::cuda::CUDAGuard const device_guard(input.device());
  cudaStream_t const stream = c10::cuda::getCurrentCUDAStream();
  ACTIVATION_DISPATCH_FLOATING_TYPES(input.scalar_type(), "gelu_tanh_cuda", [&] {
    activation::launch_unary<scalar_t, GeluTanh<scalar_t>>(out, input, stream);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
