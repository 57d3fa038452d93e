"""The options of one ``kernel-builder build`` (or ``generate``, ``test``, ``kernel_builder.load``).

Which of them shape a variant's output, and so send it to be rebuilt when they change, is decided in
:mod:`kernel_builder.pipeline.record`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kernel_builder.pipeline.plan.candidates import Selection

if TYPE_CHECKING:  # an annotation only: a no-op build never reads metadata.json's model
    from kernel_builder.formats.metadata import ProvenanceEntry


@dataclass(frozen=True)
class BuildOptions:
    build_type: str = "Release"
    arch: str | None = None  # "native", capabilities separated by commas ("8.0,9.0a", canonical) or None
    unique_id: str | None = None
    backend: str | None = None
    verbose: bool = False
    jobs: int | None = None
    nvcc_threads: int | None = None
    import_check: bool = True
    strict_import: bool = False  # a third-party module missing from the build interpreter fails the variant
    python: str | None = None  # build interpreter; default: this one
    selection: Selection = field(default_factory=Selection)
    refresh_envs: bool = False
    parallel: int | None = None  # variants built at once; default from the cores
    werror: bool = False  # ABI symbol-version findings fail the variant
    offline: bool = False  # never create an isolated environment or pip-install anything (Nix, air-gapped)
    provenance: ProvenanceEntry | None = (
        None  # provenance.kernel, recorded instead of the kernel's git state (e.g. a flake's revision)
    )
    debug_build: bool = False  # -g, and -lineinfo for nvcc
    namespace_where_used: bool = False  # kernel_builder.load: see generate.cmake.namespace_sources
    compile_log: bool = False  # compiler output to .kernel-builder/<variant>/build.log, not the terminal

    @property
    def explicit_archs(self) -> tuple[str, ...] | None:
        """The capabilities of ``--arch 8.0,9.0a`` (None for the default list or ``native``)."""
        if self.arch is None or self.arch == "native":
            return None
        return tuple(self.arch.split(","))
