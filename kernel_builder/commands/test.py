"""``kernel-builder test``: build this environment's variant, then run the project's tests against it
(``kernel_builder.authoring.devtest.run_tests``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from kernel_builder.commands import COMMANDS, _shared
from kernel_builder.commands._shared import add_common, add_path, log

if TYPE_CHECKING:
    from kernel_builder.commands._shared import Subparsers
    from kernel_builder.config.model import KernelProject


def register(commands: Subparsers) -> None:
    parser = commands.add_parser(
        "test",
        usage="%(prog)s [-h] [--backend BACKEND] [-j N] [--arch ARCH] [--python PATH] [--debug] [PATH] "
        "[-- PYTEST_ARGS ...]",
        help=COMMANDS["test"],
        description="Build the variant for this environment, then run pytest on tests/ with the kernel importable "
        "under its package name and get_kernel(<repo-id>) resolving to this project (LOCAL_KERNELS). Arguments "
        "after `--` go to pytest. The exit status is pytest's; before building, a test interpreter without pytest (or "
        "without kernels, when the tests import it) is an error (2) that prints the command installing it.",
    )
    add_path(parser)
    parser.add_argument("--backend", help="build only this backend's variants")
    parser.add_argument("-j", "--jobs", type=int, metavar="N", help="parallel compile jobs")
    parser.add_argument(
        "--arch",
        metavar="ARCH",
        help="native: compile CUDA code only for the visible GPU (faster); or capabilities such as 9.0 or 8.0,9.0a",
    )
    parser.add_argument(
        "--python",
        metavar="PATH",
        help="interpreter that builds the variant and runs the tests (default: this one)",
    )
    add_common(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from kernel_builder.authoring import devtest
    from kernel_builder.pipeline.builder import BuildOptions

    def check(project: KernelProject) -> None:
        devtest.check_tests_can_run(project, args.pytest_args, args.python)

    project, status = _shared.build_first(
        args.path,
        BuildOptions(
            backend=args.backend, jobs=args.jobs, arch=_shared.arch_option(args.arch), python=args.python
        ),
        before=check,
    )
    if status:
        return status
    return devtest.run_tests(project, args.pytest_args, log=log, python=args.python)
