// CUDA implementation of `relu(Tensor! out, Tensor input) -> ()`.

#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <cstdint>

namespace {

constexpr int kThreadsPerBlock = 256;

// Grid-stride loop: correct for any element count, including counts that are
// not a multiple of the block size and counts larger than the grid.
template <typename scalar_t, typename opmath_t = at::opmath_type<scalar_t>>
__global__ void relu_kernel(scalar_t *__restrict__ out,
                            scalar_t const *__restrict__ input,
                            int64_t numel) {
  int64_t const stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < numel; i += stride) {
    // Compare in the op math type (float for half and bfloat16). `x < 0`
    // is false for NaN, so NaN propagates as it does in torch.relu.
    opmath_t const x = static_cast<opmath_t>(input[i]);
    out[i] = static_cast<scalar_t>(x < opmath_t(0) ? opmath_t(0) : x);
  }
}

void check_arguments(at::Tensor const &out, at::Tensor const &input) {
  TORCH_CHECK(input.is_cuda(), "relu: input must be a CUDA tensor, got one on ",
              input.device());
  TORCH_CHECK(out.device() == input.device(),
              "relu: out and input must be on the same device, got out on ",
              out.device(), " and input on ", input.device());
  TORCH_CHECK(out.sizes() == input.sizes(),
              "relu: out and input must have the same shape, got out ",
              out.sizes(), " and input ", input.sizes());
  TORCH_CHECK(out.scalar_type() == input.scalar_type(),
              "relu: out and input must have the same dtype, got out ",
              out.scalar_type(), " and input ", input.scalar_type());
  TORCH_CHECK(input.is_contiguous(), "relu: input must be contiguous");
  TORCH_CHECK(out.is_contiguous(), "relu: out must be contiguous");
}

}  // namespace

void relu(at::Tensor &out, at::Tensor const &input) {
  check_arguments(out, input);

  int64_t const numel = input.numel();
  if (numel == 0) {
    return;
  }

  c10::cuda::CUDAGuard const device_guard(input.device());
  cudaStream_t const stream = at::cuda::getCurrentCUDAStream();

  // Enough blocks to cover the tensor, capped so that huge tensors use the
  // grid-stride loop instead of an enormous grid.
  int64_t const needed_blocks =
      (numel + kThreadsPerBlock - 1) / kThreadsPerBlock;
  int const max_blocks =
      at::cuda::getCurrentDeviceProperties()->multiProcessorCount * 32;
  dim3 const grid(static_cast<unsigned int>(
      std::min<int64_t>(needed_blocks, std::max(max_blocks, 1))));
  dim3 const block(kThreadsPerBlock);

  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16, input.scalar_type(),
      "relu_cuda", [&] {
        relu_kernel<scalar_t><<<grid, block, 0, stream>>>(
            out.data_ptr<scalar_t>(), input.const_data_ptr<scalar_t>(),
            numel);
      });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}
