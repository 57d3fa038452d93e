"""kernel-builder: build, publish and load PyTorch compute kernels from a declarative build.toml."""

__version__ = "0.1.0"
