"""Validation of the framework table: ``[torch]``, ``[torch-noarch]`` or ``[tvm-ffi]`` (docs/build-toml.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_builder.backends import gpu_archs
from kernel_builder.config.context import Context, describe
from kernel_builder.config.general import check_bounds, check_keys
from kernel_builder.config.model import Framework, Torch, TorchNoarch, TvmFfi
from kernel_builder.config.paths import check_path
from kernel_builder.config.positions import KeyPath
from kernel_builder.config.readers import Reader
from kernel_builder.config.schema import TORCH, TORCH_NOARCH, TVM_FFI, backend_names
from kernel_builder.config.values import Version

DEFAULT_PYEXT = ("py", "pyi")


def read_framework(
    ctx: Context, doc: dict[str, Any], root: Path, backends: tuple[str, ...] | None
) -> Framework | None:
    present = [name for name in ("torch", "torch-noarch", "tvm-ffi") if name in doc]
    if not present:
        ctx.error(
            "no framework table",
            ("general",),
            "add `[torch]` (compiled) or `[torch-noarch]` (pure Python)",
            key=True,
        )
        return None
    if len(present) > 1:
        tables = ", ".join(f"[{p}]" for p in present)
        ctx.error(f"more than one framework table ({tables})", (present[1],), "keep one", key=True)
        return None
    name = present[0]
    table = doc[name]
    if not isinstance(table, dict):
        ctx.error(f"`{name}` must be a table", (name,), f"write it as a `[{name}]` table")
        return None
    if name == "torch":
        return _read_torch(ctx, table, root, backends)
    if name == "torch-noarch":
        return _read_noarch(ctx, table)
    return _read_tvm_ffi(ctx, table, root)


def read_paths(ctx: Context, reader: Reader, key: str, root: Path, *, directory: bool) -> tuple[str, ...]:
    items = reader.string_list(key, '["dir"]' if directory else '["file.cpp"]')
    if not items:
        return ()
    good = [
        (i, v)
        for i, v in reader.unique(key, items)
        if check_path(ctx, root, v, (*reader.path, key, i), directory=directory)
    ]
    return tuple(v for _, v in good)


def read_flags(ctx: Context, reader: Reader, key: str) -> tuple[str, ...]:
    items = reader.string_list(key, '["-O3"]')
    if not items:
        return ()
    good = []
    for i, flag in items:
        if ";" in flag:
            ctx.error(
                f"flag `{flag}` in {describe((*reader.path, key))} contains `;`, which CMake cannot pass inside one flag",
                (*reader.path, key, i),
                "CMake splits flags at `;`: define such a value in a header instead",
            )
            continue
        good.append(flag)
        if " " in flag.strip():
            parts = ", ".join(f'"{p}"' for p in flag.split())
            ctx.warning(
                f"flag `{flag}` in {describe((*reader.path, key))} contains a space and is passed as one argument",
                (*reader.path, key, i),
                f"split it into separate elements: {parts}",
            )
    return tuple(good)


def read_pyext(ctx: Context, reader: Reader) -> tuple[str, ...]:
    if not reader.has("pyext"):
        return DEFAULT_PYEXT
    items = reader.string_list("pyext", '["py", "json"]')
    if items is None:
        return DEFAULT_PYEXT
    out = []
    for i, ext in reader.unique("pyext", items):
        if not ext or ext.startswith("."):
            ctx.error(
                f"invalid `pyext` entry `{ext}`" if ext else "empty `pyext` entry",
                (*reader.path, "pyext", i),
                f"write `{ext.lstrip('.') or 'json'}`, not `.{ext.lstrip('.') or 'json'}`",
            )
            continue
        out.append(ext)
    return tuple(out)


def _read_torch(ctx: Context, table: dict[str, Any], root: Path, backends: tuple[str, ...] | None) -> Torch:
    path: KeyPath = ("torch",)
    check_keys(ctx, table, TORCH, path)
    reader = Reader(ctx, table, path)
    minver, maxver = reader.version("minver"), reader.version("maxver")
    check_bounds(ctx, minver, maxver, path)
    stable_all, stable_map = _read_stable_abi(ctx, table.get("stable-abi"), backends)
    return Torch(
        src=read_paths(ctx, reader, "src", root, directory=False),
        include=read_paths(ctx, reader, "include", root, directory=True),
        pyext=read_pyext(ctx, reader),
        minver=minver,
        maxver=maxver,
        cxx_flags=read_flags(ctx, reader, "cxx-flags"),
        stable_abi=stable_map,
        stable_abi_all=stable_all,
    )


def _read_stable_abi(
    ctx: Context, value: object, backends: tuple[str, ...] | None
) -> tuple[Version | None, tuple[tuple[str, Version], ...]]:
    path: KeyPath = ("torch", "stable-abi")
    if value is None:
        return None, ()
    if isinstance(value, str):
        version = Reader(ctx, {"stable-abi": value}, ("torch",)).version("stable-abi")
        return version, ()
    if not isinstance(value, dict):
        ctx.error(
            "`stable-abi` must be a version string or a table of backend = version",
            path,
            'write `stable-abi = "2.11"` or `stable-abi = { cuda = "2.11" }`',
        )
        return None, ()
    entries: list[tuple[str, Version]] = []
    reader = Reader(ctx, value, path)
    for backend in value:
        if backend not in backend_names():
            ctx.error(
                f"unknown backend `{backend}` in `stable-abi`",
                (*path, backend),
                f"backends are: {', '.join(backend_names())}",
            )
            continue
        version = reader.version(backend)
        if version is None:
            continue
        if backends is not None and backend not in backends:
            ctx.warning(
                f"`stable-abi` entry for `{backend}`, which is not in `backends`",
                (*path, backend),
                f"add `{backend}` to `backends` or remove the entry",
            )
        entries.append((backend, version))
    return None, tuple(sorted(entries))


def _read_noarch(ctx: Context, table: dict[str, Any]) -> TorchNoarch:
    path: KeyPath = ("torch-noarch",)
    check_keys(ctx, table, TORCH_NOARCH, path)
    reader = Reader(ctx, table, path)
    caps = None
    archs = None
    for kebab, snake in (("cuda-capabilities", "cuda_capabilities"), ("rocm-archs", "rocm_archs")):
        if kebab in table and snake in table:
            ctx.error(
                f"both `{kebab}` and `{snake}` in [torch-noarch]",
                (*path, snake),
                f"keep one (`{kebab}` is the documented spelling)",
                key=True,
            )
            continue
        key = kebab if kebab in table else snake
        if key not in table:
            continue
        items = reader.string_list(key, '["8.0", "9.0"]')
        if items is None:
            continue
        if kebab == "cuda-capabilities":
            caps = read_capability_list(ctx, reader, key, items)
        else:
            archs = read_rocm_arch_list(ctx, reader, key, items)
    return TorchNoarch(pyext=read_pyext(ctx, reader), cuda_capabilities=caps, rocm_archs=archs)


def _read_tvm_ffi(ctx: Context, table: dict[str, Any], root: Path) -> TvmFfi:
    path: KeyPath = ("tvm-ffi",)
    check_keys(ctx, table, TVM_FFI, path)
    reader = Reader(ctx, table, path)
    if reader.require("src", 'add `src = ["tvm-ffi-ext/binding.cpp"]`') and table.get("src") == []:
        ctx.error("[tvm-ffi] `src` is empty", (*path, "src"), "list the binding sources")
    return TvmFfi(
        src=read_paths(ctx, reader, "src", root, directory=False),
        include=read_paths(ctx, reader, "include", root, directory=True),
        pyext=read_pyext(ctx, reader),
        cxx_flags=read_flags(ctx, reader, "cxx-flags"),
    )


def read_capability_list(
    ctx: Context, reader: Reader, key: str, items: list[tuple[int, str]]
) -> tuple[str, ...]:
    """CUDA capabilities (E8), de-duplicated, with two suffixes on one base rejected. A capability no GPU has is
    a warning and left out, as Hugging Face's builder leaves out what the CUDA version cannot build: a real
    kernel's list must not stop its build (:func:`_nothing_left` when it was all there was)."""
    out: list[str] = []
    dropped = 0
    suffix_of: dict[tuple[int, int], tuple[str, int]] = {}
    for i, text in reader.unique(key, items):
        where = (*reader.path, key, i)
        try:
            cap = gpu_archs.parse_capability(text)
        except ValueError:
            fix = gpu_archs.suggest_capability(text)
            hint = (
                f"write `{fix}`"
                if fix
                else 'a capability is `<major>.<minor>` with optional `a`/`f` and `+PTX`, e.g. "9.0a"'
            )
            ctx.error(f"invalid CUDA capability `{text}` in {describe((*reader.path, key))}", where, hint)
            continue
        unknown = gpu_archs.unknown_capability(cap)
        if unknown is not None:
            why, hint = unknown
            ctx.warning(
                f"unknown CUDA capability `{text}` in {describe((*reader.path, key))}: {why}; built without it",
                where,
                hint,
            )
            dropped += 1
            continue
        if cap.suffix:
            other = suffix_of.get((cap.major, cap.minor))
            if other is not None and other[0] != cap.suffix:
                ctx.error(
                    f"two suffixes on capability {cap.major}.{cap.minor}: `{other[0]}` and `{cap.suffix}`",
                    where,
                    f"keep one of `{cap.major}.{cap.minor}{other[0]}` and `{cap.major}.{cap.minor}{cap.suffix}`",
                )
                continue
            suffix_of[(cap.major, cap.minor)] = (cap.suffix, i)
        out.append(text)
    _nothing_left(ctx, reader, key, out, dropped, "capability", "CUDA")
    return tuple(out)


def _nothing_left(
    ctx: Context, reader: Reader, key: str, kept: list[str], dropped: int, what: str, gpu: str
) -> None:
    """Every entry of the list was unknown: an empty list would mean the defaults, which the author did not ask
    for, so this is the one case an unknown target stops the build."""
    if dropped and not kept:
        ctx.error(
            f"no {gpu} {what} in {describe((*reader.path, key))} is a real GPU target (the warnings above say "
            "which were left out)",
            (*reader.path, key),
            f"list at least one known {what}, or remove `{key}` to build for the defaults",
        )


def read_rocm_arch_list(
    ctx: Context, reader: Reader, key: str, items: list[tuple[int, str]]
) -> tuple[str, ...]:
    """ROCm archs, de-duplicated; an unknown one is a warning and left out (as CUDA capabilities are)."""
    out: list[str] = []
    dropped = 0
    for i, arch in reader.unique(key, items):
        if gpu_archs.ROCM_ARCH_RE.match(arch):
            hint = gpu_archs.unknown_rocm_arch(arch)
            if hint is None:
                out.append(arch)
            else:
                ctx.warning(
                    f"unknown ROCm arch `{arch}` in {describe((*reader.path, key))}: no AMD GPU target has this "
                    "name; built without it",
                    (*reader.path, key, i),
                    hint,
                )
                dropped += 1
            continue
        base = arch.split(":")[0].lower()
        hint = (
            f"feature suffixes are not supported: write `{base}`"
            if ":" in arch and gpu_archs.ROCM_ARCH_RE.match(base)
            else 'a ROCm arch looks like "gfx90a" or "gfx1100"'
        )
        ctx.error(
            f"invalid ROCm arch `{arch}` in {describe((*reader.path, key))}", (*reader.path, key, i), hint
        )
    _nothing_left(ctx, reader, key, out, dropped, "arch", "ROCm")
    return tuple(out)
