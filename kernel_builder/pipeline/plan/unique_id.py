"""The deterministic content id behind every op namespace (docs/layout.md).

Distinct content gives distinct ids, so two versions of a kernel load side by side in one process; identical
content gives the same id with or without git, so a rebuild is the same kernel. A build computes it once, from
the files its source scan read (:mod:`kernel_builder.pipeline.plan.scan`).
"""

from __future__ import annotations

import hashlib
import keyword
import re
from collections.abc import Iterable

import kernel_builder
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import UsageError
from kernel_builder.pipeline.plan.sources import id_input_files, read_inputs

UNIQUE_ID_RE = re.compile(r"[A-Za-z0-9_]{1,40}")


def canonical_text(digests: Iterable[tuple[str, str]], tool_version: str | None = None) -> str:
    """The canonical text whose SHA-256 gives the id (also recorded to detect changes), from the id inputs'
    ``(path, sha256)`` pairs in :func:`~kernel_builder.pipeline.plan.sources.id_input_files` order.

    ``tool_version`` defaults to ``kernel_builder.__version__``, read at call time.
    """
    version = kernel_builder.__version__ if tool_version is None else tool_version
    lines = ["kernel-builder-unique-id 1", f"generator {version}"]
    lines += [f"{digest} {rel}" for rel, digest in digests]
    return "".join(line + "\n" for line in lines)


def id_of_text(text: str) -> str:
    """The unique id of a :func:`canonical_text`."""
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def id_text(project: KernelProject, tool_version: str | None = None) -> str:
    """:func:`canonical_text` of the project's files as they are now."""
    read = read_inputs(project, id_input_files(project))
    return canonical_text(((file.path, file.sha256) for file, _ in read), tool_version)


def compute_unique_id(project: KernelProject, tool_version: str | None = None) -> str:
    return id_of_text(id_text(project, tool_version))


def check_unique_id(value: str) -> str:
    """Validates ``--unique-id``."""
    if UNIQUE_ID_RE.fullmatch(value):  # `$` alone would accept a trailing newline
        return value
    hint = " (use `_` instead of `-`)" if "-" in value else ""
    raise UsageError(f"--unique-id {value!r} is invalid: use 1 to 40 letters, digits or `_`{hint}")


def ops_name(py_name: str, backend: str, unique_id: str) -> str:
    """``_<py_name>_<backend>_<id>``: the namespace, module, target and metadata id of a variant."""
    name = f"_{py_name}_{backend}_{unique_id}"
    if not name.isidentifier() or keyword.iskeyword(name):
        raise UsageError(f"op namespace {name!r} is not a valid Python identifier")
    return name
