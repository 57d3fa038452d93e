"""``python -m kernel_builder``: the same command line as ``kernel-builder``."""

try:
    from kernel_builder.cli import entry
except KeyboardInterrupt:  # Ctrl-C while the command line is still being imported: nothing was started yet
    import sys

    print("interrupted", file=sys.stderr)
    sys.exit(130)

entry()
