"""Formats the builder and the loader share: variant names, the matrix, metadata.json, kernels.lock, the runtime environment."""
