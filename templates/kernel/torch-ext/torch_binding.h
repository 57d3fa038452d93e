#pragma once

// Only the Tensor type: <torch/all.h> here would make every file that includes
// this header take several times longer to compile.
#include <ATen/core/Tensor.h>

// Writes input * factor into `out`. Both tensors must live on the same device,
// have the same shape and dtype, and be contiguous.
void scale(at::Tensor &out, at::Tensor const &input, double factor);
