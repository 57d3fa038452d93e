"""Reading a kernel project: parse, detect the form, migrate, validate, build the model (docs/build-toml.md).

``load_project`` is the one entry point; it either returns the model with its warnings, or raises
``ConfigError`` carrying every problem found, ordered by line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kernel_builder.backends as backends
from kernel_builder.backends.noarch import noarch_name
from kernel_builder.common import toml
from kernel_builder.common.diagnostics import Diagnostic, DiagnosticList, Severity
from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded
from kernel_builder.config.archs import E20_HINT, E20_ROCM_HINT, arch_problems
from kernel_builder.config.context import Context
from kernel_builder.config.forms import Form, detect_form
from kernel_builder.config.framework import read_framework
from kernel_builder.config.general import read_general
from kernel_builder.config.kernels import read_kernels
from kernel_builder.config.limits import MAX_DEPTH, MAX_FILE_BYTES, bracket_nesting, check_document
from kernel_builder.config.migrate import migrate
from kernel_builder.config.model import BuildConfig, KernelProject, Torch, TorchNoarch, TvmFfi
from kernel_builder.config.positions import scan_positions
from kernel_builder.config.schema import TOP_LEVEL, suggest_table
from kernel_builder.errors import ConfigError
from kernel_builder.formats.matrix import Matrix, load_matrix

_TOML_POSITION = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_AT_END = " (at end of document)"
_warned_legacy: set[Path] = set()


@dataclass(frozen=True)
class LoadResult:
    project: KernelProject
    diagnostics: list[Diagnostic]  # warnings and notes, in line order

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.WARNING]


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, a loop of links: reading build.toml below reports it
        return False


def resolve_build_toml(path: str | os.PathLike[str] = ".") -> tuple[Path, str]:
    """The build.toml for a kernel root or file ``path``, and how to show it to the user."""
    given = Path(path)
    if _is_dir(given) or not given.suffix:
        file = given / "build.toml"
    else:
        file = given
    display = os.path.normpath(str(file))
    return file, display


def read_build_toml(file: Path, display: str) -> str:
    """The text of ``file``: a regular UTF-8 file of at most 1 MiB, else ``ConfigError`` saying why."""
    diags = DiagnosticList(display)
    try:
        data = read_bounded(file, MAX_FILE_BYTES)
        return data.decode("utf-8")
    except FileNotFoundError:
        diags.error(
            "build.toml not found",
            hint=f"looked for {file.absolute()}; pass the kernel directory or its build.toml",
        )
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        diags.add(
            Severity.ERROR,
            f"cannot read build.toml: not valid UTF-8 ({exc.reason} at byte {exc.start})",
            data.count(b"\n", 0, exc.start) + 1,
            "save the file as UTF-8",
            exc.start - line_start + 1,
        )
    except UnsafeFileError as exc:
        diags.error(f"cannot read build.toml: {exc}", hint=f"looked for {file.absolute()}")
    except OSError as exc:
        diags.error(f"cannot read build.toml: {exc.strerror or exc}", hint=f"looked for {file.absolute()}")
    raise ConfigError(diags.sorted())


def load_project(path: str | os.PathLike[str] = ".", *, matrix: Matrix | None = None) -> LoadResult:
    """Load and validate the project at ``path`` (a kernel root or its build.toml)."""
    file, display = resolve_build_toml(path)
    return load_text(read_build_toml(file, display), file, display, matrix=matrix)


def load_text(text: str, file: Path, display: str, *, matrix: Matrix | None = None) -> LoadResult:
    """Load build.toml content ``text`` as if it were ``file`` (``update-build`` checks its output so)."""
    diags = DiagnosticList(display)
    raw = parse_toml(text, diags)
    ctx = Context(diags, scan_positions(text))
    check_document(raw, ctx)
    if diags.errors:  # nothing below has to cope with such values
        raise ConfigError(diags.sorted())
    project = _load(raw, ctx, file, display, matrix)
    if diags.errors or project is None:
        raise ConfigError(diags.sorted())
    return LoadResult(project, diags.sorted())


def parse_toml(text: str, diags: DiagnosticList) -> dict[str, Any]:
    """The TOML document ``text``; a syntax error, or nesting beyond the limit, raises ``ConfigError``."""
    nested = bracket_nesting(text)
    if nested is not None:
        diags.add(
            Severity.ERROR,
            f"values are nested more than {MAX_DEPTH} levels deep",
            nested[0],
            "a build.toml needs a few levels: flatten the structure",
            nested[1],
        )
        raise ConfigError(diags.sorted())
    try:
        doc: dict[str, Any] = toml.loads(text)
        return doc
    except toml.TOMLDecodeError as exc:
        message = str(exc)
        match = _TOML_POSITION.search(message)
        line = col = None
        if match:
            line, col = int(match[1]), int(match[2])
            message = message[: match.start()]
        elif message.endswith(_AT_END):  # the reader gives no position there: it is the last character
            message = message[: -len(_AT_END)]
            line = text.count("\n") + 1
            col = len(text) - (text.rfind("\n") + 1) + 1
        diags.add(
            Severity.ERROR, f"invalid TOML: {message}", line, "fix the TOML syntax at this position", col
        )
        raise ConfigError(diags.sorted()) from None
    except RecursionError:  # a nesting the bracket scan did not see (it cannot be reached by valid TOML)
        diags.add(Severity.ERROR, f"values are nested more than {MAX_DEPTH} levels deep", None, None)
        raise ConfigError(diags.sorted()) from None


def legacy_warning(form: Form, display: str) -> str:
    root = os.path.dirname(display) or "."
    return (
        f"legacy v{form.number} form ({form.trait}); upgraded to edition 5 in memory. "
        f"Run 'kernel-builder update-build {root}' to rewrite the file."
    )


def _load(
    raw: dict[str, Any], ctx: Context, file: Path, display: str, matrix: Matrix | None
) -> KernelProject | None:
    form = detect_form(raw, ctx)
    if form is None:
        return None
    if form.number < 5:
        key = file.resolve()
        if key not in _warned_legacy:
            _warned_legacy.add(key)
            ctx.diags.warning(legacy_warning(form, display))
    migrated = migrate(raw, form, ctx)
    if migrated is None:
        return None
    config = build_config(migrated.doc, ctx, file.parent, edition5=form.number == 5, py_name=migrated.py_name)
    if config is None:
        return None
    _check_layout(ctx, config, file.parent)  # reported together with the other errors (docs/build-toml.md)
    if ctx.diags.errors:
        return None
    _report_unbuilt(ctx, config)
    _report_arch_problems(ctx, config, matrix or load_matrix())
    return KernelProject(file.parent.absolute(), file.absolute(), display, form.number, config)


def build_config(
    doc: dict[str, Any], ctx: Context, root: Path, *, edition5: bool, py_name: str | None
) -> BuildConfig | None:
    """The edition-5 document ``doc`` as a model; every problem is reported to ``ctx``."""
    for key, value in doc.items():
        if (
            key not in TOP_LEVEL
            and _is_kernel_sections(value)
            and suggest_table(key, TOP_LEVEL) == "did you mean `[kernel]`?"
        ):
            _report_misspelt_kernels(ctx, key, value)
        elif key not in TOP_LEVEL:
            is_table = isinstance(value, dict)
            ctx.error(
                f"unknown table `[{key}]`" if is_table else f"unknown top-level key `{key}`",
                (key,),
                suggest_table(key, TOP_LEVEL)
                if is_table
                else "top-level keys belong in a table such as [general]",
                key=True,
            )
    general = read_general(ctx, doc["general"], py_name_override=py_name)
    framework = read_framework(ctx, doc, root, general.backends if general else None)
    kernels = read_kernels(ctx, doc, root, edition5)
    if general is None or framework is None:
        return None
    return BuildConfig(general, framework, kernels)


def _is_kernel_sections(value: object) -> bool:
    return isinstance(value, dict) and bool(value) and all(isinstance(v, dict) for v in value.values())


def _report_misspelt_kernels(ctx: Context, key: str, sections: dict[str, Any]) -> None:
    """``[kernels.x]`` -> ``[kernel.x]``: one error per section, at its own header."""
    for name in sections:
        ctx.error(
            f"unknown table `[{key}.{name}]`",
            (key, name),
            f"did you mean `[kernel.{name}]`?",
            key=True,
        )


def _check_layout(ctx: Context, config: BuildConfig, root: Path) -> None:
    ext_dir = "tvm-ffi-ext" if isinstance(config.framework, TvmFfi) else "torch-ext"
    py_name = config.general.py_name
    package = root / ext_dir / py_name
    try:
        init_found = (package / "__init__.py").is_file()
        nested_found = (package / py_name).is_dir()
    except OSError as exc:  # an unreadable directory on the way
        ctx.error(
            f"the kernel's Python package `{ext_dir}/{py_name}/` cannot be read: {exc.strerror or exc}",
            ("general", "name"),
            f"looked for {package}",
        )
        return
    if not init_found:
        ctx.error(
            f"the kernel's Python package `{ext_dir}/{py_name}/__init__.py` is missing",
            ("general", "name"),
            f"create {ext_dir}/{py_name}/__init__.py (the package users import; its name comes from `name`)",
        )
    if nested_found:
        ctx.error(
            f"nested package directory `{ext_dir}/{py_name}/{py_name}/`",
            ("general", "name"),
            f"move its files up into {ext_dir}/{py_name}/ (the flat layout)",
        )


def _report_unbuilt(ctx: Context, config: BuildConfig) -> None:
    enabled = set(config.general.backends)
    for kernel in config.kernels:
        path = ("kernel", kernel.name)
        if isinstance(config.framework, (TorchNoarch, TvmFfi)):
            ctx.warning(
                f"[kernel.{kernel.name}] is never built: [{config.framework.kind}] kernels are pure Python",
                path,
                "remove the section, or use [torch] to compile it",
            )
        elif kernel.backend not in enabled:
            ctx.warning(
                f"[kernel.{kernel.name}] is never built: its backend `{kernel.backend}` is not in `backends`",
                path,
                f'add "{kernel.backend}" to `general.backends`, or remove the section',
            )
    if isinstance(config.framework, Torch):
        for backend in config.noarch_backends():
            ctx.note(
                f"backend {backend} has no kernel sections; it is built as the pure-Python variant {noarch_name(backend)}",
                ("general", "backends"),
            )


def _report_arch_problems(ctx: Context, config: BuildConfig, matrix: Matrix) -> None:
    for problem in arch_problems(config, matrix):
        line = problem.kernel.line
        hint = E20_ROCM_HINT if backends.get(problem.backend).gpu_arch == "gfx" else E20_HINT
        if problem.required:
            ctx.diags.error(problem.message, line, hint)
        else:
            ctx.diags.warning(problem.message + "; those optional variants are not buildable", line, hint)
