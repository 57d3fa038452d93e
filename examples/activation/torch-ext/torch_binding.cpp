#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// TORCH_EXTENSION_NAME is the unique op namespace of this build; the build
// defines exactly one of CPU_KERNEL and CUDA_KERNEL.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("silu_and_mul(Tensor! out, Tensor input) -> ()");
  ops.def("gelu_tanh(Tensor! out, Tensor input) -> ()");
#if defined(CUDA_KERNEL)
  ops.impl("silu_and_mul", c10::kCUDA, &silu_and_mul);
  ops.impl("gelu_tanh", c10::kCUDA, &gelu_tanh);
#elif defined(CPU_KERNEL)
  ops.impl("silu_and_mul", c10::kCPU, &silu_and_mul);
  ops.impl("gelu_tanh", c10::kCPU, &gelu_tanh);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
