"""Orchestration of ``kernel-builder build``: plan, then per variant generate → compile → package.

Each variant records what it was made from in ``.kernel-builder/<variant>/record.json``; when nothing
changed, the build skips configure, the Torch check and the import check, and only lets Ninja confirm that
nothing needs recompiling (docs/layout.md, "Up to date").
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Protocol

import kernel_builder.backends as registry
from kernel_builder import __version__
from kernel_builder.build import state
from kernel_builder.build.check.abi import Violation
from kernel_builder.build.check.import_check import check_import, describe_missing
from kernel_builder.build.compile import compiler_cache, toolchain
from kernel_builder.build.compile import ninja_build as compile_stage
from kernel_builder.build.compile.header_accounting import unlisted_headers
from kernel_builder.build.compile.interpreter import BuildInterpreter, quick_probe, torch_details
from kernel_builder.build.compile.isolated_envs import EnvSpec, ensure_env, env_ready
from kernel_builder.build.compile.provision import resolve_torch
from kernel_builder.build.generate.cmake import ProjectOptions, nvcc_threads, write_project
from kernel_builder.build.generate.registration import is_generated, registration_header
from kernel_builder.build.package import Provenance, assemble, git_provenance, sync_card
from kernel_builder.build.plan.candidates import Candidate, Selection, select_candidates, with_availability
from kernel_builder.build.plan.native import native_targets
from kernel_builder.build.plan.planner import BuildPlan, VariantPlan, plan_build, plan_candidate
from kernel_builder.build.plan.sources import hidden_python_files, id_input_files, package_dir, user_ops_file
from kernel_builder.build.plan.unique_id import compute_unique_id, id_text
from kernel_builder.common import processes
from kernel_builder.common.diagnostics import Diagnostic, Severity
from kernel_builder.common.safe_fs import OutsideRootError, write_inside
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, KernelBuilderError, UsageError

STATE_DIR = state.STATE_DIR
BUILD_DIR = "build"


@dataclass(frozen=True)
class BuildOptions:
    build_type: str = "Release"
    arch: str | None = None  # "native" or None
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
    provenance: Provenance | None = (
        None  # recorded instead of the kernel's git state (e.g. a flake's revision)
    )
    debug_build: bool = False  # -g, and -lineinfo for nvcc
    namespace_where_used: bool = False  # kernel_builder.load: see generate.cmake.namespace_sources
    compile_log: bool = False  # compiler output to .kernel-builder/<variant>/build.log, not the terminal


@dataclass
class VariantResult:
    name: str
    status: str  # built, up to date, skipped, failed
    seconds: float = 0.0
    size: int = 0
    message: str = ""


@dataclass
class BuildReport:
    plan: BuildPlan
    results: list[VariantResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(r.status == "failed" for r in self.results)


#: Build options that do not shape a variant's output (compared with the record of the last build).
_NOT_INPUTS = (
    "verbose", "jobs", "import_check", "strict_import", "python", "backend", "selection", "refresh_envs", "parallel",
    "werror", "offline", "compile_log",
)  # fmt: skip


def _dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _record_path(root: Path, variant: str) -> Path:
    return root / STATE_DIR / variant / "record.json"


def _read_record(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _is_finding(value: object) -> bool:
    """A recorded ABI finding: ``[kind, detail]``."""
    return isinstance(value, list) and len(value) == 2 and all(isinstance(x, str) for x in value)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _variant_name(interpreter: BuildInterpreter, stable_abi: tuple[int, int] | None) -> str | None:
    try:
        return interpreter.variant(stable_abi).name
    except ValueError:
        return None


def _toolkit_for(interpreter: BuildInterpreter) -> toolchain.CudaToolkit:
    """nvcc of the interpreter's CUDA version: the system's, or one its environment brought from PyPI."""
    backend, version = interpreter.backend()
    return toolchain.cuda_toolkit(interpreter.purelib, version if registry.get(backend).needs_nvcc else None)


def _wants_pypi_toolkit(candidate: Candidate) -> tuple[int, int] | None:
    """The CUDA version whose toolkit the environment must bring, when the system's nvcc is another one."""
    if (
        not registry.get(candidate.backend).needs_nvcc
        or candidate.entry is None
        or candidate.entry.version is None
    ):
        return None
    wanted = (candidate.entry.version[0], candidate.entry.version[1])
    try:
        system = toolchain.cuda_toolkit().version
    except BuildError:
        return wanted
    return None if system == wanted else wanted


def _offline_mismatch(
    candidate: Candidate, interpreter: BuildInterpreter | None, abi: tuple[int, int] | None
) -> str:
    """Why ``--offline`` cannot build ``candidate``: the running environment's torch gives another variant."""
    entry = candidate.entry
    assert entry is not None
    compute = entry.backend if entry.version_str is None else f"{entry.backend} {entry.version_str}"
    if interpreter is None:
        have = "this environment has no torch"
    else:
        own = _variant_name(interpreter, abi) or "no variant"
        have = f"this environment's torch {interpreter.torch_version} builds {own}"
    return (
        f"--offline: {have}, not {candidate.name}; run kernel-builder with --python naming an interpreter whose "
        f"torch is {entry.torch_str} ({compute}), or drop --offline to let kernel-builder create that environment"
    )


class ProgressSink(Protocol):
    """Where a build reports its progress; the CLI decides how it looks."""

    def stage(self, variant: str, stage: str) -> None: ...

    def step(self, variant: str, done: int, total: int) -> None: ...


class LogProgress:
    """Stage changes as plain lines (compiler output streams through as written)."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log

    def stage(self, variant: str, stage: str) -> None:
        self.log(f"{variant}: {stage}")

    def step(self, variant: str, done: int, total: int) -> None:
        pass


def default_parallel(variant_count: int) -> int:
    """Variants built at once: one per 4 cores (each compiles with several jobs itself)."""
    return max(1, min(variant_count, (os.cpu_count() or 1) // 4))


# A job: a plan already made (default selection), or a selected candidate planned in its own environment.
_Job = tuple[VariantPlan, "BuildInterpreter | None"] | Candidate


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
        self.capture = False  # set when variants build in parallel: output goes to per-variant logs
        self.warnings: list[Diagnostic] = []
        self.root = project.root
        self.build_root = project.root / BUILD_DIR
        self._lock = threading.Lock()

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
        unique_id = options.unique_id or compute_unique_id(self.project)
        interpreter = self._probe()
        jobs: list[_Job] = []
        if options.selection.explicit:
            served = self._served(interpreter)
            # --offline builds what this environment serves, so what other hosts' pip could bring is moot.
            check = None if options.offline else (lambda found: with_availability(found, served))
            selected = select_candidates(self.project, options.selection, check=check)
            report = BuildReport(BuildPlan(unique_id, ()), diagnostics=[])
            for name, reason in selected.skipped:
                report.results.append(VariantResult(name, "skipped", message=reason))
            for name, reason in selected.failed:
                report.results.append(VariantResult(name, "failed", message=reason))
            jobs.extend(selected.chosen)
        else:
            targets = (
                native_targets(interpreter) if options.arch == "native" and interpreter is not None else None
            )
            plan = plan_build(
                self.project, interpreter, unique_id, backend=options.backend, native_targets=targets
            )
            report = BuildReport(plan, diagnostics=list(plan.diagnostics))
            for name, reason in plan.skipped:
                report.results.append(VariantResult(name, "skipped", message=reason))
            jobs.extend((variant, interpreter) for variant in plan.variants)
        self.warnings = report.diagnostics
        for rel in hidden_python_files(self.project):
            self.warn(
                f"{package_dir(self.project).relative_to(self.project.root)}/{rel}: hidden, not shipped"
            )
        if user_ops_file(self.project) is not None:
            self.warn(
                f"torch-ext/{self.project.py_name}/_ops.py is replaced by the generated _ops.py in every variant"
            )
        try:
            self._write_registration_copy()
            sync_card(self.project, self.build_root)
        except OSError as exc:
            raise BuildError(f"cannot write {exc.filename}: {exc.strerror}") from None

        workers = options.parallel or default_parallel(len(jobs))
        self.capture = workers > 1 or options.compile_log
        if workers <= 1:
            results = [self._run_job(job, unique_id, interpreter) for job in jobs]
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                try:
                    results = list(pool.map(lambda job: self._run_job(job, unique_id, interpreter), jobs))
                except KeyboardInterrupt:
                    # Stop the other threads' commands (and refuse new ones) before the pool waits for them.
                    processes.GROUPS.stop_all()
                    raise
        report.results.extend(results)
        return report

    def _run_job(self, job: _Job, unique_id: str, default: BuildInterpreter | None) -> VariantResult:
        name = job.name if isinstance(job, Candidate) else job[0].name
        start = time.monotonic()
        try:
            if isinstance(job, Candidate):
                plan, interpreter = self._plan_candidate(job, unique_id, default)
            else:
                plan, interpreter = job
            status = self._build_variant(plan, unique_id, interpreter if plan.aot else interpreter or default)
        except KernelBuilderError as exc:
            self.progress.stage(name, "failed")
            return VariantResult(name, "failed", time.monotonic() - start, message=str(exc))
        except OSError as exc:  # the state directory or the toolchain: name what failed, no traceback
            self.progress.stage(name, "failed")
            what = f"{exc.filename}: " if exc.filename else ""
            return VariantResult(
                name, "failed", time.monotonic() - start, message=f"{what}{exc.strerror or exc}"
            )
        self.progress.stage(name, status)
        return VariantResult(name, status, time.monotonic() - start, _dir_size(self.build_root / name))

    def _served(self, interpreter: BuildInterpreter | None) -> set[str]:
        """The variant names the running (or ``--python``) interpreter builds itself."""
        if interpreter is None:
            return set()
        abi = getattr(self.project.config.framework, "stable_abi_for", lambda _b: None)
        names = {_variant_name(interpreter, None)}
        for backend in self.project.config.aot_backends():
            stable = abi(backend)
            if stable is not None:
                names.add(_variant_name(interpreter, stable.major_minor))
        return {n for n in names if n is not None}

    def _plan_candidate(
        self, candidate: Candidate, unique_id: str, default: BuildInterpreter | None
    ) -> tuple[VariantPlan, BuildInterpreter | None]:
        """Plan a selected candidate in an interpreter whose torch gives exactly that variant."""
        if candidate.entry is None:
            plan, _ = plan_candidate(self.project, candidate.name, candidate.backend, None, unique_id)
            return plan, default
        interpreter = default
        abi = getattr(self.project.config.framework, "stable_abi_for", lambda _b: None)(candidate.backend)
        abi_mm = abi.major_minor if abi is not None else None
        if interpreter is None or _variant_name(interpreter, abi_mm) != candidate.name:
            if self.options.offline:
                raise BuildError(_offline_mismatch(candidate, interpreter, abi_mm))
            self.progress.stage(candidate.name, "preparing build environment")
            spec = EnvSpec.for_entry(candidate.entry)
            wheel = None
            if self.options.refresh_envs or not env_ready(spec):
                wheel = resolve_torch(spec.torch_pin, spec.compute, spec.index_url)
            python = ensure_env(
                spec,
                refresh=self.options.refresh_envs,
                log=lambda line: self.log(f"{candidate.name}: {line}"),
                cuda_toolkit=_wants_pypi_toolkit(candidate),
                torch_requirement=wheel.requirement if wheel is not None else None,
            )
            interpreter = quick_probe(python)
        targets = native_targets(interpreter) if self.options.arch == "native" else None
        plan, diagnostics = plan_candidate(
            self.project, candidate.name, candidate.backend, interpreter, unique_id, native_targets=targets
        )
        for diagnostic in diagnostics:
            self.warn(diagnostic.message)
        return plan, interpreter

    def warn(self, message: str) -> None:
        diagnostic = Diagnostic(Severity.WARNING, message, self.project.display_path)
        with self._lock:
            if diagnostic not in self.warnings:
                self.warnings.append(diagnostic)

    def _write_registration_copy(self) -> None:
        """``torch-ext/registration.h`` for sources that include it by relative path (docs/layout.md)."""
        if not self.project.config.aot_backends():
            return
        relpath = "torch-ext/registration.h"
        target = self.root / relpath
        if target.is_symlink():  # never written through: the link is the project's, wherever it points
            self.warn(
                f"{relpath} is a symlink (to {os.readlink(target)}): it is left as it is, and the generated "
                "registration.h is not written through it"
            )
            return
        if target.exists() and not is_generated(target):
            self.warn(
                "torch-ext/registration.h is the project's own: it shadows the generated registration.h"
            )
            return
        header = registration_header()
        if not target.exists() or target.read_text(encoding="utf-8") != header:
            try:
                write_inside(self.root, relpath, header.encode("utf-8"))
            except OutsideRootError as exc:
                raise BuildError(f"cannot write {relpath}: {exc}") from None

    def _inputs(self, variant: VariantPlan, interpreter: BuildInterpreter | None) -> dict[str, object]:
        """Everything that decides the output of ``variant`` (compared with the record)."""
        inputs: dict[str, object] = {
            "tool": __version__,
            "id-inputs": hashlib.sha256(id_text(self.project).encode()).hexdigest(),
            "plan": repr(variant),
            # Neither how the interpreter was named (its fingerprint counts) nor which backends were selected.
            "options": {k: v for k, v in asdict(self.options).items() if k not in _NOT_INPUTS},
        }
        if variant.aot and interpreter is not None:
            tools = [toolchain.cmake(), toolchain.ninja(), toolchain.host_compiler()]
            inputs["interpreter"] = interpreter.fingerprint()
            inputs["toolchain"] = toolchain.fingerprint(*tools)
            if sys.platform == "linux":
                from kernel_builder.build.generate.manylinux import compat_fingerprint

                inputs["manylinux"] = compat_fingerprint(toolchain.host_compiler().path)
            if registry.get(variant.backend).needs_nvcc:
                inputs["nvcc"] = toolchain.fingerprint(_toolkit_for(interpreter))
        return inputs

    def _build_variant(
        self, variant: VariantPlan, unique_id: str, interpreter: BuildInterpreter | None
    ) -> str:
        variant_state = self.root / STATE_DIR / variant.name
        record_path = _record_path(self.root, variant.name)
        inputs = self._inputs(variant, interpreter)
        record = _read_record(record_path)
        output = self.build_root / variant.name
        up_to_date = (
            record is not None and record.get("inputs") == inputs and (output / "metadata.json").is_file()
        )
        if not variant.aot:
            if up_to_date:
                return "up to date"
            self.progress.stage(variant.name, "assembling")
            assemble(self.project, variant, unique_id, self.build_root, None, self._provenance(),
                     self._import_check(interpreter, variant))  # fmt: skip
            _write_json(record_path, {"inputs": inputs})
            return "built"

        assert interpreter is not None
        project_dir, cmake_build = variant_state / "project", variant_state / "cmake-build"
        threads = nvcc_threads(variant, ProjectOptions(nvcc_threads=self.options.nvcc_threads))
        jobs = self.options.jobs or compile_stage.default_jobs(threads)
        problem = state.tree_problem(cmake_build)
        if problem is not None:
            # CMake refuses a tree made for another directory (a copied, moved or renamed project).
            self.log(f"{variant.name}: re-creating the CMake build tree ({problem})")
            shutil.rmtree(cmake_build)
        extension: Path | None = None
        if up_to_date and (cmake_build / "CMakeCache.txt").is_file():
            self._compile(variant, cmake_build, jobs)
            extension = compile_stage.install(
                cmake_build, variant_state / "stage", verbose=self.options.verbose
            )
            if extension.name != f"{variant.ops_name}.abi3.so":  # the build dir belongs to another project
                extension = None
            elif record is not None and record.get("extension") == _sha256(extension):
                # The record's findings are those of this very file (same digest, same tool version in the
                # inputs); judging them again honours a --werror that the last build did not have.
                findings = record.get("abi")
                if isinstance(findings, list) and all(_is_finding(f) for f in findings):
                    self._judge_abi(variant, [Violation(k, extension, d) for k, d in findings])
                else:  # a record written before findings were kept
                    findings = [[v.kind, v.detail] for v in self._check_abi(variant, extension)]
                    _write_json(record_path, {**record, "abi": findings})
                return "up to date"
            else:
                self.log(f"{variant.name}: the extension was relinked; assembling again")
        if extension is None:
            # The build directory is about to describe another project: until this build succeeds, the record
            # (of the last good build) no longer matches it, so a failure must not leave it behind.
            record_path.unlink(missing_ok=True)
            extension = self._configure_and_compile(variant, interpreter, project_dir, cmake_build, jobs)
        findings = self._check_abi(variant, extension)
        self.progress.stage(variant.name, "assembling")
        assemble(self.project, variant, unique_id, self.build_root, extension, self._provenance(),
                 self._import_check(interpreter, variant))  # fmt: skip
        _write_json(record_path, {
            "inputs": inputs, "extension": _sha256(extension), "abi": [[v.kind, v.detail] for v in findings],
        })  # fmt: skip
        return "built"

    def generate(self, force: bool = False) -> Path:
        """``kernel-builder generate``: the CMake project of this environment's variant, and a pyproject.toml
        that builds it as a wheel with scikit-build-core. Returns the pyproject path."""
        target = self.root / "pyproject.toml"
        if target.exists() and not force:
            raise UsageError(f"{target} exists; pass --force to replace it")
        with state.project_lock(self.root, self.log):  # it writes a variant's project under .kernel-builder/
            return self._generate(target)

    def _generate(self, target: Path) -> Path:
        from kernel_builder.build.generate.pyproject import MARKER, pyproject_text

        interpreter = quick_probe(self.options.python)
        unique_id = self.options.unique_id or compute_unique_id(self.project)
        plan = plan_build(self.project, interpreter, unique_id, backend=self.options.backend)
        aot = [v for v in plan.variants if v.aot]
        if not aot:
            raise BuildError(
                "generate needs a compiled variant for this environment's torch "
                f"(torch {interpreter.torch_version}); pure-Python variants are built with `kernel-builder build`"
            )
        variant = aot[0]
        self._write_registration_copy()
        project_dir = self.root / STATE_DIR / variant.name / "project"
        self._write_project(variant, interpreter, project_dir)
        text = pyproject_text(
            self.project, PurePosixPath(project_dir.relative_to(self.root).as_posix()), variant.name
        )
        assert text.startswith(MARKER)
        write_inside(self.root, target.name, text.encode("utf-8"))  # replaces a link, never writes through it
        return target

    def _write_project(self, variant: VariantPlan, interpreter: BuildInterpreter, project_dir: Path) -> bool:
        """Checks torch and the toolchain, then writes the project; True for a CUDA project."""
        details = torch_details(interpreter)
        if sys.platform == "linux" and not details.cxx11_abi:
            raise BuildError(
                f"torch {details.version} was not built with the C++11 ABI; kernel-builder needs one that is"
            )
        toolkit = None
        if registry.get(variant.backend).needs_nvcc:
            toolkit = _toolkit_for(interpreter)
            toolchain.check_cuda_match(toolkit, interpreter.cuda)
        compiler = toolchain.host_compiler().path
        if sys.platform == "linux":
            from kernel_builder.build.generate.manylinux import check_compiler

            check_compiler(compiler)
        options = ProjectOptions(
            build_type=self.options.build_type,
            nvcc_threads=self.options.nvcc_threads,
            gnu_unique_flag=toolchain.compiler_accepts("-fno-gnu-unique"),
            dependency_includes=self._dependency_includes(variant, interpreter),
            manylinux_compiler=compiler if sys.platform == "linux" else None,
            namespace_where_used=self.options.namespace_where_used,
            debug_info=self.options.debug_build,
        )
        write_project(project_dir, self.root, variant, interpreter, details, toolkit, options)
        return toolkit is not None

    def _configure_and_compile(
        self,
        variant: VariantPlan,
        interpreter: BuildInterpreter,
        project_dir: Path,
        cmake_build: Path,
        jobs: int,
    ) -> Path:
        self.progress.stage(
            variant.name,
            "configuring" + (f" (CUDA archs: {', '.join(variant.archs)})" if variant.archs else ""),
        )
        cuda = self._write_project(variant, interpreter, project_dir)
        cache = compiler_cache.find()
        self.log(f"{variant.name}: compiler cache: {compiler_cache.summary(cache)}")
        cmake_build.mkdir(parents=True, exist_ok=True)
        state.stamp_tree(cmake_build)
        compile_stage.configure(
            project_dir, cmake_build, build_type=self.options.build_type, cuda=cuda,
            verbose=self.options.verbose, launcher=cache.launcher(self.root) if cache else (),
        )  # fmt: skip
        self._link_compile_commands(cmake_build)
        self.progress.stage(variant.name, "compiling")
        self._compile(variant, cmake_build, jobs)
        self._account_headers(cmake_build)
        return compile_stage.install(cmake_build, cmake_build.parent / "stage", verbose=self.options.verbose)

    def _check_abi(self, variant: VariantPlan, extension: Path) -> list[Violation]:
        """Checks ``extension``, judges the findings (:meth:`_judge_abi`) and returns them for the record."""
        from kernel_builder.build.check.abi import check_library

        violations = check_library(extension, stable_abi=variant.variant.kind == "torch-stable-abi")
        self._judge_abi(variant, violations)
        return violations

    def _judge_abi(self, variant: VariantPlan, violations: list[Violation]) -> None:
        """Python-ABI, stable-ABI and dependency violations fail the variant; symbol versions outside
        manylinux_2_28 warn (fail with ``--werror``): the system toolchain decides those, not the kernel."""
        from kernel_builder.build.check.abi import MANYLINUX_POLICY

        errors = [v for v in violations if v.kind != "symbol-version" or self.options.werror]
        for violation in violations:
            if violation not in errors:
                self.warn(f"{variant.name}: {violation.detail} (not {MANYLINUX_POLICY}-compliant)")
        if errors:
            raise BuildError("ABI check failed:\n" + "\n".join(f"  {v.kind}: {v.detail}" for v in errors))

    def _compile(self, variant: VariantPlan, cmake_build: Path, jobs: int) -> None:
        """Ninja's output streams through as written, or, for parallel builds, goes to the variant's log."""
        if not self.capture:
            compile_stage.build(cmake_build, jobs=jobs, verbose=self.options.verbose)
            return
        log = cmake_build.parent / "build.log"
        compile_stage.build(
            cmake_build, jobs=jobs, verbose=self.options.verbose, log_file=log,
            on_step=lambda done, total: self.progress.step(variant.name, done, total),
        )  # fmt: skip

    def _account_headers(self, cmake_build: Path) -> None:
        """Warn about project headers that compiled files include but no ``src`` lists (docs/layout.md):
        they are outside the unique id, and a sandboxed build would not see them."""
        config = self.project.config
        listed = set(getattr(config.framework, "src", ())) | {s for k in config.kernels for s in k.src}
        excluded = (self.root / BUILD_DIR, self.root / STATE_DIR)
        unlisted = unlisted_headers(self.root, compile_stage.included_files(cmake_build), listed, excluded)
        for rel in sorted(unlisted):
            self.warn(
                f"header `{rel}` is included by a compiled file but listed in no `src`: it is not part of the "
                "unique id, and a sandboxed build would not see it; add it to the `src` of the kernel that uses it"
            )

    def _dependency_includes(self, variant: VariantPlan, interpreter: BuildInterpreter) -> tuple[Path, ...]:
        from kernel_builder.build.compile.cutlass import cutlass_includes

        pins = sorted({d for c in variant.components for d in c.depends if d.startswith("cutlass_")})
        includes: list[Path] = []
        for pin in pins:
            includes.extend(cutlass_includes(pin, interpreter, self.log, offline=self.options.offline))
        return tuple(includes)

    def _link_compile_commands(self, cmake_build: Path) -> None:
        """``.kernel-builder/compile_commands.json`` points at the latest configured variant, and
        ``compile_commands.json`` at the root points at that, for editors."""
        link = self.root / STATE_DIR / "compile_commands.json"
        target = cmake_build / "compile_commands.json"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(os.path.relpath(target, link.parent))  # still right after the project is moved
        # Editors (clangd, VS Code) look at the project root; a file of the project's own stays untouched.
        root_link = self.root / "compile_commands.json"
        if root_link.is_symlink() or not root_link.exists():
            root_link.unlink(missing_ok=True)
            root_link.symlink_to(Path(STATE_DIR) / "compile_commands.json")

    def _provenance(self) -> Provenance | None:
        if self.options.provenance is not None:
            return self.options.provenance
        return git_provenance(self.project, id_input_files(self.project))

    def _import_check(
        self, interpreter: BuildInterpreter | None, variant: VariantPlan
    ) -> Callable[[Path], None] | None:
        if not self.options.import_check or interpreter is None:
            return None
        checked = interpreter

        def check(variant_dir: Path) -> None:
            missing = check_import(checked, variant_dir)
            if missing is None:
                return
            strict = self.options.strict_import
            message = describe_missing(
                missing, checked, self._provided_by(missing.module, variant), strict=strict
            )
            if strict:
                raise BuildError(message)
            self.warn(f"{variant.name}: {message}")

        return check

    def _provided_by(self, module: str, variant: VariantPlan) -> str | None:
        """Who provides a third-party module in the variant's target environments, where known."""
        from kernel_builder.formats.dependencies import PYTHON_DEPENDENCIES

        top = module.partition(".")[0]
        general = self.project.config.general
        for name in general.python_depends_for(variant.backend):
            dependency = PYTHON_DEPENDENCIES.get(name)
            if dependency is not None and dependency.import_name == top:
                return (
                    f"the kernel declares it (python-depends: {name}), so users install {dependency.pip_name}"
                )
        if top == "triton" and registry.get(variant.backend).ships_triton:
            return f"Torch's {variant.backend} builds install it"
        return None
