#pragma once

#include <torch/all.h>

// Writes max(input, 0) into `out`. Both tensors must live on the same device
// and have the same shape and dtype, and both must be contiguous.
void relu(torch::Tensor &out, torch::Tensor const &input);
