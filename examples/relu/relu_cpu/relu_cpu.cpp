// CPU implementation of `relu(Tensor! out, Tensor input) -> ()`.

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

namespace {

void check_arguments(at::Tensor const &out, at::Tensor const &input) {
  TORCH_CHECK(input.device().is_cpu(),
              "relu: input must be a CPU tensor, got one on ", input.device());
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

// Elements handled per parallel task at minimum.
constexpr int64_t kGrainSize = 32768;

}  // namespace

void relu(at::Tensor &out, at::Tensor const &input) {
  check_arguments(out, input);

  int64_t const numel = input.numel();
  if (numel == 0) {
    return;
  }

  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16, input.scalar_type(),
      "relu_cpu", [&] {
        // float for half and bfloat16, scalar_t otherwise. `x < 0` is false
        // for NaN, so NaN propagates as it does in torch.relu.
        using opmath_t = at::opmath_type<scalar_t>;
        scalar_t *out_ptr = out.data_ptr<scalar_t>();
        scalar_t const *in_ptr = input.const_data_ptr<scalar_t>();
        at::parallel_for(0, numel, kGrainSize, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            opmath_t const x = static_cast<opmath_t>(in_ptr[i]);
            out_ptr[i] = static_cast<scalar_t>(x < opmath_t(0) ? opmath_t(0) : x);
          }
        });
      });
}
