"""Cross-built CUDA variants (docs/cross.md): examples/relu's cu130 aarch64-linux variant built on an x86_64-linux
host by this host's nvcc 13 with Debian's cross compiler as its host compiler, against the target environment's
Torch and its CUDA tree (NVIDIA's aarch64 runtime, crt and CCCL wheels as ``targets/sbsa-linux``). The extension
is an AArch64 ELF that check-abi passes, and an aarch64 CPython under qemu-user, with no GPU, imports it through
``get_local_kernel`` and finds its op registered for CUDA.

One build per session; the target environment and the emulated Python are cached (test_pipeline_cross.py).
"""

from __future__ import annotations

import json
import struct

import pytest
from build_outputs import nvcc
from build_runs import Built, run_cli
from test_pipeline_cross import (
    PACKAGE_PARENT,
    SYSTEM,
    build_relu_for,
    cache_env,
    emulated_torch_python,
)

from kernel_builder.pipeline.check.abi import read_elf
from kernel_builder.pipeline.environment.emulation import (
    EmulatedPython,
)

pytestmark = [pytest.mark.slow, pytest.mark.cuda]

VARIANT = "torch213-cxx11-cu130-aarch64-linux"
EM_AARCH64 = 183  # the ELF e_machine of AArch64
#: One capability, not CUDA 13.0's ten: what is cross about this build is the host compiler, the target's CUDA tree
#: and Torch, which every capability uses alike (test_pipeline_builder_cuda builds the whole default list).
ARCH = ("--arch", "9.0")


@pytest.fixture(scope="module")
def cross_cuda_build(tmp_path_factory: pytest.TempPathFactory) -> Built:
    nvcc()  # skips without one
    return build_relu_for(tmp_path_factory, VARIANT, *ARCH)


def test_the_cross_cuda_variant_is_an_aarch64_extension_of_torchs_cuda_libraries(
    cross_cuda_build: Built,
) -> None:
    (extension,) = cross_cuda_build.variant_dir.glob("*.abi3.so")
    header = extension.read_bytes()[:20]
    assert header[:4] == b"\x7fELF" and struct.unpack_from("<H", header, 18)[0] == EM_AARCH64
    facts = read_elf(extension)
    assert facts.machine == "aarch64"
    assert facts.needed == (
        "libtorch.so", "libtorch_cpu.so", "libc10.so", "libtorch_cuda.so", "libc10_cuda.so", "libcudart.so.13",
        "libstdc++.so.6", "libgcc_s.so.1", "libc.so.6",
    )  # fmt: skip
    metadata = json.loads((cross_cuda_build.variant_dir / "metadata.json").read_text(encoding="utf-8"))
    assert (
        metadata["backend"] == {"type": "cuda", "archs": ["9.0"]} and metadata["arch-selection"] == "explicit"
    )
    assert metadata["provenance"]["torch"] == {"version": "2.13.0+cu130"}
    out = cross_cuda_build.run.output
    assert f"{VARIANT}: import check skipped: the variant is for {SYSTEM}" in out
    assert f"{VARIANT}  built" in out


def test_check_abi_passes_the_cross_cuda_variant(cross_cuda_build: Built) -> None:
    run = run_cli(["check-abi", cross_cuda_build.root]).check()
    assert "checked 1 extension(s): no violations" in run.stdout


@pytest.fixture(scope="module")
def emulated(cross_cuda_build: Built) -> EmulatedPython:
    return emulated_torch_python()


IMPORT = r"""
import json, platform, sys
import torch
from kernel_builder import get_local_kernel
kernel = get_local_kernel(sys.argv[1])
namespace = next(n for n in dir(kernel) if n.startswith("_relu_cuda_"))
op = getattr(getattr(torch.ops, namespace), "relu")
print(json.dumps({
    "machine": platform.machine(),
    "gpu": torch.cuda.is_available(),
    "schema": str(op.default._schema),
    "cuda_kernel": torch._C._dispatch_has_kernel_for_dispatch_key(f"{namespace}::relu", "CUDA"),
    "namespace": namespace,
}))
"""


def test_the_cross_cuda_variant_registers_its_ops_under_emulation_without_a_gpu(
    cross_cuda_build: Built, emulated: EmulatedPython
) -> None:
    run = emulated.run(
        "-c", IMPORT, str(cross_cuda_build.variant_dir), paths=[PACKAGE_PARENT], env={"HF_HUB_OFFLINE": "1"},
        timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    namespace = out["namespace"]
    (extension,) = cross_cuda_build.variant_dir.glob("*.abi3.so")
    assert extension.name == f"{namespace}.abi3.so"
    assert out == {
        "machine": "aarch64",
        "gpu": False,
        "schema": f"{namespace}::relu(Tensor($0! -> ) out, Tensor input) -> ()",
        "cuda_kernel": True,
        "namespace": namespace,
    }


def test_a_second_cross_cuda_build_is_up_to_date_and_fetches_nothing(
    cross_cuda_build: Built,
) -> None:
    again = run_cli(["build", cross_cuda_build.root, "--variant", VARIANT, *ARCH], env=cache_env()).check()
    assert f"{VARIANT}  up to date" in again.stdout
    assert "fetching" not in again.output
