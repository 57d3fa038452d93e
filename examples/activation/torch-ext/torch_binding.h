#pragma once

// Only the Tensor type: <torch/all.h> here would make the binding the slowest
// file of the build by far.
#include <ATen/core/Tensor.h>

// out[..., i] = silu(input[..., i]) * input[..., d + i] for an input whose
// last dimension is 2 * d; out has the input's shape with last dimension d.
void silu_and_mul(at::Tensor &out, at::Tensor const &input);

// out = gelu(input) with the tanh approximation, elementwise.
void gelu_tanh(at::Tensor &out, at::Tensor const &input);
