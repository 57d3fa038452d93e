"""A component of a variant's extension: one object library of the generated CMake project (docs/layout.md)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Component:
    """One object library of the extension: a kernel section, or the binding sources of ``[torch] src``."""

    name: str
    sources: tuple[str, ...]  # compiled files, relative to the kernel root
    include: tuple[str, ...] = ()
    cxx_flags: tuple[str, ...] = ()
    cuda_flags: tuple[str, ...] = ()
    archs: tuple[str, ...] = ()  # effective CUDA capabilities (cuda variants)
    depends: tuple[str, ...] = ()
    binding: bool = False  # the ``[torch] src`` component (a section may be named like it: this tells)
    #: The sections that all list these sources (:mod:`.shared_sources`): compiled once, with what each gives.
    shared_by: tuple[str, ...] = ()
