"""Planning: which variants a build produces and what goes into each (docs/layout.md, docs/build-toml.md).

The plan is pure data computed from the model, the build interpreter and the options, so it can be shown,
tested and recorded before anything is compiled. A build's plan also carries the scan of the project's sources
it was made from (:mod:`kernel_builder.pipeline.plan.scan`), which every later stage reads instead of the files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import PurePosixPath

from kernel_builder import backends
from kernel_builder.backends import gpu_archs
from kernel_builder.common.diagnostics import Diagnostic, DiagnosticList
from kernel_builder.config.archs import E20_HINT, applicable_entries, kernel_applies
from kernel_builder.config.kernels import HEADERS
from kernel_builder.config.model import Kernel, KernelProject, Torch, TorchNoarch, TvmFfi
from kernel_builder.config.values import Version, within_bounds
from kernel_builder.errors import BuildError, ConfigError
from kernel_builder.formats.matrix import Matrix, MatrixEntry, load_matrix
from kernel_builder.formats.runtime import host_cpu_os
from kernel_builder.formats.variants import (
    UnsupportedEnvironmentError,
    Variant,
    noarch_variant,
    variant_for_entry,
)
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter
from kernel_builder.pipeline.plan.components import Component
from kernel_builder.pipeline.plan.scan import SourceScan
from kernel_builder.pipeline.plan.shared_sources import share_sources
from kernel_builder.pipeline.plan.unique_id import ops_name

CPP_SUFFIXES = (".cpp", ".cc", ".cxx")
#: The systems this tool compiles on, natively: Linux on either CPU that variants exist for.
BUILDABLE_HOSTS = ("x86_64-linux", "aarch64-linux")
#: The systems a host compiles for besides its own (``docs/cross.md``): aarch64-linux from x86_64-linux, with
#: Debian's cross compiler and the target's Torch unpacked into a target environment.
CROSS_TARGETS: dict[str, tuple[str, ...]] = {"x86_64-linux": ("aarch64-linux",)}
#: The kind of the warning that a variant is not in the variant matrix: a build of the running environment's
#: variant says so; a selected variant, a matrix candidate already, leaves it out.
OFF_MATRIX = "off-matrix"


@dataclass(frozen=True)
class VariantPlan:
    variant: Variant
    backend: str
    ops_name: str
    components: tuple[Component, ...] = ()  # empty for noarch variants
    archs: tuple[str, ...] = ()  # metadata backend.archs
    arch_selection: str | None = None

    @property
    def name(self) -> str:
        return self.variant.name

    @property
    def aot(self) -> bool:
        return bool(self.components)


@dataclass(frozen=True)
class BuildPlan:
    unique_id: str
    variants: tuple[VariantPlan, ...]
    skipped: tuple[tuple[str, str], ...] = ()  # (variant or backend, reason)
    diagnostics: tuple[Diagnostic, ...] = field(default=(), compare=False)
    #: The sources the build ships and records (None for a plan only shown, as ``generate`` makes).
    sources: SourceScan | None = field(default=None, compare=False, repr=False)


def host_system() -> str:
    """``<cpu>-<os>`` of this host, as in variant names (``x86_64-linux``, ``aarch64-darwin``)."""
    cpu, os_name = host_cpu_os()
    return f"{cpu}-{os_name}"


def buildable_host() -> str | None:
    """This host's system when this tool compiles on it (``x86_64-linux``, ``aarch64-linux``), else ``None``."""
    system = host_system()
    return system if system in BUILDABLE_HOSTS else None


def cross_targets() -> tuple[str, ...]:
    """The systems this host compiles for besides its own (none where it compiles nothing)."""
    return CROSS_TARGETS.get(host_system(), ())


def _buildable_here(backend: str) -> bool:
    return backends.get(backend).buildable and buildable_host() is not None


def how_to_build(
    project: KernelProject, backend: str, interpreter: BuildInterpreter | None, matrix: Matrix | None = None
) -> str:
    """The next step when this interpreter's torch cannot build ``backend``: a matrix variant to build in an
    isolated environment (one of this torch and, for CUDA, of the system's nvcc where there is one), or another
    interpreter."""
    framework = project.config.framework
    abi = framework.stable_abi_for(backend) if isinstance(framework, Torch) else None
    host = buildable_host() or BUILDABLE_HOSTS[0]
    entries = [
        e for e in applicable_entries(project.config, matrix or load_matrix(), backend) if host in e.systems
    ]
    system_cuda: tuple[int, ...] | None = None
    if backends.get(backend).needs_nvcc:
        from kernel_builder.pipeline.environment.toolchain import cuda_toolkit

        try:
            system_cuda = cuda_toolkit().version
        except BuildError:
            system_cuda = None
    torch = interpreter.torch_major_minor if interpreter is not None else None

    def preference(entry: MatrixEntry) -> tuple[bool, bool, bool, tuple[int, int]]:
        compute = tuple(entry.version[:2]) if entry.version is not None else None
        return (entry.required, compute == system_cuda, entry.torch == torch, entry.torch)

    suggestion = ""
    if entries:
        best = max(entries, key=preference)
        name = variant_for_entry(best, host, abi.major_minor if abi is not None else None).name
        suggestion = (
            f"`kernel-builder build --variant {name}` (built in an isolated environment with that variant's "
            f"torch; `kernel-builder list-variants` shows which variants this machine can build), or "
        )
    return (
        f"To build a {backend} variant: {suggestion}`kernel-builder build --python PATH` with an interpreter "
        f"whose torch is a {backend} build"
    )


def cannot_build_message(backend: str) -> str:
    return (
        f"backend '{backend}' cannot be built on this host ({host_system()}): this kernel-builder compiles "
        f"{word_list(backends.names(where='buildable'))} variants on {word_list(BUILDABLE_HOSTS)} only. The "
        f"[kernel.*] sections for {backend} were validated but not built."
    )


def word_list(words: tuple[str, ...]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(filter(None, (", ".join(words[:-1]), words[-1]))) if words else "no"


def noarch_plans(project: KernelProject, unique_id: str) -> list[VariantPlan]:
    config = project.config
    framework = config.framework
    names = config.general.backends if isinstance(framework, TorchNoarch) else config.noarch_backends()
    plans = []
    for backend in names:
        archs: tuple[str, ...] = ()
        if isinstance(framework, TorchNoarch):
            archs = framework.archs_for(backends.get(backend).arch_key) or ()
        plans.append(
            VariantPlan(
                noarch_variant(backend), backend, ops_name(project.py_name, backend, unique_id), archs=archs
            )
        )
    return plans


def plan_build(
    project: KernelProject,
    interpreter: BuildInterpreter | None,
    unique_id: str,
    *,
    backend: str | None = None,
    native_targets: tuple[str, ...] | None = None,
    explicit_archs: tuple[str, ...] | None = None,
    matrix: Matrix | None = None,
    sources: SourceScan | None = None,
) -> BuildPlan:
    """The default selection: this interpreter's variant for its AOT backend, plus every noarch variant;
    ``sources`` is the scan the plan carries (:attr:`BuildPlan.sources`)."""
    config = project.config
    diags = DiagnosticList(project.display_path)
    if isinstance(config.framework, TvmFfi):
        raise BuildError(
            "framework tvm-ffi is validated but cannot be built by this version of kernel-builder"
        )
    if backend is not None and backend not in config.general.backends:
        raise BuildError(f"backend '{backend}' is not in `backends` of {project.display_path}")
    skipped: list[tuple[str, str]] = []
    plans: list[VariantPlan] = []
    aot_backends = [b for b in config.aot_backends() if backend in (None, b)]
    for b in aot_backends:
        if not _buildable_here(b):
            if backend is not None:
                raise BuildError(cannot_build_message(b))
            skipped.append((b, cannot_build_message(b)))
            diags.warning(cannot_build_message(b))
    env_backend = interpreter.backend()[0] if interpreter is not None else None
    for b in aot_backends:
        if _buildable_here(b) and b != env_backend:
            if interpreter is None:
                reason = f"no {b} variant is built: the build interpreter has no torch"
            else:
                reason = (
                    f"no {b} variant is built: the build interpreter's torch is a {env_backend} build "
                    f"(torch {interpreter.torch_version})"
                )
            if backend is not None:
                raise BuildError(f"{reason}. {how_to_build(project, b, interpreter, matrix)}")
            # Not a diagnostic as well: the build's table lists each skipped variant with its reason.
            skipped.append((b, reason))
    if interpreter is not None and env_backend in aot_backends and _buildable_here(env_backend):
        plan = _aot_plan(
            project,
            interpreter,
            env_backend,
            unique_id,
            native_targets,
            matrix or load_matrix(),
            diags,
            explicit_archs,
        )
        if isinstance(plan, str):  # its bounds exclude this interpreter's variant
            skipped.append((env_backend, plan))
        elif plan is not None:
            plans.append(plan)
    for noarch in noarch_plans(project, unique_id):
        if backend in (None, noarch.backend):
            plans.append(noarch)
    if diags.errors:
        raise ConfigError(diags.sorted())
    return BuildPlan(unique_id, tuple(plans), tuple(skipped), tuple(diags.sorted()), sources)


def _aot_plan(
    project: KernelProject,
    interpreter: BuildInterpreter,
    backend: str,
    unique_id: str,
    native_targets: tuple[str, ...] | None,
    matrix: Matrix,
    diags: DiagnosticList,
    explicit_archs: tuple[str, ...] | None = None,
) -> VariantPlan | str | None:
    """The variant of ``interpreter`` for ``backend``, or why the project's bounds exclude it, or None when
    ``diags`` holds the error that stops the build; ``native_targets`` (``--arch native``) or ``explicit_archs``
    (``--arch 8.0,9.0a``) replace the default capability list.

    Each step is a function of its own, in the order its diagnostics are given."""
    ctx = _AotContext.of(project, interpreter, backend, native_targets, explicit_archs, diags)
    variant = _bounds_gate(ctx)
    if isinstance(variant, str):
        return variant
    _warn_unless_in_matrix(ctx, variant, matrix)
    if not _narrowing_builds(ctx):
        return None
    sections = _kernel_sections(ctx)
    _report_outside_the_selection(ctx, sections)
    binding = _torch_binding(ctx, sections)
    return _variant_plan(ctx, variant, unique_id, sections, binding)


@dataclass(frozen=True)
class _AotContext:
    """What every step of :func:`_aot_plan` reads: the project, the interpreter whose variant is planned, its
    backend and compute version, the ``--arch`` narrowing, and the list the steps report to."""

    project: KernelProject
    framework: Torch
    abi: Version | None  # [torch] stable-abi for this backend
    interpreter: BuildInterpreter
    torch_version: tuple[int, int]
    backend: str
    spec: backends.Backend
    # The compute version bounds the variant ([general.<backend>] minver/maxver) and picks matrix entries; for
    # CUDA it also picks the capabilities nvcc can build and the kernels whose `cuda-minver` it meets.
    compute_version: tuple[int, int] | None
    native_targets: tuple[str, ...] | None  # --arch native
    explicit_archs: tuple[str, ...] | None  # --arch 8.0,9.0a
    diags: DiagnosticList

    @classmethod
    def of(
        cls,
        project: KernelProject,
        interpreter: BuildInterpreter,
        backend: str,
        native_targets: tuple[str, ...] | None,
        explicit_archs: tuple[str, ...] | None,
        diags: DiagnosticList,
    ) -> _AotContext:
        framework = project.config.framework
        assert isinstance(framework, Torch)
        abi = framework.stable_abi_for(backend)
        torch_version = interpreter.torch_major_minor
        spec = backends.get(backend)
        compute_version = interpreter.backend()[1] if spec.versioned else None
        return cls(
            project, framework, abi, interpreter, torch_version, backend, spec, compute_version,
            native_targets, explicit_archs, diags,
        )  # fmt: skip

    @property
    def capability_archs(self) -> bool:
        """Whether the variant's GPU code is chosen by CUDA capability (``--arch`` and E20 apply to it)."""
        return self.spec.gpu_arch == "capability"

    @property
    def cuda(self) -> tuple[int, int] | None:
        """The CUDA version the capabilities are chosen for; None where capabilities play no part."""
        return self.compute_version if self.capability_archs else None

    @property
    def narrowed(self) -> bool:
        """Whether ``--arch`` narrows the capability lists."""
        return self.native_targets is not None or self.explicit_archs is not None

    @property
    def chosen(self) -> str:
        """The ``--arch`` value as messages name it: ``native (8.9)`` or ``8.0,9.0a``."""
        if self.native_targets is not None:
            return f"native ({', '.join(self.native_targets)})"
        return ",".join(self.explicit_archs or ())

    def select(self, requested: tuple[str, ...] | None, cuda: tuple[int, int]) -> gpu_archs.Selection:
        """The capabilities of ``requested`` (None: the CUDA version's defaults) that ``--arch`` keeps."""
        if self.explicit_archs is not None:
            return gpu_archs.select_explicit(requested, cuda, self.explicit_archs)
        return gpu_archs.select_capabilities(requested, cuda, self.native_targets)


def _bounds_gate(ctx: _AotContext) -> Variant | str:
    """The interpreter's variant, or why the project's bounds exclude it ([torch] minver/maxver, the stable ABI,
    [general.<backend>] minver/maxver): an excluded variant is skipped with that reason, not an error."""
    torch_version, abi, backend = ctx.torch_version, ctx.abi, ctx.backend
    if not within_bounds(torch_version, ctx.framework.minver, ctx.framework.maxver):
        return f"no {backend} variant is built: torch {torch_version[0]}.{torch_version[1]} is outside [torch] minver/maxver"
    if abi is not None and torch_version < abi.major_minor:
        return (
            f"no {backend} variant is built: torch {torch_version[0]}.{torch_version[1]} is older than the stable "
            f"ABI {abi} of [torch] stable-abi"
        )
    try:
        variant = ctx.interpreter.variant(abi.major_minor if abi is not None else None)
    except UnsupportedEnvironmentError as exc:
        raise BuildError(
            f"cannot name the {backend} variant of the build interpreter {ctx.interpreter.python}: {exc}"
        ) from None
    bounds = ctx.project.config.general.settings(backend)
    compute_version = ctx.compute_version
    if compute_version is not None and not within_bounds(compute_version, bounds.minver, bounds.maxver):
        return (
            f"no {backend} variant is built: {ctx.spec.title or backend} {compute_version[0]}.{compute_version[1]} is "
            f"outside [general.{backend}] minver/maxver"
        )
    return variant


def _warn_unless_in_matrix(ctx: _AotContext, variant: Variant, matrix: Matrix) -> None:
    """Warn when no matrix entry gives ``variant``: it builds, but it is not one of the published set. A Torch
    newer than the whole matrix is the builder's notice to give (``formats.matrix.newer_than_known``), once."""
    if matrix.is_newer_than_known(ctx.torch_version):
        return
    # A stable-ABI variant is named by the ABI version: every applicable Torch of its compute gives that name.
    entries = [
        e
        for e in applicable_entries(ctx.project.config, matrix, ctx.backend)
        if (ctx.abi is not None or e.torch == ctx.torch_version) and ctx.interpreter.system in e.systems
    ]
    if ctx.compute_version is not None:
        entries = [
            e for e in entries if e.version is not None and tuple(e.version[:2]) == ctx.compute_version
        ]
    if not entries:
        ctx.diags.warning(
            f"{variant.name} is not in the variant matrix: fine for development, but not part of the published set",
            kind=OFF_MATRIX,
        )


def _narrowing_builds(ctx: _AotContext) -> bool:
    """Whether this CUDA version builds any capability ``--arch`` selects (always, without ``--arch`` or where
    capabilities play no part); if not, the error says so, naming the CUDA version: the one case where it is
    the cause."""
    cuda = ctx.cuda
    if cuda is None:
        return True
    if ctx.native_targets is not None:
        buildable = gpu_archs.select_capabilities(None, cuda, ctx.native_targets).archs
    elif ctx.explicit_archs is not None:
        buildable = gpu_archs.select_explicit(None, cuda, ctx.explicit_archs).archs
    else:
        return True
    if buildable:
        return True
    ctx.diags.error(
        f"--arch {ctx.chosen}: CUDA {cuda[0]}.{cuda[1]} builds none of these capabilities "
        f"(supported: {', '.join(gpu_archs.default_targets(cuda))})",
        None,
        "build with a CUDA version that supports these GPUs, or leave --arch out",
    )
    return False


@dataclass(frozen=True)
class _Sections:
    """The components of the variant's kernel sections, and where ``--arch`` left them."""

    components: tuple[Component, ...]
    #: The sections' include directories and the directories of the headers they list: the binding sees them.
    kernel_dirs: tuple[str, ...]
    #: Whether some section has a capability ``--arch`` selects.
    any_inside: bool
    #: The sections none of whose capabilities ``--arch`` selects, each compiled for its lowest, with the note
    #: saying so.
    outside: tuple[tuple[Kernel, str], ...]

    @property
    def union(self) -> tuple[str, ...]:
        """Every capability some section is compiled for."""
        return gpu_archs.union_archs(c.archs for c in self.components if c.archs)


def _kernel_sections(ctx: _AotContext) -> _Sections:
    """One component per kernel section of the backend, compiled for the capabilities :func:`_section_archs`
    chooses; a CUDA section whose ``cuda-minver`` this CUDA version does not meet is left out. A source that
    several of these sections list is compiled once, in a component of its own (:func:`share_sources`)."""
    components: list[Component] = []
    kernel_dirs: list[str] = []
    any_inside = False
    outside: list[tuple[Kernel, str]] = []
    for kernel in ctx.project.config.kernels_for(ctx.backend):
        if ctx.cuda is not None and not kernel_applies(kernel, ctx.cuda):
            continue
        archs: tuple[str, ...] = ()
        if ctx.capability_archs:
            assert ctx.cuda is not None
            chosen = _section_archs(ctx, kernel, ctx.cuda)
            archs = chosen.archs
            any_inside = any_inside or chosen.inside
            if chosen.outside_note is not None:
                outside.append((kernel, chosen.outside_note))
        compiled = tuple(
            s for s in kernel.src if PurePosixPath(s).suffix in (*CPP_SUFFIXES, *ctx.spec.source_suffixes)
        )
        kernel_dirs += [*kernel.include, *header_dirs(kernel.src)]
        components.append(
            Component(
                kernel.name,
                compiled,
                kernel.include,
                kernel.cxx_flags,
                kernel.cuda_flags,
                archs,
                kernel.depends,
            )
        )
    return _Sections(share_sources(components), tuple(kernel_dirs), any_inside, tuple(outside))


@dataclass(frozen=True)
class _SectionArchs:
    """What :func:`_section_archs` chose for one kernel section."""

    archs: tuple[str, ...]  # empty: error E20 was reported
    inside: bool = False  # --arch selects some of its capabilities
    outside_note: str | None = None  # --arch selects none of them: compiled for its lowest, with this note


def _section_archs(ctx: _AotContext, kernel: Kernel, cuda: tuple[int, int]) -> _SectionArchs:
    """The capabilities one section is compiled for: its ``cuda-capabilities`` (or the CUDA version's defaults)
    as ``--arch`` narrows them, less those this CUDA version cannot build (a warning each, since the list asked
    for them); when none is left, error E20, because the section would compile to nothing."""
    selection = ctx.select(kernel.cuda_capabilities, cuda)
    inside, note = False, None
    if ctx.narrowed and not selection.archs:
        selection, note = _outside_the_selection(ctx, kernel, cuda, selection)
    elif ctx.narrowed:
        inside = True
    for dropped in selection.dropped:
        ctx.diags.warning(
            f"[kernel.{kernel.name}]: capability {dropped} dropped: CUDA {cuda[0]}.{cuda[1]} cannot build it",
            kernel.line,
        )
    if not selection.archs:
        requested = ", ".join(kernel.cuda_capabilities or gpu_archs.default_capabilities(cuda))
        targets = gpu_archs.default_targets(cuda)
        ctx.diags.error(
            f"[kernel.{kernel.name}]: none of the requested capabilities ({requested}) can be built with "
            f"CUDA {cuda[0]}.{cuda[1]} (supported: {', '.join(targets)})",
            kernel.line,
            E20_HINT,
        )
    return _SectionArchs(selection.archs, inside, note)


def _outside_the_selection(
    ctx: _AotContext, kernel: Kernel, cuda: tuple[int, int], narrowed: gpu_archs.Selection
) -> tuple[gpu_archs.Selection, str | None]:
    """The capabilities of a kernel section that ``--arch`` leaves nothing of (its ``cuda-capabilities`` are
    all for other GPUs: a Blackwell-only section on a Hopper), when this CUDA version builds some of them.

    ``--arch`` narrows a development build to the GPUs at hand; it cannot drop the section, because the binding
    usually registers every section's ops unconditionally and the extension would not link or load without
    them. So the section is compiled for its lowest capability alone (the fewest, and the cheapest to compile),
    with the note saying so: the variant loads here, and that section's ops are not runnable on this GPU. When
    this CUDA version builds none of them, the (empty) full selection is returned, without a note, and the
    caller reports E20.
    """
    full = gpu_archs.select_capabilities(kernel.cuda_capabilities, cuda)
    if not full.archs:
        return full, None
    lowest = str(gpu_archs.parse_capability(full.archs[0]).base)
    note = (
        f"[kernel.{kernel.name}]: none of its capabilities ({', '.join(kernel.cuda_capabilities or full.archs)}) "
        f"is among --arch {ctx.chosen}: compiled for {lowest} only, its lowest, so the extension links and loads; "
        "its ops do not run on the selected GPUs"
    )
    return gpu_archs.Selection((lowest,), narrowed.dropped), note


def _report_outside_the_selection(ctx: _AotContext, sections: _Sections) -> None:
    """With ``--arch``: the sections it leaves nothing of get a note each when some other section is compiled
    for the selected GPUs; when none is, the build would be useless on them, and that is an error."""
    if sections.any_inside:
        for kernel, note in sections.outside:
            ctx.diags.note(note, kernel.line)
    elif sections.outside:
        listed = "; ".join(
            f"[kernel.{k.name}]: {', '.join(k.cuda_capabilities or ())}" for k, _ in sections.outside
        )
        ctx.diags.error(
            f"--arch {ctx.chosen}: none of the kernel's sections lists a capability for these GPUs ({listed})",
            sections.outside[0][0].line,
            "build on a GPU the kernel supports (or pass one of its capabilities), or leave --arch out to build "
            "its whole capability list",
        )


def _torch_binding(ctx: _AotContext, sections: _Sections) -> Component:
    """The ``[torch] src`` component: its C++ files, and its CUDA files where the backend compiles them (a
    warning for each it does not, since the file is then not part of the variant). CUDA binding code is compiled
    for the sections' capabilities, or, when no section has any, for the defaults ``--arch`` keeps; the binding
    sees the sections' include directories (:func:`binding_include`)."""
    kernel_archs = sections.union
    framework = ctx.framework
    binding_sources = []
    for src in framework.src:
        suffix = PurePosixPath(src).suffix
        if suffix in CPP_SUFFIXES:
            binding_sources.append(src)
        elif suffix == ".cu":
            if suffix in ctx.spec.source_suffixes:
                binding_sources.append(src)
            else:
                ctx.diags.warning(
                    f"[torch] src `{src}` is a CUDA file and is not compiled into the {ctx.backend} variant"
                )
    binding_archs: tuple[str, ...] = ()
    if ctx.capability_archs and any(s.endswith(".cu") for s in binding_sources):
        assert ctx.compute_version is not None
        default = ctx.select(None, ctx.compute_version)
        binding_archs = kernel_archs or default.archs
    return Component(
        "_torch_binding",
        tuple(binding_sources),
        binding_include(framework.include, list(sections.kernel_dirs)),
        framework.cxx_flags,
        (),
        binding_archs,
        binding=True,
    )


def _variant_plan(
    ctx: _AotContext, variant: Variant, unique_id: str, sections: _Sections, binding: Component
) -> VariantPlan:
    """The plan: the binding first, then the sections; metadata's ``backend.archs`` is every capability some
    component is compiled for (GPU backends only)."""
    union = sections.union
    if binding.archs:
        union = gpu_archs.union_archs([union, binding.archs])
    return VariantPlan(
        variant,
        ctx.backend,
        ops_name(ctx.project.py_name, ctx.backend, unique_id),
        (binding, *sections.components),
        union if ctx.spec.gpu is not None else (),
        _arch_selection(ctx.native_targets, ctx.explicit_archs) if ctx.capability_archs else None,
    )


def _arch_selection(native: tuple[str, ...] | None, explicit: tuple[str, ...] | None) -> str | None:
    """What metadata.json records as ``arch-selection``: how the capability list was narrowed, if it was."""
    if native is not None:
        return "native"
    return "explicit" if explicit is not None else None


def header_dirs(src: tuple[str, ...]) -> list[str]:
    """The directories of the headers in a ``src`` list (``csrc/cumsum.h`` → ``csrc``; the root is ``.``)."""
    return [str(PurePosixPath(s).parent) for s in src if PurePosixPath(s).suffix in HEADERS]


def binding_include(own: tuple[str, ...], kernel_dirs: list[str]) -> tuple[str, ...]:
    """The binding's include directories: ``[torch] include``, then those of the variant's kernel sections (their
    ``include`` and the directories of the headers their ``src`` lists), each once.

    The binding declares what the kernels define, and real bindings include the kernels' headers by bare name
    (``#include "cumsum.h"`` for ``csrc/cumsum.h``), as upstream's builds let them. Kernel sections keep their
    include directories to themselves; only the binding sees the others'.
    """
    return tuple(dict.fromkeys([*own, *kernel_dirs]))


def plan_candidate(
    project: KernelProject,
    candidate_name: str,
    backend: str,
    interpreter: BuildInterpreter | None,
    unique_id: str,
    *,
    native_targets: tuple[str, ...] | None = None,
    explicit_archs: tuple[str, ...] | None = None,
    matrix: Matrix | None = None,
) -> tuple[VariantPlan, tuple[Diagnostic, ...]]:
    """The plan of one selected candidate, built with ``interpreter`` (whose torch must give that variant)."""
    diags = DiagnosticList(project.display_path)
    if interpreter is None:
        for noarch in noarch_plans(project, unique_id):
            if noarch.name == candidate_name:
                return noarch, ()
        raise BuildError(f"{candidate_name} is not a pure-Python variant of {project.display_path}")
    plan = _aot_plan(
        project,
        interpreter,
        backend,
        unique_id,
        native_targets,
        matrix or load_matrix(),
        diags,
        explicit_archs,
    )
    if diags.errors or plan is None:
        raise ConfigError(diags.sorted())
    if isinstance(plan, str) or plan.name != candidate_name:
        found = f"none ({plan})" if isinstance(plan, str) else plan.name
        raise BuildError(
            f"the build environment {interpreter.python} (torch {interpreter.torch_version}) gives variant {found}, "
            f"not {candidate_name}"
        )
    return plan, tuple(d for d in diags.sorted() if d.kind != OFF_MATRIX)
