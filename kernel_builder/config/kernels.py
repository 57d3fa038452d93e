"""Validation of ``[kernel.<name>]`` sections (docs/build-toml.md)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import kernel_builder.backends as backends
from kernel_builder.config.context import Context
from kernel_builder.config.framework import read_capability_list, read_flags, read_paths, read_rocm_arch_list
from kernel_builder.config.limits import MAX_NAME
from kernel_builder.config.model import Kernel
from kernel_builder.config.positions import KeyPath
from kernel_builder.config.readers import Reader
from kernel_builder.config.schema import (
    KERNEL,
    kernel_backend_keys,
    kernel_backend_names,
    suggest_key,
    suggest_table,
    suggest_value,
)
from kernel_builder.config.values import KERNEL_SECTION_RE
from kernel_builder.formats.dependencies import CUTLASS_PINS, KERNEL_DEPENDS


def compiled_by_backend() -> dict[str, tuple[str, ...]]:
    """Source suffixes that only some backends compile, and those backends (``.cu``: cuda and rocm)."""
    out: dict[str, tuple[str, ...]] = {}
    for backend in backends.all_backends():
        for suffix in backend.source_suffixes:
            out[suffix] = (*out.get(suffix, ()), backend.name)
    return out


HEADERS = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl")
_CUTLASS_RE = re.compile(r"^cutlass_([0-9]+)_([0-9]+)$")


def read_kernels(ctx: Context, doc: dict[str, Any], root: Path, edition5_source: bool) -> tuple[Kernel, ...]:
    kernels = doc.get("kernel")
    if kernels is None:
        return ()
    if not isinstance(kernels, dict):
        ctx.error(
            "`kernel` must be a table of `[kernel.<name>]` sections",
            ("kernel",),
            "write `[kernel.my_kernel]`",
        )
        return ()
    out = []
    for name, section in kernels.items():
        path: KeyPath = ("kernel", name)
        if not isinstance(section, dict):
            ctx.error(f"`kernel.{name}` must be a table", path, f"write a `[kernel.{name}]` section")
            continue
        if not KERNEL_SECTION_RE.match(name):
            ctx.error(
                f"invalid kernel section name `{name}`",
                path,
                "section names use letters, digits, `_` and `-`",
                key=True,
            )
            continue
        if len(name) > MAX_NAME:
            ctx.error(
                f"the kernel section name `{name}` is longer than {MAX_NAME} characters",
                path,
                "shorten it: it names a build target and the directory of its object files",
                key=True,
            )
            continue
        kernel = _read_kernel(ctx, name, section, root, edition5_source)
        if kernel is not None:
            out.append(kernel)
    return tuple(out)


def _read_kernel(
    ctx: Context, name: str, section: dict[str, Any], root: Path, edition5: bool
) -> Kernel | None:
    path: KeyPath = ("kernel", name)
    reader = Reader(ctx, section, path)
    backend = _read_backend(ctx, reader)
    backend_keys = kernel_backend_keys()
    for key, value in section.items():
        if key not in KERNEL:
            table_hint = suggest_table(key, frozenset({"kernel"})) if isinstance(value, dict) else None
            ctx.error(
                f"unknown key `{key}` in [kernel.{name}]",
                (*path, key),
                table_hint or suggest_key(key, KERNEL, backend=backend, table=f"[kernel.{name}]"),
                key=True,
            )
        elif key in backend_keys and backend is not None and backend_keys[key] != backend:
            wanted = backend_keys[key]
            ctx.error(
                f'`{key}` is only valid with `backend = "{wanted}"`',
                (*path, key),
                f'`{key}` belongs in a `[kernel.<name>]` section with `backend = "{wanted}"`',
                key=True,
            )
    if "src" not in section:
        reader.require(
            "src",
            f"add `src = {_src_example(root, name, backend)}` (the files to compile and the headers they use)",
        )
    if section.get("src") == []:
        ctx.error(
            f"[kernel.{name}] `src` is empty", (*path, "src"), "list the files to compile and their headers"
        )
    src = read_paths(ctx, reader, "src", root, directory=False)
    if backend is not None:
        _check_source_types(ctx, reader, backend)
    reader.require("depends", 'add `depends = []` (or `depends = ["torch"]`)')
    depends = _read_depends(ctx, reader, backend, edition5)
    caps = None
    # Each architecture key is read only in a section of the backend it belongs to.
    if "cuda-capabilities" in section and backend_keys["cuda-capabilities"] == backend:
        items = reader.string_list("cuda-capabilities", '["8.0", "9.0"]')
        caps = read_capability_list(ctx, reader, "cuda-capabilities", items) if items is not None else None
    archs = None
    if "rocm-archs" in section and backend_keys["rocm-archs"] == backend:
        items = reader.string_list("rocm-archs", '["gfx90a", "gfx942"]')
        archs = read_rocm_arch_list(ctx, reader, "rocm-archs", items) if items is not None else None
    kernel = Kernel(
        name=name,
        backend=backend or "",
        src=src,
        depends=depends,
        include=read_paths(ctx, reader, "include", root, directory=True),
        cxx_flags=read_flags(ctx, reader, "cxx-flags"),
        cuda_capabilities=caps,
        cuda_flags=read_flags(ctx, reader, "cuda-flags"),
        cuda_minver=reader.version("cuda-minver"),
        rocm_archs=archs,
        hip_flags=read_flags(ctx, reader, "hip-flags"),
        sycl_flags=read_flags(ctx, reader, "sycl-flags"),
        line=ctx.key_line(path),
    )
    return kernel if backend is not None else None


def _read_backend(ctx: Context, reader: Reader) -> str | None:
    path = reader.path
    kernel_backends = kernel_backend_names()
    if not reader.require("backend", 'add `backend = "cuda"` (one of ' + ", ".join(kernel_backends) + ")"):
        return None
    backend = reader.string("backend", '"cuda"')
    if backend is None:
        return None
    if backend in kernel_backends:
        return backend
    if backend in backends.names():
        ctx.error(
            f"backend `{backend}` has no compiled form: kernel sections cannot use it",
            (*path, "backend"),
            f"ship {backend} code as Python in the package; list `{backend}` only in `general.backends`",
        )
        return None
    hint = suggest_value(backend, kernel_backends) or f"kernel backends are: {', '.join(kernel_backends)}"
    ctx.error(f"unknown backend `{backend}` in [{path[0]}.{path[1]}]", (*path, "backend"), hint)
    return None


def _check_source_types(ctx: Context, reader: Reader, backend: str) -> None:
    items = reader.string_list("src") or []
    name = reader.path[1]
    compiled_by = compiled_by_backend()
    for i, file in items:
        suffix = Path(file).suffix.lower() if "." in Path(file).name else ""
        where = (*reader.path, "src", i)
        allowed = compiled_by.get(Path(file).suffix)
        if allowed is not None and backend not in allowed:
            ctx.error(
                f"`{file}` cannot be compiled by a `{backend}` kernel ([kernel.{name}])",
                where,
                "move it to a kernel section with " + " or ".join(f'`backend = "{b}"`' for b in allowed),
            )
        elif suffix == ".c":
            ctx.warning(f"C source `{file}` is not compiled", where, "rename it to .cpp")


def _read_depends(ctx: Context, reader: Reader, backend: str | None, edition5: bool) -> tuple[str, ...]:
    items = reader.string_list("depends", '["torch"]')
    if not items:
        return ()
    out = []
    for i, value in reader.unique("depends", items):
        where = (*reader.path, "depends", i)
        if value == "cutlass_sycl" and edition5:
            ctx.error("`cutlass_sycl` was renamed to `sycl_tla`", where, 'write `"sycl_tla"`')
            continue
        if value not in KERNEL_DEPENDS:
            ctx.error(f"unknown dependency `{value}` in `depends`", where, _depends_hint(value))
            continue
        effective = KERNEL_DEPENDS[value]
        if backend is not None and effective is not None and backend not in effective:
            ctx.warning(
                f"dependency `{value}` has no effect on a `{backend}` kernel",
                where,
                f"it is used by {', '.join(sorted(effective))} kernels; remove it here",
            )
        out.append(value)
    return tuple(out)


_SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp", ".mm", ".metal")


def _src_example(root: Path, name: str, backend: str | None) -> str:
    """The `src` list to suggest: the source files in the kernel's directory when it has some, else one file
    named after the kernel with its backend's usual suffix (`.cpp` for CPU)."""
    folder = root / name
    try:
        found = sorted(p.name for p in folder.iterdir() if p.is_file() and p.suffix in _SOURCE_SUFFIXES)
    except OSError:  # no such directory, or one that cannot be read
        found = []
    spec = backends.find(backend or "")
    usual = spec.source_suffixes[0] if spec is not None and spec.source_suffixes else ".cpp"
    files = [f"{name}/{f}" for f in found[:6]] or [f"{name}/{name}{usual}"]
    return "[" + ", ".join(f'"{f}"' for f in files) + "]"


def _depends_hint(value: str) -> str:
    match = _CUTLASS_RE.match(value)
    if match:
        wanted = (int(match[1]), int(match[2]))
        pins = sorted((tuple(int(x) for x in p.split("_")[1:]), p) for p in CUTLASS_PINS)
        below = [p for v, p in pins if v < wanted]
        above = [p for v, p in pins if v > wanted]
        near = ([below[-1]] if below else []) + ([above[0]] if above else [])
        return "did you mean " + " or ".join(f"`{p}`" for p in near) + "?"
    return suggest_value(value, tuple(KERNEL_DEPENDS)) or "known values: " + ", ".join(KERNEL_DEPENDS)
