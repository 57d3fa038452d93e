"""The project's sources, scanned once per command into an immutable snapshot that the plan carries.

A build needs the same facts about its sources in several places: the unique id hashes the id inputs, the
build record compares their digest, the package stage copies the shipped Python files and lints them, the
provenance asks git about them, and ``.kernel-builder/sources.json`` keeps them for the loader. Each used to list
the package directory and read the files again, and the id came from one reading while the shipped files came
from another, minutes later, after compiling. :func:`scan_sources` lists the package directory once and reads
each id input once; everything downstream takes the :class:`SourceScan`.

The snapshot is taken when the build plans. A source edited while the build compiles does not change what this
build ships or records: it ships the shipped files' bytes read at plan time (the ones its id hashes), and
``sources.json`` records the size and time they had then, so the loader sees the edit as a change and the next
build picks it up.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from kernel_builder.config.model import KernelProject
from kernel_builder.formats.source_snapshot import SourceFile
from kernel_builder.pipeline.plan.sources import (
    id_input_files,
    package_dir,
    package_files,
    read_inputs,
    user_ops_file,
)
from kernel_builder.pipeline.plan.unique_id import canonical_text, id_of_text


@dataclass(frozen=True)
class SourceScan:
    """What a build knows of its sources, as read once when it planned (see the module's docstring)."""

    #: The Python package directory, ``/``-separated, relative to the kernel root (``torch-ext/relu``).
    package: str
    #: The package's files every variant ships, relative to :attr:`package`, sorted.
    shipped: tuple[str, ...]
    #: Hidden files the extension filter would pick (``.private.py``): not shipped, and the build says so.
    hidden: tuple[str, ...]
    #: The files the unique id hashes, in :func:`~kernel_builder.pipeline.plan.sources.id_input_files` order.
    inputs: tuple[SourceFile, ...]
    #: The canonical text the unique id is the hash of (:func:`~kernel_builder.pipeline.plan.unique_id.canonical_text`).
    id_text: str
    #: The unique id of these sources (``--unique-id`` may replace it in a build).
    unique_id: str
    #: The package has its own top-level ``_ops.py``, which the generated one replaces.
    user_ops: bool
    #: The bytes of each shipped file, by its path in :attr:`shipped`: what the variants ship and the lint reads.
    contents: Mapping[str, bytes] = field(repr=False, compare=False)

    @property
    def input_paths(self) -> list[str]:
        """The id inputs' paths, relative to the kernel root."""
        return [file.path for file in self.inputs]


def scan_sources(project: KernelProject, tool_version: str | None = None) -> SourceScan:
    """List the package directory once and read every id input once (``tool_version`` as in
    :func:`~kernel_builder.pipeline.plan.unique_id.canonical_text`)."""
    shipped, hidden = package_files(project)
    package = package_dir(project).relative_to(project.root).as_posix()
    in_package = {f"{package}/{rel}": rel for rel in shipped}
    inputs: list[SourceFile] = []
    contents: dict[str, bytes] = {}  # only the shipped files' bytes are kept; the others' digests suffice
    for file, content in read_inputs(project, id_input_files(project, shipped)):
        inputs.append(file)
        if file.path in in_package:
            contents[in_package[file.path]] = content
    text = canonical_text(((file.path, file.sha256) for file in inputs), tool_version)
    return SourceScan(
        package=package,
        shipped=tuple(shipped),
        hidden=tuple(hidden),
        inputs=tuple(inputs),
        id_text=text,
        unique_id=id_of_text(text),
        user_ops=user_ops_file(project) is not None,
        contents=MappingProxyType(contents),
    )
