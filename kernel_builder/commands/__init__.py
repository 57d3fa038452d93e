"""One module per ``kernel-builder`` command, each a thin adapter over one library function.

A command module ``kernel_builder.commands.<name>`` (``-`` in the command's name becomes ``_``) has:

- ``register(commands)``: adds its subparser, declares its arguments and sets ``handler=run``;
- ``run(args) -> int``: turns the parsed arguments into a call of its library function (which lives in the
  stage or feature package, where tests call it directly), prints the outcome and returns the exit status.

Command modules import nothing heavy at module level, so that ``kernel-builder --help`` stays fast: the library
is imported inside ``run``. Errors are raised, not printed: ``kernel_builder.cli`` turns them into messages
and exit statuses (``kernel_builder.errors``); ``run`` itself returns 1 only after reporting the items of a
batch that failed (variants of a build, repos of a lock or download). Modules whose names start with ``_`` are helpers shared by commands, not commands.
"""

from __future__ import annotations

#: The commands, in the order ``kernel-builder --help`` lists them.
COMMANDS: tuple[str, ...] = (
    "init",
    "check-config",
    "update-build",
    "schema",
    "list-variants",
    "matrix",
    "check-abi",
    "generate",
    "build",
    "test",
    "bench",
    "upload",
    "lock",
    "download",
)


def module_name(command: str) -> str:
    """The module that implements ``command``."""
    return f"{__name__}.{command.replace('-', '_')}"
