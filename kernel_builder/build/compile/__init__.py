"""Compile stage: the toolchain, the build interpreter and its environment, CMake and Ninja."""
