"""What several command adapters share: the common arguments, printing diagnostics and warnings, loading the
project with its warnings shown, and the build table that ``build``, ``test`` and ``bench`` print. Nothing heavy
is imported at module level (see ``commands/__init__``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from kernel_builder.config.model import KernelProject
    from kernel_builder.pipeline.builder import BuildOptions, VariantResult

    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]

Options = TypeVar("Options", bound="DataclassInstance")


def print_json_or_text(
    as_json: bool, data: Callable[[], object], text: Callable[[], str], *, ensure_ascii: bool = True
) -> None:
    """What an inspecting command prints: ``data()`` as indented JSON with ``--json``, else ``text()``."""
    if as_json:
        import json

        print(json.dumps(data(), indent=2, ensure_ascii=ensure_ascii))
    else:
        print(text())


def add_common(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--debug`` and ``--no-color``, which every command takes (and ``kernel-builder`` itself, before the
    command)."""
    # Subcommands must not reset a top-level `kernel-builder --debug CMD` to False: SUPPRESS keeps it.
    parser.add_argument(
        "--debug",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="show a Python traceback for errors",
    )
    parser.add_argument(
        "--no-color",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="no colour, also on a terminal (as with NO_COLOR set)",
    )


def add_path(
    parser: argparse.ArgumentParser,
    metavar: str = "PATH",
    help: str = "kernel directory or its build.toml",
    *,
    find_up: bool = True,
) -> None:
    """The optional positional most commands take; ``.`` by default. With ``find_up`` (commands that read
    ``build.toml``), ``.`` in a subdirectory of a kernel project means the project (:func:`project_dir`)."""
    if find_up:
        help += "; in a subdirectory of a kernel, the nearest directory above with a build.toml"
    parser.add_argument(
        "path", nargs="?", default=".", metavar=metavar, help=f"{help} (default: .)",
        type=project_dir if find_up else str,
    )  # fmt: skip


def project_dir(path: str) -> str:
    """``.`` without a build.toml: the nearest directory above the current one that has one, as git finds its
    repository (said on standard error); any other path, or when there is none, unchanged."""
    from pathlib import Path

    if path != "." or Path("build.toml").exists():
        return path
    here = Path.cwd()
    for parent in here.parents:
        if (parent / "build.toml").is_file():
            import os

            found = os.path.relpath(parent, here)
            print(f"note: using the kernel project at {found} ({parent / 'build.toml'})", file=sys.stderr)
            return found
    return path


def arch_option(value: str | None) -> str | None:
    """``--arch``: ``native``, or capabilities such as ``9.0`` or ``8.0,9.0a`` (returned in canonical order);
    anything else is a usage error (exit 2) that names the entry and the supported capabilities."""
    if value is None or value == "native":
        return value
    from kernel_builder.backends.gpu_archs import explicit_archs
    from kernel_builder.errors import UsageError

    try:
        return ",".join(explicit_archs(value))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def options_from(cls: type[Options], args: argparse.Namespace, **given: object) -> Options:
    """An options dataclass of a library function, from the parsed arguments of the same names; ``given``
    supplies (or overrides) the fields whose argument differs (``--no-import-check`` for ``import_check``)."""
    import dataclasses

    values = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls) if hasattr(args, f.name)}
    return cls(**{**values, **given})


def log(line: str) -> None:
    """Progress lines go to standard error, so that standard output carries only the command's result."""
    print(line, file=sys.stderr, flush=True)


def print_diagnostics(diagnostics: Sequence[object]) -> None:
    from kernel_builder.common.terminal import color_labels

    for diagnostic in diagnostics:
        print(color_labels(diagnostic.render()), file=sys.stderr)  # type: ignore[attr-defined]


def print_error(message: str) -> None:
    """``error: message`` on standard error, its label coloured on a terminal."""
    from kernel_builder.common.terminal import color_labels

    print(color_labels(f"error: {message}"), file=sys.stderr)


def print_warning(message: str) -> None:
    """``warning: message`` on standard error, its label coloured on a terminal."""
    from kernel_builder.common.terminal import color_labels

    print(color_labels(f"warning: {message}"), file=sys.stderr, flush=True)


def print_warnings(caught: Sequence[object]) -> None:
    """Warnings the library raised through :mod:`warnings`, shown plainly (no file and line of the caller)."""
    for warning in caught:
        print_warning(str(warning.message))  # type: ignore[attr-defined]


def load(path: str) -> KernelProject:
    """The project at ``path``, its warnings printed; an invalid one raises ``ConfigError`` (exit 2)."""
    from kernel_builder.config import load_project

    result = load_project(path)
    print_diagnostics(result.diagnostics)
    return result.project


def build_first(
    path: str,
    options: BuildOptions,
    *,
    before: Callable[[KernelProject], None] | None = None,
    command: str = "test",
) -> tuple[KernelProject, int]:
    """``test`` and ``bench``: build the project's default selection and print its table to standard error.

    ``before`` runs between loading the project and building it (a check that should not wait for a build).
    Returns the project and 0, or 1 when a variant failed or none was built (each failure, or why nothing was
    built and how ``command`` would have something to run, printed).
    """
    import time

    from kernel_builder.pipeline.builder import Builder

    started = time.monotonic()
    project = load(path)
    if before is not None:
        before(project)
    report = Builder(project, options, log=log).run()
    print_diagnostics(report.diagnostics)
    print(build_table(report.results, time.monotonic() - started), file=sys.stderr)
    print_failures(report.results)
    nothing = report.nothing_built_error(project, command)
    if nothing is not None:
        print(f"error: {nothing}", file=sys.stderr)
    return project, 1 if report.failed or nothing is not None else 0


def print_failures(results: Sequence[VariantResult]) -> None:
    from kernel_builder.pipeline.builder import (
        VariantStatus,
    )  # imported already: the results come from a build

    for failure in (r for r in results if r.status == VariantStatus.FAILED):
        print_error(f"{failure.name}: {failure.message}")


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def build_table(results: Sequence[VariantResult], total: float) -> str:
    """The final table of ``build``: variant, result, time, size (and why a variant was skipped)."""
    rows = [("variant", "result", "time", "size")]
    for r in results:
        seconds = f"{r.seconds:.1f} s" if r.status in ("built", "up to date", "failed") else ""
        rows.append((r.name, r.status, seconds, _size(r.size) if r.size else ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for r in results:
        if r.status == "skipped":
            lines.append(f"skipped {r.name}: {r.message}")
    lines.append(f"done in {total:.2f} s")
    return "\n".join(lines)
