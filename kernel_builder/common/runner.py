"""One runner for every external command: echo it when verbose, stream or capture its output.

Compiler output is shown as the compiler wrote it; quiet steps (configure) keep their output and show it
only when they fail. Commands run in their own process group and stop with the build (``processes``).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from kernel_builder.common import processes
from kernel_builder.errors import BuildError


def format_command(argv: Sequence[str | os.PathLike[str]]) -> str:
    return " ".join(shlex.quote(str(a)) for a in argv)


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    verbose: bool = False,
    capture: bool = False,
    what: str = "command",
) -> str:
    """Run ``argv``; raise BuildError naming ``what`` on failure. Returns captured stdout+stderr."""
    if verbose:
        print(f"+ {format_command(argv)}", file=sys.stderr, flush=True)
    full_env = {**os.environ, **env} if env is not None else None
    if not capture:
        sys.stdout.flush()
    try:
        result = processes.run(argv, cwd=cwd, env=full_env, capture=capture, merge_stderr=True)
    except FileNotFoundError as exc:
        raise BuildError(f"{what} failed: {argv[0]} not found ({exc.strerror})") from None
    output = result.stdout
    if result.returncode != 0:
        shown = f"\n{output.rstrip()}" if capture and output else ""
        raise BuildError(f"{what} failed (exit status {result.returncode}): {format_command(argv)}{shown}")
    return output
