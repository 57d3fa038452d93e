// CPU implementation of `gelu_tanh(Tensor! out, Tensor input) -> ()`:
// out = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).

#include <cmath>

#include "common.h"

void gelu_tanh(at::Tensor &out, at::Tensor const &input) {
  activation_cpu::check_tensors("gelu_tanh", out, input);
  TORCH_CHECK(out.sizes() == input.sizes(),
              "gelu_tanh: out and input must have the same shape, got out ",
              out.sizes(), " and input ", input.sizes());

  int64_t const numel = input.numel();
  if (numel == 0) {
    return;
  }

  ACTIVATION_DISPATCH_FLOATING_TYPES(input.scalar_type(), "gelu_tanh_cpu", [&] {
    using opmath_t = at::opmath_type<scalar_t>;
    constexpr opmath_t kSqrt2OverPi = opmath_t(0.7978845608028654);
    constexpr opmath_t kCoeff = opmath_t(0.044715);
    scalar_t *out_ptr = out.data_ptr<scalar_t>();
    scalar_t const *in_ptr = input.const_data_ptr<scalar_t>();
    at::parallel_for(0, numel, activation_cpu::kGrainSize,
                     [&](int64_t begin, int64_t end) {
                       for (int64_t i = begin; i < end; ++i) {
                         opmath_t const x = static_cast<opmath_t>(in_ptr[i]);
                         opmath_t const inner =
                             kSqrt2OverPi * (x + kCoeff * x * x * x);
                         out_ptr[i] = static_cast<scalar_t>(
                             opmath_t(0.5) * x * (opmath_t(1) + std::tanh(inner)));
                       }
                     });
  });
}
