"""How long building examples/relu takes with kernel-builder, next to ``torch.utils.cpp_extension.load``.

    python benchmarks/build.py [--backend cuda|cpu] [--capability 9.0] [--rounds 3] [--cases ...] [--json PATH]

Every build starts from a fresh copy of examples/relu (no ``build/``, no ``.kernel-builder/``) and is timed
as the whole command a user waits for. Cases (``--cases``, comma-separated; default all):

- ``cold``: kernel-builder, compiler cache off, for one capability, against ``cpp_extension.load`` of the
  same sources (binding + kernel) with the same defines and optimisation, in a fresh extensions directory;
  interleaved rounds, ratio of the medians. kernel-builder's configure / compile / assemble split comes from
  its log.
- ``noop``: the same command again on a built copy, by default and (with a GPU) with ``--arch native``; the
  environment as it is (with ``PYTHONDONTWRITEBYTECODE``, kernel-builder's own modules are compiled at every
  start), and once more with kernel-builder's bytecode kept (as a pip-installed kernel-builder has it).
- ``touch``: one edited ``.cu`` (a comment appended), rebuilt.
- ``caps``: cold builds for 1, 4 and 10 capabilities (CUDA only).
- ``cache``: with a fresh compiler cache, a cold build, then ``rm -rf build .kernel-builder`` and a rebuild
  that finds every object in the cache.
- ``checkout``: with a fresh compiler cache, a cold build, then a second copy at another path (a colleague's
  clone, a CI runner's workspace) built against the same cache; for sccache, each build gets a server of its
  own on a private port, as each CI job does. ``KERNEL_BUILDER_COMPILER_CACHE`` picks the tool.
- ``suite`` (not run by default: it takes many minutes; ``--cases suite``): the test suite as ``make test``
  runs it (``--suite-workers`` pytest-xdist workers, whole files each), with empty compiler and kernel-builder
  caches as on a fresh clone; wall time and CPU time in minutes, against the 8-minute target.

``--python`` is the build interpreter (default: this one); kernel-builder itself runs in this interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path

from common import REPO, RESULTS, machine, median, spread, table, use_repository, verdict, write_json

EXAMPLE = REPO / "examples" / "relu"
CASES = ("cold", "noop", "touch", "caps", "cache", "checkout")
#: Cases run only when ``--cases`` names them (otherwise a "not run" row says how to run them).
OPT_IN_CASES = ("suite",)
FOUR = ("8.0", "8.9", "9.0", "10.0")
#: The goals (docs/performance.md): cold ≤ 0.9× cpp_extension.load; no-op ≤ 0.2 s; a rebuild from a warm compiler cache and a
#: second checkout ≤ 20% of cold; 10 capabilities ≤ 3× one; `make test` ≤ 8 min (``suite``, opt-in).
TARGETS = {"cold": 0.9, "cache": 0.20, "checkout": 0.20, "noop": 0.2, "caps": 3.0, "suite": 8.0}
_STAGE = re.compile(r"^\[\s*([0-9.]+) s\] [^:]+: (configuring|compiling|assembling|built|up to date)")
_CACHE = re.compile(r": compiler cache: (\d+ hits?, \d+ miss(?:es)?) \(")

#: Run by the build interpreter: cpp_extension.load of the example's sources, printing nothing on success.
CPP_EXTENSION = textwrap.dedent(
    """
    import json, sys
    from torch.utils import cpp_extension
    spec = json.loads(sys.argv[1])
    cpp_extension.load(
        name=spec["name"], sources=spec["sources"], extra_include_paths=spec["includes"],
        extra_cflags=spec["cflags"], extra_cuda_cflags=spec["cuda_cflags"], build_directory=spec["build"],
        with_cuda=spec["cuda"], is_python_module=True, verbose=False,
    )
    """
)


@dataclass
class Sample:
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)
    cache: str = ""  # the compiler cache's hits and misses over the compile, from the build's log


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", type=Path, default=Path(sys.executable), help="the build interpreter")
    parser.add_argument(
        "--backend", choices=["cuda", "cpu"], help="default: cuda when the interpreter's torch has it"
    )
    parser.add_argument("--capability", default="9.0", help="the one capability of the cold builds (CUDA)")
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds of the cold, noop and touch cases"
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES + OPT_IN_CASES)}"
    )
    parser.add_argument(
        "--suite-workers", default=_suite_workers(), help="pytest-xdist workers of the suite case (0: none)"
    )
    parser.add_argument("--workdir", type=Path, help="where the copies go (default: a temporary directory)")
    parser.add_argument(
        "--json", type=Path, default=RESULTS / "build.json", help="where to write the results"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES) - set(OPT_IN_CASES))
    if unknown:
        print(
            f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(CASES + OPT_IN_CASES)}", file=sys.stderr
        )
        return 2
    use_repository()
    torch_info = _torch_info(args.python)
    backend = args.backend or ("cuda" if torch_info["cuda"] else "cpu")
    if backend == "cuda" and not torch_info["cuda"]:
        print(f"{args.python}: its torch has no CUDA; use --backend cpu", file=sys.stderr)
        return 2
    bench = Bench(args.python, backend, args.capability, torch_info)
    bench.suite_workers = str(args.suite_workers)
    results: dict[str, object] = {}
    rows: list[list[object]] = []
    targets: list[list[object]] = []

    def save(done: bool) -> None:
        write_json(args.json, {
            "machine": {**machine(), "build-python": str(args.python), **torch_info},
            "backend": backend,
            "capability": args.capability if backend == "cuda" else None,
            "complete": done,
            "results": results,
            "rows": rows,
            "targets": [{"target": t, "measured": m, "verdict": v} for t, m, v in targets],
        }, quiet=not done)  # fmt: skip

    with tempfile.TemporaryDirectory(prefix="kb-build-bench-", dir=args.workdir) as tmp:
        bench.workdir = Path(tmp)
        for case in cases:
            print(f"--- {case}", file=sys.stderr, flush=True)
            getattr(bench, f"case_{case}")(args.rounds, results, rows, targets)
            save(False)  # what is done so far survives a time limit
    rows += [
        [f"{case}", None, None, 0, f"not run: --cases {case}"] for case in OPT_IN_CASES if case not in cases
    ]
    print(table(["case", "median s", "min–max s", "runs", "note"], rows))
    print()
    print(table(["target", "measured", "verdict"], targets))
    save(True)
    return 0


def _torch_info(python: Path) -> dict[str, object]:
    code = (
        "import json, torch\n"
        "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda,\n"
        "                  'gpu': torch.cuda.is_available() and torch.cuda.device_count() > 0}))\n"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True).stdout
    info: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return info


class Bench:
    def __init__(self, python: Path, backend: str, capability: str, torch_info: dict[str, object]) -> None:
        self.python = python
        self.backend = backend
        self.capability = capability
        self.gpu = bool(torch_info["gpu"])
        self.torch_version = str(torch_info["torch"])
        self.workdir = Path()
        self.count = 0
        self.suite_workers = _suite_workers()

    # --- the pieces ---------------------------------------------------------------------------------------

    def copy(self, caps: tuple[str, ...] | None = None) -> Path:
        """A fresh copy of examples/relu; ``caps`` replaces the CUDA kernel's capabilities (None: one)."""
        self.count += 1
        root = self.workdir / f"{self.count:03d}" / "relu"
        shutil.copytree(
            EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".kernel-builder", "registration.h")
        )
        caps = (self.capability,) if caps is None else caps
        if caps:
            text = (root / "build.toml").read_text(encoding="utf-8")
            listed = ", ".join(f'"{c}"' for c in caps)
            text = text.replace(
                'src = ["relu_cuda/relu.cu"]', f'src = ["relu_cuda/relu.cu"]\ncuda-capabilities = [{listed}]'
            )
            (root / "build.toml").write_text(text, encoding="utf-8")
        return root

    def ours(
        self,
        root: Path,
        *extra: str,
        cache: bool = False,
        env: dict[str, str] | None = None,
        bytecode: bool = False,
    ) -> Sample:
        argv = [sys.executable, "-m", "kernel_builder", "build", str(root), "--backend", self.backend,
                "--python", str(self.python), *extra]  # fmt: skip
        full_env = {**os.environ, **(env or {})}
        if not cache:
            full_env["KERNEL_BUILDER_COMPILER_CACHE"] = "off"
        full_env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
        if bytecode:  # kept in a directory of the benchmark's own: the checkout stays as it is
            full_env.pop("PYTHONDONTWRITEBYTECODE", None)
            full_env["PYTHONPYCACHEPREFIX"] = str(self.workdir / "pycache")
        start = time.perf_counter()
        result = subprocess.run(argv, capture_output=True, text=True, env=full_env, check=False)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            raise SystemExit(f"kernel-builder build failed:\n{result.stdout}{result.stderr}")
        cache_line = _CACHE.search(result.stderr)
        return Sample(seconds, _stages(result.stderr), cache_line[1] if cache_line else "")

    def theirs(self, root: Path) -> Sample:
        """cpp_extension.load of the binding and the kernel, with the defines and flags kernel-builder uses."""
        from kernel_builder.pipeline.environment import toolchain
        from kernel_builder.pipeline.generate.registration import registration_header

        self.count += 1
        include = root / "include"
        include.mkdir(exist_ok=True)
        (include / "registration.h").write_text(registration_header(), encoding="utf-8")
        cuda = self.backend == "cuda"
        kernel = "relu_cuda/relu.cu" if cuda else "relu_cpu/relu_cpu.cpp"
        defines = [
            "-O3",
            "-DNDEBUG",
            "-DPy_LIMITED_API=0x03090000",
            "-DCUDA_KERNEL" if cuda else "-DCPU_KERNEL",
        ]
        spec = {
            "name": f"_relu_cpp_extension_{self.count}",
            "sources": [str(root / "torch-ext" / "torch_binding.cpp"), str(root / kernel)],
            "includes": [str(include)],
            "cflags": [*defines, "-fno-gnu-unique"],
            "cuda_cflags": [*defines, "--threads=1", "-DENABLE_FP8"],
            "build": str(root / "cpp-extension-build"),
            "cuda": cuda,
        }
        Path(spec["build"]).mkdir()  # type: ignore[arg-type]
        # Cold for both: cpp_extension wraps its compilers in a ccache it finds on PATH.
        env = {**os.environ, "TORCH_CUDA_ARCH_LIST": self.capability, "MAX_JOBS": str(os.cpu_count() or 1),
               "CCACHE_DISABLE": "1"}  # fmt: skip
        if cuda:  # the toolkit kernel-builder compiles with (cpp_extension guesses /usr/local otherwise)
            env["CUDA_HOME"] = str(toolchain.cuda_toolkit().root)
        # cpp_extension runs `ninja` from PATH: the same one kernel-builder uses (PyPI's).
        env["PATH"] = os.pathsep.join([str(toolchain.ninja().path.parent), env.get("PATH", "")])
        start = time.perf_counter()
        result = subprocess.run([str(self.python), "-c", CPP_EXTENSION, json.dumps(spec)], capture_output=True,
                                text=True, env=env, check=False)  # fmt: skip
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            raise SystemExit(f"cpp_extension.load failed:\n{result.stdout}{result.stderr}")
        return Sample(seconds)

    # --- the cases ----------------------------------------------------------------------------------------

    def case_cold(self, rounds: int, results: dict[str, object], rows: list[list[object]],
                  targets: list[list[object]]) -> None:  # fmt: skip
        ours: list[Sample] = []
        theirs: list[Sample] = []
        for _ in range(rounds):
            ours.append(self.ours(self.copy()))
            theirs.append(self.theirs(self.copy()))
            print(f"  cold: kernel-builder {ours[-1].seconds:.1f} s, cpp_extension {theirs[-1].seconds:.1f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
        split = {
            stage: median([s.stages.get(stage, 0.0) for s in ours])
            for stage in ("configure", "compile", "assemble")
        }
        note = ", ".join(f"{k} {v:.1f}" for k, v in split.items())
        rows.append(["cold kernel-builder (one capability)", *_stats(ours), note])
        rows.append(["cold cpp_extension.load (same sources)", *_stats(theirs), ""])
        ratio = median([s.seconds for s in ours]) / median([s.seconds for s in theirs])
        judged = verdict(ratio, TARGETS["cold"], at_most=True)
        if judged != "met":  # where the seconds over cpp_extension's total go
            judged += f": ours {note} s (cpp_extension {median([s.seconds for s in theirs]):.1f} s in all)"
        targets.append([f"cold build vs cpp_extension.load (goal ≤ {TARGETS['cold']}×)", ratio, judged])
        results["cold"] = {"kernel-builder": _dump(ours), "cpp_extension": _dump(theirs), "ratio": ratio,
                           "kernel-builder-stages": split}  # fmt: skip

    def case_noop(self, rounds: int, results: dict[str, object], rows: list[list[object]],
                  targets: list[list[object]]) -> None:  # fmt: skip
        modes: list[tuple[str, tuple[str, ...]]] = [("default", ())]
        if self.backend == "cuda" and self.gpu:
            modes.append(("--arch native", ("--arch", "native")))
        else:
            rows.append(["no-op rebuild --arch native", None, None, 0, "needs a GPU"])
        out: dict[str, object] = {}
        goal = TARGETS["noop"]
        for label, extra in modes:
            root = self.copy()
            self.ours(root, *extra)
            self.ours(root, *extra, bytecode=True)  # fills the bytecode directory
            samples: list[Sample] = []
            kept: list[Sample] = []
            for _ in range(max(rounds, 3)):  # interleaved: the machine's load hits both alike
                samples.append(self.ours(root, *extra))
                kept.append(self.ours(root, *extra, bytecode=True))
            rows.append([f"no-op rebuild ({label})", *_stats(samples), _bytecode_note()])
            rows.append([f"no-op rebuild ({label}), bytecode kept", *_stats(kept), "as installed by pip"])
            value, value_kept = median([s.seconds for s in samples]), median([s.seconds for s in kept])
            judged = verdict(value, goal, at_most=True)
            if judged != "met":
                judged += (
                    f": {value_kept:.3f} s with bytecode kept; the rest is Python start-up and kernel-builder's "
                    "imports (no process is started)"
                )
            targets.append([f"no-op rebuild ({label}), whole command (goal ≤ {goal} s)", value, judged])
            targets.append(
                [f"no-op rebuild ({label}), bytecode kept (goal ≤ {goal} s)", value_kept,
                 verdict(value_kept, goal, at_most=True)]
            )  # fmt: skip
            out[label] = _dump(samples)
            out[f"{label}, bytecode kept"] = _dump(kept)
        results["noop"] = out

    def case_touch(self, rounds: int, results: dict[str, object], rows: list[list[object]],
                   targets: list[list[object]]) -> None:  # fmt: skip
        root = self.copy()
        self.ours(root)
        source = root / ("relu_cuda/relu.cu" if self.backend == "cuda" else "relu_cpu/relu_cpu.cpp")
        samples = []
        for index in range(rounds):
            with source.open("a", encoding="utf-8") as handle:
                handle.write(f"\n// touched {index}\n")
            samples.append(self.ours(root))
        rows.append([f"one edited {source.suffix} rebuilt", *_stats(samples), "compiler cache off"])
        results["touch"] = _dump(samples)

    def case_caps(self, rounds: int, results: dict[str, object], rows: list[list[object]],
                  targets: list[list[object]]) -> None:  # fmt: skip
        if self.backend != "cuda":
            rows.append(["1 / 4 / 10 capabilities", None, None, 0, "CUDA only"])
            return
        out: dict[str, object] = {}
        for label, caps in (("1", (self.capability,)), ("4", FOUR), ("10", ())):  # () = the default list
            sample = self.ours(self.copy(caps))
            rows.append([f"cold, {label} capabilit{'y' if label == '1' else 'ies'}", *_stats([sample]), ""])
            out[label] = _dump([sample])
        ratio = out["10"][0]["seconds"] / out["1"][0]["seconds"]  # type: ignore[index]
        targets.append(
            [
                f"10 capabilities vs one (goal ≤ {TARGETS['caps']}×)",
                ratio,
                verdict(ratio, TARGETS["caps"], at_most=True),
            ]
        )
        results["caps"] = {**out, "ratio-10-to-1": ratio}

    def case_cache(self, rounds: int, results: dict[str, object], rows: list[list[object]],
                   targets: list[list[object]]) -> None:  # fmt: skip
        from kernel_builder.pipeline.compile import compiler_cache

        found = compiler_cache.find()
        if found is None:
            rows.append(["compiler cache cold / warm", None, None, 0, compiler_cache.summary(None)])
            return
        cold: list[Sample] = []
        warm: list[Sample] = []
        for index in range(max(1, rounds - 1)):
            env = {
                "CCACHE_DIR": str(self.workdir / f"ccache-{index}"),
                "SCCACHE_DIR": str(self.workdir / f"sccache-{index}"),
            }
            root = self.copy()
            cold.append(self.ours(root, cache=True, env=env))
            shutil.rmtree(root / "build")
            shutil.rmtree(root / ".kernel-builder")
            warm.append(self.ours(root, cache=True, env=env))
        rows.append([f"cold, empty {found.tool} cache", *_stats(cold), ""])
        rows.append(["after rm -rf build .kernel-builder, warm cache", *_stats(warm), ""])
        ratio = median([s.seconds for s in warm]) / median([s.seconds for s in cold])
        targets.append(
            [
                f"warm-cache rebuild after rm -rf build .kernel-builder (goal ≤ {TARGETS['cache']:.0%} of cold)",
                ratio,
                _judged(ratio, TARGETS["cache"], warm),
            ]
        )
        results["cache"] = {
            "tool": found.describe(),
            "cold": _dump(cold),
            "warm": _dump(warm),
            "ratio": ratio,
        }

    def case_checkout(self, rounds: int, results: dict[str, object], rows: list[list[object]],
                      targets: list[list[object]]) -> None:  # fmt: skip
        from kernel_builder.pipeline.compile import compiler_cache

        found = compiler_cache.find()
        if found is None:
            rows.append(["second checkout, shared cache", None, None, 0, compiler_cache.summary(None)])
            return
        cold: list[Sample] = []
        warm: list[Sample] = []
        for index in range(max(1, rounds - 1)):
            env = {
                "CCACHE_DIR": str(self.workdir / f"ccache-checkout-{index}"),
                "SCCACHE_DIR": str(self.workdir / f"sccache-checkout-{index}"),
                "SCCACHE_SERVER_PORT": str(_free_port()),
            }
            cold.append(self.ours(self.copy(), cache=True, env=env))
            _stop_sccache(found.tool, found.path, env)
            warm.append(self.ours(self.copy(), cache=True, env=env))  # another path: workdir/NNN/relu
            _stop_sccache(found.tool, found.path, env)
        rows.append([f"cold, empty {found.tool} cache", *_stats(cold), "; ".join(s.cache for s in cold)])
        rows.append(
            ["second checkout at another path, same cache", *_stats(warm), "; ".join(s.cache for s in warm)]
        )
        ratio = median([s.seconds for s in warm]) / median([s.seconds for s in cold])
        targets.append(
            [
                f"second checkout at another path, same cache (goal ≤ {TARGETS['checkout']:.0%} of cold)",
                ratio,
                _judged(ratio, TARGETS["checkout"], warm),
            ]
        )
        results["checkout"] = {
            "tool": found.describe(),
            "cold": _dump(cold),
            "warm": _dump(warm),
            "ratio": ratio,
        }

    def case_suite(self, rounds: int, results: dict[str, object], rows: list[list[object]],
                   targets: list[list[object]]) -> None:  # fmt: skip
        """The whole test suite, once (``rounds`` does not apply: one run takes many minutes)."""
        cuda = self.python if self.backend == "cuda" else None
        run = run_suite(self.workdir / "suite", cuda, self.suite_workers)
        note = f"{run.wall / 60:.1f} min; CPU {run.cpu / 60:.1f} min; exit {run.exit}; {run.summary}"
        rows.append([f"test suite, {run.workers} worker(s)", run.wall, None, 1, note])
        minutes = run.wall / 60
        targets.append(["`make test` ≤ 8 min (pytest, empty caches)", minutes,
                        verdict(minutes, TARGETS["suite"], at_most=True)])  # fmt: skip
        results["suite"] = {"wall-seconds": round(run.wall, 1), "cpu-seconds": round(run.cpu, 1),
                            "workers": run.workers, "exit": run.exit, "summary": run.summary}  # fmt: skip


@dataclass(frozen=True)
class SuiteRun:
    wall: float  # seconds
    cpu: float  # seconds, user + system, of every process the run waited for
    workers: str
    exit: int
    summary: str  # pytest's closing line


def _suite_workers() -> str:
    """``make test``'s default: the cores, at most 4."""
    return str(min(4, os.cpu_count() or 1))


def run_suite(workdir: Path, cuda_python: Path | None, workers: str) -> SuiteRun:
    """``python -m pytest -n WORKERS --dist loadfile`` in the repository, as ``make test`` runs it, with the
    compiler caches (ccache's and sccache's directories) and kernel-builder's cache empty, as on a fresh clone.

    The CUDA build interpreter is ``cuda_python``, else ``KB_TEST_CUDA_PYTHON``, else ``.venv-cu130``. The CPU
    time (``RUSAGE_CHILDREN``) is what the suite costs whatever else runs on the machine; on a shared machine the
    wall time depends on the others."""
    import resource

    workdir.mkdir(parents=True, exist_ok=True)
    cuda = cuda_python or os.environ.get("KB_TEST_CUDA_PYTHON") or REPO / ".venv-cu130" / "bin" / "python"
    env = {
        **os.environ,
        "CCACHE_DIR": str(workdir / "ccache"),
        "SCCACHE_DIR": str(workdir / "sccache"),
        "KERNEL_BUILDER_CACHE": str(workdir / "kernel-builder"),
        "KB_TEST_CUDA_PYTHON": str(cuda),
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
    }
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if workers not in ("", "0"):
        argv += ["-n", workers, "--dist", "loadfile"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [line.strip("= ") for line in result.stdout.splitlines() if line.strip()]
    summary = lines[-1] if lines else "no output"
    print(f"  suite: {wall / 60:.1f} min, exit {result.returncode}: {summary}", file=sys.stderr, flush=True)
    log = RESULTS / "suite-pytest.log"  # the workdir is removed at exit
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(result.stdout + result.stderr, encoding="utf-8")
    print(f"  pytest's output: {log}", file=sys.stderr, flush=True)
    return SuiteRun(wall, cpu, workers or "0", result.returncode, summary)


def _bytecode_note() -> str:
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return "PYTHONDONTWRITEBYTECODE: modules compiled at every start"
    return "bytecode as this environment keeps it"


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _stop_sccache(tool: str, path: Path, env: dict[str, str]) -> None:
    """A new sccache server for the next build: it reads the checkout's SCCACHE_BASEDIRS when it starts."""
    if tool == "sccache":
        subprocess.run(
            [str(path), "--stop-server"], capture_output=True, env={**os.environ, **env}, check=False
        )


def _stages(log: str) -> dict[str, float]:
    """configure / compile / assemble seconds from the ``[  12.3 s] variant: stage`` lines of a build log."""
    marks: dict[str, float] = {}
    for line in log.splitlines():
        match = _STAGE.match(line)
        if match:
            marks.setdefault(match[2], float(match[1]))
    stages: dict[str, float] = {}
    if "configuring" in marks and "compiling" in marks:
        stages["configure"] = marks["compiling"] - marks["configuring"]
    if "compiling" in marks and "assembling" in marks:
        stages["compile"] = marks["assembling"] - marks["compiling"]
    if "assembling" in marks and "built" in marks:
        stages["assemble"] = marks["built"] - marks["assembling"]
    return stages


def _judged(ratio: float, goal: float, warm: list[Sample]) -> str:
    """The verdict, and for a goal not met what the warm builds spent their time on (the build log's stages)."""
    judged = verdict(ratio, goal, at_most=True)
    if judged == "met":
        return judged
    split = {
        stage: median([s.stages.get(stage, 0.0) for s in warm])
        for stage in ("configure", "compile", "assemble")
    }
    return judged + ": warm build " + ", ".join(f"{k} {v:.1f}" for k, v in split.items()) + " s"


def _stats(samples: list[Sample]) -> list[object]:
    values = [s.seconds for s in samples]
    return [median(values), spread(values), len(values)]


def _dump(samples: list[Sample]) -> list[dict[str, object]]:
    return [{"seconds": s.seconds, "stages": s.stages, "cache": s.cache} for s in samples]


if __name__ == "__main__":
    sys.exit(main())
