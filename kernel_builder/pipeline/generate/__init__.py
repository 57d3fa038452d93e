"""Generation stage: the files a build writes before compiling (registration.h, _ops.py, the CMake project)."""
