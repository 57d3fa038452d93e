"""Building several variants from one command in isolated environments (docs/layout.md;
the variant-matrix issue's acceptance test).

``kernel-builder build examples/relu --variant <CPU_VARIANT> --variant <CUDA_VARIANT>`` (the variants of the
CPU and CUDA test Torch, tests/matrix_data.py) runs in a subprocess with ``KERNEL_BUILDER_CACHE`` in a fresh
directory, so the CUDA test Torch's (cu130) environment is created by the test (about 1-2 minutes from the local
wheels); the CPU variant is served by the tests' own interpreter (the CPU test Torch). Set ``KB_TEST_KERNEL_BUILDER_CACHE`` to a
directory to keep the environments between sessions. Each project is built once per session.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import matrix_data as md
import pytest
from build_outputs import cuobjdump, extension, nvcc, snapshot, tool_output
from build_runs import CliRun, cpu_python, metadata, printed, run_cli, run_json
from cpu_projects import GENERAL, copy_example, write_tree
from cuobjdump_listing import cuobjdump_names, expected_cuobjdump_images
from matrix_data import CPU_VARIANT, CUDA_VARIANT

from kernel_builder.backends import gpu_archs

pytestmark = [pytest.mark.slow, pytest.mark.cuda]

#: CUDA 13.0's default capability list (docs/layout.md), what a kernel without cuda-capabilities gets.
DEFAULT_13_0 = ["7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX"]
ENV_PREFIX = f"torch{md.CUDA_TEST_PIN}-cu130-"


@pytest.fixture(scope="session")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``KERNEL_BUILDER_CACHE`` of these tests: fresh per session (removed afterwards: a CUDA Torch
    environment takes several GB), or ``KB_TEST_KERNEL_BUILDER_CACHE`` (kept)."""
    nvcc()  # skips without a CUDA toolkit
    kept = os.environ.get("KB_TEST_KERNEL_BUILDER_CACHE")
    if kept:
        yield Path(kept)
        return
    cache = tmp_path_factory.mktemp("kb-cache")
    yield cache
    shutil.rmtree(cache, ignore_errors=True)


def cuda_env_python(cache: Path) -> Path:
    (env,) = (cache / "envs").glob(ENV_PREFIX + "*")
    return env / "bin" / "python"


def results(run: CliRun) -> dict[str, list[str]]:
    """The final table's rows: variant -> [result, time, size] (the time as ``"12.3 s"``)."""
    lines = run.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split() == ["variant", "result", "time", "size"])
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1 :]:
        if line.startswith(("skipped ", "done in ")):
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells[1:]
    return rows


@dataclass(frozen=True)
class TwoVariants:
    root: Path
    cache: Path
    first: CliRun
    second: CliRun
    before_second: dict[str, tuple[str, int]]
    fresh_cache: bool

    @property
    def build(self) -> Path:
        return self.root / "build"


@pytest.fixture(scope="session")
def two_variants(tmp_path_factory: pytest.TempPathFactory, env_cache: Path) -> TwoVariants:
    root = copy_example("relu", tmp_path_factory.mktemp("variants") / "relu")
    env = {"KERNEL_BUILDER_CACHE": str(env_cache)}
    fresh = not any((env_cache / "envs").glob(ENV_PREFIX + "*"))
    command: list[str | Path] = ["build", root, "--variant", CPU_VARIANT, "--variant", CUDA_VARIANT]
    first = run_cli(command, env=env).check()
    printed(
        "2-variant build (cpu + cu130, environment " + ("created" if fresh else "reused") + ")", first.seconds
    )
    created = re.search(rf"\[\s*([0-9.]+) s\] {CUDA_VARIANT}: configuring", first.stderr)
    if fresh and created:
        printed("creating the torch 2.14.1 cu130 environment (until configure)", float(created[1]))
    before = snapshot(root / "build")
    second = run_cli(command, env=env).check()
    printed("second run, nothing changed", second.seconds)
    return TwoVariants(root, env_cache, first, second, before, fresh)


# --- the acceptance test ----------------------------------------------------------------------------------


def test_both_variants_built_in_one_command(two_variants: TwoVariants) -> None:
    rows = results(two_variants.first)
    assert list(rows) == [CPU_VARIANT, CUDA_VARIANT]
    for result, seconds, size in rows.values():
        assert result == "built"
        assert re.fullmatch(r"\d+\.\d s", seconds)
        assert re.fullmatch(r"\d+\.\d (KiB|MiB)", size)
    assert two_variants.first.stdout.splitlines()[-1].startswith("done in ")
    assert sorted(p.name for p in two_variants.build.iterdir() if p.is_dir()) == [CPU_VARIANT, CUDA_VARIANT]


def test_cuda_variant_got_its_own_environment(two_variants: TwoVariants) -> None:
    """The caller's Torch is the CPU test Torch: it serves the CPU variant, and the cu130 variant gets the cached
    environment of its matrix entry's pin."""
    envs = sorted(p.name for p in (two_variants.cache / "envs").iterdir() if p.is_dir())
    assert any(name.startswith(ENV_PREFIX) for name in envs)
    python = cuda_env_python(two_variants.cache)
    seen = run_json(python, "import json, torch; print(json.dumps([torch.__version__, torch.version.cuda]))")
    assert seen in ([f"{md.CUDA_TEST_PIN}+cu130", "13.0"], [md.CUDA_TEST_PIN, "13.0"])
    if two_variants.fresh_cache:
        assert f"{CUDA_VARIANT}: creating build environment {ENV_PREFIX}" in two_variants.first.stderr
    # The CUDA project was configured against that environment's Torch, not the caller's.
    cache = (
        two_variants.root / ".kernel-builder" / CUDA_VARIANT / "cmake-build" / "CMakeCache.txt"
    ).read_text()
    assert str(python.parent.parent) in cache


def test_metadata_of_both_variants(two_variants: TwoVariants) -> None:
    cpu = metadata(two_variants.build / CPU_VARIANT)
    cuda = metadata(two_variants.build / CUDA_VARIANT)
    for data, backend in ((cpu, "cpu"), (cuda, "cuda")):
        assert data["name"] == "relu"
        assert data["version"] == 1
        assert data["license"] == "Apache-2.0"
        assert isinstance(data["backend"], dict) and data["backend"]["type"] == backend
    assert cpu["backend"] == {"type": "cpu"}
    assert cuda["backend"] == {"type": "cuda", "archs": DEFAULT_13_0}
    assert DEFAULT_13_0 == list(gpu_archs.default_capabilities((13, 0)))
    cpu_id, cuda_id = str(cpu["id"]), str(cuda["id"])
    assert re.fullmatch(r"_relu_cpu_[0-9a-f]{10}", cpu_id) and re.fullmatch(
        r"_relu_cuda_[0-9a-f]{10}", cuda_id
    )
    assert cpu_id.rsplit("_", 1)[1] == cuda_id.rsplit("_", 1)[1]  # one id for the whole build
    assert extension(two_variants.build / CPU_VARIANT).name == f"{cpu_id}.abi3.so"
    assert extension(two_variants.build / CUDA_VARIANT).name == f"{cuda_id}.abi3.so"


def test_cpu_variant_runs_with_the_cpu_test_torch(two_variants: TwoVariants) -> None:
    """Imported in a subprocess with the CPU test Torch's interpreter, the loader picks the CPU variant out of
    build/ (which also holds the cu130 one) and relu matches torch.relu."""
    seen = run_json(
        cpu_python(),
        """
        import json, sys
        from pathlib import Path
        import torch
        import kernel_builder
        relu = kernel_builder.get_local_kernel(Path(sys.argv[1]))
        x = torch.linspace(-3, 3, 1001)
        print(json.dumps({
            "torch": torch.__version__,
            "file": Path(relu.__file__).parent.name,
            "equal": torch.equal(relu.relu(x), torch.relu(x)),
            "values": relu.relu(torch.tensor([-1.0, 0.0, 2.0])).tolist(),
        }))
        """,
        two_variants.build,
    )
    assert isinstance(seen, dict)
    assert seen["torch"].startswith(md.CPU_TEST_PIN)
    assert seen["file"] == CPU_VARIANT
    assert seen["equal"] is True
    assert seen["values"] == [0.0, 0.0, 2.0]


def test_cuda_variant_carries_the_default_sass(two_variants: TwoVariants) -> None:
    tool = cuobjdump(cuda_env_python(two_variants.cache))
    so = extension(two_variants.build / CUDA_VARIANT)
    elf = cuobjdump_names(tool_output([tool, "--list-elf", so]))
    ptx = cuobjdump_names(tool_output([tool, "--list-ptx", so]))
    assert (elf, ptx) == expected_cuobjdump_images(DEFAULT_13_0)
    assert ptx == {"sm_121"}


def test_second_run_reuses_everything_and_is_fast(two_variants: TwoVariants) -> None:
    second = two_variants.second
    print(f"[timing] second run: {second.seconds:.2f} s")
    assert second.seconds < 10, second.output
    rows = results(second)
    assert list(rows) == [CPU_VARIANT, CUDA_VARIANT]
    assert [row[0] for row in rows.values()] == ["up to date", "up to date"]
    assert "creating build environment" not in second.stderr
    assert "configuring" not in second.stderr
    # build/ is left exactly as it was (bytes and mtimes).
    assert snapshot(two_variants.build) == two_variants.before_second


# --- one failing variant does not stop the others -----------------------------------------------------------


def mixed_project(root: Path) -> Path:
    """``kb-mixed``: a CPU kernel that cannot compile and a one-file CUDA kernel (capability 8.0); no file
    includes a Torch header, so the CUDA variant is a configure plus a few seconds of nvcc."""
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name="kb-mixed", backends='["cpu", "cuda"]')
            + """
[torch]

[kernel.broken_cpu]
backend = "cpu"
depends = []
src = ["broken_cpu/broken.cpp"]

[kernel.tiny_cuda]
backend = "cuda"
depends = []
src = ["tiny_cuda/tiny.cu"]
cuda-capabilities = ["8.0"]
""",
            "broken_cpu/broken.cpp": """
                #if defined(CPU_KERNEL)
                #error "kb-mixed: the cpu variant is broken on purpose"
                #endif
            """,
            "tiny_cuda/tiny.cu": """
                #include "registration.h"

                __global__ void kb_mixed_kernel(float *out) { out[threadIdx.x] = 1.0f; }

                REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
            """,
            "torch-ext/kb_mixed/__init__.py": "from ._ops import ops\n",
        },
    )


def test_one_failing_variant_does_not_stop_the_other(tmp_path: Path, env_cache: Path) -> None:
    """Built side by side (``--parallel 2``: compiler output goes to each variant's log): the CPU variant
    fails, the CUDA one is built, and the exit status is 1."""
    root = mixed_project(tmp_path / "kb-mixed")
    env_existed = any((env_cache / "envs").glob(ENV_PREFIX + "*"))
    run = run_cli(
        ["build", root, "--variant", CPU_VARIANT, "--variant", CUDA_VARIANT, "--parallel", "2"],
        env={"KERNEL_BUILDER_CACHE": str(env_cache)},
    )
    printed("kb-mixed (cpu fails, cuda builds)", run.seconds)
    assert run.returncode == 1, run.output
    rows = results(run)
    assert [rows[CPU_VARIANT][0], rows[CUDA_VARIANT][0]] == ["failed", "built"]
    assert f"error: {CPU_VARIANT}: compilation failed" in run.stderr
    assert "the cpu variant is broken on purpose" in run.stderr
    assert sorted(p.name for p in (root / "build").iterdir() if p.is_dir()) == [CUDA_VARIANT]
    assert metadata(root / "build" / CUDA_VARIANT)["backend"] == {"type": "cuda", "archs": ["8.0"]}
    assert (root / ".kernel-builder" / CPU_VARIANT / "build.log").is_file()
    if env_existed:
        assert "creating build environment" not in run.stderr
    # The CPU variant was attempted with the caller's interpreter (the CPU test Torch): no CPU environment.
    assert not list((env_cache / "envs").glob(f"torch{md.CPU_TEST_PIN}-cpu-*"))


# --- a CUDA 12.6 variant: built where its compiler and Torch build can be had, else skipped with the reason ---

CU126_TORCH = max(t for t in md.REQUIRED_TORCH_VERSIONS if (12, 6) in md.cuda_versions(t))
"""The newest required Torch with a CUDA 12.6 entry."""
CU126_VARIANT = md.variant(CU126_TORCH, (12, 6))


def test_cu126_variant_of_relu_carries_cuda_12_6_images(tmp_path: Path, env_cache: Path) -> None:
    """``build --variant <CU126_VARIANT>``: its extension holds exactly the SASS/PTX of CUDA
    12.6's default capability list. It needs a system CUDA 12.6 toolkit (CUDA_HOME: PyPI has no CUDA 12
    nvcc) and Torch's cu126 index; where either is missing, the test is skipped with kernel-builder's reason."""
    from kernel_builder.config import load_project
    from kernel_builder.pipeline.plan.candidates import all_candidates, with_availability

    root = copy_example("relu", tmp_path / "relu")
    (candidate,) = [c for c in all_candidates(load_project(root).project) if c.name == CU126_VARIANT]
    (checked,) = with_availability([candidate])
    if checked.reason is not None:
        pytest.skip(f"{CU126_VARIANT} is not buildable here: {checked.reason}")
    run = run_cli(
        ["build", root, "--variant", CU126_VARIANT], env={"KERNEL_BUILDER_CACHE": str(env_cache)}
    ).check()
    printed("examples/relu cu126 build", run.seconds)
    archs = gpu_archs.default_capabilities((12, 6))
    assert metadata(root / "build" / CU126_VARIANT)["backend"] == {"type": "cuda", "archs": list(archs)}
    binary = extension(root / "build" / CU126_VARIANT)
    python = (
        next((env_cache / "envs").glob(f"torch{md.torch_pin(CU126_TORCH, 'cuda', (12, 6))}-cu126-*"))
        / "bin"
        / "python"
    )
    tool = cuobjdump(python)
    elf = cuobjdump_names(tool_output([tool, "--list-elf", binary]))
    ptx = cuobjdump_names(tool_output([tool, "--list-ptx", binary]))
    assert (elf, ptx) == expected_cuobjdump_images(archs)
    assert run_cli(["check-abi", root / "build" / CU126_VARIANT]).returncode == 0
