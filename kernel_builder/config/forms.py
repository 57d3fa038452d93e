"""Which of the five historical forms a build.toml has (docs/migrating.md).

Detection looks only at which traits are present and runs before schema validation, so errors are
reported against the right form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel_builder.config.context import Context
from kernel_builder.config.positions import KeyPath
from kernel_builder.config.schema import ALL_FIVE_BACKENDS, GENERAL_BACKEND

#: The `[general.<backend>]` tables that may hold `kernel-depends` (an edition-5 feature).
_KERNEL_DEPENDS_TABLES = tuple(b for b, keys in GENERAL_BACKEND.items() if "kernel-depends" in keys)

CURRENT_EDITION = 5
PRE_RELEASE = "pre-release build.toml format, not supported; see update-build"


@dataclass(frozen=True)
class Form:
    number: int  # 1..5
    trait: str  # what identified it, for the legacy warning


def _kernels(doc: dict[str, Any]) -> dict[str, Any]:
    kernels = doc.get("kernel")
    return {k: v for k, v in kernels.items() if isinstance(v, dict)} if isinstance(kernels, dict) else {}


def computed_backends(doc: dict[str, Any]) -> list[str]:
    """The backends a legacy file implies: from its kernel sections, or all five if universal."""
    general: dict[str, Any] = doc["general"] if isinstance(doc.get("general"), dict) else {}
    torch: dict[str, Any] = doc["torch"] if isinstance(doc.get("torch"), dict) else {}
    if general.get("universal") is True or torch.get("universal") is True:
        return list(ALL_FIVE_BACKENDS)
    found: set[str] = set()
    for section in _kernels(doc).values():
        backend = section.get("backend")
        if isinstance(backend, str):
            found.add(backend)
            continue
        language = section.get("language", "cuda")
        found.update({"cuda-hipify": ["cuda", "rocm"], "metal": ["metal"]}.get(language, ["cuda"]))
    return sorted(found)


def backends_hint(doc: dict[str, Any]) -> str:
    backends = computed_backends(doc)
    if not backends:
        return 'add `backends = ["cuda"]` (the backends this kernel supports) to [general]'
    listed = ", ".join(f'"{b}"' for b in backends)
    return f"add `backends = [{listed}]` to [general]"


# Keys that only files of a form >= 4 have: (how messages name it, its table (``None``: top level), its key).
_V4_TRAITS: tuple[tuple[str, str | None, str], ...] = (
    ("`general.source`", "general", "source"),
    ("`[torch-noarch]`", None, "torch-noarch"),
    ("`[tvm-ffi]`", None, "tvm-ffi"),
    ("`torch.cxx-flags`", "torch", "cxx-flags"),
    ("`torch.stable-abi`", "torch", "stable-abi"),
)
# Keys that only files of a form >= 3 have (the v4 traits are v3-or-later traits too).
_V3_TRAITS = (
    ("`[general.cuda]`", "general", "cuda"),
    ("`[general.xpu]`", "general", "xpu"),
    ("`[general.neuron]`", "general", "neuron"),
    ("`general.version`", "general", "version"),
    ("`general.license`", "general", "license"),
    ("`general.upstream`", "general", "upstream"),
    *_V4_TRAITS,
)


def _first_trait(doc: dict[str, Any], traits: tuple[tuple[str, str | None, str], ...]) -> str | None:
    """How messages name the first of ``traits`` that ``doc`` has, or ``None``."""
    for label, table, key in traits:
        section = doc if table is None else doc.get(table)
        if isinstance(section, dict) and key in section:
            return label
    return None


def detect_form(doc: dict[str, Any], ctx: Context) -> Form | None:
    """The form of ``doc``, or None after reporting why it cannot be read.

    An `edition` decides at once; without one, the traits decide, newest form first: pre-release traits are
    refused, edition-5 features need the `edition`, `backends` makes v3 or v4 (and v3 traits need it), and the
    kernel sections tell v2 from v1."""
    general = _readable_general(doc, ctx)
    if general is None:
        return None
    torch: dict[str, Any] = doc["torch"] if isinstance(doc.get("torch"), dict) else {}
    if "edition" in general:
        return _edition_form(general["edition"], ctx)
    if _pre_release(general, torch, ctx) or _v5_without_edition(doc, general, torch, ctx):
        return None
    if "backends" in general:
        return _v3_or_v4(doc, general)
    if _v3_without_backends(doc, ctx):
        return None
    return _v1_or_v2(_kernels(doc), general, torch, ctx)


def _readable_general(doc: dict[str, Any], ctx: Context) -> dict[str, Any] | None:
    """The `[general]` table, or None after reporting a pre-release `[extension]` or a missing or odd `general`."""
    general = doc.get("general")
    if "extension" in doc:
        ctx.error(PRE_RELEASE, ("extension",), "rename `[extension]` to `[torch]` and add `[general] name`")
        return None
    if not isinstance(general, dict):
        if general is None:
            ctx.error("missing required table `[general]`", (), "add a `[general]` table with `name`")
        else:
            ctx.error("`general` must be a table", ("general",), "write it as a `[general]` table")
        return None
    return general


def _edition_form(edition: object, ctx: Context) -> Form | None:
    """Edition 5, or None after reporting an edition that is not an integer, newer, or one that never was."""
    if isinstance(edition, bool) or not isinstance(edition, int):
        ctx.error(
            f"`edition` must be an integer, not {type_name(edition)}",
            ("general", "edition"),
            "write `edition = 5`",
        )
        return None
    if edition == CURRENT_EDITION:
        return Form(5, "edition = 5")
    if edition > CURRENT_EDITION:
        ctx.error(
            f"edition {edition} is newer than this kernel-builder supports ({CURRENT_EDITION})",
            ("general", "edition"),
            "upgrade kernel-builder",
        )
    else:
        ctx.error(
            f"there is no edition {edition}",
            ("general", "edition"),
            "files before edition 5 have no `edition` key: remove it to read the file as v4, or set "
            "`edition = 5`",
        )
    return None


def _pre_release(general: dict[str, Any], torch: dict[str, Any], ctx: Context) -> bool:
    """Whether a file without `edition` has a pre-release trait (reported): the name or Python files in
    `[torch]`, or a string version."""
    for key in ("name", "pysrc", "pyroot"):
        if key in torch:
            ctx.error(
                PRE_RELEASE,
                ("torch", key),
                f"`[torch] {key}` is a pre-release trait: move the name to `[general] name`, list Python "
                "files in `torch-ext/<name>/`, and write the file in the current form",
            )
            return True
    if isinstance(general.get("version"), str):
        ctx.error(
            PRE_RELEASE,
            ("general", "version"),
            f'`version = "{general["version"]}"` is a pre-release trait: the version is now an integer '
            "major version (`version = 1`)",
        )
        return True
    return False


def _v5_without_edition(
    doc: dict[str, Any], general: dict[str, Any], torch: dict[str, Any], ctx: Context
) -> bool:
    """Whether a file without `edition` uses edition-5 features (reported, naming the first)."""
    features = []
    if "kernel-depends" in general or any(
        isinstance(general.get(b), dict) and "kernel-depends" in general[b] for b in _KERNEL_DEPENDS_TABLES
    ):
        features.append("`kernel-depends`")
    if "tpu" in general:
        features.append("`[general.tpu]`")
    if isinstance(torch.get("stable-abi"), dict):
        features.append("a table-valued `stable-abi`")
    if features:
        ctx.error(
            f"uses edition-5 features ({', '.join(features)}) but lacks `edition = 5`",
            _feature_path(doc, features[0]),
            "add `edition = 5` to [general]",
        )
    return bool(features)


def _v3_or_v4(doc: dict[str, Any], general: dict[str, Any]) -> Form:
    """A file with `backends` and no `edition`: v4 where it has a v4 trait or all of v4's required keys."""
    v4_trait = _first_trait(doc, _V4_TRAITS)
    if v4_trait is not None:
        return Form(4, f"{v4_trait} without 'edition'")
    if "version" in general and "license" in general and "torch" in doc:
        return Form(4, "'backends', 'version', 'license' and [torch] without 'edition'")
    return Form(3, "[general] has 'backends' but no 'edition'")


def _v3_without_backends(doc: dict[str, Any], ctx: Context) -> bool:
    """Whether a file without `backends` has a trait of v3 or later, which requires it (reported)."""
    v3_trait = _first_trait(doc, _V3_TRAITS)
    if v3_trait is not None:
        ctx.error(
            f"`general.backends` is missing (required since v3; this file uses {v3_trait})",
            ("general",),
            backends_hint(doc),
        )
    return v3_trait is not None


def _v1_or_v2(
    kernels: dict[str, Any], general: dict[str, Any], torch: dict[str, Any], ctx: Context
) -> Form | None:
    """v2 (kernel sections with `backend`, or v2's `[general]` keys) or v1 (`language`, `torch.universal`);
    None after reporting a file that mixes the two."""
    v2_traits: list[tuple[str, KeyPath]] = [
        (f"[kernel.{n}] has `backend`", ("kernel", n, "backend"))
        for n, k in kernels.items()
        if "backend" in k
    ]
    v2_traits += [
        (f"`general.{key}`", ("general", key))
        for key in ("universal", "cuda-minver", "cuda-maxver", "python-depends", "hub")
        if key in general
    ]
    v1_traits: list[tuple[str, KeyPath]] = [
        (f"[kernel.{n}] has `language`", ("kernel", n, "language"))
        for n, k in kernels.items()
        if "language" in k
    ]
    if "universal" in torch:
        v1_traits.append(("`torch.universal`", ("torch", "universal")))
    if v2_traits and v1_traits:
        ctx.error(
            f"mixes v1 and v2 traits: {v1_traits[0][0]} (v1) and {v2_traits[0][0]} (v2)",
            v1_traits[0][1],
            "a file is read as one form: use `backend` in every kernel section (v2), or run "
            "`kernel-builder update-build` on a consistent v1 file",
        )
        return None
    if v2_traits:
        if any("`backend`" in t for t, _ in v2_traits):
            return Form(2, "kernel sections have 'backend' but [general] has no 'backends'")
        return Form(2, f"{v2_traits[0][0]} without 'backends'")
    return Form(1, "kernel sections have no 'backend' and [general] has no 'backends'")


def _feature_path(doc: dict[str, Any], feature: str) -> tuple[str, ...]:
    general = doc["general"]
    if feature == "`kernel-depends`":
        if "kernel-depends" in general:
            return ("general", "kernel-depends")
        for backend in _KERNEL_DEPENDS_TABLES:
            if isinstance(general.get(backend), dict) and "kernel-depends" in general[backend]:
                return ("general", backend, "kernel-depends")
    if feature == "`[general.tpu]`":
        return ("general", "tpu")
    return ("torch", "stable-abi")


# TOML's value types as messages name them; bool before int (a bool is an int to Python).
_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
)


def type_name(value: object) -> str:
    """What a TOML value is, in words (``an integer``); the only other type TOML has is a date or time."""
    return next((name for kind, name in _TYPE_NAMES if isinstance(value, kind)), "a date/time")
