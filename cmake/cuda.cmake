# The cuda backend's fragment: included by the projects generated for its variants, after KernelBuilder.cmake,
# whose hooks it redefines.

include_guard(GLOBAL)

# Remove every architecture flag from a flag string: Torch's CMake config injects -gencode/-arch flags
# (including archs that newer nvcc rejects); architectures must come only from kernel-builder's selection.
function(kb_strip_arch_flags var)
  set(flags " ${${var}} ")
  string(REGEX REPLACE " (-gencode|--generate-code)[= ][^ ]+" " " flags "${flags}")
  string(REGEX REPLACE " (-arch|--gpu-architecture|-code|--gpu-code)[= ][^ ]+" " " flags "${flags}")
  string(REGEX REPLACE "  +" " " flags "${flags}")
  string(STRIP "${flags}" flags)
  set(${var} "${flags}" PARENT_SCOPE)
endfunction()

# Torch's config appends the nvcc flags it gives every extension to the global CUDA flags (extended lambdas,
# relaxed constexpr, its diagnostic suppressions, ...) together with a -gencode list for TORCH_CUDA_ARCH_LIST.
# Kernels rely on the former; the architectures come only from kernel-builder's selection.
macro(kb_backend_torch)
  kb_strip_arch_flags(CMAKE_CUDA_FLAGS)
  foreach(kb_var IN ITEMS CUDA_NVCC_FLAGS TORCH_NVCC_FLAGS)
    if(DEFINED ${kb_var})
      kb_strip_arch_flags(${kb_var})
    endif()
  endforeach()
endmacro()

# The CUDA runtime, where Torch's config found the toolkit's (a cross build names the target's in
# KB_TORCH_CUDA_LIBRARIES instead).
function(kb_backend_extension name)
  if(TARGET CUDA::cudart)
    target_link_libraries(${name} PRIVATE CUDA::cudart)
  endif()
endfunction()
