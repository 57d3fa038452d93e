"""The closed key sets of every build.toml table and the did-you-mean rules (docs/build-toml.md).

This module is the one place that knows which keys exist where; the validator and the reference docs
both read it.
"""

from __future__ import annotations

from kernel_builder import backends as _backends


def backend_names() -> tuple[str, ...]:
    """Every value `general.backends` may hold: the registered backends, sorted (the registry decides)."""
    return tuple(sorted(_backends.names()))


def kernel_backend_names() -> tuple[str, ...]:
    """Every value a `[kernel.<name>]` `backend` may hold: backends with a compiled form, sorted."""
    return tuple(sorted(_backends.names(where="kernel_sections")))


def general_backend_tables() -> dict[str, frozenset[str]]:
    """The `[general.<backend>]` tables and their keys, in registry order."""
    return {b.name: b.general_table for b in _backends.all_backends() if b.general_table is not None}


def kernel_backend_keys() -> dict[str, str]:
    """Kernel keys valid only with one backend, and that backend."""
    return {key: b.name for b in _backends.all_backends() for key in b.kernel_keys}


#: The built-in backends (the registry at import time; validation asks the registry each time).
BACKENDS = backend_names()
KERNEL_BACKENDS = kernel_backend_names()
#: What a legacy `universal = true` kernel lists in `backends` when migrated: frozen, it is a fact of old files.
ALL_FIVE_BACKENDS = ("cpu", "cuda", "metal", "rocm", "xpu")
FRAMEWORKS = ("torch", "torch-noarch", "tvm-ffi")

TOP_LEVEL = frozenset({"general", *FRAMEWORKS, "kernel"})
GENERAL_BACKEND = general_backend_tables()
GENERAL = frozenset(
    {
        "name", "version", "edition", "license", "upstream", "source", "backends",
        "python-depends", "kernel-depends", "hub", *GENERAL_BACKEND,
    }
)  # fmt: skip
GENERAL_SUBTABLES = ("hub", *GENERAL_BACKEND)
HUB = frozenset({"repo-id", "branch"})
TORCH = frozenset({"src", "include", "pyext", "minver", "maxver", "cxx-flags", "stable-abi"})
TORCH_NOARCH = frozenset({"pyext", "cuda-capabilities", "cuda_capabilities", "rocm-archs", "rocm_archs"})
TVM_FFI = frozenset({"src", "include", "pyext", "cxx-flags"})
#: Kernel keys valid only with one backend.
KERNEL_BACKEND_KEYS = kernel_backend_keys()
KERNEL = frozenset({"backend", "src", "depends", "include", "cxx-flags", *KERNEL_BACKEND_KEYS})

_ALIASES = {
    "sources": "src",
    "srcs": "src",
    "source": "src",
    "dependencies": "depends",
    "deps": "depends",
    "dependency": "depends",
    "includes": "include",
    "include-dirs": "include",
}
_ARCH_ALIASES = ("capabilities", "cuda-archs", "archs", "arch", "cuda-arch", "gpu-archs")

_TABLE_RENAMES = {
    "kernels": "kernel",
    "torch_noarch": "torch-noarch",
    "torch-universal": "torch-noarch",
    "tvm_ffi": "tvm-ffi",
    "tvmffi": "tvm-ffi",
    "extension": "torch",
}

#: Where a key that is unknown in one table does belong (rule 4 of the unknown-key hints).
_BELONGS = {
    **{key: f'a `[kernel.<name>]` section with `backend = "{b}"`' for key, b in KERNEL_BACKEND_KEYS.items()},
    "backend": "a `[kernel.<name>]` section",
    "depends": "a `[kernel.<name>]` section",
    "backends": "`[general]`",
    "upstream": "`[general]`",
    "minver": "`[torch]` or `[general.cuda]`",
    "maxver": "`[torch]` or `[general.cuda]`",
    "cxx-flags": "`[torch]` or a `[kernel.<name>]` section",
    "name": "`[general]`",
    "version": "`[general]`",
    "license": "`[general]`",
    "edition": "`[general]`",
    "repo-id": "`[general.hub]`",
    "branch": "`[general.hub]`",
    "python-depends": "`[general]` or a `[general.<backend>]` table",
    "kernel-depends": "`[general]` or a `[general.<backend>]` table",
    "stable-abi": "`[torch]`",
    "pyext": "`[torch]` or `[torch-noarch]`",
    "src": "`[torch]` or a `[kernel.<name>]` section",
    "include": "`[torch]` or a `[kernel.<name>]` section",
}

_LEGACY = {
    "universal": "`universal` was removed in edition 5: use a `[torch-noarch]` table for a pure-Python kernel",
    "language": '`language` was removed in edition 5: use `backend = "cuda"` (or "metal", "rocm")',
    "cuda-minver": "`[general] cuda-minver` became `minver` in a `[general.cuda]` table",
    "cuda-maxver": "`[general] cuda-maxver` became `maxver` in a `[general.cuda]` table",
}


def normalise(key: str) -> str:
    return key.lower().replace("_", "-")


def suggest_key(
    key: str, allowed: frozenset[str], *, backend: str | None = None, table: str = ""
) -> str | None:
    """The hint for an unknown key: the first of five rules that applies (close spelling, alias, arch alias, closest key, the table it belongs in)."""
    norm = normalise(key)
    if norm in allowed and norm != key:
        return f"did you mean `{norm}`?"
    alias = _ALIASES.get(norm)
    if alias is not None and alias in allowed:
        return f"did you mean `{alias}`?"
    if norm in _ARCH_ALIASES:
        spec = _backends.find(backend) if backend is not None else None
        wanted = spec.arch_key if spec is not None and spec.arch_key else "cuda-capabilities"
        if wanted in allowed or backend is None:
            return f"did you mean `{wanted}`?"
    close = closest(norm, allowed)
    if close is not None:
        return f"did you mean `{close}`?"
    # `[general] cuda-minver` is valid elsewhere too (`[kernel.<name>]`), but it is the v2 key that moved
    if table == "[general]" and norm in _LEGACY:
        return _LEGACY[norm]
    if norm in _BELONGS and norm not in allowed:
        return f"`{norm}` belongs in {_BELONGS[norm]}"
    if norm in ("universal", "language"):
        return _LEGACY[norm]
    return None


def suggest_table(name: str, allowed: frozenset[str]) -> str | None:
    norm = normalise(name)
    if norm in _TABLE_RENAMES and _TABLE_RENAMES[norm] in allowed:
        return f"did you mean `[{_TABLE_RENAMES[norm]}]`?"
    if norm in allowed:
        return f"did you mean `[{norm}]`?"
    close = closest(norm, allowed)
    return f"did you mean `[{close}]`?" if close else None


def suggest_value(value: str, allowed: tuple[str, ...] | list[str] | frozenset[str]) -> str | None:
    """Did-you-mean for enumerated values (backends, depends, Python dependency names)."""
    norm = normalise(value)
    for candidate in allowed:
        if normalise(candidate) == norm:
            return f"did you mean `{candidate}`?"
    import difflib  # only for a message: a build.toml without mistakes never needs it

    matches = difflib.get_close_matches(norm, [normalise(a) for a in allowed], n=2, cutoff=0.7)
    originals = {normalise(a): a for a in allowed}
    if not matches:
        return None
    names = " or ".join(f"`{originals[m]}`" for m in sorted(matches))
    return f"did you mean {names}?"


def closest(word: str, allowed: frozenset[str] | set[str]) -> str | None:
    """The allowed word most like ``word``; failing that, one a single typo away (two letters swapped, one
    letter wrong, missing or extra), which similarity alone misses in short words (``scr`` for ``src``)."""
    import difflib  # only for a message, as in suggest_value

    best: tuple[float, str] | None = None
    for candidate in sorted(allowed):
        ratio = difflib.SequenceMatcher(None, word, normalise(candidate)).ratio()
        if ratio >= 0.7 and (best is None or ratio > best[0]):
            best = (ratio, candidate)
    if best is not None:
        return best[1]
    if len(word) < 3:
        return None
    typos = [c for c in sorted(allowed) if one_typo_apart(word, normalise(c))]
    return typos[0] if len(typos) == 1 else None


def one_typo_apart(a: str, b: str) -> bool:
    """One adjacent transposition, substitution, insertion or deletion turns ``a`` into ``b``."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        if len(diff) == 1:
            return True
        return (
            len(diff) == 2
            and diff[1] == diff[0] + 1
            and a[diff[0]] == b[diff[1]]
            and a[diff[1]] == b[diff[0]]
        )
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))
