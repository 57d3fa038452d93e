"""Compile stage: configure and build the generated project with CMake and Ninja, with the compiler and configure
caches, the source stage sccache needs, readable compiler output and the header accounting of what was compiled.

The tools and the interpreter it runs come from :mod:`kernel_builder.pipeline.environment`.
"""
