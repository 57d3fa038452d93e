"""``kernel_builder.load``: the edit → call loop of ``torch.utils.cpp_extension.load``, with a publishable build.

Each call builds this environment's variant into ``build/<variant>/`` when anything changed (reusing the CMake
build tree, so only what changed recompiles) and imports it. An edit gives the build a new content id and so
a new op namespace: the new module is returned while modules from earlier calls stay usable, each loaded from
its own snapshot in ``.kernel-builder/loaded/`` (the build directory is replaced by every build). See
``docs/tutorial.md``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import kernel_builder.backends as backends
from kernel_builder.config import load_project
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, CompileError, UsageError
from kernel_builder.pipeline.builder import STATE_DIR, Builder, BuildOptions, BuildReport, VariantStatus

__all__ = ["load"]

SNAPSHOTS = "loaded"


def _arch(arch: str | None) -> str | None:
    """``native`` when a GPU is visible (the CPU and the CUDA-less machine build the usual variant)."""
    if arch not in ("native", None):
        raise UsageError(
            f"arch={arch!r}: use 'native' (the visible GPU's capability) or None (the default list)"
        )
    if arch is None:
        return None
    import torch

    return "native" if torch.cuda.is_available() else None


def _built_variant(project: KernelProject, report: BuildReport) -> Path:
    """The variant this process loads: the compiled one of this environment, else the noarch one of its backend."""
    from kernel_builder.formats.runtime import detect_backend

    done = {r.name for r in report.results if r.status in (VariantStatus.BUILT, VariantStatus.UP_TO_DATE)}
    variants = [v for v in report.plan.variants if v.name in done]
    compiled = [v for v in variants if v.aot]
    if compiled:
        return project.root / "build" / compiled[0].name
    import torch

    backend = detect_backend(torch)[0]
    for variant in variants:
        if variant.backend == backend:
            return project.root / "build" / variant.name
    for variant in variants:
        if backends.get(variant.backend).loads_everywhere:
            return project.root / "build" / variant.name
    raise BuildError(f"{project.display_path}: no variant for this environment was built (backend {backend})")


def _snapshot(variant_dir: Path, state: Path) -> Path:
    """A copy of the variant named by its content id; the same build is copied once."""
    import json

    unique = json.loads((variant_dir / "metadata.json").read_text(encoding="utf-8")).get("id") or "noid"
    target = state / SNAPSHOTS / f"{variant_dir.name}-{unique}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        shutil.copytree(variant_dir, tmp, dirs_exist_ok=True)
        os.rename(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


class CompileProgress:
    """What ``load`` shows while it compiles (on standard error): each stage and the compile steps, with the
    time since the build started; nothing when the build is up to date, so a loop that calls ``load`` stays
    quiet until an edit makes it compile."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write
        self.start = time.monotonic()
        self._shown = -1

    def _line(self, variant: str, text: str) -> None:
        self.write(f"kernel_builder.load: [{time.monotonic() - self.start:6.1f} s] {variant}: {text}")

    def stage(self, variant: str, stage: str) -> None:
        if stage != "up to date":
            self._line(variant, stage)

    def step(self, variant: str, done: int, total: int, running: str = "") -> None:
        # Each count once, with the step that runs now (Ninja reports a step when it ends): a precompiled
        # header's half minute reads "[0/6] compile steps: precompiling Torch's headers (<ATen/core/Tensor.h>)".
        if done != self._shown:
            self._shown = done
            self._line(variant, f"[{done}/{total}] compile steps" + (f": {running}" if running else ""))


def _compile_error(variant: str, error: CompileError) -> CompileError:
    """The compile error ``load`` raises: the first error's place, then the compiler's own diagnostics, nothing
    else (no CMake output, no advice about command-line flags); the full log stays an attribute."""
    first = f" at {error.location}" if error.location else ""
    text = f"{variant}: compilation failed{first}"
    if error.diagnostics:
        text += f"\n{error.diagnostics}"
    elif error.log_file is not None:
        text += f" (the compiler's output is in {error.log_file})"
    return CompileError(text, diagnostics=error.diagnostics, location=error.location, log_file=error.log_file)


def load(
    path: str | os.PathLike[str] = ".", *, arch: str | None = "native", verbose: bool = False
) -> ModuleType:
    """Build the kernel project at ``path`` for this environment if anything changed, and import it.

    ``arch="native"`` compiles CUDA code for the visible GPU only (fast; not for publishing); on a machine
    without a GPU it is ignored. ``verbose`` echoes the build's commands and the compiler's output, which
    otherwise go to ``.kernel-builder/<variant>/build.log`` (a failure raises :class:`BuildError` with the
    end of it). Raises ``ConfigError`` for an invalid ``build.toml``.
    """
    selected_arch = _arch(arch)
    project = load_project(path).project
    options = BuildOptions(
        arch=selected_arch,
        verbose=verbose,
        import_check=False,
        namespace_where_used=True,
        compile_log=not verbose,
    )

    def log(line: str) -> None:
        if verbose:
            print(line, file=sys.stderr, flush=True)

    progress = None if verbose else CompileProgress(lambda line: print(line, file=sys.stderr, flush=True))
    report = Builder(project, options, log=log, progress=progress).run()
    failures = [r for r in report.results if r.status == VariantStatus.FAILED]
    for failure in failures:
        if isinstance(failure.error, CompileError):
            raise _compile_error(failure.name, failure.error)
    if failures:
        raise BuildError("\n".join(f"{r.name}: {r.message}" for r in failures))
    snapshot = _snapshot(_built_variant(project, report), project.root / STATE_DIR)
    from kernel_builder.loader import get_local_kernel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "built from uncommitted changes" is the point here
        return get_local_kernel(snapshot)
