"""Build environment: what a variant is built with, found (or obtained) before anything is generated or compiled.

The build interpreter and the facts about its Torch, the isolated environments and whether a variant's Torch
build and CUDA compiler can be obtained here (pip's indexes read through ``wheel_index``), the toolchain (CMake,
Ninja, the host compiler, nvcc), CUTLASS's headers, and the per-environment facts kept in the user cache. The
plan stage asks these questions to decide what to build, so this package depends on no stage: not on plan,
generate or compile (``tests/test_import_graph.py`` checks it).
"""
