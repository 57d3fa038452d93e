"""Candidate variants of a project: every matrix entry that applies to it, and whether this host builds it.

One function serves ``list-variants``, ``matrix``, ``build --variant/--required/--all-variants`` and
completeness checks, so they can never disagree (docs/layout.md).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass

from kernel_builder import backends
from kernel_builder.common.progress import ProgressSink
from kernel_builder.config.archs import applicable_entries, arch_problems
from kernel_builder.config.model import KernelProject, Torch
from kernel_builder.formats.matrix import Matrix, MatrixEntry, load_matrix
from kernel_builder.formats.variants import Variant, noarch_variant, variant_for_entry
from kernel_builder.pipeline.plan.planner import (
    BUILDABLE_HOSTS,
    buildable_host,
    cannot_build_message,
    cross_targets,
    host_system,
    word_list,
)


@dataclass(frozen=True)
class Candidate:
    variant: Variant
    backend: str
    entry: MatrixEntry | None  # None for noarch variants
    system: str | None
    required: bool
    reason: str | None = None  # why this host cannot build it; None when it can
    #: Built for another system than this host's, with a cross compiler and a target environment (docs/cross.md).
    cross: bool = False

    @property
    def name(self) -> str:
        return self.variant.name

    @property
    def buildable(self) -> bool:
        return self.reason is None


def _cannot_build_system(backend: str, system: str) -> str:
    from kernel_builder.pipeline.plan.runners import NO_RUNNER

    elsewhere = NO_RUNNER.get(system.partition("-")[2])
    if elsewhere is not None:  # no host of this tool builds it, whatever this one is
        return f"variant for {system}: {elsewhere}"
    hosts = " and ".join(BUILDABLE_HOSTS)
    return (
        f"variant for {system} cannot be built on this host ({host_system()}): this kernel-builder compiles "
        f"{backend} variants on {hosts} for the same system, and {word_list(backends.names(where='cross_builds'))} "
        "variants for aarch64-linux on x86_64-linux (cross)"
    )


def _cross_problem(backend: str, system: str) -> str | None:
    """Why this host cannot cross-compile ``backend`` for ``system``, or None (a backend that ``cross_builds``, with
    the cross compiler; a cuda variant also needs this host's nvcc of its CUDA version, checked as for native
    ones)."""
    from kernel_builder.pipeline.environment.target_env import cross_compiler_problem

    if not backends.get(backend).cross_builds:
        return _cannot_build_system(backend, system)
    return cross_compiler_problem(system)


def aot_candidates(project: KernelProject, matrix: Matrix | None = None) -> list[Candidate]:
    """Every compiled candidate, in matrix order, each with the reason it is not buildable here (if any)."""
    config = project.config
    framework = config.framework
    if not isinstance(framework, Torch):
        return []
    matrix = matrix or load_matrix()
    e20 = {(p.backend, p.version): p.message for p in arch_problems(config, matrix) if not p.required}
    out: list[Candidate] = []
    for backend in config.aot_backends():
        abi = framework.stable_abi_for(backend)
        pairs = [
            (entry, system)
            for entry in applicable_entries(config, matrix, backend)
            for system in entry.systems
        ]
        chosen = _newest_per_compute(pairs) if abi is not None else [(e, s, e.required) for e, s in pairs]
        host = buildable_host()
        for entry, system, required in chosen:
            variant = variant_for_entry(entry, system, abi.major_minor if abi is not None else None)
            reason = None
            cross = host is not None and system in cross_targets()
            if not backends.get(backend).buildable:
                reason = cannot_build_message(backend)
            elif host is None or (system != host and not cross):
                reason = _cannot_build_system(backend, system)
            elif cross:
                reason = _cross_problem(backend, system)
            if reason is None:
                version = tuple(entry.version[:2]) if entry.version is not None else None
                key = (backend, version if backends.get(backend).gpu_arch == "capability" else None)
                if key in e20:
                    reason = e20[key]
            out.append(Candidate(variant, backend, entry, system, required, reason, cross=cross))
    return out


def _newest_per_compute(pairs: list[tuple[MatrixEntry, str]]) -> list[tuple[MatrixEntry, str, bool]]:
    """With the stable ABI, one Torch serves every newer one: keep the newest Torch per (compute version,
    system), so each stable-ABI variant name appears once even where entries list different systems. The
    variant is required when any entry it stands for is."""
    newest: dict[tuple[object, ...], MatrixEntry] = {}
    required: dict[tuple[object, ...], bool] = {}
    for entry, system in pairs:
        key = (entry.backend, entry.version, system)
        if key not in newest or entry.torch > newest[key].torch:
            newest[key] = entry
        required[key] = required.get(key, False) or entry.required
    return [
        (e, s, required[(e.backend, e.version, s)])
        for e, s in pairs
        if newest[(e.backend, e.version, s)] is e
    ]


def with_availability(
    candidates: list[Candidate], served: Collection[str] = (), progress: ProgressSink | None = None
) -> list[Candidate]:
    """``candidates`` with the reason each buildable one cannot be built *on this host*: its Torch build is on
    no index pip can reach, or no compiler of its CUDA version can be had (see ``provision``). Variants that
    ``served`` names (the running interpreter's) or whose build environment exists need no check.

    Every torch question is answered from one listing per source (pip's configured indexes and find-links,
    and each entry's flavour index), fetched side by side before the questions are asked; the CUDA compiler
    checks run meanwhile. ``progress`` hears each listing fetched and, per probed variant, what is being
    asked and the verdict (``list-variants`` shows it)."""
    from concurrent.futures import ThreadPoolExecutor

    from kernel_builder.pipeline.environment.isolated_envs import EnvSpec, env_ready
    from kernel_builder.pipeline.environment.provision import (
        Capped,
        Unavailable,
        resolve_torch,
        toolkit_problem,
    )
    from kernel_builder.pipeline.environment.target_env import TargetSpec, target_ready

    def report(name: str, stage: str) -> None:
        if progress is not None:
            progress.stage(name, stage)

    def needs_torch(candidate: Candidate) -> bool:
        entry = candidate.entry
        if (
            candidate.reason is not None
            or entry is None
            or entry.torch_pin is None
            or candidate.name in served
        ):
            return False
        if candidate.cross:
            assert candidate.system is not None
            return not target_ready(TargetSpec.for_entry(entry, candidate.system))
        return not env_ready(EnvSpec.for_entry(entry))

    def problem(candidate: Candidate) -> str | None:
        entry = candidate.entry
        if candidate.reason is not None or entry is None or candidate.name in served:
            return candidate.reason
        if backends.get(entry.backend).needs_nvcc and entry.version is not None:
            report(candidate.name, f"looking for a CUDA {entry.version[0]}.{entry.version[1]} compiler")
            toolkit = toolkit_problem((entry.version[0], entry.version[1]))
            if toolkit is not None:
                report(candidate.name, "not buildable here (no CUDA compiler)")
                return toolkit
        if not needs_torch(candidate):
            report(candidate.name, "buildable here")
            return None
        assert entry.torch_pin is not None
        report(candidate.name, f"finding torch {entry.torch_pin} ({entry.compute}) in the index listings")
        try:
            resolve_torch(
                entry.torch_pin, entry.compute, entry.index_url, candidate.system if candidate.cross else None
            )
        except Unavailable as error:
            why = "pip's configuration caps torch" if isinstance(error, Capped) else "no such torch"
            report(candidate.name, f"not buildable here ({why})")
            return str(error)
        report(candidate.name, "buildable here (cross)" if candidate.cross else "buildable here")
        return None

    with ThreadPoolExecutor(max_workers=8) as pool:
        wanted = [c.entry.index_url for c in candidates if c.entry is not None and needs_torch(c)]
        fetching = (
            pool.submit(_fetch_torch_listings, tuple(u for u in wanted if u), report) if wanted else None
        )
        reasons = list(pool.map(problem, candidates))
        if fetching is not None:
            fetching.result()
    return [dataclasses.replace(c, reason=r) for c, r in zip(candidates, reasons)]


def _fetch_torch_listings(index_urls: tuple[str, ...], report: Callable[[str, str], None]) -> None:
    """Read every source's torch listing at once (pip's settings first), saying what each source gave."""
    from kernel_builder.pipeline.environment.provision import torch_listings

    report("indexes", "reading pip's configuration and fetching torch's file listings")
    for listing in torch_listings(tuple(dict.fromkeys(index_urls))):
        verdict = listing.problem or f"{len(listing.files)} torch wheel files"
        report("indexes", f"{listing.source}: {verdict}")


def noarch_candidates(project: KernelProject) -> list[Candidate]:
    from kernel_builder.config.model import TorchNoarch

    config = project.config
    names = config.general.backends if isinstance(config.framework, TorchNoarch) else config.noarch_backends()
    return [Candidate(noarch_variant(b), b, None, None, True) for b in names]


def all_candidates(project: KernelProject, matrix: Matrix | None = None) -> list[Candidate]:
    return aot_candidates(project, matrix) + noarch_candidates(project)


@dataclass(frozen=True)
class Selection:
    """What ``build`` was asked for: named variants, the required set, or every buildable candidate."""

    variants: tuple[str, ...] = ()
    required: bool = False
    all_variants: bool = False
    backend: str | None = None

    @property
    def explicit(self) -> bool:
        return bool(self.variants) or self.required or self.all_variants


@dataclass
class Selected:
    chosen: list[Candidate]
    skipped: list[tuple[str, str]]  # (variant, reason): not selected implicitly, or not buildable here
    failed: list[tuple[str, str]]  # (variant, reason): named explicitly but not buildable here


def select_candidates(
    project: KernelProject,
    selection: Selection,
    matrix: Matrix | None = None,
    *,
    check: Callable[[list[Candidate]], list[Candidate]] | None = None,
) -> Selected:
    """Apply ``--variant`` / ``--required`` / ``--all-variants`` / ``--backend`` to the candidates (docs/layout.md);
    ``check`` (e.g. :func:`with_availability`) adds the reasons this host cannot build some of them."""
    from kernel_builder.common.diagnostics import DiagnosticList
    from kernel_builder.config.archs import E20_HINT
    from kernel_builder.errors import ConfigError, UsageError

    candidates = [c for c in all_candidates(project, matrix) if selection.backend in (None, c.backend)]
    by_name = {c.name: c for c in candidates}
    out = Selected([], [], [])
    if check is not None:
        if selection.variants:
            relevant = [c for c in candidates if c.name in selection.variants]
        else:
            relevant = [c for c in candidates if c.required or selection.all_variants]
        by_name.update({c.name: c for c in check(relevant)})
        candidates = [by_name[c.name] for c in candidates]
    if selection.variants:
        unknown = [v for v in selection.variants if v not in by_name]
        if unknown:
            listed = "\n  ".join(c.name for c in candidates) or "(none)"
            raise UsageError(
                f"{', '.join(unknown)} {'is not a candidate' if len(unknown) == 1 else 'are not candidates'} of "
                f"{project.display_path}; the candidates are:\n  {listed}"
            )
        for name in dict.fromkeys(selection.variants):
            candidate = by_name[name]
            if candidate.reason is None:
                out.chosen.append(candidate)
            elif candidate.reason.startswith("[kernel."):  # E20 for an optional entry: an error once selected
                diags = DiagnosticList(project.display_path)
                diags.error(candidate.reason, None, E20_HINT)
                raise ConfigError(diags.sorted())
            else:
                out.failed.append((name, candidate.reason))
        return out  # candidates not named are simply not part of this build: no "skipped" noise
    for candidate in candidates:
        if candidate.reason is not None:
            out.skipped.append((candidate.name, candidate.reason))
        elif selection.required and not candidate.required:
            out.skipped.append((candidate.name, "optional: build it with --all-variants or --variant"))
        else:
            out.chosen.append(candidate)
    return out
