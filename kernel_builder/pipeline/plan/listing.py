"""The candidates ``kernel-builder list-variants`` shows: every variant the project could build, and, when
probed, whether this machine can build each one."""

from __future__ import annotations

from kernel_builder.common.progress import ProgressSink
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.plan.candidates import Candidate, all_candidates, with_availability


def list_variants(
    project: KernelProject, *, probe: bool = True, progress: ProgressSink | None = None
) -> list[Candidate]:
    """The project's candidates; with ``probe``, each marked with whether it can be built here.

    Probing finds whether each variant's Torch build installs on this platform, from one listing of torch per
    source pip is configured with, and looks for its CUDA compiler; the running interpreter's own variant counts as served. Without ``probe`` the list says only what
    this kernel-builder can build on this platform (no subprocess, no network).
    """
    candidates = all_candidates(project)
    if not probe:
        return candidates
    from concurrent.futures import ThreadPoolExecutor

    from kernel_builder.pipeline.environment.interpreter import quick_probe
    from kernel_builder.pipeline.environment.wheel_index import pip_sources

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(pip_sources)  # pip's settings (a pip subprocess) are read while the interpreter is probed
        try:
            served = {quick_probe().variant().name}
        except (BuildError, ValueError):  # no torch here, or one no variant name describes
            served = set()
        return with_availability(candidates, served, progress)
