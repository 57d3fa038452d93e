"""Validation of ``[general]`` and its sub-tables into the ``General`` model (docs/build-toml.md)."""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from kernel_builder.config.context import Context, describe
from kernel_builder.config.limits import MAX_NAME
from kernel_builder.config.model import BackendSettings, General, Hub
from kernel_builder.config.positions import KeyPath
from kernel_builder.config.readers import Reader
from kernel_builder.config.schema import (
    GENERAL,
    HUB,
    backend_names,
    general_backend_tables,
    suggest_key,
    suggest_value,
)
from kernel_builder.config.values import NAME_RE, Version, is_git_url, normalise_legacy_name, py_name_of
from kernel_builder.formats.dependencies import (
    PYTHON_DEPENDENCIES,
    KernelDependency,
    allowed_python_dependencies,
)
from kernel_builder.formats.identifiers import is_repo_id


def _and_list(words: Collection[str]) -> str:
    """``a, b and c``."""
    *head, last = list(words)
    return f"{', '.join(head)} and {last}" if head else last


def check_keys(
    ctx: Context, table: dict[str, Any], allowed: frozenset[str], path: KeyPath, **kw: Any
) -> None:
    """Reports each key of ``table`` outside ``allowed`` with the best did-you-mean hint (E3)."""
    for key in table:
        if key not in allowed:
            ctx.error(
                f"unknown key `{key}` in {describe(path)}",
                (*path, key),
                suggest_key(key, allowed, table=describe(path), **kw),
                key=True,
            )


def read_general(ctx: Context, general: dict[str, Any], *, py_name_override: str | None) -> General | None:
    path: KeyPath = ("general",)
    reader = Reader(ctx, general, path)
    tables = general_backend_tables()
    for key, value in general.items():
        if key in backend_names() and key not in tables and isinstance(value, dict):
            ctx.error(
                f"unknown table `[general.{key}]`",
                (*path, key),
                f"there is no `[general.{key}]` table; only {_and_list(tables)} have one",
                key=True,
            )
        elif key not in GENERAL and key not in tables:
            ctx.error(
                f"unknown key `{key}` in [general]",
                (*path, key),
                suggest_key(key, GENERAL, table="[general]"),
                key=True,
            )

    name = _read_name(ctx, reader)
    reader.require("version", "add `version = 1` (the major version of the kernel's API)")
    version = reader.integer("version", "1")
    if version is not None and version < 0:
        ctx.error("`version` must be 0 or greater", (*path, "version"), "write `version = 1`")
        version = None
    reader.require("license", 'add `license = "Apache-2.0"` (an SPDX identifier)')
    license_ = reader.string("license", '"Apache-2.0"')
    if license_ is not None and not license_.strip():
        ctx.error(
            "`license` is empty",
            (*path, "license"),
            'write an SPDX identifier, e.g. `license = "Apache-2.0"`',
        )
        license_ = None
    urls = {}
    for key in ("upstream", "source"):
        url = reader.string(key, '"https://github.com/org/repo"')
        if url is not None and not is_git_url(url):
            ctx.error(
                f"`{key}` is not a git URL: `{url}`",
                (*path, key),
                "use https://, http://, git://, ssh://, git+ssh://, git+https:// or user@host:path",
            )
            url = None
        urls[key] = url
    backends = _read_backends(ctx, reader)
    python_depends = read_python_depends(ctx, general, path, "general")
    kernel_depends = read_kernel_depends(ctx, general, path)
    hub = _read_hub(ctx, general.get("hub"))
    settings = _read_backend_settings(ctx, general, backends)

    if name is None or version is None or license_ is None or backends is None:
        return None
    py_name = py_name_override or py_name_of(name)
    return General(
        name=name,
        py_name=py_name,
        version=version,
        license=license_,
        backends=backends,
        upstream=urls["upstream"],
        source=urls["source"],
        python_depends=python_depends,
        kernel_depends=kernel_depends,
        hub=hub,
        backend_settings=settings,
    )


def _read_name(ctx: Context, reader: Reader) -> str | None:
    if not reader.require("name", 'add `name = "my-kernel"`'):
        return None
    name = reader.string("name", '"my-kernel"')
    if name is None:
        return None
    if len(name) > MAX_NAME:
        ctx.error(
            f"[general] `name` is longer than {MAX_NAME} characters",
            ("general", "name"),
            "shorten it: it names the Python package, the op namespace and file names",
        )
        return None
    if NAME_RE.match(name):
        return name
    fixed = normalise_legacy_name(name)
    hint = "a name is lowercase letters, digits and `-`, starts with a letter, ends with a letter or digit"
    if fixed is not None and fixed != name:
        hint = f"did you mean `{fixed}`? (the Python package name becomes `{py_name_of(fixed)}`)"
    ctx.error(f"invalid kernel name `{name}`" if name else "`name` is empty", ("general", "name"), hint)
    return None


def _read_backends(ctx: Context, reader: Reader) -> tuple[str, ...] | None:
    path = ("general", "backends")
    if not reader.require("backends", 'add `backends = ["cuda"]`'):
        return None
    items = reader.string_list("backends", '["cpu", "cuda"]')
    if items is None:
        return None
    if not items and not reader.table["backends"]:
        ctx.error("`backends` is empty", path, 'list at least one backend, e.g. `backends = ["cuda"]`')
        return None
    good: list[tuple[int, str]] = []
    known = backend_names()
    for i, backend in items:
        if backend in known:
            good.append((i, backend))
        else:
            hint = suggest_value(backend, known) or f"backends are: {', '.join(known)}"
            ctx.error(f"unknown backend `{backend}` in `backends`", (*path, i), hint)
    if len(good) != len(items):
        return None
    return tuple(b for _, b in reader.unique("backends", good))


def read_python_depends(ctx: Context, table: dict[str, Any], path: KeyPath, level: str) -> tuple[str, ...]:
    reader = Reader(ctx, table, path)
    items = reader.string_list("python-depends", '["einops"]')
    if not items:
        return ()
    allowed = allowed_python_dependencies(level)
    place = "[general]" if level == "general" else f"[general.{level}]"
    out: list[str] = []
    for i, name in reader.unique("python-depends", items):
        where = (*path, "python-depends", i)
        if name in allowed:
            out.append(name)
            continue
        known = PYTHON_DEPENDENCIES.get(name)
        if known is not None:
            right = "[general]" if known.level == "general" else f"[general.{known.level}]"
            ctx.error(
                f"`{name}` is not allowed in {place} `python-depends`",
                where,
                f"move it to `{right} python-depends`",
            )
            continue
        if allowed:
            hint = suggest_value(name, allowed) or f"allowed here: {', '.join(allowed)}"
        else:
            hint = f"no Python dependencies exist for {place}; remove the entry"
        ctx.error(f"unknown Python dependency `{name}` in {place} `python-depends`", where, hint)
    return tuple(out)


def read_kernel_depends(ctx: Context, table: dict[str, Any], path: KeyPath) -> tuple[KernelDependency, ...]:
    value = table.get("kernel-depends")
    if value is None:
        return ()
    example = '`kernel-depends = [{ repo-id = "org/name", version = 1 }]`'
    if not isinstance(value, list):
        ctx.error(
            "`kernel-depends` must be an array of inline tables",
            (*path, "kernel-depends"),
            f"write {example}",
        )
        return ()
    out: list[KernelDependency] = []
    for i, entry in enumerate(value):
        where = (*path, "kernel-depends", i)
        if not isinstance(entry, dict):
            ctx.error(f"`kernel-depends` entry {i + 1} must be an inline table", where, f"write {example}")
            continue
        extra = set(entry) - {"repo-id", "version", "revision"}
        for key in sorted(extra):
            ctx.error(
                f"unknown key `{key}` in a `kernel-depends` entry",
                (*where, key),
                suggest_key(key, frozenset({"repo-id", "version", "revision"})) or f"write {example}",
            )
        repo_id = entry.get("repo-id")
        if not isinstance(repo_id, str) or not is_repo_id(repo_id):
            shown = "missing" if repo_id is None else f"`{repo_id}`"
            ctx.error(f"`kernel-depends` entry {i + 1}: bad `repo-id` ({shown})", where, f"write {example}")
            continue
        has_version, has_revision = "version" in entry, "revision" in entry
        if has_version == has_revision:
            which = "both" if has_version else "neither"
            ctx.error(
                f"`kernel-depends` entry `{repo_id}` has {which} of `version` and `revision`",
                where,
                f'give exactly one: {example} or `{{ repo-id = "org/name", revision = "main" }}`',
            )
            continue
        version, revision = entry.get("version"), entry.get("revision")
        if has_version and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
            ctx.error(
                f"`kernel-depends` entry `{repo_id}`: `version` must be an integer >= 0, not `{json.dumps(version, default=str)}`",
                (*where, "version"),
                f"write `version = {version}`"
                if isinstance(version, str) and version.isdigit()
                else f"write {example}",
            )
            continue
        if has_revision and (not isinstance(revision, str) or not revision):
            ctx.error(
                f"`kernel-depends` entry `{repo_id}`: `revision` must be a non-empty string",
                (*where, "revision"),
                'write `revision = "main"` (a branch, tag or commit)',
            )
            continue
        out.append(
            KernelDependency(repo_id, version if has_version else None, revision if has_revision else None)
        )
    return tuple(out)


def _read_hub(ctx: Context, hub: object) -> Hub:
    path: KeyPath = ("general", "hub")
    if hub is None:
        return Hub()
    if not isinstance(hub, dict):
        ctx.error("`hub` must be a table", path, 'write `[general.hub]` with `repo-id = "org/name"`')
        return Hub()
    check_keys(ctx, hub, HUB, path)
    reader = Reader(ctx, hub, path)
    repo_id = reader.string("repo-id", '"org/name"')
    if repo_id is not None and not is_repo_id(repo_id):
        ctx.error(
            f"`repo-id` must be `<owner>/<name>`, not `{repo_id}`",
            (*path, "repo-id"),
            'e.g. `repo-id = "my-org/relu"`',
        )
        repo_id = None
    return Hub(repo_id, reader.string("branch", '"v1"'))


def _read_backend_settings(
    ctx: Context, general: dict[str, Any], backends: tuple[str, ...] | None
) -> tuple[tuple[str, BackendSettings], ...]:
    out: list[tuple[str, BackendSettings]] = []
    for backend, allowed in general_backend_tables().items():
        table = general.get(backend)
        if table is None:
            continue
        path: KeyPath = ("general", backend)
        if not isinstance(table, dict):
            ctx.error(f"`{backend}` must be a table", path, f"write a `[general.{backend}]` table")
            continue
        check_keys(ctx, table, allowed, path)
        reader = Reader(ctx, table, path)
        minver = reader.version("minver") if "minver" in allowed else None
        maxver = reader.version("maxver") if "maxver" in allowed else None
        check_bounds(ctx, minver, maxver, path)
        settings = BackendSettings(
            python_depends=read_python_depends(ctx, table, path, backend),
            kernel_depends=read_kernel_depends(ctx, table, path) if "kernel-depends" in allowed else (),
            minver=minver,
            maxver=maxver,
        )
        out.append((backend, settings))
    return tuple(out)


def check_bounds(ctx: Context, minver: Version | None, maxver: Version | None, path: KeyPath) -> None:
    if minver is not None and maxver is not None and minver > maxver:
        ctx.error(
            f"`minver` ({minver}) is greater than `maxver` ({maxver}) in {describe(path)}",
            (*path, "minver"),
            "swap them, or remove one bound",
        )
