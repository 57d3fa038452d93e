"""The deterministic content id behind every op namespace (docs/layout.md).

Distinct content gives distinct ids, so two versions of a kernel load side by side in one process; identical
content gives the same id with or without git, so a rebuild is the same kernel.
"""

from __future__ import annotations

import hashlib
import keyword
import re

import kernel_builder
from kernel_builder.build.plan.sources import id_input_files
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import UsageError

UNIQUE_ID_RE = re.compile(r"[A-Za-z0-9_]{1,40}")


def id_text(project: KernelProject, tool_version: str | None = None) -> str:
    """The canonical text whose SHA-256 gives the id (also recorded to detect changes).

    ``tool_version`` defaults to ``kernel_builder.__version__``, read at call time.
    """
    version = kernel_builder.__version__ if tool_version is None else tool_version
    lines = ["kernel-builder-unique-id 1", f"generator {version}"]
    for rel in id_input_files(project):
        digest = hashlib.sha256((project.root / rel).read_bytes()).hexdigest()
        lines.append(f"{digest} {rel}")
    return "".join(line + "\n" for line in lines)


def compute_unique_id(project: KernelProject, tool_version: str | None = None) -> str:
    return hashlib.sha256(id_text(project, tool_version).encode()).hexdigest()[:10]


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
