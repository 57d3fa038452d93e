"""The examples each command's ``--help`` ends with: one or two command lines a newcomer can run as they are.

Kept apart from the command modules so that the parser adds them to whichever command it registers
(``cli.build_parser``), and a test can hold every command to having them.
"""

from __future__ import annotations

#: Per command: (command line, what it does), shown under ``examples:`` at the end of its ``--help``.
EXAMPLES: dict[str, tuple[tuple[str, str], ...]] = {
    "init": (
        ("kernel-builder init my-relu --name my-relu", "a CUDA and CPU project in ./my-relu"),
        ("kernel-builder init my-relu --name my-relu --template cpu", "a CPU-only project"),
    ),
    "check-config": (
        ("kernel-builder check-config examples/relu", "validate examples/relu/build.toml"),
        ("kernel-builder check-config --werror", "the project here; warnings fail too"),
    ),
    "update-build": (
        ("kernel-builder update-build --dry-run", "show the edition-5 build.toml, write nothing"),
        ("kernel-builder update-build --license Apache-2.0", "rewrite build.toml in place"),
    ),
    "schema": (("kernel-builder schema -o build.schema.json", "the JSON Schema, for an editor"),),
    "list-variants": (
        ("kernel-builder list-variants examples/relu", "every candidate, and why it is not buildable here"),
        ("kernel-builder list-variants --no-probe --json", "quickly, without asking pip's indexes"),
    ),
    "matrix": (("kernel-builder matrix --format github --required", "the required variants, for CI"),),
    "update-matrix": (
        ("kernel-builder update-matrix 2.16", "propose the entries of Torch 2.16 from PyPI, write nothing"),
        (
            "kernel-builder update-matrix 2.16 --cuda 13.0,13.2 --write",
            "write them, naming its CUDA flavours",
        ),
    ),
    "fill-card": (
        ("kernel-builder fill-card examples/relu", "print the card with its template variables filled in"),
        (
            "kernel-builder fill-card . CARD.filled.md --repo-id my-org/relu",
            "write it, filled for a repository",
        ),
    ),
    "check-abi": (("kernel-builder check-abi examples/relu", "check every variant in examples/relu/build"),),
    "generate": (("kernel-builder generate && pip wheel --no-build-isolation .", "build a wheel with pip"),),
    "build": (
        ("kernel-builder build examples/relu", "this environment's variant, into examples/relu/build/"),
        (
            "kernel-builder build --variant torch213-cxx11-cpu-x86_64-linux",
            "another variant, in an isolated environment",
        ),
    ),
    "test": (
        ("kernel-builder test examples/relu", "build, then run examples/relu/tests"),
        ("kernel-builder test -- -x -k relu", "arguments after -- go to pytest"),
    ),
    "bench": (
        ("kernel-builder bench examples/relu", "time the ops against torch's"),
        ("kernel-builder bench --json bench.json", "also write the numbers as JSON"),
    ),
    "upload": (
        ("kernel-builder upload examples/relu", "publish build/ to the repo-id of build.toml"),
        ("kernel-builder upload --repo-id my-org/relu --private", "to another repo, created private"),
    ),
    "lock": (("kernel-builder lock", "pin the kernels pyproject.toml lists, in kernels.lock"),),
    "download": (("kernel-builder download", "fetch and verify what kernels.lock pins"),),
    "info": (
        (
            "kernel-builder info kernel-builder-examples/relu --version 1",
            "its variants; which one loads here",
        ),
    ),
    "versions": (("kernel-builder versions kernel-builder-examples/relu", "its v<N> branches"),),
    "variants": (
        (
            "kernel-builder variants kernel-builder-examples/relu",
            "the newest version's variants, and which load here",
        ),
        (
            "kernel-builder variants kernel-builder-examples/relu --all-versions --json",
            "every version, as JSON",
        ),
    ),
    "describe-api": (
        ("kernel-builder describe-api examples/relu", "the functions and layers of a local build"),
        ("kernel-builder describe-api kernel-builder-examples/relu --version 1", "of a Hub kernel"),
    ),
    "cache": (("kernel-builder cache ls", "the cached kernels, their versions and variants"),),
    "verify-signature": (
        ("kernel-builder verify-signature kernel-builder-examples/relu --version 1", "check the signature"),
    ),
}

#: The examples ``kernel-builder --help`` ends with.
TOP: tuple[tuple[str, str], ...] = (
    ("kernel-builder init my-relu --name my-relu", "a new kernel project"),
    ("kernel-builder build my-relu && kernel-builder test my-relu", "build it, then run its tests"),
)


def render(examples: tuple[tuple[str, str], ...]) -> str:
    """The ``examples:`` block: each command line, and what it does on the line below (empty without any)."""
    if not examples:
        return ""
    lines = ["examples:"]
    for command, what in examples:
        lines += [f"  {command}", f"      {what}"]
    return "\n".join(lines)
