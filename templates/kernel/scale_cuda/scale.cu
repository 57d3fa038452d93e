// CUDA implementation of `scale(Tensor! out, Tensor input, float factor) -> ()`.

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/core/Tensor.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

namespace {

template <typename scalar_t, typename opmath_t = at::opmath_type<scalar_t>>
__global__ void scale_kernel(scalar_t *__restrict__ out, scalar_t const *__restrict__ input,
                             opmath_t factor, int64_t numel) {
  int64_t const stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += stride) {
    out[i] = static_cast<scalar_t>(static_cast<opmath_t>(input[i]) * factor);
  }
}

}  // namespace

void scale(at::Tensor &out, at::Tensor const &input, double factor) {
  TORCH_CHECK(input.is_cuda(), "scale: input must be a CUDA tensor");
  TORCH_CHECK(out.device() == input.device(), "scale: out and input must be on the same device");
  TORCH_CHECK(out.sizes() == input.sizes(), "scale: out and input must have the same shape");
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), "scale: out and input must have the same dtype");
  TORCH_CHECK(input.is_contiguous() && out.is_contiguous(), "scale: tensors must be contiguous");

  int64_t const numel = input.numel();
  if (numel == 0) {
    return;
  }
  c10::cuda::CUDAGuard const device_guard(input.device());
  cudaStream_t const stream = at::cuda::getCurrentCUDAStream();
  int const threads = 256;
  int64_t const blocks = std::min<int64_t>((numel + threads - 1) / threads, 65535);

  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16, input.scalar_type(), "scale_cuda", [&] {
        using opmath_t = at::opmath_type<scalar_t>;
        scale_kernel<scalar_t><<<static_cast<unsigned int>(blocks), threads, 0, stream>>>(
            out.data_ptr<scalar_t>(), input.const_data_ptr<scalar_t>(),
            static_cast<opmath_t>(factor), numel);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
