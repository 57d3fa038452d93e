#pragma once

#include <torch/all.h>

// Writes input * factor into `out`. Both tensors must live on the same device,
// have the same shape and dtype, and be contiguous.
void scale(torch::Tensor &out, torch::Tensor const &input, double factor);
