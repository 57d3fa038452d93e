"""Migration of legacy forms (v1-v4) into an edition-5 document, in memory (docs/migrating.md).

The result is a plain dict that the edition-5 validator checks like any current file; ``ctx.origin``
records where moved keys came from so that errors still point into the original file.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from kernel_builder.config.context import Context
from kernel_builder.config.forms import Form
from kernel_builder.config.schema import ALL_FIVE_BACKENDS
from kernel_builder.config.values import NAME_RE, normalise_legacy_name, py_name_of

NOASSERTION = "NOASSERTION"
UNIVERSAL_WITH_SOURCES = "`universal` declares a pure-Python kernel but sources are listed"


@dataclass
class Migrated:
    doc: dict[str, Any]
    py_name: str | None  # the py_name of the original spelling, when the name was normalised


def migrate(raw: dict[str, Any], form: Form, ctx: Context) -> Migrated | None:
    """Edition-5 document for ``raw``; None when migration itself found an error (already reported)."""
    doc = copy.deepcopy(raw)
    general: dict[str, Any] = doc["general"]
    py_name = _normalise_name(general, form, ctx)
    if form.number == 5:
        return Migrated(doc, None)

    errors_before = len(ctx.diags.errors)
    general.setdefault("version", 1)
    if form.number <= 3 and "license" not in general:
        general["license"] = NOASSERTION
        ctx.warning(
            'no `license`: metadata will carry "NOASSERTION"',
            ("general",),
            'add `license = "<SPDX id>"` to [general] (or run `kernel-builder update-build --license <id>`)',
        )
    _rename_depends(doc, ctx)
    if form.number == 1:
        _migrate_v1(doc, ctx)
    elif form.number == 2:
        _migrate_v2(doc, ctx)
    elif form.number == 3 and not any(f in doc for f in ("torch", "torch-noarch", "tvm-ffi")):
        doc["torch-noarch"] = {}
    if isinstance(doc.get("torch"), dict) and isinstance(doc["torch"].get("stable-abi"), str):
        pass  # a string stable-abi already means "every AOT backend" in the model
    general["edition"] = 5
    if len(ctx.diags.errors) > errors_before:
        return None
    return Migrated(doc, py_name)


def _normalise_name(general: dict[str, Any], form: Form, ctx: Context) -> str | None:
    name = general.get("name")
    if form.number == 5 or not isinstance(name, str) or NAME_RE.match(name):
        return None
    fixed = normalise_legacy_name(name)
    if fixed is None:
        return None  # reported as E6 by the validator
    ctx.warning(
        f"legacy name `{name}` does not follow the edition-5 name rule; read as `{fixed}`",
        ("general", "name"),
        f"the Python package stays `torch-ext/{py_name_of(name)}/`",
    )
    general["name"] = fixed
    return py_name_of(name)


def _rename_depends(doc: dict[str, Any], ctx: Context) -> None:
    for name, section in _kernel_sections(doc):
        depends = section.get("depends")
        if isinstance(depends, list):
            for i, value in enumerate(depends):
                if value == "cutlass_sycl":
                    depends[i] = "sycl_tla"
                    ctx.warning(
                        "`cutlass_sycl` is the old name of `sycl_tla`",
                        ("kernel", name, "depends", i),
                        'write `"sycl_tla"` (kernel-builder update-build does this)',
                    )


def _kernel_sections(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    kernels = doc.get("kernel")
    if not isinstance(kernels, dict):
        return []
    return [(n, s) for n, s in kernels.items() if isinstance(s, dict)]


def _make_universal(doc: dict[str, Any], ctx: Context, trait_path: tuple[str, ...]) -> None:
    torch = doc.pop("torch", None)
    torch = torch if isinstance(torch, dict) else {}
    if torch.get("src") or _kernel_sections(doc):
        ctx.error(
            UNIVERSAL_WITH_SOURCES,
            trait_path,
            "remove `universal`, or remove the sources and kernel sections",
        )
        return
    noarch: dict[str, Any] = {}
    if "pyext" in torch:
        noarch["pyext"] = torch["pyext"]
        ctx.origin[("torch-noarch", "pyext")] = ("torch", "pyext")
    doc["torch-noarch"] = noarch
    ctx.origin.setdefault(("torch-noarch",), ("torch",))
    doc.pop("kernel", None)
    doc["general"]["backends"] = list(ALL_FIVE_BACKENDS)


def _set_backends(doc: dict[str, Any], ctx: Context) -> None:
    backends = sorted({s["backend"] for _, s in _kernel_sections(doc) if isinstance(s.get("backend"), str)})
    doc["general"]["backends"] = backends
    ctx.origin[("general", "backends")] = ("general",)
    if not backends:
        ctx.error(
            "no backends: the file has no kernel sections to derive `backends` from",
            ("general",),
            'add `backends = ["cuda"]` (the backends this kernel supports) and `edition = 5` to [general]',
        )


def _migrate_v1(doc: dict[str, Any], ctx: Context) -> None:
    torch = doc.get("torch")
    if isinstance(torch, dict) and torch.get("universal") is True:
        _make_universal(doc, ctx, ("torch", "universal"))
        return
    if isinstance(torch, dict):
        torch.pop("universal", None)
    kernels: dict[str, Any] = doc["kernel"] if isinstance(doc.get("kernel"), dict) else {}
    errors_before = len(ctx.diags.errors)
    migrated: dict[str, Any] = {}
    for name, section in list(kernels.items()):
        if not isinstance(section, dict):
            migrated[name] = section
            continue
        language = section.pop("language", "cuda")
        path = ("kernel", name)
        if language == "metal":
            for key in ("cuda-capabilities", "rocm-archs"):
                if key in section:
                    section.pop(key)
                    ctx.warning(f"`{key}` dropped: a metal kernel has no use for it", (*path, key))
            migrated[name] = {"backend": "metal", **section}
        elif language in ("cuda", "cuda-hipify"):
            rocm_archs = section.pop("rocm-archs", None)
            migrated[name] = {"backend": "cuda", **section}
            if language == "cuda-hipify":
                companion = f"{name}_rocm"
                if companion in kernels:
                    ctx.error(
                        f'`language = "cuda-hipify"` on [kernel.{name}] creates [kernel.{companion}], which '
                        "already exists",
                        ("kernel", companion),
                        f"rename [kernel.{companion}]",
                    )
                    continue
                rocm: dict[str, Any] = {"backend": "rocm"}
                for key in ("src", "depends", "include"):
                    if key in section:
                        rocm[key] = copy.deepcopy(section[key])
                if rocm_archs is not None:
                    rocm["rocm-archs"] = rocm_archs
                migrated[companion] = rocm
                ctx.origin[("kernel", companion)] = path
            elif rocm_archs is not None:
                ctx.note("`rocm-archs` dropped: the kernel is not hipified", (*path, "rocm-archs"))
        else:
            ctx.error(
                f"unknown `language = {json.dumps(language)}`",
                (*path, "language"),
                'use "cuda", "cuda-hipify" or "metal"',
            )
            migrated[name] = section
    if kernels:
        doc["kernel"] = migrated
    if "torch" not in doc:
        doc["torch"] = {}
        ctx.origin[("torch",)] = ("general",)
    if len(ctx.diags.errors) == errors_before:  # a kernel without a backend is not "no kernel sections"
        _set_backends(doc, ctx)


def _migrate_v2(doc: dict[str, Any], ctx: Context) -> None:
    general = doc["general"]
    if general.pop("universal", False) is True:
        _make_universal(doc, ctx, ("general", "universal"))
    cuda: dict[str, Any] = {}
    for old, new in (("cuda-minver", "minver"), ("cuda-maxver", "maxver")):
        if old in general:
            cuda[new] = general.pop(old)
            ctx.origin[("general", "cuda", new)] = ("general", old)
    depends = general.get("python-depends")
    if isinstance(depends, list) and "nvidia-cutlass-dsl" in depends:
        # each element keeps the line it had in the original list
        keep = [i for i, d in enumerate(depends) if d != "nvidia-cutlass-dsl"]
        for index, original in enumerate(keep):
            ctx.origin[("general", "python-depends", index)] = ("general", "python-depends", original)
        cuda["python-depends"] = ["nvidia-cutlass-dsl"]
        ctx.origin[("general", "cuda", "python-depends")] = ("general", "python-depends")
        ctx.origin[("general", "cuda", "python-depends", 0)] = (
            "general",
            "python-depends",
            depends.index("nvidia-cutlass-dsl"),
        )
        general["python-depends"] = [depends[i] for i in keep]
    if cuda:
        general["cuda"] = cuda
    if "torch-noarch" in doc:
        return  # universal
    if "torch" not in doc:
        doc["torch-noarch"] = {}
    _set_backends(doc, ctx)
