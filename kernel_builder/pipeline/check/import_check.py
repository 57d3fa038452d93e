"""The import check after assembly: load the variant in the build interpreter with our loader and, when
installed, upstream's ``kernels``, each in a fresh process of its own.

Each loader gets its own process because that is how users load a kernel, and because a kernel may register
things with Torch when it is imported (ops through ``torch.library.custom_op``, fake implementations through
``register_fake``, autograd formulas): Torch refuses a second registration of any of them in one process, so a
second import of the variant there fails although the kernel is fine.

A failure there is the kernel's own error (a syntax error, a missing file, an op that does not register, ...)
and fails the variant. One failure is not: a third-party module the kernel imports that this build interpreter
lacks, while the environments the variant targets have it (Triton comes with Torch's CUDA builds, a
``python-depends`` entry is installed by users). The check reports it as incomplete instead, naming the module
and where the kernel imports it; ``--strict-import`` makes it an error again. The same goes for the packages a
``python-depends`` entry names: the loader refuses to import a kernel while any is missing, so the check names
them all, with the one ``pip install`` for them.

The load with our loader also reads the kernel's public API (:func:`~kernel_builder.formats.symbols.module_symbols`),
which the build writes into the variant as ``symbols.json`` (what ``describe-api`` shows without importing).

Most of the check's time is the fresh interpreter importing Torch and the loaders. A build starts that
interpreter before it compiles (:class:`ImportCheckWorker`): it imports them while the compiler runs and then
waits for the assembled variant's path, so only the loads themselves are left after assembly: on Linux it forks
one child per loader (both share those imports, and run side by side); elsewhere each loader gets a new
interpreter. The ABI check of the
extension runs in this process meanwhile (``alongside``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from kernel_builder import backends
from kernel_builder.common import processes
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError
from kernel_builder.formats.dependencies import (
    PYTHON_DEPENDENCIES,
    PythonDependency,
    describe_packages,
    pip_install,
)
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter
from kernel_builder.pipeline.plan.planner import VariantPlan

_MARK = "KB-IMPORT-CHECK-MISSING "
_SYMBOLS_MARK = "KB-IMPORT-CHECK-SYMBOLS "

#: Whether the script forks one child per loader (Linux) rather than starting an interpreter per loader: a fork
#: shares the Torch and loader imports done while the variant compiled, so the check costs what it did with one
#: process. Elsewhere (macOS's system frameworks are not safe to use after a fork) each loader gets a new
#: interpreter.
FORK = sys.platform == "linux"

# One loader's load of the variant: `python -c LEG PATH LOADER` runs it, and the script below executes it to
# define `check` for the processes it forks.
#
# A ModuleNotFoundError counts as a missing third-party module only when its top-level name is importable from
# nowhere: neither installed, nor a file of the variant, nor the variant itself. The loader's check of
# `python-depends` stops the load before the kernel is imported when packages it declares are not installed:
# those are reported by their entries, all at once.
_LEG = r"""
import importlib.util, json, sys
from pathlib import Path

def load(loader, path):
    if loader == "kernel_builder":
        import kernel_builder
        return kernel_builder.get_local_kernel(path)
    import kernels
    return kernels.get_local_kernel(path)

def report_symbols(module):
    from kernel_builder.formats.symbols import module_symbols
    print(%(symbols)r + json.dumps(module_symbols(module)), flush=True)

def check(loader, path):
    own = {p.name.partition(".")[0] for p in path.iterdir()}
    own.add(json.loads((path / "metadata.json").read_text(encoding="utf-8")).get("id") or "")
    try:
        module = load(loader, path)
        if loader == "kernel_builder":
            report_symbols(module)
    except ModuleNotFoundError as exc:
        top = (exc.name or "").partition(".")[0]
        if not top or top in own or top in sys.modules:
            raise
        try:
            installed = importlib.util.find_spec(top) is not None
        except (ImportError, ValueError):
            installed = True
        if installed:
            raise
        where, tb = None, exc.__traceback__
        while tb is not None:
            file = Path(tb.tb_frame.f_code.co_filename)
            if file.is_absolute() and file.resolve().is_relative_to(path):
                where = f"{file.resolve().relative_to(path).as_posix()}:{tb.tb_lineno}"
            tb = tb.tb_next
        print(%(mark)r + json.dumps({"module": exc.name, "where": where, "loader": loader}), flush=True)
        sys.exit(3)
    except ImportError as exc:
        from kernel_builder.loader.errors import MissingPythonDependencyError
        if not isinstance(exc, MissingPythonDependencyError):
            raise
        names = [dependency.name for dependency in exc.dependencies]
        print(%(mark)r + json.dumps({"dependencies": names, "loader": loader}), flush=True)
        sys.exit(3)

def leg(loader, path):
    # check() as a process's whole work: its exit status, its output flushed. The caller then leaves with
    # os._exit: finalizing an interpreter that has imported Torch takes seconds and cleans up nothing needed.
    import traceback
    status = 1
    try:
        check(loader, path)
        status = 0
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return status

if len(sys.argv) == 3:
    import os
    os._exit(leg(sys.argv[2], Path(sys.argv[1]).resolve()))
"""

# The check, in the build interpreter: `python -c SCRIPT PATH`, or `-` for PATH: started while the variant
# compiles, it imports what loading takes, then reads PATH from its standard input (an empty line: exit).
#
# Each loader loads the variant in a process of its own, as users' programs do: a kernel that registers ops,
# fake implementations or autograd formulas when it is imported cannot be imported twice into one process, and
# two loaders' imports of one variant are two imports. The two run side by side; their output is shown in loader
# order, up to the first that failed, whose status is the script's; a load that crashes the process (a signal)
# fails with the signal's name and the Python stack faulthandler prints.
_SCRIPT = r"""
import importlib.util, os, signal, subprocess, sys, tempfile, warnings
from pathlib import Path
FORK = %(fork)r
LEG = %(leg)r
exec(LEG)  # defines check(loader, path)
# What both forked children need, imported once (with "-", while the variant compiles). An import that fails
# here fails again, with its own error, when the kernel is loaded.
import importlib
for name in ("torch", "kernel_builder.loader", "kernels") if FORK else ():
    try:
        if importlib.util.find_spec(name.partition(".")[0]) is not None:
            importlib.import_module(name)
    except Exception:
        pass
if sys.argv[1] == "-":
    sys.argv[1] = sys.stdin.readline().rstrip("\n")
    if not sys.argv[1]:
        os._exit(0)
path = Path(sys.argv[1]).resolve()

def forked(loader, out, err):
    # The child is this interpreter as it stands (Torch and the loaders imported), its output in two files.
    with warnings.catch_warnings():
        # "multi-threaded, use of fork() may lead to deadlocks": Torch's idle pool threads hold no lock a load takes.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        import faulthandler
        faulthandler.enable()
        status = leg(loader, path)
    finally:
        os._exit(status)

# What is imported stays out of the collector's sight: a collection in a child would otherwise write to every
# object, and copy each page of the interpreter's memory that fork() shared.
import gc
gc.freeze()
legs = []
for loader in ("kernel_builder", "kernels"):
    if loader == "kernels" and importlib.util.find_spec("kernels") is None:
        continue
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
    if FORK:
        legs.append((loader, forked(loader, out, err), out, err))
    else:
        command = [sys.executable, "-c", LEG, str(path), loader]
        legs.append((loader, subprocess.Popen(command, stdout=out, stderr=err), out, err))
status = 0
for loader, child, out, err in legs:
    status = os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) if FORK else child.wait()
    for source, sink in ((out, sys.stdout), (err, sys.stderr)):
        source.seek(0)
        sink.write(source.read().decode("utf-8", "replace"))
        sink.flush()
    if status < 0:
        name = signal.Signals(-status).name if -status in signal.valid_signals() else str(-status)
        print(f"loading the variant with {loader} crashed: its process ended with signal {name}", file=sys.stderr)
        status = 1
    if status:
        break
sys.stdout.flush()
sys.stderr.flush()
os._exit(status)  # the children are done, the files go with the process: nothing needs finalizing
"""


def _script() -> str:
    return _SCRIPT % {"fork": FORK, "leg": _LEG % {"mark": _MARK, "symbols": _SYMBOLS_MARK}}


def with_this_package(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default: this environment) for another interpreter that must import this kernel_builder (and
    write no bytecode)."""
    import kernel_builder

    package_parent = str(Path(kernel_builder.__file__).resolve().parent.parent)
    env = {**(os.environ if base is None else base), "PYTHONDONTWRITEBYTECODE": "1"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_parent, env.get("PYTHONPATH")) if p)
    return env


@dataclass(frozen=True)
class MissingModule:
    """A third-party module the kernel imports and the build interpreter lacks."""

    module: str
    where: str | None  # file:line in the variant, where known
    loader: str  # "kernel_builder" or "kernels"


@dataclass(frozen=True)
class MissingDependencies:
    """``python-depends`` entries whose packages the build interpreter lacks: the kernel was not imported."""

    dependencies: tuple[PythonDependency, ...]
    loader: str


def _check_env() -> dict[str, str]:
    return with_this_package()


class ImportCheckWorker:
    """The import check's fresh interpreter, started before the variant is compiled.

    It imports Torch and both loaders while the compiler runs, then waits for one variant path on its
    standard input (:meth:`start`, then :meth:`wait`); :meth:`close` ends it when no variant comes (a failed
    compile, a failed ABI check). Everything the check tests — the variant's files and extension — is only
    read after the path arrives.
    """

    def __init__(self, interpreter: BuildInterpreter) -> None:
        self.interpreter = interpreter
        self._variant: Path | None = None
        self._fresh = False  # it ended before the variant came: the check runs in a new interpreter
        self._process: subprocess.Popen[str] | None = processes.popen(
            [interpreter.python, "-c", _script(), "-"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, errors="replace", env=_check_env(),
        )  # fmt: skip

    def start(self, variant_dir: Path) -> None:
        """Give it the assembled variant: the check runs from now on."""
        self._variant = variant_dir
        process = self._process
        if (
            process is None or process.poll() is not None
        ):  # it ended early (killed, say): wait() checks afresh
            self._fresh = True
            return
        try:
            assert process.stdin is not None
            process.stdin.write(f"{variant_dir}\n")
            process.stdin.flush()
        except BrokenPipeError:  # it ended just now: wait() reads what it said
            pass

    def wait(self) -> subprocess.CompletedProcess[str]:
        """The check's outcome (after :meth:`start`)."""
        assert self._variant is not None, "start() first"
        if self._fresh or self._process is None:
            self.close()
            return _run_check(self.interpreter, self._variant)
        process, self._process = self._process, None
        interrupted = True
        try:
            out, err = process.communicate()
            interrupted = False
        finally:
            processes.finish(process, interrupted=interrupted)
        if process.returncode < 0:
            # Killed by a signal (the OOM killer while it waited, a crash in the load): a fresh interpreter's
            # verdict stands, as without the early start.
            return _run_check(self.interpreter, self._variant)
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    @property
    def pid(self) -> int | None:
        """The waiting interpreter's process id, until it is done with."""
        return None if self._process is None else self._process.pid

    def close(self) -> None:
        """End the interpreter unless :meth:`wait` did (it stops at once, wherever it is)."""
        process, self._process = self._process, None
        if process is not None:
            processes.finish(process, interrupted=True)
            for stream in (process.stdin, process.stdout, process.stderr):
                if stream is not None:
                    stream.close()


def _run_check(interpreter: BuildInterpreter, variant_dir: Path) -> subprocess.CompletedProcess[str]:
    return processes.run([interpreter.python, "-c", _script(), variant_dir], capture=True, env=_check_env())


@dataclass(frozen=True)
class ImportOutcome:
    """A check that did not fail: what was missing to check the whole variant (or ``None``), and the kernel's
    public API as our loader's import read it (``symbols.json``'s content; ``None`` when it was not imported)."""

    missing: MissingModule | MissingDependencies | None
    symbols: dict[str, Any] | None


def check_import(
    interpreter: BuildInterpreter,
    variant_dir: Path,
    root: Path | None = None,
    *,
    worker: ImportCheckWorker | None = None,
    alongside: Callable[[], None] | None = None,
) -> MissingModule | MissingDependencies | None:
    """Load ``variant_dir`` in a fresh ``interpreter``; a kernel error raises :class:`BuildError`, a missing
    third-party module or declared dependency is returned. With the project ``root``, the error explains a
    binding mistake in the project's terms (``import_failure``) and the full output is kept in
    ``.kernel-builder/import-check.log``.

    ``worker``: the interpreter started beforehand for this check (:class:`ImportCheckWorker`).
    ``alongside``: work of this process to do while the check runs (the ABI check); its error wins, and the
    check is stopped then."""
    return run_import_check(interpreter, variant_dir, root, worker=worker, alongside=alongside).missing


def _symbols(stdout: str) -> dict[str, Any] | None:
    for line in stdout.splitlines():
        if line.startswith(_SYMBOLS_MARK):
            symbols: dict[str, Any] = json.loads(line[len(_SYMBOLS_MARK) :])
            return symbols
    return None


def run_import_check(
    interpreter: BuildInterpreter,
    variant_dir: Path,
    root: Path | None = None,
    *,
    worker: ImportCheckWorker | None = None,
    alongside: Callable[[], None] | None = None,
) -> ImportOutcome:
    """:func:`check_import`, with the kernel's public API the check read (:class:`ImportOutcome`)."""
    if worker is None and alongside is None:
        result = _run_check(interpreter, variant_dir)
    else:
        worker = worker or ImportCheckWorker(interpreter)
        try:
            worker.start(variant_dir)
            if alongside is not None:
                alongside()
            result = worker.wait()
        finally:
            worker.close()
    if result.returncode == 3:
        for line in result.stdout.splitlines():
            if line.startswith(_MARK):
                data = json.loads(line[len(_MARK) :])
                symbols = _symbols(result.stdout)
                if "dependencies" in data:
                    found = tuple(PYTHON_DEPENDENCIES[str(name)] for name in data["dependencies"])
                    return ImportOutcome(MissingDependencies(found, str(data["loader"])), symbols)
                missing = MissingModule(str(data["module"]), data.get("where"), str(data["loader"]))
                return ImportOutcome(missing, symbols)
    if result.returncode != 0:
        if root is None:
            raise BuildError(
                f"import check failed: the assembled variant does not load:\n{result.stderr.strip()}"
            )
        from kernel_builder.pipeline.check.import_failure import explain
        from kernel_builder.pipeline.state import STATE_DIR

        log = root / STATE_DIR / "import-check.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text(result.stdout + result.stderr, encoding="utf-8")
        raise BuildError(
            f"import check failed: {explain(result.stderr, root)}\nfull output: {log.relative_to(root)}"
        )
    return ImportOutcome(None, _symbols(result.stdout))


def describe_missing_dependencies(
    missing: MissingDependencies, interpreter: BuildInterpreter, *, strict: bool = False
) -> str:
    """One line: which declared packages, and how to install them; without ``strict``, also what to do."""
    them = "it" if len(missing.dependencies) == 1 else "them"
    message = (
        f"import check incomplete: the build interpreter {interpreter.python} does not have "
        f"{describe_packages(missing.dependencies)}, so the kernel was not imported; users install {them} "
        f"wherever the kernel runs"
    )
    if strict:
        return f"{message} (--strict-import)"
    return (
        f"{message}. Install {them} there ({pip_install(missing.dependencies)}) to check the whole variant, or "
        f"pass --strict-import to make this an error"
    )


def describe_missing(
    missing: MissingModule, interpreter: BuildInterpreter, provided_by: str | None, *, strict: bool = False
) -> str:
    """One line: which module, where, and who provides it; without ``strict``, also what to do."""
    where = f" ({missing.where})" if missing.where else ""
    source = provided_by or "it must be installed wherever the kernel runs"
    message = (
        f"import check incomplete: the kernel imports `{missing.module}`{where}, which the build interpreter "
        f"{interpreter.python} does not have; {source}"
    )
    if strict:
        return f"{message} (--strict-import)"
    return f"{message}. Install it there to check the whole variant, or pass --strict-import to make this an error"


def provided_by(project: KernelProject, module: str, variant: VariantPlan) -> str | None:
    """Who provides a third-party module in the variant's target environments, where known."""
    top = module.partition(".")[0]
    for name in project.config.general.python_depends_for(variant.backend):
        dependency = PYTHON_DEPENDENCIES.get(name)
        if dependency is not None and dependency.import_name == top:
            return f"the kernel declares it (python-depends: {name}), so users install {dependency.pip_name}"
    if top == "triton" and backends.get(variant.backend).ships_triton:
        return f"Torch's {variant.backend} builds install it"
    return None


class ImportCheck(Protocol):
    """The check of one assembled variant directory; ``alongside`` as for :func:`check_import`. Returns the
    kernel's public API (``symbols.json``'s content) when our loader imported it."""

    def __call__(
        self, variant_dir: Path, alongside: Callable[[], None] | None = None
    ) -> dict[str, Any] | None: ...


def import_checker(
    project: KernelProject,
    interpreter: BuildInterpreter,
    variant: VariantPlan,
    *,
    strict: bool,
    warn: Callable[[str], None],
    worker: ImportCheckWorker | None = None,
) -> ImportCheck:
    """The check :func:`~kernel_builder.pipeline.package.assemble` runs on the assembled variant: a kernel error
    fails it; a missing third-party module warns (fails with ``strict``, ``--strict-import``). ``worker`` and
    the check's ``alongside``: see :func:`check_import`."""

    def check(variant_dir: Path, alongside: Callable[[], None] | None = None) -> dict[str, Any] | None:
        outcome = run_import_check(interpreter, variant_dir, project.root, worker=worker, alongside=alongside)
        missing = outcome.missing
        if missing is None:
            return outcome.symbols
        if isinstance(missing, MissingDependencies):
            message = describe_missing_dependencies(missing, interpreter, strict=strict)
        else:
            message = describe_missing(
                missing, interpreter, provided_by(project, missing.module, variant), strict=strict
            )
        if strict:
            raise BuildError(message)
        warn(f"{variant.name}: {message}")
        return outcome.symbols

    return check
