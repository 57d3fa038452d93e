#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// TORCH_EXTENSION_NAME is the unique op namespace of this build; the build
// defines exactly one of CPU_KERNEL and CUDA_KERNEL.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("scale(Tensor! out, Tensor input, float factor) -> ()");
#if defined(CUDA_KERNEL)
  ops.impl("scale", c10::kCUDA, &scale);
#elif defined(CPU_KERNEL)
  ops.impl("scale", c10::kCPU, &scale);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
