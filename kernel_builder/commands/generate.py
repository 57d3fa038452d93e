"""``kernel-builder generate``: write pyproject.toml for a wheel build (:mod:`kernel_builder.pipeline.generate.pyproject`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS
from kernel_builder.commands._shared import add_common, add_path, load, log, print_diagnostics

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers


def register(commands: Subparsers) -> None:
    parser = commands.add_parser("generate", help=COMMANDS["generate"])
    add_path(parser)
    parser.add_argument("--force", action="store_true", help="replace an existing pyproject.toml")
    parser.add_argument("--python", metavar="PATH", help="interpreter whose torch the wheel is for")
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.common.diagnostics import Diagnostic, Severity
    from kernel_builder.pipeline.generate.pyproject import generate
    from kernel_builder.pipeline.options import BuildOptions

    project = load(args.path)

    def warn(message: str) -> None:  # as `build` shows its warnings: about the project's build.toml
        print_diagnostics([Diagnostic(Severity.WARNING, message, project.display_path)])

    target = generate(project, BuildOptions(python=args.python), log, warn, force=args.force)
    print(f"wrote {target}; build a wheel with: pip wheel --no-build-isolation {target.parent}")
    return 0
