"""Orchestration of ``kernel-builder build``: plan, then per variant generate → compile → package → check.

The stages live in their own modules (``plan/``, ``generate/``, ``compile/``, ``package.py``, ``check/``); this
one only sequences them, one build of a project at a time, variants in parallel where there are cores for it,
reporting progress. The project's sources are scanned once, when the build plans
(:mod:`kernel_builder.pipeline.plan.scan`): the unique id, the op-namespace lint (before anything compiles), the
record, the assembled variants, their provenance and ``.kernel-builder/sources.json`` all read that one scan.
Each variant records what it was made from (:mod:`kernel_builder.pipeline.record`); when
nothing changed, the build skips configure, the Torch check and the import check, and only lets Ninja confirm
that nothing needs recompiling (docs/layout.md, "Up to date").
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_builder import backends
from kernel_builder.common import processes
from kernel_builder.common.diagnostics import Diagnostic, Severity
from kernel_builder.common.progress import LogProgress, ProgressSink
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, KernelBuilderError
from kernel_builder.formats import source_snapshot
from kernel_builder.pipeline import state
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, quick_probe
from kernel_builder.pipeline.generate.registration import write_kernel_tree_copy
from kernel_builder.pipeline.options import BuildOptions
from kernel_builder.pipeline.package import assemble, lint_op_namespaces, sync_card, variant_provenance
from kernel_builder.pipeline.plan.candidates import Candidate, select_candidates, with_availability
from kernel_builder.pipeline.plan.planner import BuildPlan, VariantPlan, host_system, plan_build
from kernel_builder.pipeline.plan.scan import SourceScan, scan_sources
from kernel_builder.pipeline.record import Record, variant_inputs

if TYPE_CHECKING:
    from kernel_builder.pipeline.check.abi import Violation
    from kernel_builder.pipeline.check.import_check import ImportCheckWorker
    from kernel_builder.pipeline.compile.compiler_cache import DistStatus
    from kernel_builder.pipeline.compile.source_stage import SourceStage

# What only a real build needs (CMake and Ninja's stage, the source stage, the ELF reader, --arch native's probe)
# is imported where it is used: a no-op build is mostly Python's start-up and these imports (docs/performance.md).

__all__ = [
    "BUILD_DIR",
    "STATE_DIR",
    "BuildOptions",
    "BuildReport",
    "Builder",
    "VariantResult",
    "VariantStatus",
    "default_parallel",
]

STATE_DIR = state.STATE_DIR
BUILD_DIR = state.BUILD_DIR


class VariantStatus(str, enum.Enum):
    """What became of one variant. The value is the text the summary table, the progress lines and ``--json``
    show; a ``str`` subclass, so it serializes and compares as that text."""

    BUILT = "built"
    UP_TO_DATE = "up to date"
    SKIPPED = "skipped"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


@dataclass
class VariantResult:
    name: str
    status: VariantStatus
    seconds: float = 0.0
    size: int = 0
    message: str = ""
    error: KernelBuilderError | None = None  # a failure's exception (``kernel_builder.load`` raises it again)


@dataclass
class BuildReport:
    plan: BuildPlan
    results: list[VariantResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    interpreter: BuildInterpreter | None = (
        None  # the build interpreter probed (None: no torch, or none needed)
    )
    explicit: bool = False  # variants were selected (--variant, --required, --all-variants)

    @property
    def failed(self) -> bool:
        return any(r.status == VariantStatus.FAILED for r in self.results)

    @property
    def nothing_built(self) -> bool:
        """No variant was built or found up to date, and none failed: every one was skipped, or there were none."""
        done = (VariantStatus.BUILT, VariantStatus.UP_TO_DATE, VariantStatus.FAILED)
        return not any(r.status in done for r in self.results)

    def nothing_built_error(self, project: KernelProject, command: str = "build") -> str | None:
        """Why this build made no variant and what would make one (``nothing_built``), else ``None``."""
        if not self.nothing_built:
            return None
        from kernel_builder.pipeline.plan.nothing_built import explain

        skipped = [(r.name, r.message) for r in self.results if r.status == VariantStatus.SKIPPED]
        return explain(project, skipped, self.interpreter, explicit=self.explicit, command=command)


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _join_threads(prefix: str) -> None:
    """Wait for every thread of the pool named ``prefix``. A Ctrl-C that lands while the pool starts a worker
    leaves that worker running but outside the pool's own list, so the pool's shutdown does not wait for it: its
    variant would go on logging after the command said "interrupted"."""
    import threading

    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and thread.name.startswith(prefix + "_"):
            thread.join()


def default_parallel(variant_count: int) -> int:
    """Variants built at once: one per 4 cores (each compiles with several jobs itself)."""
    return max(1, min(variant_count, (os.cpu_count() or 1) // 4))


@dataclass(frozen=True)
class _Job:
    """One variant to build: its name, and what gives its plan and build interpreter. The default selection is
    planned before any job runs; a selected candidate is planned when its job runs, in its own environment."""

    name: str
    plan: Callable[[], tuple[VariantPlan, BuildInterpreter | None]]


@dataclass(frozen=True)
class _VariantBuild:
    """One variant as :meth:`Builder._build_variant` finds it, which its steps read: the plan, the build's id and
    source scan, the build interpreter, the record of its last good build and what this build's record holds."""

    variant: VariantPlan
    unique_id: str
    sources: SourceScan
    interpreter: BuildInterpreter | None
    record: Record
    inputs: dict[str, object]


def _planned(
    variant: VariantPlan, interpreter: BuildInterpreter | None
) -> tuple[VariantPlan, BuildInterpreter | None]:
    return variant, interpreter


class Builder:
    """Builds the variants of one project; the CLI renders what it reports."""

    def __init__(
        self,
        project: KernelProject,
        options: BuildOptions,
        log: Callable[[str], None],
        progress: ProgressSink | None = None,
    ) -> None:
        self.project = project
        self.options = options
        self.log = log
        self.progress: ProgressSink = progress or LogProgress(log)
        self.warnings: list[Diagnostic] = []
        self._warned: set[Diagnostic] = set()  # the same diagnostics: warn() de-duplicates against it
        self.root = project.root
        self.build_root = project.root / BUILD_DIR
        self._lock = threading.Lock()
        self._dist_asked = False
        self._dist: DistStatus | None = None

    def _probe(self) -> BuildInterpreter | None:
        try:
            return quick_probe(self.options.python)
        except BuildError:
            if self.project.config.aot_backends() and not self.options.selection.explicit:
                raise
            return None

    def run(self) -> BuildReport:
        """Build the selected variants, one build of this project at a time (``.kernel-builder/build.lock``)."""
        with state.project_lock(self.root, self.log):
            state.sweep(self.root, self.build_root)
            processes.GROUPS.reset()  # an earlier build in this process may have been interrupted
            return self._run()

    def _run(self) -> BuildReport:
        options = self.options
        sources = scan_sources(self.project)
        lint_op_namespaces(sources)
        unique_id = options.unique_id or sources.unique_id
        interpreter = self._probe()
        jobs: list[_Job] = []
        if options.selection.explicit:
            from kernel_builder.pipeline.plan import selected as selected_plans

            served = selected_plans.served(self.project, interpreter)
            # --offline builds what this environment serves, so what other hosts' pip could bring is moot.
            check = None if options.offline else (lambda found: with_availability(found, served))
            selected = select_candidates(self.project, options.selection, check=check)
            report = BuildReport(BuildPlan(unique_id, (), sources=sources), diagnostics=[])
            for name, reason in selected.skipped:
                report.results.append(VariantResult(name, VariantStatus.SKIPPED, message=reason))
            for name, reason in selected.failed:
                report.results.append(VariantResult(name, VariantStatus.FAILED, message=reason))
            jobs.extend(
                _Job(c.name, functools.partial(self._plan_candidate, c, unique_id, interpreter))
                for c in selected.chosen
            )
        else:
            targets = None
            if options.arch == "native" and interpreter is not None:
                from kernel_builder.pipeline.plan.native import native_targets

                targets = native_targets(interpreter)
            plan = plan_build(
                self.project,
                interpreter,
                unique_id,
                backend=options.backend,
                native_targets=targets,
                explicit_archs=options.explicit_archs,
                sources=sources,
            )
            report = BuildReport(plan, diagnostics=list(plan.diagnostics))
            for name, reason in plan.skipped:
                report.results.append(VariantResult(name, VariantStatus.SKIPPED, message=reason))
            jobs.extend(_Job(v.name, functools.partial(_planned, v, interpreter)) for v in plan.variants)
        self._warned = set(report.diagnostics)
        self.warnings = report.diagnostics
        if interpreter is not None:
            self._warn_if_matrix_stale(interpreter)
        build = report.plan
        for rel in sources.hidden:
            self.warn(f"{sources.package}/{rel}: hidden, not shipped")
        if sources.user_ops:
            self.warn(
                f"torch-ext/{self.project.py_name}/_ops.py is replaced by the generated _ops.py in every variant"
            )
        try:
            write_kernel_tree_copy(self.project, self.warn)
            sync_card(self.project, self.build_root, sources.contents, warn=self.warn)
        except OSError as exc:
            raise BuildError(f"cannot write {exc.filename}: {exc.strerror}") from None

        workers = options.parallel or default_parallel(len(jobs))
        capture = workers > 1 or options.compile_log  # compiler output to per-variant logs, not the terminal
        if workers <= 1:
            results = [self._run_job(job, build, interpreter, capture) for job in jobs]
        else:
            from concurrent.futures import ThreadPoolExecutor

            prefix = f"kernel-builder-variant-{id(self):x}"
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=prefix) as pool:
                try:
                    results = list(
                        pool.map(lambda job: self._run_job(job, build, interpreter, capture), jobs)
                    )
                except KeyboardInterrupt:
                    # Stop the other threads' commands (and refuse new ones) before the pool waits for them.
                    processes.GROUPS.stop_all()
                    pool.shutdown(wait=True, cancel_futures=True)
                    _join_threads(prefix)
                    raise
        report.results.extend(results)
        report.interpreter, report.explicit = interpreter, options.selection.explicit
        if results and not any(r.status == VariantStatus.FAILED for r in results):
            source_snapshot.write(self.root, sources.inputs)  # for the loader's staleness check
        return report

    def _run_job(
        self, job: _Job, build: BuildPlan, default: BuildInterpreter | None, capture: bool
    ) -> VariantResult:
        name = job.name
        start = time.monotonic()
        try:
            plan, interpreter = job.plan()
            chosen = interpreter if plan.aot else interpreter or default
            status = self._build_variant(plan, build, chosen, capture=capture)
        except KernelBuilderError as exc:
            self.progress.stage(name, VariantStatus.FAILED)
            return VariantResult(
                name, VariantStatus.FAILED, time.monotonic() - start, message=str(exc), error=exc
            )
        except OSError as exc:  # the state directory or the toolchain: name what failed, no traceback
            self.progress.stage(name, VariantStatus.FAILED)
            what = f"{exc.filename}: " if exc.filename else ""
            return VariantResult(
                name, VariantStatus.FAILED, time.monotonic() - start, message=f"{what}{exc.strerror or exc}"
            )
        self.progress.stage(name, status)
        return VariantResult(name, status, time.monotonic() - start, _dir_size(self.build_root / name))

    def _plan_candidate(
        self, candidate: Candidate, unique_id: str, default: BuildInterpreter | None
    ) -> tuple[VariantPlan, BuildInterpreter | None]:
        """Plan a selected candidate in an interpreter whose torch gives exactly that variant."""
        from kernel_builder.pipeline.plan import selected as selected_plans

        options = self.options
        policy = selected_plans.EnvironmentPolicy(
            options.offline, options.refresh_envs, options.arch == "native", options.explicit_archs
        )
        plan, interpreter, diagnostics = selected_plans.plan_selected(
            self.project, candidate, unique_id, default, policy, log=self.log,
            preparing=lambda: self.progress.stage(candidate.name, "preparing build environment"),
            status=lambda text: self.progress.stage(candidate.name, text),
        )  # fmt: skip
        for diagnostic in diagnostics:
            self.warn(diagnostic.message)
        return plan, interpreter

    def _warn_if_matrix_stale(self, interpreter: BuildInterpreter) -> None:
        """Once per build: the build interpreter's Torch is newer than every release the variant matrix knows."""
        from kernel_builder.formats.matrix import stale_notice

        notice = stale_notice(interpreter.torch_version)
        if notice is not None:
            self._keep_warning(notice)

    def warn(self, message: str) -> None:
        self._keep_warning(Diagnostic(Severity.WARNING, message, self.project.display_path))

    def _keep_warning(self, diagnostic: Diagnostic) -> None:
        with self._lock:
            if diagnostic not in self._warned:
                self._warned.add(diagnostic)
                self.warnings.append(diagnostic)

    def _build_variant(
        self,
        variant: VariantPlan,
        build: BuildPlan,
        interpreter: BuildInterpreter | None,
        *,
        capture: bool,
    ) -> VariantStatus:
        """Build one variant of ``build`` (the plan, with its source scan), or confirm it is up to date: the
        cheapest of these steps that is sound, tried in order (docs/layout.md, "Up to date")."""
        assert build.sources is not None  # a build's plan always carries its scan
        inputs = variant_inputs(build.sources, variant, interpreter, asdict(self.options))
        record = Record.read(self.root, variant.name)
        up_to_date = record.matches(inputs) and (self.build_root / variant.name / "metadata.json").is_file()
        target = _VariantBuild(variant, build.unique_id, build.sources, interpreter, record, inputs)
        if not variant.aot:
            return VariantStatus.UP_TO_DATE if up_to_date else self._assemble_noarch(target)
        assert interpreter is not None
        layout = self._variant_folders(variant)
        status = self._no_op_check(target, layout) if up_to_date else None
        if status is not None:
            return status
        jobs = self._jobs(variant)
        extension = self._rerun_ninja(variant, layout, jobs, capture) if up_to_date else None
        status = self._relink_check(target, layout, extension) if extension is not None else None
        if status is not None:
            return status
        return self._compile_and_package(target, interpreter, layout, jobs, capture, extension)

    def _assemble_noarch(self, target: _VariantBuild) -> VariantStatus:
        """A pure-Python variant has nothing to compile: assemble it, and record what it was made from."""
        self._package(target.variant, target.unique_id, target.sources, target.interpreter, None)
        target.record.save(target.inputs)
        return VariantStatus.BUILT

    def _variant_folders(self, variant: VariantPlan) -> state.VariantState:
        """The variant's folders, without a CMake build tree made for another directory: CMake refuses one (a
        copied, moved or renamed project), so it is re-created."""
        layout = state.VariantState.of(self.root, variant.name)
        problem = state.tree_problem(layout.cmake_build)
        if problem is not None:
            self.log(f"{variant.name}: re-creating the CMake build tree ({problem})")
            shutil.rmtree(layout.cmake_build)
        return layout

    def _no_op_check(self, target: _VariantBuild, layout: state.VariantState) -> VariantStatus | None:
        """UP_TO_DATE, without starting a process, when nothing Ninja would look at changed, nor the installed
        extension (whose recorded ABI findings are judged again); None when Ninja must look. (A copied or moved
        project's record names the files of the old place: it goes the long way.)"""
        if not target.record.unchanged(layout.cmake_build / "build.ninja"):
            return None
        findings = target.record.findings(layout.stage / f"{target.variant.ops_name}.abi3.so")
        if findings is None:
            return None
        self._judge_abi(target.variant, findings)
        return VariantStatus.UP_TO_DATE

    def _rerun_ninja(
        self, variant: VariantPlan, layout: state.VariantState, jobs: int, capture: bool
    ) -> Path | None:
        """Ninja over a configured build tree of an up-to-date variant, then the install: the installed
        extension, or None when the tree must be configured again (no tree, a source stage that cannot be used,
        or a build directory that belongs to another project)."""
        from kernel_builder.pipeline.compile import ninja_build

        cmake_build = layout.cmake_build
        if not (cmake_build / "CMakeCache.txt").is_file():
            return None
        if not self._recompile(variant, cmake_build, jobs, capture):
            return None
        extension = ninja_build.install(
            cmake_build, layout.stage, verbose=self.options.verbose, name=f"{variant.ops_name}.abi3.so",
        )  # fmt: skip
        return extension if extension.name == f"{variant.ops_name}.abi3.so" else None

    def _relink_check(
        self, target: _VariantBuild, layout: state.VariantState, extension: Path
    ) -> VariantStatus | None:
        """UP_TO_DATE when Ninja left the recorded extension as it was; None when it relinked it, which the
        caller assembles again."""
        variant, record = target.variant, target.record
        if not record.describes(extension):
            self.log(f"{variant.name}: the extension was relinked; assembling again")
            return None
        # The record's findings are those of this very file; judging them again honours a --werror that the last
        # build did not have.
        findings = record.findings(extension)
        if findings is not None:
            self._judge_abi(variant, findings)
        else:  # a record written before findings were kept
            record.add_findings(self._check_abi(variant, extension))
        record.watch(self._watched(layout.folder, layout.cmake_build))
        return VariantStatus.UP_TO_DATE

    def _compile_and_package(
        self,
        target: _VariantBuild,
        interpreter: BuildInterpreter,
        layout: state.VariantState,
        jobs: int,
        capture: bool,
        extension: Path | None,
    ) -> VariantStatus:
        """Configure and compile (unless ``extension``, a relinked one, is given), assemble and check the variant,
        and record what it was made from."""
        variant = target.variant
        # The import check's interpreter imports Torch and the loaders while the variant configures and compiles.
        worker = self._import_worker(interpreter)
        try:
            if extension is None:
                # The build directory is about to describe another project: until this build succeeds, the record
                # (of the last good build) no longer matches it, so a failure must not leave it behind.
                target.record.forget()
                extension = self._configure_and_compile(
                    variant, interpreter, layout.project, layout.cmake_build, jobs, capture
                )
            found = self._package(variant, target.unique_id, target.sources, interpreter, extension, worker)
        finally:
            if worker is not None:
                worker.close()
        target.record.save(target.inputs, extension, found, self._watched(layout.folder, layout.cmake_build))
        return VariantStatus.BUILT

    def _watched(self, variant_state: Path, cmake_build: Path) -> list[str]:
        """The files whose identity decides a no-op (``record``), the sources a stage mirrors included."""
        from kernel_builder.pipeline.compile import ninja_build, source_stage

        watched = ninja_build.watched_files(cmake_build, state.VariantState(variant_state).stage)
        stage = source_stage.remembered(variant_state, self.root)
        return stage.with_originals(watched) if stage is not None else watched

    def _jobs(self, variant: VariantPlan) -> int:
        from kernel_builder.pipeline.compile import ninja_build
        from kernel_builder.pipeline.generate.cmake import ProjectOptions, nvcc_threads

        threads = nvcc_threads(variant, ProjectOptions(nvcc_threads=self.options.nvcc_threads))
        if self.options.jobs:
            return self.options.jobs
        local = ninja_build.default_jobs(threads)
        if os.environ.get("MAX_JOBS", "").isdigit():  # the user's count, as for a local build
            return local
        dist = self._dist_status()
        return dist.jobs(local) if dist is not None else local

    def _dist_status(self) -> DistStatus | None:
        """sccache-dist's state, asked once per build and logged once, when sccache wraps the compilers."""
        from kernel_builder.pipeline.compile import compiler_cache

        with self._lock:
            if not self._dist_asked:
                self._dist_asked = True
                wrapper = compiler_cache.in_use()
                self._dist = wrapper.dist_status(self.root) if wrapper is not None else None
                if self._dist is not None:
                    self.log(self._dist.describe())
            return self._dist

    def _import_worker(self, interpreter: BuildInterpreter) -> ImportCheckWorker | None:
        if not self.options.import_check or interpreter.target is not None:
            return None
        from kernel_builder.pipeline.check.import_check import ImportCheckWorker

        return ImportCheckWorker(interpreter)

    def _configure_and_compile(
        self,
        variant: VariantPlan,
        interpreter: BuildInterpreter,
        project_dir: Path,
        cmake_build: Path,
        jobs: int,
        capture: bool,
    ) -> Path:
        from kernel_builder.pipeline.compile import compiler_cache, ninja_build, source_stage
        from kernel_builder.pipeline.compile.header_accounting import header_warnings
        from kernel_builder.pipeline.generate.project import write_variant_project

        self.progress.stage(
            variant.name,
            "configuring" + (f" (CUDA archs: {', '.join(variant.archs)})" if variant.archs else ""),
        )
        cache = compiler_cache.find()
        wrapper = (
            cache or compiler_cache.in_use()
        )  # also a ccache or sccache the environment's launcher names
        stage = source_stage.choose(
            self.root, self.project.name, variant.name, nvcc=backends.get(variant.backend).needs_nvcc,
            cache_tool=wrapper.tool if wrapper else None,
            paths=[p for c in variant.components for p in (*c.sources, *c.include)],
        )  # fmt: skip
        with self._staged(variant, stage) as staged:
            source_stage.remember(cmake_build.parent, stage if staged is not None else None)
            cuda = write_variant_project(
                self.project, variant, interpreter, project_dir, self.options, self.log,
                compiler_cache=wrapper.tool if wrapper else None, source_stage=staged,
            )  # fmt: skip
            self.log(f"{variant.name}: compiler cache: {compiler_cache.summary(cache)}")
            if wrapper is not None:
                os.environ.update(
                    wrapper.environment(self.root)
                )  # the compilers' environment (same for every variant)
            before = wrapper.statistics() if wrapper is not None else None
            cmake_build.mkdir(parents=True, exist_ok=True)
            state.stamp_tree(cmake_build)
            ninja_build.configure(
                project_dir, cmake_build, build_type=self.options.build_type, cuda=cuda,
                verbose=self.options.verbose, launcher=cache.launcher(self.root) if cache else (),
                target=interpreter.target,
            )  # fmt: skip
            ninja_build.link_compile_commands(self.root, cmake_build, staged)
            self.progress.stage(variant.name, "compiling")
            self._compile(variant, cmake_build, jobs, staged, capture)
            after = wrapper.statistics() if wrapper is not None else None
            if wrapper is not None and before is not None and after is not None:
                shared = " and of builds running beside it" if capture else ""
                self.log(
                    f"{variant.name}: compiler cache: {(after - before).describe()} "
                    f"({wrapper.tool}'s statistics over this compile{shared})"
                )
            for warning in header_warnings(self.project, cmake_build, staged):
                self.warn(warning)
            return ninja_build.install(
                cmake_build, state.VariantState(cmake_build.parent).stage, verbose=self.options.verbose,
                name=f"{variant.ops_name}.abi3.so",
            )  # fmt: skip

    def _recompile(self, variant: VariantPlan, cmake_build: Path, jobs: int, capture: bool) -> bool:
        """Ninja over a project that is up to date, through the source stage it was generated for (if any);
        False, compiling nothing, when that stage can no longer be used (the caller configures again)."""
        from kernel_builder.pipeline.compile import source_stage

        stage = source_stage.remembered(cmake_build.parent, self.root)
        with self._staged(variant, stage) as staged:
            if stage is not None and staged is None:
                return False
            self._compile(variant, cmake_build, jobs, staged, capture)
        return True

    @contextlib.contextmanager
    def _staged(self, variant: VariantPlan, stage: SourceStage | None) -> Iterator[Path | None]:
        """Hold ``stage`` up to date for the compile inside (``source_stage``); None: compile in place."""
        if stage is None:
            yield None
            return
        from kernel_builder.pipeline.compile import source_stage

        with contextlib.ExitStack() as stack:
            changed: int | None = None
            try:
                changed = stack.enter_context(stage.held(self.log))
            except source_stage.StageError as error:
                self.log(
                    f"{variant.name}: compiling the sources in place, not through {stage.path} ({error}); "
                    "sccache's cudafe++ and cicc steps will not hit in other checkouts"
                )
            if changed:
                self.log(f"{variant.name}: sources through {stage.path} (for sccache; {changed} updated)")
            yield stage.path if changed is not None else None

    def _compile(
        self, variant: VariantPlan, cmake_build: Path, jobs: int, staged: Path | None, capture: bool
    ) -> None:
        """Ninja's output streams through as written, or, when ``capture`` (parallel builds, ``--compile-log``),
        goes to the variant's log."""
        from kernel_builder.pipeline.compile import ninja_build

        aliases = (staged,) if staged is not None else ()
        if not capture:
            ninja_build.build(
                cmake_build, jobs=jobs, verbose=self.options.verbose, root=self.root, aliases=aliases
            )
            return
        log = state.VariantState(cmake_build.parent).build_log
        ninja_build.build(
            cmake_build, jobs=jobs, verbose=self.options.verbose, log_file=log, root=self.root, aliases=aliases,
            on_step=lambda done, total, running: self.progress.step(variant.name, done, total, running),
        )  # fmt: skip

    def _check_abi(self, variant: VariantPlan, extension: Path) -> list[Violation]:
        from kernel_builder.pipeline.check import abi

        stable = variant.variant.kind == "torch-stable-abi"
        return abi.check_extension(
            variant.name, extension, stable_abi=stable, werror=self.options.werror, warn=self.warn
        )

    def _judge_abi(self, variant: VariantPlan, findings: list[Violation]) -> None:
        if not findings:
            return  # nothing to warn about or fail on (``abi.judge`` of none), and no ELF module to import
        from kernel_builder.pipeline.check import abi

        abi.judge(variant.name, findings, werror=self.options.werror, warn=self.warn)

    def _package(
        self,
        variant: VariantPlan,
        unique_id: str,
        sources: SourceScan,
        interpreter: BuildInterpreter | None,
        extension: Path | None,
        worker: ImportCheckWorker | None = None,
    ) -> list[Violation]:
        """Assemble ``build/<variant>/``, checked before it is published: the extension's ABI (in this process)
        while the build interpreter imports the assembled variant (unless disabled). Returns the ABI findings."""
        self.progress.stage(variant.name, "assembling")
        findings: list[Violation] = []

        def check_abi() -> None:
            assert extension is not None
            findings.extend(self._check_abi(variant, extension))

        import_check = None
        if self.options.import_check and interpreter is not None and interpreter.target is not None:
            self.warn(
                f"{variant.name}: import check skipped: the variant is for {interpreter.target}, whose Python and "
                f"Torch do not run on this host ({host_system()}); check-abi ran "
                "(docs/cross.md says how to load it under emulation)"
            )
        elif self.options.import_check and interpreter is not None:
            from kernel_builder.pipeline.check.import_check import import_checker

            import_check = import_checker(
                self.project, interpreter, variant, strict=self.options.strict_import, warn=self.warn,
                worker=worker,
            )  # fmt: skip

        def checks(variant_dir: Path) -> dict[str, Any] | None:
            """The checks of the assembled variant; the kernel's public API when the import check read it."""
            if import_check is not None:
                return import_check(variant_dir, check_abi if extension is not None else None)
            if extension is not None:
                check_abi()
            return None

        provenance = variant_provenance(self.project, self.options.provenance, sources)
        torch = interpreter.torch_version if extension is not None and interpreter is not None else None
        assemble(
            self.project, variant, unique_id, self.build_root, extension, provenance, checks, sources=sources,
            torch=torch,
        )  # fmt: skip
        return findings
