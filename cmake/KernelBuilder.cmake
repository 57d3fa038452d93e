# CMake functions used by the projects that kernel-builder generates (one per AOT variant).
#
# The generated CMakeLists.txt only states *what* to build (components, their sources, flags and
# architectures); the *how* lives here, so it can be read, reviewed and changed in one place. What only one
# backend's builds do is in that backend's fragment (cuda.cmake, ...), which the generated project includes
# after this file: it redefines the hooks below.

include_guard(GLOBAL)

# Hooks a backend's fragment redefines; without one, they do nothing.
#   kb_backend_torch(): once Torch is found (kb_find_torch), in the project's scope.
#   kb_backend_extension(NAME): once the extension target NAME is made, before its properties are set.
macro(kb_backend_torch)
endmacro()
function(kb_backend_extension name)
endfunction()

# Find Python (for the limited-API headers) and Torch, then take the architectures out of Torch's CUDA flags.
macro(kb_find_torch)
  if(DEFINED KB_PYTHON_INCLUDE_DIR)
    # `kernel-builder build` asked the build interpreter already (and checked that Python.h is there);
    # FindPython runs the interpreter a dozen times to learn the same, most of a configure.
    set(Python_INCLUDE_DIRS "${KB_PYTHON_INCLUDE_DIR}")
  else()
    find_package(Python REQUIRED COMPONENTS Interpreter Development.SABIModule)
  endif()
  if(DEFINED KB_TORCH_CPU_ROOT)
    # A CPU variant from a Torch built for another backend (docs/cross.md): Torch's CMake config would look for
    # that backend's toolkit and link its libraries. A CPU extension needs only the CPU parts, the same in every
    # build of one Torch version: the headers and libtorch, libtorch_cpu and libc10, each linked as Torch's own
    # config links them (needed even where the extension names none of their symbols). The definitions of
    # torch_cpu come from the generated project (KB_TORCH_CPU_DEFINITIONS).
    # An imported target, as Torch's own: its headers are system headers (-isystem) to the kernel's compiles.
    add_library(kb_torch_cpu INTERFACE IMPORTED)
    set_target_properties(kb_torch_cpu PROPERTIES INTERFACE_INCLUDE_DIRECTORIES
      "${KB_TORCH_CPU_ROOT}/include;${KB_TORCH_CPU_ROOT}/include/torch/csrc/api/include")
    foreach(kb_lib IN ITEMS torch torch_cpu c10)
      set_property(TARGET kb_torch_cpu APPEND PROPERTY INTERFACE_LINK_LIBRARIES
        "-Wl,--no-as-needed,${KB_TORCH_CPU_ROOT}/lib/lib${kb_lib}.so,--as-needed")
    endforeach()
    # A cross-built CUDA variant (the same view of the target's Torch): its CUDA libraries and the target's CUDA
    # runtime, named by the generated project.
    foreach(kb_lib IN LISTS KB_TORCH_CUDA_LIBRARIES)
      set_property(TARGET kb_torch_cpu APPEND PROPERTY INTERFACE_LINK_LIBRARIES
        "-Wl,--no-as-needed,${kb_lib},--as-needed")
    endforeach()
    set(TORCH_INCLUDE_DIRS)
    set(TORCH_LIBRARIES kb_torch_cpu)
  else()
    find_package(Torch REQUIRED)
  endif()
  # Optional CUDA libraries a bare toolkit lacks (nvrtc, ...) show up as NOTFOUND; Torch loads its own.
  set(KB_TORCH_LIBRARIES ${TORCH_LIBRARIES})
  list(FILTER KB_TORCH_LIBRARIES EXCLUDE REGEX "-NOTFOUND$")
  kb_backend_torch()
endmacro()

# Settings shared by every compiled file: definitions, standard, PIC, include order.
#   kb_common(DEFINITIONS ... INCLUDE_DIRS ... CXX_OPTIONS ... CUDA_OPTIONS ... [CXX_FORCE_INCLUDE header])
# CXX_FORCE_INCLUDE (kernel_builder.load builds, which precompile headers): a header every C++ file reads first,
# through its component's precompiled header or, for a file without one, through -include (kb_component).
function(kb_common)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "CXX_FORCE_INCLUDE" "DEFINITIONS;INCLUDE_DIRS;LATE_INCLUDE_DIRS;CXX_OPTIONS;CUDA_OPTIONS")
  set(KB_CXX_FORCE_INCLUDE "${ARG_CXX_FORCE_INCLUDE}" PARENT_SCOPE)
  add_library(kb_common INTERFACE)
  target_compile_definitions(kb_common INTERFACE ${ARG_DEFINITIONS})
  target_compile_options(kb_common INTERFACE
    "$<$<COMPILE_LANGUAGE:CXX>:${ARG_CXX_OPTIONS}>"
    "$<$<COMPILE_LANGUAGE:CUDA>:${ARG_CUDA_OPTIONS}>")
  set(KB_COMMON_INCLUDE_DIRS ${ARG_INCLUDE_DIRS} ${TORCH_INCLUDE_DIRS} ${Python_INCLUDE_DIRS} PARENT_SCOPE)
  # Headers only a wheel provides go last (after the toolkit's own directory, which Torch's targets add).
  set(KB_LATE_INCLUDE_DIRS ${ARG_LATE_INCLUDE_DIRS} PARENT_SCOPE)
endfunction()

# One component per [kernel.*] section (plus the binding component for [torch] src): an object library
# with its own sources, include directories, flags and CUDA architectures.
#   kb_component(NAME SOURCES ... INCLUDE_DIRS ... CXX_FLAGS ... CUDA_FLAGS ... GENCODE ...
#                [PRECOMPILE_HEADERS <header> ... PRECOMPILE_SKIP source ...])
# PRECOMPILE_HEADERS (kernel_builder.load builds): the component's C++ files are compiled with a precompiled
# header of the force-included header and these, in this order (the run of includes they begin with), except
# the PRECOMPILE_SKIP files. Ninja rebuilds it when the headers it read or the component's flags change.
function(kb_component name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES;INCLUDE_DIRS;CXX_FLAGS;CUDA_FLAGS;GENCODE;PRECOMPILE_HEADERS;PRECOMPILE_SKIP")
  add_library(${name} OBJECT ${ARG_SOURCES})
  # Common directories first, then Torch's and Python's, then the component's own.
  target_include_directories(${name} PRIVATE ${KB_COMMON_INCLUDE_DIRS} ${ARG_INCLUDE_DIRS})
  target_include_directories(${name} AFTER PRIVATE ${KB_LATE_INCLUDE_DIRS})
  target_link_libraries(${name} PRIVATE kb_common ${KB_TORCH_LIBRARIES})
  target_compile_options(${name} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:${ARG_CXX_FLAGS}>"
    "$<$<COMPILE_LANGUAGE:CUDA>:${ARG_GENCODE};${KB_NVCC_THREADS_FLAG};${ARG_CUDA_FLAGS}>")
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON CUDA_ARCHITECTURES OFF)
  set(force_include "")
  if(NOT "${KB_CXX_FORCE_INCLUDE}" STREQUAL "")
    set(force_include "$<$<COMPILE_LANGUAGE:CXX>:-include${KB_CXX_FORCE_INCLUDE}>")
  endif()
  if(ARG_PRECOMPILE_HEADERS)
    # GCC uses a precompiled header only before the first declaration: the force-included header goes first in it.
    set(headers)
    foreach(header IN LISTS KB_CXX_FORCE_INCLUDE ARG_PRECOMPILE_HEADERS)
      list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:${header}>")
    endforeach()
    target_precompile_headers(${name} PRIVATE ${headers})
    if(ARG_PRECOMPILE_SKIP)
      set_source_files_properties(${ARG_PRECOMPILE_SKIP} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      if(force_include)
        set_property(SOURCE ${ARG_PRECOMPILE_SKIP} APPEND PROPERTY COMPILE_OPTIONS "${force_include}")
      endif()
    endif()
  elseif(force_include)
    target_compile_options(${name} PRIVATE "${force_include}")
  endif()
  set_property(GLOBAL APPEND PROPERTY KB_COMPONENTS ${name})
endfunction()

# The Python extension: a MODULE library named <ops_name>.abi3.so linking every component.
#   kb_extension(NAME [FAST_LINK])
# FAST_LINK (kernel_builder.load builds): link with GNU gold where the compiler can (a configure-time check).
function(kb_extension name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "FAST_LINK" "" "")
  get_property(components GLOBAL PROPERTY KB_COMPONENTS)
  set(objects)
  foreach(component IN LISTS components)
    list(APPEND objects $<TARGET_OBJECTS:${component}>)
  endforeach()
  add_library(${name} MODULE ${objects})
  target_link_libraries(${name} PRIVATE ${KB_TORCH_LIBRARIES})
  kb_backend_extension(${name})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    SUFFIX ".abi3.so"
    LINKER_LANGUAGE CXX
    SKIP_BUILD_RPATH ON
    INSTALL_RPATH ""
    BUILD_WITH_INSTALL_RPATH OFF)
  if(ARG_FAST_LINK)
    include(CheckLinkerFlag)
    check_linker_flag(CXX "-fuse-ld=gold" KB_LINKER_GOLD)
    if(KB_LINKER_GOLD)
      target_link_options(${name} PRIVATE "-fuse-ld=gold")
    endif()
  endif()
  install(TARGETS ${name} LIBRARY DESTINATION .)
  if(EXISTS "${PROJECT_SOURCE_DIR}/_ops.py")
    install(FILES "${PROJECT_SOURCE_DIR}/_ops.py" DESTINATION .)
  endif()
endfunction()
