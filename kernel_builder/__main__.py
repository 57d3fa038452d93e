"""``python -m kernel_builder``: the same command line as ``kernel-builder``."""

from kernel_builder.cli import entry

entry()
