"""Whether a variant's Torch build and CUDA compiler can be obtained here (kernel_builder/pipeline/environment/provision.py), with the
real pip against a local directory of tiny stand-in ``torch`` wheels (no network, no Torch download)."""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import matrix_data as md
import pytest
from build_runs import run_cli
from cpu_projects import copy_example
from simple_index import SimpleIndex, serve

from kernel_builder.config import load_project
from kernel_builder.pipeline.environment import provision, wheel_index
from kernel_builder.pipeline.environment.provision import (
    Unavailable,
    no_cuda_12_message,
    resolve_torch,
    toolkit_problem,
    toolkit_requirements,
    wheel_flavour,
)
from kernel_builder.pipeline.plan.candidates import all_candidates, with_availability

CU130_RUNTIME = 'cuda-toolkit[cudart,cufft]==13.0.2; platform_system == "Linux"'
CU126_RUNTIME = 'nvidia-cuda-runtime-cu12==12.6.77; platform_system == "Linux"'


def write_wheel(directory: Path, version: str, requires: list[str], tag: str = "py3-none-any") -> Path:
    """A minimal, valid ``torch`` wheel: metadata only."""
    name = f"torch-{version}-{tag}.whl"
    info = f"torch-{version.split('+')[0]}.dist-info"
    files = {
        f"{info}/METADATA": "Metadata-Version: 2.1\nName: torch\nVersion: "
        + version
        + "\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires),
        f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n",
        "torch/__init__.py": "",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{info}/RECORD,,")
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(directory / name, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return directory / name


@pytest.fixture
def wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """pip sees only a local directory: 2.13.0+cpu and an untagged 2.13.0 of the CUDA 13.0 flavour, as on
    PyPI; no index, no configuration file. (The fixture's own versions; they must not be the pin of the
    oldest required Torch, which the tests below expect pip not to find.)"""
    directory = tmp_path / "wheels"
    write_wheel(directory, "2.13.0+cpu", [])
    write_wheel(directory, "2.13.0", [CU130_RUNTIME, "filelock"])
    for name in ("PIP_CONFIG_FILE",):
        monkeypatch.setenv(name, "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(directory))
    resolve_torch.cache_clear()
    wheel_index.clear_listings()
    yield directory
    resolve_torch.cache_clear()
    wheel_index.clear_listings()


def test_wheel_flavour() -> None:
    assert wheel_flavour("2.13.0+cpu", [CU130_RUNTIME]) == "cpu"  # the tag decides
    assert wheel_flavour("2.13.0+cu126", []) == "cu126"
    assert wheel_flavour("2.13.0", [CU130_RUNTIME, "filelock"]) == "cu130"
    assert wheel_flavour("2.12.0", [CU126_RUNTIME]) == "cu126"
    assert wheel_flavour("2.13.0", ["nvidia-cuda-runtime==13.2.*"]) == "cu132"
    assert wheel_flavour("2.13.0", ["filelock", "sympy>=1.13"]) == "cpu"
    assert (
        wheel_flavour("2.13.0", ['nvidia-cuda-runtime-cu12==12.6.77; platform_system == "Windows"']) == "cpu"
    )


def test_the_tagged_flavour_is_taken(wheels: Path) -> None:
    wheel = resolve_torch("2.13.0", "cpu", None)
    assert (wheel.version, wheel.flavour) == ("2.13.0+cpu", "cpu")
    assert wheel.requirement.endswith("torch-2.13.0%2Bcpu-py3-none-any.whl")


def test_a_wrong_tagged_flavour_is_excluded_and_pip_asked_again(wheels: Path) -> None:
    """pip prefers 2.13.0+cpu for torch==2.13.0; a cu130 environment must get the untagged CUDA wheel."""
    wheel = resolve_torch("2.13.0", "cu130", None)
    assert (wheel.version, wheel.flavour) == ("2.13.0", "cu130")
    assert wheel.requirement.endswith("torch-2.13.0-py3-none-any.whl")


def test_a_flavour_nowhere_to_be_found_is_unavailable(wheels: Path, tmp_path: Path) -> None:
    missing = (tmp_path / "no-such-index").as_uri()
    start = time.monotonic()
    with pytest.raises(Unavailable) as caught:
        resolve_torch("2.13.0", "cu126", missing)
    assert time.monotonic() - start < 60
    assert str(caught.value) == (
        "torch 2.13.0 for cu126 cannot be installed here: pip finds only 2.13.0+cpu (cpu build), 2.13.0 (cu130 "
        f"build) (tried {missing} and the configured indexes); the cu126 index {missing}: it does not exist"
    )
    with pytest.raises(
        Unavailable, match=r"^torch 2\.99\.0 for cpu cannot be installed here: pip finds none \("
    ):
        resolve_torch("2.99.0", "cpu", None)


def test_an_index_without_byte_ranges_is_left_to_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where an untagged wheel's metadata cannot be read with range requests, pip's dry run answers (and
    the wheel is not downloaded by kernel-builder itself)."""
    directory = tmp_path / "files"
    write_wheel(directory, "2.13.0", [CU130_RUNTIME])  # one wheel: one pip run
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    with serve(SimpleIndex(directory, ranges=False)) as index:
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
        resolve_torch.cache_clear()
        wheel_index.clear_listings()
        try:
            wheel = resolve_torch("2.13.0", "cu130", None)
        finally:
            resolve_torch.cache_clear()
            wheel_index.clear_listings()
    assert (wheel.version, wheel.flavour) == ("2.13.0", "cu130")
    assert wheel.requirement == f"http://127.0.0.1:{index.port}/files/torch-2.13.0-py3-none-any.whl"
    ranged = [r for _, r in index.requests if r is not None]
    assert ranged and all(r.startswith("bytes=-") for r in ranged)  # kernel-builder asked once, then left it
    assert index.count("/simple/torch/") >= 2  # its own listing, then pip's


# --- pip's own cap: the reason is the constraints file, whatever the index has --------------------------------


def capped(monkeypatch: pytest.MonkeyPatch, directory: Path, text: str) -> Path:
    """A constraints file with ``text``, named by ``PIP_CONSTRAINT`` (as ``pip config list`` shows it)."""
    caps = directory / "constraints.txt"
    caps.write_text(text)
    monkeypatch.setenv("PIP_CONSTRAINT", str(caps))
    resolve_torch.cache_clear()
    wheel_index.clear_listings()
    return caps


def test_a_capped_pin_gives_the_cap_as_its_reason(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caps = capped(monkeypatch, tmp_path, "# the releases on this disk\ntorch<=2.12.9\n")
    reason = (
        f"pip's configuration caps torch<=2.12.9 (line 2 of the constraints file {caps}, named by PIP_CONSTRAINT in "
        "`pip config list`); to lift the cap for one command, run it with PIP_CONSTRAINT=/dev/null"
    )
    for compute in ("cpu", "cu130"):  # both builds are there: only the cap keeps them out
        with pytest.raises(provision.Capped) as caught:
            resolve_torch("2.13.0", compute, None)
        assert str(caught.value) == f"torch 2.13.0 for {compute} cannot be installed here: {reason}"
    # A flavour that is nowhere: what pip finds and where it looked come first, the cap after them.
    with pytest.raises(Unavailable) as missing:
        resolve_torch("2.13.0", "cu126", None)
    assert not isinstance(missing.value, provision.Capped)
    assert str(missing.value) == (
        "torch 2.13.0 for cu126 cannot be installed here: pip finds only 2.13.0+cpu (cpu build), 2.13.0 (cu130 "
        f"build) (tried the configured indexes (PyPI)); besides, {reason}"
    )
    # PIP_CONSTRAINT=/dev/null lifts it for one command.
    monkeypatch.setenv("PIP_CONSTRAINT", "/dev/null")
    resolve_torch.cache_clear()
    assert resolve_torch("2.13.0", "cu130", None).flavour == "cu130"


def test_list_variants_and_build_give_the_cap(
    wheels: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The availability check that ``list-variants`` and ``build --variant`` share gives it for a variant of the
    tests' own Torch, which would otherwise be served here."""
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    caps = capped(monkeypatch, tmp_path, f"torch<{md.CPU_TEST_PIN}\n")
    candidates = [c for c in all_candidates(load_project(RELU).project) if c.name == md.CPU_VARIANT]
    (checked,) = with_availability(candidates)  # nothing served: the environment would be made with pip
    assert str(checked.reason) == (
        f"torch {md.CPU_TEST_PIN} for cpu cannot be installed here: pip's configuration caps "
        f"torch<{md.CPU_TEST_PIN} (line 1 of the constraints file {caps}, named by PIP_CONSTRAINT in `pip config "
        "list`); to lift the cap for one command, run it with PIP_CONSTRAINT=/dev/null"
    )


def test_cuda_12_compilers_are_not_on_pypi() -> None:
    with pytest.raises(Unavailable) as caught:
        toolkit_requirements((12, 6))
    assert str(caught.value) == no_cuda_12_message((12, 6))
    assert "nvidia-cuda-nvcc-cu12, carry ptxas and libnvvm but no nvcc" in str(caught.value)
    assert str(caught.value).endswith("install CUDA 12.6 and set CUDA_HOME to it")
    assert toolkit_requirements((13, 2))[0] == "nvidia-cuda-nvcc==13.2.*"


def test_toolkit_problem_of_a_cuda_12_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setattr("kernel_builder.pipeline.environment.toolchain.DEFAULT_CUDA_HOME", tmp_path / "none")
    from kernel_builder.pipeline.environment import toolchain

    toolchain.cuda_toolkit.cache_clear()
    toolkit_problem.cache_clear()
    try:
        assert toolkit_problem((12, 6)) == no_cuda_12_message((12, 6))
    finally:
        toolchain.cuda_toolkit.cache_clear()
        toolkit_problem.cache_clear()


@pytest.mark.skipif(
    shutil.which("nvcc") is None and not Path("/usr/local/cuda/bin/nvcc").exists(), reason="no nvcc"
)
def test_the_systems_cuda_needs_nothing() -> None:
    from kernel_builder.pipeline.environment.toolchain import cuda_toolkit

    assert toolkit_problem(cuda_toolkit().version) is None


# --- list-variants and build --variant say why, in seconds --------------------------------------------------

RELU = Path(__file__).resolve().parent.parent / "examples" / "relu"


def test_with_availability_gives_the_reasons(
    wheels: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    candidates = [c for c in all_candidates(load_project(RELU).project) if c.name.endswith("x86_64-linux")]
    # The tests' own Torch serves its variant; an older required Torch is not among the stand-in wheels.
    old, cuda = md.OLDEST_REQUIRED_TORCH, md.cuda_versions(md.OLDEST_REQUIRED_TORCH)[0]
    assert old != md.CPU_TEST_TORCH
    old_cpu, old_cuda = md.variant(old), md.variant(old, cuda)
    wanted = {md.CPU_VARIANT, old_cpu, old_cuda}
    checked = {c.name: c for c in with_availability([c for c in candidates if c.name in wanted])}
    assert checked[md.CPU_VARIANT].reason is None
    assert str(checked[old_cpu].reason).startswith(
        f"torch {md.torch_pin(old)} for cpu cannot be installed here: pip finds none ("
    )
    reason = str(checked[old_cuda].reason)
    cuda_pin = md.torch_pin(old, "cuda", cuda)
    assert reason.startswith(
        (
            f"no CUDA {md.dotted(cuda)} compiler here",
            f"torch {cuda_pin} for {md.compute(cuda)} cannot be installed here",
        )
    )


def test_build_of_an_unobtainable_variant_fails_in_seconds(
    wheels: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    root = copy_example("relu", tmp_path / "relu")
    old = md.OLDEST_REQUIRED_TORCH  # not among the stand-in wheels
    variant = md.variant(old)
    run = run_cli(["build", str(root), "--variant", variant])
    assert run.returncode == 1
    assert run.seconds < 60, run.seconds
    assert (
        f"error: {variant}: torch {md.torch_pin(old)} for cpu cannot be installed here: pip finds none ("
        in run.output
    )
    assert not (tmp_path / "cache" / "envs").exists() or not any((tmp_path / "cache" / "envs").iterdir())
    assert provision.PIP_TIMEOUT <= 30
