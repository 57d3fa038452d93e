"""A JSON Schema of build.toml (edition 5), for editors: ``kernel-builder schema``.

Derived from the key sets of :mod:`kernel_builder.config.schema` (the ones the validator uses) and the value
rules of :mod:`kernel_builder.config.values`; :func:`build_toml_schema` refuses to produce a schema whose
tables disagree with those key sets. The validator stays the authority: the schema cannot express every rule
(backend-specific kernel keys, flags with spaces, version ranges), so a file can pass the schema and still
get an error from ``kernel-builder check-config``. See ``docs/build-toml.md``.
"""

from __future__ import annotations

from typing import Any

from kernel_builder.backends.gpu_archs import CAPABILITY_RE, ROCM_ARCH_RE
from kernel_builder.config import schema
from kernel_builder.config.values import KERNEL_SECTION_RE, NAME_RE, VERSION_RE
from kernel_builder.formats.dependencies import KERNEL_DEPENDS, PYTHON_DEPENDENCIES
from kernel_builder.formats.identifiers import REPO_ID_PATTERN

SCHEMA_ID = "urn:kernel-builder:build-toml:5"

Json = dict[str, Any]


def _strings(description: str, **extra: Any) -> Json:
    return {"type": "array", "items": {"type": "string", **extra}, "description": description}


def _version(description: str) -> Json:
    return {"type": "string", "pattern": VERSION_RE.pattern, "description": description}


def _table(description: str, properties: Json, keys: frozenset[str], required: tuple[str, ...] = ()) -> Json:
    if set(properties) != set(keys):
        raise AssertionError(
            f"schema of {description!r} disagrees with the validator: {sorted(set(properties) ^ keys)}"
        )
    table: Json = {
        "type": "object",
        "description": description,
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        table["required"] = list(required)
    return table


def _python_depends(level: str) -> Json:
    names = sorted(d.name for d in PYTHON_DEPENDENCIES.values() if d.level == level)
    items: Json = {"enum": names} if names else {"not": {}}
    return {
        "type": "array",
        "items": items,
        "uniqueItems": True,
        "description": "Python packages the kernel imports",
    }


KERNEL_DEPENDENCY: Json = {
    "type": "object",
    "description": "a Hub kernel this one uses: exactly one of version and revision",
    "properties": {
        "repo-id": {"type": "string", "pattern": REPO_ID_PATTERN},
        "version": {"type": "integer", "minimum": 0},
        "revision": {"type": "string", "minLength": 1},
    },
    "required": ["repo-id"],
    "oneOf": [{"required": ["version"]}, {"required": ["revision"]}],
    "additionalProperties": False,
}


def _kernel_depends() -> Json:
    return {"type": "array", "items": KERNEL_DEPENDENCY, "description": "Hub kernels this one uses"}


def _general() -> Json:
    def backend_table(backend: str) -> Json:
        properties: Json = {
            "minver": _version("oldest CUDA version to build for"),
            "maxver": _version("newest CUDA version to build for"),
            "python-depends": _python_depends(backend),
            "kernel-depends": _kernel_depends(),
        }
        keys = schema.GENERAL_BACKEND[backend]
        return _table(f"[general.{backend}]", {k: v for k, v in properties.items() if k in keys}, keys)

    hub = _table(
        "[general.hub]: where `kernel-builder upload` publishes",
        {
            "repo-id": {"type": "string", "pattern": REPO_ID_PATTERN, "description": "<owner>/<name>"},
            "branch": {"type": "string", "minLength": 1, "description": "instead of v<version>"},
        },
        schema.HUB,
    )
    properties: Json = {
        "name": {
            "type": "string",
            "pattern": NAME_RE.pattern,
            "description": "lowercase letters, digits and -",
        },
        "version": {
            "type": "integer",
            "minimum": 0,
            "description": "major version of the public API (Hub branch v<N>)",
        },
        "edition": {"const": 5, "description": "the format edition"},
        "license": {"type": "string", "minLength": 1, "description": "SPDX identifier"},
        "upstream": {"type": "string", "description": "git URL of the kernel's original code"},
        "source": {"type": "string", "description": "git URL of this project"},
        "backends": {
            "type": "array",
            "items": {"enum": list(schema.BACKENDS)},
            "minItems": 1,
            "uniqueItems": True,
            "description": "the backends the kernel supports",
        },
        "python-depends": _python_depends("general"),
        "kernel-depends": _kernel_depends(),
        "hub": hub,
        **{backend: backend_table(backend) for backend in schema.GENERAL_BACKEND},
    }
    return _table(
        "[general]", properties, schema.GENERAL, ("name", "version", "edition", "license", "backends")
    )


def _capabilities(description: str) -> Json:
    return _strings(description, pattern=CAPABILITY_RE.pattern)


def _rocm_archs(description: str) -> Json:
    return _strings(description, pattern=ROCM_ARCH_RE.pattern)


def _frameworks() -> dict[str, Json]:
    common: Json = {
        "src": _strings("sources and headers"),
        "include": _strings("include directories"),
        "pyext": _strings("extensions of the files shipped from the Python package"),
        "cxx-flags": _strings("extra C++ flags, one per element"),
    }
    torch = _table(
        "[torch]: a compiled Torch extension",
        {
            **common,
            "minver": _version("oldest Torch version to build for"),
            "maxver": _version("newest Torch version to build for"),
            "stable-abi": {
                "description": "build against the Torch stable ABI of this version (for every backend, or per backend)",
                "oneOf": [
                    {"type": "string", "pattern": VERSION_RE.pattern},
                    {
                        "type": "object",
                        "additionalProperties": {"type": "string", "pattern": VERSION_RE.pattern},
                    },
                ],
            },
        },
        schema.TORCH,
    )
    noarch = _table(
        "[torch-noarch]: a pure-Python Torch kernel",
        {
            "pyext": common["pyext"],
            "cuda-capabilities": _capabilities("informational, copied into the torch-cuda metadata"),
            "cuda_capabilities": _capabilities("snake-case spelling of cuda-capabilities"),
            "rocm-archs": _rocm_archs("informational, copied into the torch-rocm metadata"),
            "rocm_archs": _rocm_archs("snake-case spelling of rocm-archs"),
        },
        schema.TORCH_NOARCH,
    )
    tvm = _table("[tvm-ffi]: a TVM FFI extension", dict(common), schema.TVM_FFI, ("src",))
    return {"torch": torch, "torch-noarch": noarch, "tvm-ffi": tvm}


def _kernel() -> Json:
    section = _table(
        "[kernel.<name>]: one compiled part of a [torch] kernel",
        {
            "backend": {"enum": list(schema.KERNEL_BACKENDS)},
            "src": {**_strings("files to compile and the headers they include"), "minItems": 1},
            "depends": {
                "type": "array",
                "items": {"enum": list(KERNEL_DEPENDS)},
                "uniqueItems": True,
                "description": "torch, a CUTLASS line, sycl_tla or metal-cpp",
            },
            "include": _strings("include directories"),
            "cxx-flags": _strings("C++ flags, one per element"),
            "cuda-capabilities": _capabilities("CUDA capabilities to compile for (cuda)"),
            "cuda-flags": _strings("nvcc flags for this section's .cu files (cuda)"),
            "cuda-minver": _version("leave this section out of older CUDA versions (cuda)"),
            "rocm-archs": _rocm_archs("ROCm architectures (rocm)"),
            "hip-flags": _strings("flags for HIP files (rocm)"),
            "sycl-flags": _strings("flags for SYCL files (xpu)"),
        },
        schema.KERNEL,
        ("backend", "src", "depends"),
    )
    return {
        "type": "object",
        "description": "the [kernel.<name>] sections",
        "propertyNames": {"pattern": KERNEL_SECTION_RE.pattern},
        "additionalProperties": section,
    }


def build_toml_schema() -> Json:
    """The JSON Schema (draft 2020-12) of an edition-5 build.toml."""
    frameworks = _frameworks()
    properties: Json = {"general": _general(), **frameworks, "kernel": _kernel()}
    if set(properties) != set(schema.TOP_LEVEL):
        raise AssertionError(
            f"top-level tables disagree with the validator: {sorted(set(properties) ^ schema.TOP_LEVEL)}"
        )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "kernel-builder build.toml (edition 5)",
        "type": "object",
        "properties": properties,
        "required": ["general"],
        "oneOf": [{"required": [name]} for name in frameworks],
        "additionalProperties": False,
    }
