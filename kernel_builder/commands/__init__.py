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

#: The commands and their one-line help, in the order ``kernel-builder --help`` lists them: ``--help`` needs
#: nothing else, so it imports no command module.
COMMANDS: dict[str, str] = {
    "init": "create a new kernel project that builds and tests as it is",
    "check-config": "validate build.toml and print a summary",
    "update-build": "rewrite a legacy build.toml in the current edition",
    "schema": "print the JSON Schema of build.toml (for editors)",
    "list-variants": "list the project's candidate variants",
    "matrix": "print a CI build matrix: every variant a CI runner builds, with its runner",
    "check-abi": "check the built extensions against manylinux_2_28 and abi3",
    "generate": "write pyproject.toml so pip builds the kernel as a wheel (scikit-build-core)",
    "build": "build the kernel's variants into build/<variant>/",
    "test": "build this environment's variant, then run the project's tests against it",
    "bench": "build, then time the kernel's ops against a reference (benchmarks/ or torch)",
    "upload": "upload the built variants to a kernel repo on the Hub",
    "fill-card": "print (or write) the kernel's CARD.md with its template variables filled in",
    "lock": "pin [tool.kernels.dependencies] of pyproject.toml in kernels.lock",
    "download": "download and verify the kernels pinned in kernels.lock",
    "info": "describe a Hub kernel: its variants, which one loads here and why not the others",
    "variants": "list a Hub kernel's build variants per version, and which load here",
    "versions": "list a Hub kernel's version branches (v<N>) and their commits",
    "describe-api": "list a kernel's public functions and layers (its symbols.json), without importing it",
    "cache": "inspect the kernels in the local cache (cache ls)",
    "verify-signature": "verify a Hub kernel's Sigstore signature and its files against the signed digest",
    "update-matrix": "maintainers: add a Torch release to the variant matrix, from PyPI's metadata",
}


def module_name(command: str) -> str:
    """The module that implements ``command``."""
    return f"{__name__}.{command.replace('-', '_')}"
