"""The megablocks-style fixture (``tests/fixtures/megablocks-style``): a binding in ``torch-ext/`` that includes
``cumsum.h`` by its bare name, a header listed in the kernel sections' ``src`` beside their sources in ``csrc/``.

The binding sees the directories of the headers (and the ``include`` directories) of the variant's kernel
sections, so both variants compile; their section names start with ``_``, as real kernels' do. The cpu variant is
built and run here; the cuda variant is compiled with nvcc for capability 9.0 (``--arch 9.0``, no GPU needed) and,
on a machine with a GPU, built for it (``--arch native``) with the running Torch and checked against
``torch.cumsum``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from build_outputs import compile_commands, object_files
from build_runs import NO_IMPORT_CHECK, STATE_DIR, Built, build, cpu_python, require_cuda_python, run_json
from matrix_data import CPU_VARIANT, CUDA_VARIANT

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "megablocks-style"
BINDING = "torch-ext/torch_binding.cpp"

#: Runs in a fresh interpreter: load the variant, run the op on int32 inputs of several lengths (the empty one
#: included) on ``argv[2]`` (``cpu`` or ``cuda``), on the current stream and, on CUDA, on a side stream;
#: print, per case, whether the result equals ``torch.cumsum``'s.
CHECK_AGAINST_TORCH = """
import json, sys
import torch
import kernel_builder

kernel = kernel_builder.get_local_kernel(sys.argv[1])
device = sys.argv[2]
generator = torch.Generator().manual_seed(0)
results = []
for n in (0, 1, 7, 1000, 4097):
    x = torch.randint(-1000, 1000, (n,), dtype=torch.int32, generator=generator).to(device)
    want = torch.cumsum(x, 0, dtype=torch.int32)
    results.append([f"{device} n={n}", torch.equal(kernel.inclusive_cumsum(x), want)])
    if device == "cuda":
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            got = kernel.inclusive_cumsum(x)
        stream.synchronize()
        results.append([f"{device} n={n} side stream", torch.equal(got, want)])
print(json.dumps(results))
"""


def copy_fixture(dest: Path) -> Path:
    shutil.copytree(FIXTURE, dest, ignore=shutil.ignore_patterns("build", STATE_DIR, "__pycache__"))
    return dest


def assert_binding_sees_csrc(built: Built, section: str, kernel_source: str) -> None:
    """The binding compiled with ``csrc/`` on its include path; the section's own file too (by its own
    directory), into the section's object library ``kb_kernel_<section>``."""
    commands = compile_commands(built)
    assert f"-I{built.root / 'csrc'}" in commands[BINDING], commands[BINDING]
    assert kernel_source in commands
    assert [p.name for p in object_files(built.cmake_build, f"kb_kernel_{section}")] == [
        f"{Path(kernel_source).name}.o"
    ]


def assert_all_equal(results: object) -> None:
    assert isinstance(results, list) and results
    wrong = [case for case, equal in results if not equal]
    assert wrong == [], f"differs from torch.cumsum: {wrong}"


@pytest.mark.slow
def test_cpu_variant_builds_and_matches_torch(tmp_path: Path) -> None:
    root = copy_fixture(tmp_path / "megablocks-style")
    built = Built(root, build(root, NO_IMPORT_CHECK), CPU_VARIANT)  # loaded below, in a fresh interpreter
    assert_binding_sees_csrc(built, "_megablocks_cpu", "csrc/cumsum_cpu.cpp")
    assert_all_equal(run_json(cpu_python(), CHECK_AGAINST_TORCH, built.variant_dir, "cpu"))


@pytest.mark.slow
@pytest.mark.cuda
def test_cuda_variant_compiles_with_nvcc(tmp_path: Path) -> None:
    """No GPU needed: the binding and the section's ``.cu`` compile, and the op registers."""
    python = require_cuda_python()
    root = copy_fixture(tmp_path / "megablocks-style")
    built = Built(
        root, build(root, "--arch", "9.0", NO_IMPORT_CHECK, python=python), CUDA_VARIANT
    )  # loaded below
    assert_binding_sees_csrc(built, "_megablocks", "csrc/cumsum.cu")
    registered = run_json(
        python,
        """
        import json, sys
        import kernel_builder
        kernel = kernel_builder.get_local_kernel(sys.argv[1])
        print(json.dumps(hasattr(kernel.ops, "inclusive_cumsum")))
        """,
        built.variant_dir,
    )
    assert registered is True


def _gpu_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.gpu
@pytest.mark.slow
def test_cuda_variant_runs_on_the_gpu(tmp_path: Path) -> None:
    """On the GPU machine: build the cuda variant for the running Torch and compare with ``torch.cumsum``."""
    if not _gpu_visible():
        pytest.skip("needs a visible CUDA GPU and a CUDA build of torch (run on the GPU machine)")
    root = copy_fixture(tmp_path / "megablocks-style")
    run = build(root, "--backend", "cuda", "--arch", "native")
    (variant,) = [d for d in (root / "build").iterdir() if d.is_dir() and "-cu" in d.name]
    built = Built(root, run, variant.name)
    assert_binding_sees_csrc(built, "_megablocks", "csrc/cumsum.cu")
    assert_all_equal(run_json(Path(sys.executable), CHECK_AGAINST_TORCH, built.variant_dir, "cuda"))
