#pragma once

#include <torch/all.h>

// out[..., i] = silu(input[..., i]) * input[..., d + i] for an input whose
// last dimension is 2 * d; out has the input's shape with last dimension d.
void silu_and_mul(torch::Tensor &out, torch::Tensor const &input);

// out = gelu(input) with the tanh approximation, elementwise.
void gelu_tanh(torch::Tensor &out, torch::Tensor const &input);
