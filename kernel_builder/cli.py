"""The command line: assemble the parser, run one command, turn errors into messages and exit codes.

Each command lives in its own module of :mod:`kernel_builder.commands` (its arguments and a thin adapter over
one library function). This is the only place that prints errors and decides exit statuses (0 ok, 1 failed,
2 usage or configuration error; :func:`kernel_builder.errors.exit_status` holds the mapping). The library is
imported only by the command that runs, so ``kernel-builder --help`` starts fast and works without torch.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Callable, Sequence

from kernel_builder import __version__
from kernel_builder.commands import COMMANDS, _examples, module_name
from kernel_builder.commands._shared import add_common, print_diagnostics, print_error
from kernel_builder.errors import ConfigError, KernelBuilderError, exit_status

Handler = Callable[[argparse.Namespace], int]

#: The exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; keep its message but drop the full usage dump. ``--help``
    ends with the command's examples (``commands._examples``), laid out as written."""

    examples: str = ""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)

    def format_help(self) -> str:
        text = super().format_help()
        return f"{text}\n{self.examples}\n" if self.examples else text


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only``, that command's arguments and every other command as its name and
    help alone (all ``kernel-builder --help`` or a usage error shows), so one command module is imported."""
    parser = _Parser(
        prog="kernel-builder",
        description="Build, publish and load PyTorch compute kernels from a declarative build.toml.",
    )
    parser.add_argument("--version", action="version", version=f"kernel-builder {__version__}")
    add_common(parser, top=True)
    parser.examples = _examples.render(_examples.TOP)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command, summary in COMMANDS.items():
        if only is None or command == only:
            importlib.import_module(module_name(command)).register(commands)
            commands.choices[command].examples = _examples.render(_examples.EXAMPLES.get(command, ()))
        else:
            commands.add_parser(command, help=summary)
    return parser


def _named_command(words: Sequence[str]) -> str:
    """The command ``words`` name (its first word that is not an option), or ``""``: the top-level options
    (``--help``, ``--version``, ``--debug``, ``--no-color``) take no value, so the first other word is the
    command."""
    for word in words:
        if not word.startswith("-"):
            return word if word in COMMANDS else ""
    return ""


def _report(error: BaseException, debug: bool) -> int:
    """Print ``error`` for the user (its traceback too with ``--debug``); returns the exit status."""
    if debug:
        import traceback

        traceback.print_exception(error)
    if isinstance(error, ConfigError) and error.diagnostics:
        print_diagnostics(error.diagnostics)
    else:
        print_error(str(error))
    return exit_status(error)


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(only=_named_command(words))
    # `kernel-builder test [PATH] -- PYTEST_ARGS`: everything after the first `--` belongs to pytest. argparse
    # would take the first of those words for PATH.
    passed_on: list[str] | None = None
    if "--" in words:
        cut = words.index("--")
        words, passed_on = words[:cut], words[cut + 1 :]
    args = parser.parse_args(words)
    if passed_on is not None and getattr(args, "command", None) != "test":
        parser.error(f"unrecognized arguments: -- {' '.join(passed_on)} (only `test` passes arguments on)")
    args.pytest_args = passed_on or []
    from kernel_builder.common import terminal

    terminal.configure(no_color=args.no_color)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        handler: Handler = args.handler
        return handler(args)
    except KernelBuilderError as exc:
        return _report(exc, args.debug)
    except KeyboardInterrupt:
        # The commands it started are stopped by then (their process groups); build/ keeps complete variants only.
        print("interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as other command-line tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:  # a file the operation needed could not be read or written
        return _report(exc, args.debug)


def entry() -> None:
    try:
        status = main()
    except KeyboardInterrupt:  # one that came before the command could catch it, or after it returned
        print("interrupted", file=sys.stderr)
        status = INTERRUPTED
    finally:
        # The command is over: a Ctrl-C while the interpreter joins its threads and exits must not turn the
        # command's outcome into a death by signal (exit -2 instead of 0 or 130).
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if status == INTERRUPTED:
        # CPython (3.11 here) can still end a process whose Ctrl-C was handled by death by SIGINT (exit -2) when
        # the interrupt surfaced inside code that exec() ran (dataclasses build their methods so, at import
        # time). The command has stopped what it started; end with its status, after the exit handlers.
        import atexit

        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(INTERRUPTED)
    sys.exit(status)


if __name__ == "__main__":  # pragma: no cover
    entry()
