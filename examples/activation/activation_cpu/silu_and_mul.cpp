// CPU implementation of `silu_and_mul(Tensor! out, Tensor input) -> ()`:
// out[..., i] = silu(input[..., i]) * input[..., d + i], input [..., 2d].

#include <algorithm>
#include <cmath>
#include <vector>

#include "common.h"

void silu_and_mul(at::Tensor &out, at::Tensor const &input) {
  activation_cpu::check_tensors("silu_and_mul", out, input);
  TORCH_CHECK(input.dim() >= 1,
              "silu_and_mul: input must have at least one dimension");
  int64_t const two_d = input.size(-1);
  TORCH_CHECK(two_d % 2 == 0,
              "silu_and_mul: the last dimension of input must be even, got ",
              two_d);
  int64_t const d = two_d / 2;
  std::vector<int64_t> expected = input.sizes().vec();
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
  // Parallelise over rows, with at least about kGrainSize elements per task.
  int64_t const row_grain = std::max<int64_t>(1, activation_cpu::kGrainSize / d);

  ACTIVATION_DISPATCH_FLOATING_TYPES(
      input.scalar_type(), "silu_and_mul_cpu", [&] {
        using opmath_t = at::opmath_type<scalar_t>;
        scalar_t *out_ptr = out.data_ptr<scalar_t>();
        scalar_t const *in_ptr = input.const_data_ptr<scalar_t>();
        at::parallel_for(0, rows, row_grain, [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            scalar_t const *row_in = in_ptr + row * 2 * d;
            scalar_t *row_out = out_ptr + row * d;
            for (int64_t col = 0; col < d; ++col) {
              opmath_t const gate = static_cast<opmath_t>(row_in[col]);
              opmath_t const up = static_cast<opmath_t>(row_in[d + col]);
              opmath_t const silu = gate / (opmath_t(1) + std::exp(-gate));
              row_out[col] = static_cast<scalar_t>(silu * up);
            }
          }
        });
      });
}
