"""``python -m kernel_builder``: the same command line as ``kernel-builder``."""

from .cli import entry

entry()
