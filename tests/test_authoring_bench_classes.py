"""kernel_builder.authoring.bench_classes: ``kernel-builder bench`` running ``Benchmark`` classes as upstream's
``kernels benchmark`` does (discovery, setup order, seed, verification, report), and the ``kernels.benchmark``
stand-in where the kernels package is not installed.

The fast tests drive the functions in this process with a fake kernel; the slow ones build
``tests/fixtures/bench-classes`` (a pure-Python kernel) and run the command, with ``kernels`` installed and hidden.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from build_runs import NO_IMPORT_CHECK, run_cli
from cpu_projects import write_tree

torch = pytest.importorskip("torch")

from kernel_builder.authoring.bench_classes import (  # noqa: E402  (after the skip: running needs torch)
    ATOL,
    RTOL,
    BenchmarkFileError,
    WorkloadResult,
    compare,
    find_classes,
    install_kernels_shim,
    kernels_shim_modules,
    load_files,
    render_table,
    report,
    run_classes,
    workloads_of,
)
from kernel_builder.authoring.benchmark import Benchmark  # noqa: E402
from kernel_builder.authoring.timing import ONE_ROUND, Timing  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "bench-classes"


@pytest.fixture(autouse=True)
def _forget_benchmark_modules() -> Iterator[None]:
    """The benchmark files are imported under private names: drop them after each test."""
    yield
    for name in [n for n in sys.modules if n.startswith("_kb_bench_")]:
        del sys.modules[name]


def fake_kernel() -> types.ModuleType:
    kernel = types.ModuleType("fake_kernel")
    kernel.scale = lambda x, factor: x * factor  # type: ignore[attr-defined]
    return kernel


def benchmarks(root: Path, files: dict[str, str]) -> Path:
    return write_tree(root / "benchmarks", files)


# --- discovery --------------------------------------------------------------------------------------------


def test_classes_defined_in_benchmark_files_in_name_order(tmp_path: Path) -> None:
    directory = benchmarks(
        tmp_path,
        {
            "benchmark_b.py": """
                import sys
                from kernel_builder import Benchmark

                A = sys.modules["_kb_bench_benchmark_a"].A  # imported, not defined here: not run twice

                class Zed(Benchmark):
                    def benchmark_second(self): pass
                    def benchmark_first(self): pass
                    def verify_first(self): pass
                    benchmark_not_a_method = 3

                class Alpha(Benchmark):
                    def benchmark_x(self): pass

                class Base(Benchmark):  # shared setup, no workload of its own
                    def setup(self): pass
            """,
            "benchmark_a.py": """
                from kernel_builder import Benchmark

                class A(Benchmark):
                    def benchmark_only(self): pass
            """,
            "benchmark_c.py": "def bench_old_style(kernel, device): pass\n",
            "helpers.py": "raise AssertionError('only benchmark*.py files are loaded')\n",
        },
    )
    classes, notes = find_classes(load_files(directory))
    assert [(path.name, cls.__name__) for path, cls in classes] == [
        ("benchmark_a.py", "A"), ("benchmark_b.py", "Alpha"), ("benchmark_b.py", "Zed"),
    ]  # fmt: skip
    assert workloads_of(classes[2][1]) == ["first", "second"]
    assert notes == [
        "benchmark_b.py: Base has no benchmark_* method: skipped",
        "benchmarks/benchmark_c.py defines no Benchmark subclass: skipped",
    ]


def test_subclasses_of_upstreams_class_are_found(tmp_path: Path) -> None:
    pytest.importorskip("kernels.benchmark")
    directory = benchmarks(
        tmp_path,
        {
            "benchmark.py": """
                from kernels.benchmark import Benchmark

                class Upstream(Benchmark):
                    def benchmark_w(self): pass
            """
        },
    )
    (found,) = find_classes(load_files(directory))[0]
    assert found[1].__name__ == "Upstream" and found[1].__mro__[1] is not Benchmark


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("x = 1\nraise RuntimeError('boom')\n", "benchmarks/benchmark.py:2: RuntimeError: boom"),
        ("class A(:\n", "benchmarks/benchmark.py:1: SyntaxError:"),
        ("import not_a_module_anywhere\n", "benchmarks/benchmark.py:1: ModuleNotFoundError: No module named"),
    ],
)
def test_a_file_that_fails_to_load_is_named_with_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, where: str
) -> None:
    benchmarks(tmp_path, {"benchmark.py": text})
    monkeypatch.chdir(tmp_path)  # a relative directory: the line is found all the same
    with pytest.raises(BenchmarkFileError) as caught:
        load_files(Path("benchmarks"))
    assert str(caught.value).startswith(where)
    assert "_kb_bench_benchmark" not in sys.modules


# --- running ----------------------------------------------------------------------------------------------

EVENTS: list[tuple[Any, ...]] = []


class Recorder(Benchmark):
    """Records what the runner does, in order."""

    seed = 5

    def __init__(self) -> None:
        super().__init__()
        EVENTS.append(("init",))

    def setup(self) -> None:
        EVENTS.append(("setup", self.kernel.__name__, self.device, random.random(), float(torch.rand(1))))
        self.x = torch.arange(4.0)

    def setup_two(self) -> None:
        EVENTS.append(("setup_two",))
        self.x = torch.ones(2)

    def benchmark_one(self) -> None:
        EVENTS.append(("benchmark_one",))
        self.out = self.kernel.scale(self.x, 2.0)

    def verify_one(self) -> Any:
        EVENTS.append(("verify_one",))
        return self.x + self.x

    def benchmark_two(self) -> None:
        EVENTS.append(("benchmark_two",))
        self.out = self.x


def test_setup_seed_and_a_fresh_instance_per_workload_in_upstreams_order() -> None:
    EVENTS.clear()
    random.seed(5)
    torch.manual_seed(5)
    seeded = (random.random(), float(torch.rand(1)))
    one, two = run_classes([(Path("benchmark.py"), Recorder)], fake_kernel(), "cpu", warmup=1, runs=2,
                           rotate=False, rounds=ONE_ROUND)  # fmt: skip

    # Without rotation (below), one instance per workload. one: setup (kernel, device and seeds set first); one
    # run and the check; a warm-up kernel run, a warm-up reference run, then the round: 2 kernel runs and 2
    # reference runs (the sides take turns). two: its own setup, no verify_two.
    assert EVENTS == [
        ("init",), ("setup", "fake_kernel", "cpu", *seeded), ("benchmark_one",), ("verify_one",),
        ("benchmark_one",), ("verify_one",), *[("benchmark_one",)] * 2, *[("verify_one",)] * 2,
        ("init",), ("setup_two",), *[("benchmark_two",)] * 4,
    ]  # fmt: skip
    assert (one.name, one.verified, one.max_abs_error, one.error) == ("Recorder.one", True, 0.0, "")
    assert one.kernel is not None and one.reference is not None and one.kernel.runs == 2
    assert one.speedup == one.reference.median_us / one.kernel.median_us
    assert (two.verified, two.reference, two.speedup, two.failed) == (None, None, None, False)


# (out, expected): the verdict must be upstream's, torch.allclose(out, expected, atol=1e-2).
COMPARABLE = {
    "equal": (torch.ones(3), torch.ones(3), 0.0),
    "within atol": (torch.ones(3), torch.ones(3) + 0.009, 0.009),
    "beyond atol": (torch.ones(3), torch.ones(3) + 0.02, 0.02),
    "rtol helps large values": (torch.full((2,), 1000.0), torch.full((2,), 1000.015), 0.015),
    "broadcast": (torch.ones(3), torch.ones(2, 3), 0.0),
    "equal infinities": (torch.tensor([float("inf")]), torch.tensor([float("inf")]), 0.0),
    "NaN is never equal": (torch.tensor([float("nan")]), torch.tensor([float("nan")]), float("inf")),
    "integers": (torch.tensor([1, 5]), torch.tensor([1, 2]), 3.0),
}


@pytest.mark.parametrize("case", sorted(COMPARABLE))
def test_verdict_is_upstreams_and_the_largest_error_is_reported(case: str) -> None:
    out, expected, largest = COMPARABLE[case]
    check = compare(out, expected, "w")
    assert check.verified == bool(torch.allclose(out, expected, atol=1e-2)) and not check.problem
    assert check.max_abs_error == pytest.approx(largest, rel=1e-3)


@pytest.mark.parametrize(
    ("out", "expected", "problem"),
    [
        (None, torch.ones(1), "self.out is NoneType, not a tensor: setup or benchmark_w must set it"),
        (torch.ones(1), [1.0], "verify_w returned list, not a tensor"),
        (torch.ones(2, dtype=torch.float16), torch.ones(2), "cannot compare self.out (float16 [2] on cpu) with "
         "verify_w's result (float32 [2] on cpu)"),
        (torch.ones(2), torch.ones(3), "cannot compare self.out (float32 [2] on cpu)"),
    ],
)  # fmt: skip
def test_what_cannot_be_compared_fails_with_the_reason(out: Any, expected: Any, problem: str) -> None:
    check = compare(out, expected, "w")
    assert not check.verified and check.max_abs_error is None and check.problem.startswith(problem)


class Mixed(Benchmark):
    def setup(self) -> None:
        self.x = torch.ones(8)

    def setup_broken(self) -> None:
        raise ValueError("no inputs")

    def benchmark_broken(self) -> None:
        pass

    def benchmark_wrong(self) -> None:
        self.out = self.x * 3

    def verify_wrong(self) -> Any:
        return self.x * 2

    def benchmark_nan(self) -> None:
        self.out = self.x * float("nan")

    def verify_nan(self) -> Any:
        return self.x

    def benchmark_good(self) -> None:
        self.out = self.x

    def verify_good(self) -> Any:
        return self.x.clone()


def test_failures_are_reported_and_the_other_workloads_still_run() -> None:
    results = {
        r.name: r for r in run_classes([(Path(__file__), Mixed)], fake_kernel(), "cpu", warmup=0, runs=2)
    }
    broken, wrong, nan, good = (results[f"Mixed.{w}"] for w in ("broken", "wrong", "nan", "good"))
    line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), 1) if "no inputs" in text)
    assert broken.error == f"setup_broken: {Path(__file__).name}:{line}: ValueError: no inputs"
    assert broken.kernel is None and broken.failed
    assert (wrong.verified, wrong.max_abs_error, wrong.error, wrong.failed) == (False, 1.0, "", True)
    assert wrong.kernel is not None and wrong.reference is not None  # timed all the same
    assert nan.verified is False and nan.error == "NaN or infinity where self.out and the reference differ"
    assert nan.to_json()["max_abs_error"] is None
    assert (good.verified, good.failed) == (True, False)

    table = render_table(list(results.values()), "cpu")
    wrong_row = next(line for line in table.splitlines() if line.startswith("Mixed.wrong"))
    assert wrong_row.split()[-2:] == ["NO", "1"]
    assert "Mixed.broken: error: setup_broken:" in table
    assert f"atol={ATOL:g}, rtol={RTOL:g}" in table


def test_json_report_names_the_mode_reference_and_tolerance() -> None:
    result = WorkloadResult("C.w", "benchmark.py", Timing(10.0, 9.0, 11.0, 3), Timing(30.0, 29.0, 31.0, 3), True,
                            0.001)  # fmt: skip
    data = report([result], ["a note"])
    assert data["source"] == "Benchmark classes" and data["reference"] == "verify_<workload>"
    assert data["tolerance"] == {"atol": 1e-2, "rtol": 1e-5} and data["skipped"] == ["a note"]
    (entry,) = data["results"]
    assert entry["speedup"] == pytest.approx(3.0) and entry["verified"] is True
    assert entry["max_abs_error"] == 0.001 and entry["kernel"]["median_us"] == 10.0
    json.dumps(data, allow_nan=False)  # plain JSON


# --- the kernels.benchmark stand-in -----------------------------------------------------------------------


def test_stand_in_modules_offer_our_benchmark_only() -> None:
    package, submodule = kernels_shim_modules()
    assert package.Benchmark is Benchmark and submodule.Benchmark is Benchmark
    assert package.benchmark is submodule
    assert not hasattr(package, "__wrapped__")
    with pytest.raises(ImportError, match="kernels.get_kernel: the kernels package is not installed"):
        package.get_kernel  # noqa: B018


def test_no_stand_in_where_kernels_is_installed() -> None:
    pytest.importorskip("kernels")
    before = sys.modules.get("kernels")
    assert install_kernels_shim() is False
    assert sys.modules.get("kernels") is before


#: Makes ``kernels`` unimportable in a process, as if it were not installed.
HIDE_KERNELS = """
import sys

class _HideKernels:
    def find_spec(self, name, path=None, target=None):
        if name == "kernels" or name.startswith("kernels."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, _HideKernels())
"""


def test_stand_in_where_kernels_is_missing() -> None:
    code = HIDE_KERNELS + textwrap.dedent(
        """
        import kernel_builder
        from kernel_builder.authoring.bench_classes import install_kernels_shim

        try:
            import kernels
        except ModuleNotFoundError:
            pass
        else:
            raise AssertionError("kernels is not hidden")
        assert install_kernels_shim() is True
        from kernels.benchmark import Benchmark
        import kernels
        assert Benchmark is kernel_builder.Benchmark is kernels.Benchmark
        try:
            from kernels import get_kernel
        except ImportError as exc:
            assert "pip install kernels" in str(exc), exc
        else:
            raise AssertionError("only Benchmark is offered")
        print("ok")
        """
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stderr


# --- the command, on a built project (slow) ---------------------------------------------------------------

#: Prints which Benchmark class `kernels.benchmark` gave; it defines no class itself (a note says so).
PROBE = """
import kernel_builder
from kernels.benchmark import Benchmark

print(f"probe: kernels.benchmark.Benchmark is kernel_builder.Benchmark: {Benchmark is kernel_builder.Benchmark}")
"""

WORKLOADS = [
    "ScaleBenchmark.large", "ScaleBenchmark.small", "ScaleBenchmark.unchecked", "SiluAndMulBenchmark.silu_and_mul",
]  # fmt: skip


@pytest.fixture(scope="module")
def built_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/fixtures/bench-classes with the probe, built once; each test benches its own copy."""
    root = shutil.copytree(FIXTURE, tmp_path_factory.mktemp("bench-classes") / "kb-bench")
    write_tree(root, {"benchmarks/benchmark_probe.py": PROBE})
    run_cli(["build", root, NO_IMPORT_CHECK]).check()  # `bench` loads it: no import check needed
    return root


def bench(
    project: Path, tmp_path: Path, env: dict[str, str] | None = None
) -> tuple[int, str, dict[str, Any]]:
    root = shutil.copytree(project, tmp_path / "kb-bench")
    report_file = tmp_path / "bench.json"
    run = run_cli(["bench", root, "--runs", "3", "--warmup", "1", "--json", report_file], env=env)
    data = json.loads(report_file.read_text()) if report_file.exists() else {}
    return run.returncode, run.output, data


def rows(output: str) -> dict[str, list[str]]:
    """The table's kernel rows (the one per workload that says whether it was verified), as lists of cells."""
    return {
        cells[0]: cells
        for cells in map(str.split, output.splitlines())
        if len(cells) > 1 and cells[0] in WORKLOADS and cells[1] == "kernel"
    }


def check_verified_run(code: int, output: str, data: dict[str, Any]) -> None:
    assert code == 0, output
    assert (
        "kb_bench: mode: Benchmark classes of benchmarks/benchmark*.py, reference verify_<workload>" in output
    )
    assert "note: benchmarks/benchmark_probe.py defines no Benchmark subclass: skipped" in output
    table = rows(output)
    assert sorted(table) == WORKLOADS
    for name in WORKLOADS:
        verified, largest = table[name][-2:]
        if name.endswith("unchecked"):  # no verify_unchecked
            assert (verified, largest) == ("-", "-"), table[name]
        else:
            assert verified == "yes" and float(largest) < ATOL, table[name]
    results = {r["name"]: r for r in data["results"]}
    assert sorted(results) == WORKLOADS and data["source"] == "Benchmark classes"
    # scale rounds through float16: a small error, within the tolerance; silu_and_mul computes what verify does.
    for name in ("ScaleBenchmark.large", "ScaleBenchmark.small"):
        assert results[name]["verified"] is True and 0 < results[name]["max_abs_error"] < ATOL
        assert results[name]["speedup"] > 0 and results[name]["kernel"]["runs"] == 3
    assert results["SiluAndMulBenchmark.silu_and_mul"]["max_abs_error"] < 1e-5
    assert results["ScaleBenchmark.unchecked"]["verified"] is None


@pytest.mark.slow
def test_bench_runs_the_classes_with_kernels_installed(built_project: Path, tmp_path: Path) -> None:
    pytest.importorskip("kernels.benchmark")
    code, output, data = bench(built_project, tmp_path)
    check_verified_run(code, output, data)
    # upstream's class itself: SiluAndMulBenchmark subclasses it and is run all the same
    assert "probe: kernels.benchmark.Benchmark is kernel_builder.Benchmark: False" in output


@pytest.mark.slow
def test_bench_runs_the_classes_with_kernels_hidden(built_project: Path, tmp_path: Path) -> None:
    site = write_tree(tmp_path / "site", {"sitecustomize.py": HIDE_KERNELS})
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    code, output, data = bench(built_project, tmp_path, env={"PYTHONPATH": path})
    check_verified_run(code, output, data)
    assert "probe: kernels.benchmark.Benchmark is kernel_builder.Benchmark: True" in output


@pytest.mark.slow
def test_bench_exits_1_when_a_verify_disagrees(built_project: Path, tmp_path: Path) -> None:
    project = shutil.copytree(built_project, tmp_path / "wrong")
    file = project / "benchmarks" / "benchmark.py"
    good = "    def verify_small(self):\n        return self.x * self.factor\n"
    assert good in file.read_text()
    file.write_text(file.read_text().replace(good, good.replace("self.factor", "(self.factor + 0.5)")))
    code, output, data = bench(project, tmp_path / "run")
    assert code == 1, output
    assert rows(output)["ScaleBenchmark.small"][-2] == "NO"
    results = {r["name"]: r for r in data["results"]}
    assert results["ScaleBenchmark.small"]["verified"] is False
    assert results["ScaleBenchmark.small"]["max_abs_error"] > ATOL
    assert results["ScaleBenchmark.large"]["verified"] is True  # the others still ran
    assert results["SiluAndMulBenchmark.silu_and_mul"]["verified"] is True


# --- the benchmark process, in this process (the kernel faked) ----------------------------------------------


def run_main(root: Path, monkeypatch: pytest.MonkeyPatch, *extra: str) -> int:
    from kernel_builder.authoring import bench

    monkeypatch.setattr("kernel_builder.loader.get_local_kernel", lambda path: fake_kernel())
    monkeypatch.setattr("kernel_builder.loader.alias.expose_as", lambda module, name: None)
    return bench.main(
        [str(root / "build"), str(root), "--package", "fake", "--runs", "2", "--warmup", "0", *extra]
    )


def test_classes_take_precedence_over_bench_functions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    benchmarks(
        tmp_path,
        {
            "benchmark.py": """
                import torch
                from kernel_builder import Benchmark

                class Double(Benchmark):
                    def setup(self):
                        self.x = torch.ones(4)

                    def benchmark_twice(self):
                        self.out = self.kernel.scale(self.x, 2.0)

                    def verify_twice(self):
                        return self.x * 2
            """,
            "bench_old.py": "def bench_never(kernel, device):\n    raise AssertionError('not in class mode')\n",
            "benchmark_empty.py": "X = 1\n",
        },
    )
    report_file = tmp_path / "r.json"
    assert run_main(tmp_path, monkeypatch, "--json", str(report_file)) == 0
    out = capsys.readouterr().out
    assert "fake: mode: Benchmark classes of benchmarks/benchmark*.py, reference verify_<workload>" in out
    assert "note: benchmarks/benchmark_empty.py defines no Benchmark subclass: skipped" in out
    data = json.loads(report_file.read_text())
    assert (data["device"], data["source"]) == ("cpu", "Benchmark classes")
    assert [(r["name"], r["verified"], r["max_abs_error"]) for r in data["results"]] == [
        ("Double.twice", True, 0.0)
    ]


def test_bench_functions_still_run_without_classes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # benchmark.py is loaded once to look for classes, and its bench_* functions are then run from that load.
    benchmarks(
        tmp_path,
        {
            "benchmark.py": """
                from pathlib import Path

                import torch
                from kernel_builder.authoring.bench import Case

                with open(Path(__file__).with_name("loads.txt"), "a") as log:
                    print("loaded", file=log)

                def bench_scale(kernel, device):
                    x = torch.ones(4)
                    return Case(run=lambda: kernel.scale(x, 2.0), reference=lambda: x + x)
            """
        },
    )
    assert run_main(tmp_path, monkeypatch) == 0
    out = capsys.readouterr().out
    assert "fake: mode: functions bench_* of benchmarks/" in out and "scale" in out
    assert (tmp_path / "benchmarks" / "loads.txt").read_text() == "loaded\n"


def test_a_broken_benchmark_file_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    benchmarks(tmp_path, {"benchmark.py": "import torch\n\nraise RuntimeError('no GPU here')\n"})
    assert run_main(tmp_path, monkeypatch) == 1
    assert capsys.readouterr().err == "error: benchmarks/benchmark.py:3: RuntimeError: no GPU here\n"


class Declared(Benchmark):
    """Declares the bytes and FLOPs of one call in its setup, and counts its instances."""

    made = 0

    def setup(self) -> None:
        type(self).made += 1
        self.x = torch.ones(1024)
        self.bytes = 2 * self.x.nbytes
        self.flops = self.x.numel()

    def benchmark_double(self) -> None:
        self.out = self.x * 2

    def verify_double(self) -> Any:
        return self.x + self.x


def test_declared_bytes_and_flops_give_rates_and_small_inputs_rotate_past_the_cache() -> None:
    from kernel_builder.authoring.timing import cache_bytes, rotation_sets

    Declared.made = 0
    (result,) = run_classes([(Path("benchmark.py"), Declared)], fake_kernel(), "cpu", warmup=1, runs=5)
    assert (result.bytes, result.flops, result.verified) == (8192, 1024, True)
    # The instances: the checked one, then as many more as the rotation needs (8 KiB each: the declared bytes).
    sets = rotation_sets(8192, cache_bytes("cpu"))
    assert Declared.made == sets and result.kernel is not None and result.kernel.sets == sets
    assert result.reference is not None and result.reference.sets == sets
    entry = result.to_json()
    assert entry["kernel_gbps"] == pytest.approx(8192 / result.kernel.median_us / 1e3)
    assert entry["kernel_tflops"] == pytest.approx(1024 / result.kernel.median_us / 1e6)
    assert entry["compiled"] is None and entry["rotation"] == result.rotation
    table = render_table([result], "cpu")
    header = table.splitlines()[1].split()
    assert (
        header[:5] == ["workload", "side", "median", "min", "max"]
        and "GB/s" in header
        and "TFLOP/s" in header
    )
    kernel_row, reference_row = table.splitlines()[2:4]
    assert kernel_row.startswith("Declared.double") and " kernel " in kernel_row
    assert reference_row.split()[1] == "verify_<workload>"
    if cache_bytes("cpu"):
        assert f"Declared.double: {sets} buffer sets of 8 KiB rotated" in table


class Undeclared(Benchmark):
    def setup(self) -> None:
        self.x = torch.ones(4)

    def benchmark_same(self) -> None:
        self.out = self.x


def test_without_declarations_there_are_no_rates() -> None:
    (result,) = run_classes([(Path("benchmark.py"), Undeclared)], fake_kernel(), "cpu", warmup=0, runs=2,
                            rotate=False)  # fmt: skip
    assert (result.bytes, result.flops, result.rotation) == (None, None, "not rotated")
    row = render_table([result], "cpu").splitlines()[2]
    assert row.split()[:2] == ["Undeclared.same", "kernel"] and " - " in row  # GB/s and TFLOP/s: "-"


@pytest.mark.slow
def test_compare_compile_times_the_compiled_reference_once_compiled() -> None:
    """``torch.compile`` of ``verify_<w>``, called with each rotated instance: one compile, a third timing."""
    import shutil

    if not (shutil.which("c++") or shutil.which("g++")):
        pytest.skip("torch.compile (inductor) needs a C++ compiler on the CPU; none on PATH")
    from torch._dynamo.utils import counters

    counters.clear()
    (result,) = run_classes([(Path("benchmark.py"), Declared)], fake_kernel(), "cpu", warmup=1, runs=3,
                            compile=True)  # fmt: skip
    assert result.compile_error == "" and result.compiled is not None, result.compile_error
    assert result.compiled.sets == result.kernel.sets if result.kernel else False
    assert counters["stats"]["unique_graphs"] == 1  # the instances are arguments: no recompiles
    table = render_table([result], "cpu")
    assert "torch.compile(verify_<workload>)" in table and "the speed of torch.compile" in table
