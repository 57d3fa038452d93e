"""Orchestration of ``kernel-builder build``: plan, then per variant generate → compile → package.

Each variant records what it was made from in ``.kernel-builder/<variant>/record.json``; when nothing
changed, the build skips configure, the Torch check and the import check, and only lets Ninja confirm that
nothing needs recompiling (build-output spec §1, "Up to date").
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import __version__, toolchain
from . import compile as compile_stage
from .buildenv import BuildInterpreter, quick_probe, torch_details
from .config.model import KernelProject
from .diagnostics import Diagnostic, Severity
from .errors import BuildError, KernelBuilderError
from .generate.cmake import ProjectOptions, nvcc_threads, write_project
from .generate.registration import is_generated, registration_header
from .package import Provenance, assemble, git_provenance, sync_card
from .plan import BuildPlan, VariantPlan, plan_build
from .sources import id_input_files, user_ops_file
from .unique_id import compute_unique_id, id_text

STATE_DIR = ".kernel-builder"
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
    python: str | None = None  # build interpreter; default: this one


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
_NOT_INPUTS = ("verbose", "jobs", "import_check", "python", "backend")


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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def native_targets(interpreter: BuildInterpreter) -> tuple[str, ...]:
    """Compute capabilities of the visible GPUs (``--arch native``); no GPU is an error."""
    script = (
        "import torch\n"
        "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
        "print(' '.join('%d.%d' % torch.cuda.get_device_capability(i) for i in range(n)))\n"
    )
    result = subprocess.run([str(interpreter.python), "-c", script], capture_output=True, text=True, check=False)
    caps = result.stdout.strip().split() if result.returncode == 0 else []
    if not caps:
        raise BuildError("--arch native needs a visible CUDA GPU, and none was found")
    return tuple(sorted(set(caps), key=lambda c: tuple(int(p) for p in c.split("."))))


def import_checker(interpreter: BuildInterpreter) -> Callable[[Path], None]:
    """Loads an assembled variant in a fresh interpreter with our loader (and upstream's, if installed)."""
    package_parent = str(Path(__file__).resolve().parent.parent)
    script = (
        "import sys, importlib.util\n"
        "from pathlib import Path\n"
        "import kernel_builder\n"
        "path = Path(sys.argv[1])\n"
        "kernel_builder.get_local_kernel(path)\n"
        "if importlib.util.find_spec('kernels') is not None:\n"
        "    import kernels\n"
        "    kernels.get_local_kernel(path)\n"
    )

    def check(variant_dir: Path) -> None:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
        result = subprocess.run(
            [str(interpreter.python), "-c", script, str(variant_dir)], capture_output=True, text=True, env=env,
            check=False,
        )  # fmt: skip
        if result.returncode != 0:
            raise BuildError(f"import check failed: the assembled variant does not load:\n{result.stderr.strip()}")

    return check


class Builder:
    """Builds the variants of one project; the CLI renders what it reports."""

    def __init__(self, project: KernelProject, options: BuildOptions, log: Callable[[str], None]) -> None:
        self.project = project
        self.options = options
        self.log = log
        self.warnings: list[Diagnostic] = []
        self.root = project.root
        self.build_root = project.root / BUILD_DIR

    def run(self) -> BuildReport:
        options = self.options
        unique_id = options.unique_id or compute_unique_id(self.project)
        interpreter: BuildInterpreter | None
        try:
            interpreter = quick_probe(options.python)
        except BuildError:
            if self.project.config.aot_backends():
                raise
            interpreter = None
        targets = native_targets(interpreter) if options.arch == "native" and interpreter is not None else None
        plan = plan_build(self.project, interpreter, unique_id, backend=options.backend, native_targets=targets)
        report = BuildReport(plan, diagnostics=list(plan.diagnostics))
        self.warnings = report.diagnostics
        if user_ops_file(self.project) is not None:
            self.warn(f"torch-ext/{self.project.py_name}/_ops.py is replaced by the generated _ops.py in every variant")
        self._write_registration_copy()
        sync_card(self.project, self.build_root)
        for name, reason in plan.skipped:
            report.results.append(VariantResult(name, "skipped", message=reason))
        for variant in plan.variants:
            start = time.monotonic()
            try:
                status = self._build_variant(variant, unique_id, interpreter)
            except KernelBuilderError as exc:
                report.results.append(VariantResult(variant.name, "failed", time.monotonic() - start, message=str(exc)))
                continue
            size = _dir_size(self.build_root / variant.name)
            report.results.append(VariantResult(variant.name, status, time.monotonic() - start, size))
        return report

    def warn(self, message: str) -> None:
        diagnostic = Diagnostic(Severity.WARNING, message, self.project.display_path)
        if diagnostic not in self.warnings:
            self.warnings.append(diagnostic)

    def _write_registration_copy(self) -> None:
        """``torch-ext/registration.h`` for sources that include it by relative path (build-output §5.2)."""
        if not self.project.config.aot_backends():
            return
        target = self.root / "torch-ext" / "registration.h"
        if target.exists() and not is_generated(target):
            self.warn("torch-ext/registration.h is the project's own: it shadows the generated registration.h")
            return
        header = registration_header()
        if not target.exists() or target.read_text(encoding="utf-8") != header:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(header, encoding="utf-8")

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
            if variant.backend == "cuda":
                inputs["nvcc"] = toolchain.fingerprint(toolchain.cuda_toolkit())
        return inputs

    def _build_variant(self, variant: VariantPlan, unique_id: str, interpreter: BuildInterpreter | None) -> str:
        state = self.root / STATE_DIR / variant.name
        record_path = _record_path(self.root, variant.name)
        inputs = self._inputs(variant, interpreter)
        record = _read_record(record_path)
        output = self.build_root / variant.name
        up_to_date = record is not None and record.get("inputs") == inputs and (output / "metadata.json").is_file()
        if not variant.aot:
            if up_to_date:
                return "up to date"
            self.log(f"assembling {variant.name}")
            assemble(self.project, variant, unique_id, self.build_root, None, self._provenance(),
                     self._import_check(interpreter))  # fmt: skip
            _write_json(record_path, {"inputs": inputs})
            return "built"

        assert interpreter is not None
        project_dir, cmake_build = state / "project", state / "cmake-build"
        threads = nvcc_threads(variant, ProjectOptions(nvcc_threads=self.options.nvcc_threads))
        jobs = self.options.jobs or compile_stage.default_jobs(threads)
        extension: Path | None = None
        if up_to_date and (cmake_build / "CMakeCache.txt").is_file():
            compile_stage.build(cmake_build, jobs=jobs, verbose=self.options.verbose)
            extension = compile_stage.install(cmake_build, state / "stage", verbose=self.options.verbose)
            if extension.name != f"{variant.ops_name}.abi3.so":  # the build dir belongs to another project
                extension = None
            elif record is not None and record.get("extension") == _sha256(extension):
                return "up to date"
            else:
                self.log(f"{variant.name}: the extension was relinked; assembling again")
        if extension is None:
            # The build directory is about to describe another project: until this build succeeds, the record
            # (of the last good build) no longer matches it, so a failure must not leave it behind.
            record_path.unlink(missing_ok=True)
            extension = self._configure_and_compile(variant, interpreter, project_dir, cmake_build, jobs)
        self.log(f"assembling {variant.name}")
        assemble(self.project, variant, unique_id, self.build_root, extension, self._provenance(),
                 self._import_check(interpreter))  # fmt: skip
        _write_json(record_path, {"inputs": inputs, "extension": _sha256(extension)})
        return "built"

    def _configure_and_compile(
        self, variant: VariantPlan, interpreter: BuildInterpreter, project_dir: Path, cmake_build: Path, jobs: int
    ) -> Path:
        details = torch_details(interpreter)
        if sys.platform == "linux" and not details.cxx11_abi:
            raise BuildError(f"torch {details.version} was not built with the C++11 ABI; kernel-builder needs one that is")
        toolkit = None
        if variant.backend == "cuda":
            toolkit = toolchain.cuda_toolkit()
            toolchain.check_cuda_match(toolkit, interpreter.cuda)
        options = ProjectOptions(
            build_type=self.options.build_type,
            nvcc_threads=self.options.nvcc_threads,
            gnu_unique_flag=toolchain.compiler_accepts("-fno-gnu-unique"),
            dependency_includes=self._dependency_includes(variant, interpreter),
        )
        self.log(f"configuring {variant.name}" + (f" (CUDA archs: {', '.join(variant.archs)})" if variant.archs else ""))
        write_project(project_dir, self.root, variant, interpreter, details, toolkit, options)
        compile_stage.configure(
            project_dir, cmake_build, build_type=self.options.build_type, cuda=toolkit is not None,
            verbose=self.options.verbose,
        )  # fmt: skip
        self._link_compile_commands(cmake_build)
        self.log(f"compiling {variant.name}")
        compile_stage.build(cmake_build, jobs=jobs, verbose=self.options.verbose)
        self._account_headers(cmake_build)
        return compile_stage.install(cmake_build, cmake_build.parent / "stage", verbose=self.options.verbose)

    def _account_headers(self, cmake_build: Path) -> None:
        """Warn about project headers that compiled files include but no ``src`` lists (build-output §7.4):
        they are outside the unique id, and a sandboxed build would not see them."""
        config = self.project.config
        listed = set(getattr(config.framework, "src", ())) | {s for k in config.kernels for s in k.src}
        root = self.root.resolve()
        excluded = (root / BUILD_DIR, root / STATE_DIR)
        unlisted: dict[str, str] = {}
        for obj, files in compile_stage.included_files(cmake_build).items():
            for file in files:
                path = Path(file).resolve()
                if not path.is_relative_to(root) or any(path.is_relative_to(e) for e in excluded):
                    continue
                rel = path.relative_to(root).as_posix()
                if rel in listed or rel == "torch-ext/registration.h" or path.suffix in (".cu", ".cpp", ".cc", ".cxx"):
                    continue
                unlisted.setdefault(rel, obj)
        for rel in sorted(unlisted):
            self.warn(
                f"header `{rel}` is included by a compiled file but listed in no `src`: it is not part of the "
                "unique id, and a sandboxed build would not see it; add it to the `src` of the kernel that uses it"
            )

    def _dependency_includes(self, variant: VariantPlan, interpreter: BuildInterpreter) -> tuple[Path, ...]:
        from .dependencies_headers import cutlass_includes

        pins = sorted({d for c in variant.components for d in c.depends if d.startswith("cutlass_")})
        includes: list[Path] = []
        for pin in pins:
            includes.extend(cutlass_includes(pin, interpreter, self.log))
        return tuple(includes)

    def _link_compile_commands(self, cmake_build: Path) -> None:
        """``.kernel-builder/compile_commands.json`` points at the latest configured variant, for editors."""
        link = self.root / STATE_DIR / "compile_commands.json"
        target = cmake_build / "compile_commands.json"
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)

    def _provenance(self) -> Provenance | None:
        return git_provenance(self.project, id_input_files(self.project))

    def _import_check(self, interpreter: BuildInterpreter | None) -> Callable[[Path], None] | None:
        if not self.options.import_check or interpreter is None:
            return None
        return import_checker(interpreter)
