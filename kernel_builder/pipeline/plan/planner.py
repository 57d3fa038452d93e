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
from kernel_builder.config.values import within_bounds
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
from kernel_builder.pipeline.plan.scan import SourceScan
from kernel_builder.pipeline.plan.unique_id import ops_name

CPP_SUFFIXES = (".cpp", ".cc", ".cxx")
#: The systems this tool compiles on, natively: Linux on either CPU that variants exist for.
BUILDABLE_HOSTS = ("x86_64-linux", "aarch64-linux")
#: The systems a host compiles for besides its own (``docs/cross.md``): aarch64-linux from x86_64-linux, with
#: Debian's cross compiler and the target's Torch unpacked into a target environment.
CROSS_TARGETS: dict[str, tuple[str, ...]] = {"x86_64-linux": ("aarch64-linux",)}


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
        f"backend '{backend}' cannot be built on this host ({host_system()}): this kernel-builder compiles cpu and "
        f"cuda variants on x86_64-linux and aarch64-linux only. The [kernel.*] sections for {backend} were validated but not built."
    )


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
    (``--arch 8.0,9.0a``) replace the default capability list."""
    config = project.config
    framework = config.framework
    assert isinstance(framework, Torch)
    abi = framework.stable_abi_for(backend)
    torch_version = interpreter.torch_major_minor
    spec = backends.get(backend)
    # The compute version bounds the variant ([general.<backend>] minver/maxver) and picks matrix entries; for
    # CUDA it also picks the capabilities nvcc can build and the kernels whose `cuda-minver` it meets.
    compute_version = interpreter.backend()[1] if spec.versioned else None
    capability_archs = spec.gpu_arch == "capability"
    if not within_bounds(torch_version, framework.minver, framework.maxver):
        return f"no {backend} variant is built: torch {torch_version[0]}.{torch_version[1]} is outside [torch] minver/maxver"
    if abi is not None and torch_version < abi.major_minor:
        return (
            f"no {backend} variant is built: torch {torch_version[0]}.{torch_version[1]} is older than the stable "
            f"ABI {abi} of [torch] stable-abi"
        )
    try:
        variant = interpreter.variant(abi.major_minor if abi is not None else None)
    except UnsupportedEnvironmentError as exc:
        raise BuildError(
            f"cannot name the {backend} variant of the build interpreter {interpreter.python}: {exc}"
        ) from None
    bounds = config.general.settings(backend)
    if compute_version is not None and not within_bounds(compute_version, bounds.minver, bounds.maxver):
        return (
            f"no {backend} variant is built: {spec.title or backend} {compute_version[0]}.{compute_version[1]} is "
            f"outside [general.{backend}] minver/maxver"
        )
    # A stable-ABI variant is named by the ABI version: every applicable Torch of its compute gives that name.
    entries = [
        e
        for e in applicable_entries(config, matrix, backend)
        if (abi is not None or e.torch == torch_version) and interpreter.system in e.systems
    ]
    if compute_version is not None:
        entries = [e for e in entries if e.version is not None and tuple(e.version[:2]) == compute_version]
    if not entries:
        diags.warning(
            f"{variant.name} is not in the variant matrix: fine for development, but not part of the published set"
        )
    if (
        capability_archs
        and compute_version is not None
        and not _narrowing_builds(compute_version, native_targets, explicit_archs, diags)
    ):
        return None
    components: list[Component] = []
    kernel_dirs: list[str] = []
    inside: list[Kernel] = []  # with --arch: the sections compiled for the selected GPUs
    outside: list[Kernel] = []  # and those none of whose capabilities is selected
    outside_notes: list[tuple[str, int | None]] = []
    for kernel in config.kernels_for(backend):
        if capability_archs and compute_version is not None and not kernel_applies(kernel, compute_version):
            continue
        archs: tuple[str, ...] = ()
        if capability_archs:
            assert compute_version is not None
            if explicit_archs is not None:
                selection = gpu_archs.select_explicit(
                    kernel.cuda_capabilities, compute_version, explicit_archs
                )
            else:
                selection = gpu_archs.select_capabilities(
                    kernel.cuda_capabilities, compute_version, native_targets
                )
            narrowed = native_targets is not None or explicit_archs is not None
            if narrowed and not selection.archs:
                selection = _outside_the_selection(
                    kernel, compute_version, native_targets, explicit_archs, selection, outside_notes
                )
                if selection.archs:
                    outside.append(kernel)
            elif narrowed:
                inside.append(kernel)
            for dropped in selection.dropped:
                diags.warning(
                    f"[kernel.{kernel.name}]: capability {dropped} dropped: CUDA {compute_version[0]}.{compute_version[1]} "
                    "cannot build it",
                    kernel.line,
                )
            if not selection.archs:
                requested = ", ".join(
                    kernel.cuda_capabilities or gpu_archs.default_capabilities(compute_version)
                )
                targets = gpu_archs.default_targets(compute_version)
                diags.error(
                    f"[kernel.{kernel.name}]: none of the requested capabilities ({requested}) can be built with "
                    f"CUDA {compute_version[0]}.{compute_version[1]} (supported: {', '.join(targets)})",
                    kernel.line,
                    E20_HINT,
                )
            archs = selection.archs
        compiled = tuple(s for s in kernel.src if PurePosixPath(s).suffix in (*CPP_SUFFIXES, ".cu"))
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
    if inside:
        for message, line in outside_notes:
            diags.note(message, line)
    elif outside:
        chosen = (
            f"native ({', '.join(native_targets)})"
            if native_targets is not None
            else ",".join(explicit_archs or ())
        )
        sections = "; ".join(f"[kernel.{k.name}]: {', '.join(k.cuda_capabilities or ())}" for k in outside)
        diags.error(
            f"--arch {chosen}: none of the kernel's sections lists a capability for these GPUs ({sections})",
            outside[0].line,
            "build on a GPU the kernel supports (or pass one of its capabilities), or leave --arch out to build "
            "its whole capability list",
        )
    union = gpu_archs.union_archs(c.archs for c in components if c.archs)
    binding_sources = []
    for src in framework.src:
        suffix = PurePosixPath(src).suffix
        if suffix in CPP_SUFFIXES:
            binding_sources.append(src)
        elif suffix == ".cu":
            if suffix in spec.source_suffixes:
                binding_sources.append(src)
            else:
                diags.warning(
                    f"[torch] src `{src}` is a CUDA file and is not compiled into the {backend} variant"
                )
    binding_archs: tuple[str, ...] = ()
    if capability_archs and any(s.endswith(".cu") for s in binding_sources):
        assert compute_version is not None
        if explicit_archs is not None:
            default = gpu_archs.select_explicit(None, compute_version, explicit_archs)
        else:
            default = gpu_archs.select_capabilities(None, compute_version, native_targets)
        binding_archs = union or default.archs
    binding = Component(
        "_torch_binding",
        tuple(binding_sources),
        binding_include(framework.include, kernel_dirs),
        framework.cxx_flags,
        (),
        binding_archs,
        binding=True,
    )
    if binding_archs:
        union = gpu_archs.union_archs([union, binding_archs])
    return VariantPlan(
        variant,
        backend,
        ops_name(project.py_name, backend, unique_id),
        (binding, *components),
        union if spec.gpu is not None else (),
        _arch_selection(native_targets, explicit_archs) if capability_archs else None,
    )


def _narrowing_builds(
    cuda: tuple[int, int],
    native: tuple[str, ...] | None,
    explicit: tuple[str, ...] | None,
    diags: DiagnosticList,
) -> bool:
    """Whether this CUDA version builds any capability ``--arch`` selects (always, without ``--arch``); if not,
    the error says so, naming the CUDA version: the one case where it is the cause."""
    if native is not None:
        buildable = gpu_archs.select_capabilities(None, cuda, native).archs
        chosen = f"native ({', '.join(native)})"
    elif explicit is not None:
        buildable = gpu_archs.select_explicit(None, cuda, explicit).archs
        chosen = ",".join(explicit)
    else:
        return True
    if buildable:
        return True
    diags.error(
        f"--arch {chosen}: CUDA {cuda[0]}.{cuda[1]} builds none of these capabilities "
        f"(supported: {', '.join(gpu_archs.default_targets(cuda))})",
        None,
        "build with a CUDA version that supports these GPUs, or leave --arch out",
    )
    return False


def _outside_the_selection(
    kernel: Kernel,
    cuda: tuple[int, int],
    native: tuple[str, ...] | None,
    explicit: tuple[str, ...] | None,
    narrowed: gpu_archs.Selection,
    notes: list[tuple[str, int | None]],
) -> gpu_archs.Selection:
    """The capabilities of a kernel section that ``--arch`` leaves nothing of (its ``cuda-capabilities`` are
    all for other GPUs: a Blackwell-only section on a Hopper), when this CUDA version builds some of them.

    ``--arch`` narrows a development build to the GPUs at hand; it cannot drop the section, because the binding
    usually registers every section's ops unconditionally and the extension would not link or load without
    them. So the section is compiled for its lowest capability alone (the fewest, and the cheapest to compile),
    and ``notes`` gets the note saying so: the variant loads here, and that section's ops are not runnable on
    this GPU. When this CUDA version builds none of them, the (empty) full selection is returned and the caller
    reports E20.
    """
    full = gpu_archs.select_capabilities(kernel.cuda_capabilities, cuda)
    if not full.archs:
        return full
    lowest = str(gpu_archs.parse_capability(full.archs[0]).base)
    chosen = (
        f"--arch native ({', '.join(native)})" if native is not None else f"--arch {','.join(explicit or ())}"
    )
    notes.append(
        (
            f"[kernel.{kernel.name}]: none of its capabilities ({', '.join(kernel.cuda_capabilities or full.archs)}) "
            f"is among {chosen}: compiled for {lowest} only, its lowest, so the extension links and loads; its ops "
            "do not run on the selected GPUs",
            kernel.line,
        )
    )
    return gpu_archs.Selection((lowest,), narrowed.dropped)


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
    return plan, tuple(d for d in diags.sorted() if "not in the variant matrix" not in d.message)
