#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

// TORCH_EXTENSION_NAME is the unique op namespace of this build; the build
// defines exactly one of CPU_KERNEL and CUDA_KERNEL.
TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  ops.def("relu(Tensor! out, Tensor input) -> ()");
#if defined(CUDA_KERNEL)
  ops.impl("relu", c10::kCUDA, &relu);
#elif defined(CPU_KERNEL)
  ops.impl("relu", c10::kCPU, &relu);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
