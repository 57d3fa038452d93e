"""A source file that several kernel sections list is compiled once (docs/build-toml.md, "Shared sources").

Kernels split one extension into sections per GPU generation and still list their common files (an API layer,
a scheduler) in each: kernels-community's flash-mla lists ``csrc/api/api_impl.cu`` in its SM100 and its SM90
section. Each section is an object library of its own, so compiling such a file in both would define its symbols
twice and the link would fail. Hugging Face's builder compiles every section's files as one target, setting each
section's flags and capabilities on its files, so a shared file is compiled once with what all its sections give
it; this module does the same as a component of its own:

- capabilities: the union of those its sections are compiled for in this variant;
- ``cuda-flags`` and ``cxx-flags``: each section's, in the order of the sections in build.toml (repeats kept:
  a flag may take the next one as its value);
- ``include``: each section's directories, first occurrence first;
- ``depends``: the union.

Only the sections this variant builds count: a section whose ``cuda-minver`` the CUDA version does not meet
gives the file nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from kernel_builder.backends import gpu_archs
from kernel_builder.pipeline.plan.components import Component


def share_sources(components: Sequence[Component]) -> tuple[Component, ...]:
    """``components`` (kernel sections, in build.toml's order) with every source listed by more than one of them
    moved into one component per set of sections that share it, placed after the last of those sections."""
    owners: dict[str, tuple[str, ...]] = {}
    for component in components:
        for source in component.sources:
            owners[source] = (*owners.get(source, ()), component.name)
    groups: dict[tuple[str, ...], list[str]] = {}
    for source, names in owners.items():
        if len(names) > 1:
            groups.setdefault(names, []).append(source)
    if not groups:
        return tuple(components)
    shared = {source for sources in groups.values() for source in sources}
    by_name = {c.name: c for c in components}
    out: list[Component] = []
    for component in components:
        out.append(replace(component, sources=tuple(s for s in component.sources if s not in shared)))
        for names, sources in groups.items():
            if names[-1] == component.name:
                out.append(_shared_component([by_name[n] for n in names], sources))
    return tuple(out)


def _shared_component(sections: Sequence[Component], sources: Sequence[str]) -> Component:
    return replace(
        sections[0],
        name="+".join(s.name for s in sections),
        sources=tuple(sources),
        include=_first_occurrences(d for s in sections for d in s.include),
        cxx_flags=tuple(f for s in sections for f in s.cxx_flags),
        cuda_flags=tuple(f for s in sections for f in s.cuda_flags),
        archs=gpu_archs.union_archs(s.archs for s in sections if s.archs),
        depends=_first_occurrences(d for s in sections for d in s.depends),
        shared_by=tuple(s.name for s in sections),
    )


def _first_occurrences(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))
