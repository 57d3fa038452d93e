#pragma once

// Only the Tensor type: <torch/all.h> here would make the binding the slowest
// file of the build by far.
#include <ATen/core/Tensor.h>

// Writes max(input, 0) into `out`. Both tensors must live on the same device
// and have the same shape and dtype, and both must be contiguous.
void relu(at::Tensor &out, at::Tensor const &input);
