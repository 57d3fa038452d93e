"""``kernel-builder update-build``: rewrite a legacy build.toml in the current edition (docs/migrating.md).

The file is edited through ``tomlkit``, which keeps every comment, blank line, quote style and key order
of the lines it does not touch; the model is never re-serialised. The result must read back as edition 5
with exactly the model the migration produced, or nothing is written.
"""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernel_builder.common.diagnostics import Diagnostic, DiagnosticList
from kernel_builder.config.context import Context
from kernel_builder.config.forms import Form, detect_form
from kernel_builder.config.load import load_text, parse_toml, read_build_toml, resolve_build_toml
from kernel_builder.config.positions import scan_positions
from kernel_builder.config.schema import ALL_FIVE_BACKENDS
from kernel_builder.config.toml_edit import insert_after, insert_at, key_index, replace_key
from kernel_builder.config.values import NAME_RE, normalise_legacy_name, py_name_of
from kernel_builder.errors import ConfigError, KernelBuilderError


@dataclass
class UpdateOutcome:
    exit_code: int
    output: str  # what to print on stdout (a diff, or a one-line status)
    diagnostics: list[Diagnostic]


def update_build(
    path: str | os.PathLike[str] = ".",
    *,
    license_id: str | None = None,
    dry_run: bool = False,
    check: bool = False,
) -> UpdateOutcome:
    file, display = resolve_build_toml(path)
    diags = DiagnosticList(display)
    text = read_build_toml(file, display)
    loaded = load_text(text, file, display)  # raises ConfigError: any error leaves the file untouched
    project = loaded.project
    if project.form == 5:
        return UpdateOutcome(0, f"{display}: already edition 5", loaded.diagnostics)

    raw = parse_toml(text, diags)
    general_raw = raw["general"]
    if "license" not in general_raw and not license_id:
        diags.error(
            "`license` is missing and edition 5 requires it",
            scan_positions(text).key_line(("general",)),
            "pass --license <SPDX id>, e.g. --license Apache-2.0",
        )
        raise ConfigError([*loaded.diagnostics, *diags.sorted()])
    name = general_raw.get("name")
    if isinstance(name, str) and not NAME_RE.match(name):
        fixed = normalise_legacy_name(name) or name
        if py_name_of(fixed) != project.py_name:
            diags.error(
                f"the name `{name}` becomes `{fixed}` in edition 5, which derives the Python package "
                f"`{py_name_of(fixed)}` from it",
                scan_positions(text).key_line(("general", "name")),
                f"rename the package directory torch-ext/{project.py_name}/ to torch-ext/{py_name_of(fixed)}/ "
                "first, then run update-build again",
            )
            raise ConfigError([*loaded.diagnostics, *diags.sorted()])

    form = detect_form(raw, Context(DiagnosticList(display), scan_positions(text)))
    assert form is not None  # the load above succeeded
    try:
        new_text = rewrite(text, raw, form, license_id)
    except (
        AttributeError,
        KeyError,
        TypeError,
        ValueError,
    ) as exc:  # a layout the edits cannot place keys in
        diags.error(
            f"update-build cannot edit this file's layout in place ({type(exc).__name__}: {exc}); nothing was "
            "written",
            None,
            "write the tables it changes ([general], [torch], [kernel.<name>]) with [table] headers, then run "
            "update-build again",
        )
        raise ConfigError([*loaded.diagnostics, *diags.sorted()]) from None

    expected = project.config
    if license_id and "license" not in general_raw:
        expected = replace(expected, general=replace(expected.general, license=license_id))
    try:
        reread = load_text(new_text, file, display).project
    except ConfigError as exc:
        raise KernelBuilderError(
            "internal error: the rewritten build.toml does not validate; nothing was written\n"
            + "\n".join(d.render() for d in exc.diagnostics)
        ) from exc
    if reread.form != 5 or reread.config != expected:
        raise KernelBuilderError(
            "internal error: the rewritten build.toml means something else; nothing was written"
        )

    if check:
        return UpdateOutcome(
            1, f"{display}: needs update-build (legacy v{form.number} form)", loaded.diagnostics
        )
    if dry_run:
        diff = difflib.unified_diff(
            text.splitlines(keepends=True), new_text.splitlines(keepends=True), f"a/{display}", f"b/{display}"
        )
        return UpdateOutcome(0, "".join(diff), loaded.diagnostics)
    atomic_write(file, new_text.encode("utf-8"))
    return UpdateOutcome(0, f"{display}: rewritten as edition 5 (was v{form.number})", loaded.diagnostics)


def atomic_write(file: Path, data: bytes) -> None:
    """Write via a temporary file in the same directory and a rename, keeping the file mode."""
    mode = file.stat().st_mode & 0o7777 if file.exists() else 0o644
    fd, tmp = tempfile.mkstemp(prefix=f".{file.name}.", dir=file.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, file)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def rewrite(text: str, raw: dict[str, Any], form: Form, license_id: str | None) -> str:
    """The edition-5 text of a legacy file: minimal edits, placed next to the keys they belong with (docs/migrating.md)."""
    import tomlkit  # only this command needs the format-preserving library

    from kernel_builder.config.forms import computed_backends

    doc = tomlkit.parse(text)
    general = doc["general"]
    _normalise_name(general)
    universal = _is_universal(raw)
    if form.number == 1:
        _edit_v1_kernels(doc, tomlkit)
    if form.number == 2:
        _edit_v2_general(general, tomlkit)
    _rename_cutlass_sycl(doc)
    if universal:
        _make_noarch(doc, tomlkit)
    elif not any(f in doc for f in ("torch", "torch-noarch", "tvm-ffi")):
        _add_framework(doc, "torch" if form.number == 1 else "torch-noarch", tomlkit)

    backends = list(ALL_FIVE_BACKENDS) if universal else computed_backends(raw)
    _add_general_keys(general, license_id, backends)
    return tomlkit.dumps(doc)


def _add_general_keys(general: Any, license_id: str | None, backends: list[str]) -> None:
    """``version``, ``edition``, ``license`` and ``backends`` right after ``name``, as far as missing."""
    keys = getattr(general, "value", None)
    if keys is None or key_index(keys, "name") < 0:
        # `general.name = ...` lines or an inline `general = {...}`: tomlkit places new keys itself.
        for key, value in (("version", 1), ("edition", 5), ("license", license_id or "NOASSERTION")):
            if key not in general or key == "edition":
                general[key] = value
        if "backends" not in general:
            general["backends"] = backends
        return
    if "version" not in general:
        insert_after(keys, "name", "version", 1)
    insert_after(keys, "version", "edition", 5)
    if "license" not in general:
        insert_after(keys, "edition", "license", license_id or "NOASSERTION")
    if "backends" not in general:
        last = max(("name", "version", "edition", "license"), key=lambda k: key_index(keys, k))
        insert_after(keys, last, "backends", backends)


def _is_universal(raw: dict[str, Any]) -> bool:
    torch = raw.get("torch") if isinstance(raw.get("torch"), dict) else {}
    return bool(
        raw["general"].get("universal") is True
        or (isinstance(torch, dict) and torch.get("universal") is True)
    )


def _normalise_name(general: Any) -> None:
    name = general.get("name")
    if isinstance(name, str) and not NAME_RE.match(name):
        fixed = normalise_legacy_name(str(name))
        if fixed:
            general["name"] = fixed


def _rename_cutlass_sycl(doc: Any) -> None:
    for section in (doc.get("kernel") or {}).values():
        depends = section.get("depends") if hasattr(section, "get") else None
        if depends is None:
            continue
        for i, value in enumerate(list(depends)):
            if value == "cutlass_sycl":
                depends[i] = "sycl_tla"


def _edit_v1_kernels(doc: Any, tomlkit: Any) -> None:
    kernels = doc.get("kernel")
    if kernels is None:
        return
    for name in list(kernels.keys()):
        section = kernels[name]
        language = section.get("language", "cuda")
        if "language" in section:
            section.remove("language")
        backend = "metal" if language == "metal" else "cuda"
        insert_at(section.value, 0, "backend", backend)
        archs = section.value.item("rocm-archs") if "rocm-archs" in section else None
        if archs is not None:
            section.remove("rocm-archs")
        if language == "metal" and "cuda-capabilities" in section:
            section.remove("cuda-capabilities")
        if language == "cuda-hipify":
            companion = tomlkit.table()
            companion.add("backend", "rocm")
            for key in ("src", "depends", "include"):
                if key in section:
                    companion.add(key, section[key].copy() if hasattr(section[key], "copy") else section[key])
            if archs is not None:
                companion.add("rocm-archs", archs)
            names = list(kernels.keys())
            if names.index(name) < len(names) - 1 or key_index(doc, "kernel") < len(doc.body) - 1:
                companion.add(tomlkit.nl())
            if not section.value.body or section.value.body[-1][0] is not None:
                section.add(tomlkit.nl())
            insert_after(kernels.value, name, f"{name}_rocm", companion)


def _edit_v2_general(general: Any, tomlkit: Any) -> None:
    if "universal" in general:
        general.remove("universal")
    cuda = tomlkit.table()
    for old, new in (("cuda-minver", "minver"), ("cuda-maxver", "maxver")):
        if old in general:
            item = general.value.item(old)
            general.remove(old)
            cuda.add(new, item)
    depends = general.get("python-depends")
    if depends is not None and "nvidia-cutlass-dsl" in depends:
        if all(d == "nvidia-cutlass-dsl" for d in depends):
            item = general.value.item("python-depends")
            general.remove("python-depends")
            cuda.add("python-depends", item)
        else:
            depends.remove("nvidia-cutlass-dsl")
            cuda.add("python-depends", ["nvidia-cutlass-dsl"])
    if len(cuda):
        body = general.value.body
        first_table = next((i for i, (k, v) in enumerate(body) if k is not None and _is_table(v)), None)
        if first_table is None:
            general.append("cuda", cuda)
        else:
            cuda.add(tomlkit.nl())
            insert_at(general.value, first_table, "cuda", cuda)


def _is_table(item: Any) -> bool:
    from tomlkit.items import AoT, Table

    return isinstance(item, (Table, AoT))


def _make_noarch(doc: Any, tomlkit: Any) -> None:
    if "torch" not in doc:
        _add_framework(doc, "torch-noarch", tomlkit)
        return
    table = doc["torch"]
    for key in ("universal", "src", "include"):
        if key in table and (key == "universal" or not table[key]):
            table.remove(key)
    replace_key(doc, "torch", "torch-noarch", table)
    table.display_name = None
    table.name = "torch-noarch"


def _add_framework(doc: Any, name: str, tomlkit: Any) -> None:
    table = tomlkit.table()
    index = key_index(doc, "kernel")
    if index < 0:
        doc.add(name, table)
    else:
        table.add(tomlkit.nl())
        insert_at(doc, index, name, table)
