// CPU implementation of `scale(Tensor! out, Tensor input, float factor) -> ()`.

#include <ATen/Dispatch.h>
#include <ATen/OpMathType.h>
#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <cstdint>

void scale(at::Tensor &out, at::Tensor const &input, double factor) {
  TORCH_CHECK(input.device().is_cpu(), "scale: input must be a CPU tensor");
  TORCH_CHECK(out.device() == input.device(), "scale: out and input must be on the same device");
  TORCH_CHECK(out.sizes() == input.sizes(), "scale: out and input must have the same shape");
  TORCH_CHECK(out.scalar_type() == input.scalar_type(), "scale: out and input must have the same dtype");
  TORCH_CHECK(input.is_contiguous() && out.is_contiguous(), "scale: tensors must be contiguous");

  int64_t const numel = input.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::ScalarType::Half, at::ScalarType::BFloat16, input.scalar_type(), "scale_cpu", [&] {
        using opmath_t = at::opmath_type<scalar_t>;
        scalar_t *out_ptr = out.data_ptr<scalar_t>();
        scalar_t const *in_ptr = input.const_data_ptr<scalar_t>();
        opmath_t const f = static_cast<opmath_t>(factor);
        at::parallel_for(0, numel, 32768, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            out_ptr[i] = static_cast<scalar_t>(static_cast<opmath_t>(in_ptr[i]) * f);
          }
        });
      });
}
