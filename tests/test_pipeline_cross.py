"""Cross builds (docs/cross.md): examples/relu's aarch64-linux cpu variant built on an x86_64-linux host with
Debian's cross compiler, from the target's Torch wheel unpacked into a target environment; check-abi judges
the aarch64 extension under the manylinux_2_28_aarch64 policy; an aarch64 CPython under qemu-user loads it.

One cross build per session. The target environment and the emulated Python live in the user cache (or in
``KB_TEST_KERNEL_BUILDER_CACHE``), so a second session fetches nothing. Without the cross compiler or qemu
(``make cross-tools`` installs both on Debian as root) the tests skip, saying what is missing; so does the
emulated load where the aarch64 Torch and the NVIDIA aarch64 CUDA library wheels ``import torch`` needs even
without a GPU cannot be fetched (pip's error is the reason). The emulated Python's packages take about 3.7 GB
of the cache (the CUDA libraries: cublas, cudnn, cusparse, nccl, ...).
"""

from __future__ import annotations

import json
import os
import platform
from pathlib import Path

import pytest
from build_runs import Built, run_cli
from cpu_projects import copy_example

from kernel_builder.pipeline.check.abi import read_elf
from kernel_builder.pipeline.environment.emulation import (
    EmulatedPython,
    EmulationUnavailable,
    emulated_python,
)
from kernel_builder.pipeline.environment.target_env import cross_compiler_problem

pytestmark = [pytest.mark.slow]

SYSTEM = "aarch64-linux"
VARIANT = "torch213-cxx11-cpu-aarch64-linux"
#: The aarch64 Torch, installed without its declared dependencies: they include every CUDA library wheel and
#: Triton, several GB more than ``import torch`` needs.
EMULATED_TORCH = ("torch==2.13.0",)
#: What ``import torch`` needs of those (the aarch64 torch 2.13.0 wheel's Requires-Dist, pinned as it pins them):
#: the CUDA libraries its libraries link (``DT_NEEDED`` of libtorch_cuda, libtorch_cpu, libtorch_nvshmem:
#: cudart, cublas, cufft, cufile, cupti, curand, cusparse and its nvJitLink, nvrtc, cudnn, cusparseLt, nccl,
#: nvshmem; not cusolver or nvtx, loaded later or optionally), the pure-Python packages ``torch/__init__.py``
#: imports, and the loader's own dependencies.
EMULATED_REQUIREMENTS = (
    "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusparse,nvjitlink,nvrtc]==13.0.3",
    "nvidia-cudnn-cu13==9.20.0.48", "nvidia-cusparselt-cu13==0.8.1", "nvidia-nccl-cu13==2.29.7",
    "nvidia-nvshmem-cu13==3.4.5",
    "filelock", "typing-extensions>=4.10.0", "sympy>=1.13.3", "networkx>=2.5.1", "jinja2", "fsspec>=0.8.5",
    "packaging", "huggingface_hub", "tomlkit",
)  # fmt: skip
PACKAGE_PARENT = Path(__file__).resolve().parents[1]  # where `import kernel_builder` finds this checkout


def cache_env() -> dict[str, str]:
    kept = os.environ.get("KB_TEST_KERNEL_BUILDER_CACHE")
    return {"KERNEL_BUILDER_CACHE": kept} if kept else {}


def build_relu_for(factory: pytest.TempPathFactory, variant: str, *extra: str) -> Built:
    """A copy of examples/relu built for the aarch64-linux ``variant`` on this host, or skip saying why not."""
    if platform.machine() != "x86_64":
        pytest.skip(f"cross builds run on x86_64-linux hosts; this one is {platform.machine()}")
    problem = cross_compiler_problem(SYSTEM)
    if problem is not None:
        pytest.skip(problem)
    root = copy_example("relu", factory.mktemp("cross") / "relu")
    first = run_cli(["build", root, "--variant", variant, *extra], env=cache_env()).check()
    return Built(root, first, variant)


@pytest.fixture(scope="session")
def cross_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return build_relu_for(tmp_path_factory, VARIANT)


def test_the_cross_variant_is_an_aarch64_extension_of_torchs_cpu_libraries(cross_build: Built) -> None:
    (extension,) = cross_build.variant_dir.glob("*.abi3.so")
    facts = read_elf(extension)
    assert facts.machine == "aarch64"
    assert facts.needed == (
        "libtorch.so", "libtorch_cpu.so", "libc10.so", "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6"
    )  # fmt: skip
    assert facts.runpath == ()
    metadata = json.loads((cross_build.variant_dir / "metadata.json").read_text(encoding="utf-8"))
    # PyPI's only aarch64 torch 2.13.0 is the CUDA 13.0 build: its CPU parts built the variant, and it says so.
    assert metadata["provenance"]["torch"] == {"version": "2.13.0+cu130"}
    assert metadata["backend"] == {"type": "cpu"}


def test_the_build_says_the_import_check_did_not_run(cross_build: Built) -> None:
    out = cross_build.run.output
    assert f"{VARIANT}: import check skipped: the variant is for {SYSTEM}" in out
    assert f"{VARIANT}  built" in out


def test_check_abi_passes_the_cross_variant(cross_build: Built) -> None:
    run = run_cli(["check-abi", cross_build.root]).check()
    assert "checked 1 extension(s): no violations" in run.stdout


def test_a_second_cross_build_is_up_to_date_and_fetches_nothing(cross_build: Built) -> None:
    again = run_cli(["build", cross_build.root, "--variant", VARIANT], env=cache_env()).check()
    assert f"{VARIANT}  up to date" in again.stdout
    assert "fetching torch" not in again.output


def emulated_torch_python() -> EmulatedPython:
    """The cached aarch64 CPython with Torch under qemu (in the tests' kernel-builder cache), or a skip saying
    why it cannot be had here; shared by the cpu and cuda cross tests."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in cache_env().items():
            patch.setenv(name, value)
        try:
            return emulated_python(SYSTEM, EMULATED_REQUIREMENTS, without_deps=EMULATED_TORCH)
        except EmulationUnavailable as error:
            pytest.skip(f"no emulated {SYSTEM} Python with torch here: {error}")


@pytest.fixture(scope="session")
def emulated(cross_build: Built) -> EmulatedPython:
    return emulated_torch_python()


#: The aarch64 Torch is a CUDA build, whose default backend is cuda even without a GPU: the cpu variant is asked for.
LOAD = r"""
import json, sys
import torch
from kernel_builder import get_kernel, get_local_kernel
x = torch.linspace(-3, 3, 101)
out = {}
for how, kernel in (("get_local_kernel", get_local_kernel(sys.argv[1])),
                    ("get_kernel", get_kernel("kernel-builder-examples/relu", version=1, backend="cpu"))):
    out[how] = bool(torch.equal(kernel.relu(x), torch.relu(x)))
import platform
out["machine"] = platform.machine()
print(json.dumps(out))
"""


def test_the_cross_variant_runs_under_emulation(cross_build: Built, emulated: EmulatedPython) -> None:
    run = emulated.run(
        "-c", LOAD, str(cross_build.variant_dir), paths=[PACKAGE_PARENT],
        env={"LOCAL_KERNELS": f"kernel-builder-examples/relu={cross_build.root}", "HF_HUB_OFFLINE": "1"},
        timeout=300,  # about 30 s here (import torch under qemu is most of it)
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == {
        "get_local_kernel": True, "get_kernel": True, "machine": "aarch64"
    }  # fmt: skip
