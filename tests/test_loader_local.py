"""get_local_kernel and LOCAL_KERNELS with injected environments (docs/loading.md;
).

The versions in variant names and environments here are the test's own: the loader does not read the
variant matrix, so a matrix bump leaves them alone.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from loader_fixtures import ENV, FILES, make_env, reset_loader, write_variant

from kernel_builder.formats import runtime
from kernel_builder.formats.runtime import Environment
from kernel_builder.loader import (
    KernelIntegrityError,
    NoCompatibleVariantError,
    VariantRejected,
    get_loaded_kernels,
    get_local_kernel,
    parse_local_kernels,
)
from kernel_builder.loader import resolve as resolve_module
from kernel_builder.loader.local import load_local_override, local_kernel_path
from kernel_builder.loader.resolve import Device

LINUX = "x86_64-linux"
CU130 = f"torch212-cxx11-cu130-{LINUX}"
SEP = os.pathsep
FORMAT = f"<org>/<name>=<path>, several separated by {SEP!r}"


@dataclass
class Machine:
    """What detection reports in a test: the environment record and the visible GPUs."""

    env: Environment = ENV
    gpus: list[Device] = field(default_factory=list)
    probes: list[str] = field(default_factory=list)


@pytest.fixture(autouse=True)
def machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[Machine]:
    state = Machine()

    def probe(backend: str) -> list[Device]:
        state.probes.append(backend)
        return state.gpus

    monkeypatch.setattr(runtime, "detect_environment", lambda: state.env)
    monkeypatch.setattr(resolve_module, "probe_gpus", probe)
    for name in ("KERNEL_BUILDER_VERIFY_DIGEST", "KERNEL_BUILDER_CHECK_GPU_ARCH", "LOCAL_KERNELS"):
        monkeypatch.delenv(name, raising=False)
    reset_loader()
    yield state
    reset_loader()


def kernel_repo(root: Path, variants: dict[str, str], archs: list[str] | None = None) -> Path:
    """A repo root with ``build/<variant>`` for each ``variant: backend``; ids are derived from the name."""
    for index, (name, backend) in enumerate(variants.items()):
        kernel_id = f"_relu_{name.replace('-', '_')}_{index}"
        write_variant(root / "build" / name, kernel_id=kernel_id, backend=backend, archs=archs)
    return root


# --- the three shapes ---------------------------------------------------------------------------------


def test_repo_root_build_dir_and_variant_dir(tmp_path: Path) -> None:
    root = kernel_repo(tmp_path / "relu", {CU130: "cuda", "torch-cuda": "cuda", "torch-cpu": "cpu"})
    module = get_local_kernel(root)
    assert module.__file__ == str(root / "build" / CU130 / "__init__.py")
    assert get_local_kernel(root / "build") is module
    assert get_local_kernel(str(root / "build" / CU130)) is module
    assert [kernel.module for kernel in get_loaded_kernels()] == [module]
    # A variant directory is loaded as it is, without compatibility filtering.
    cpu = get_local_kernel(root / "build" / "torch-cpu")
    assert cpu.__name__ == "_relu_torch_cpu_2"
    assert [kernel.repo_info for kernel in get_loaded_kernels()] == [None, None]


def test_variants_directly_under_the_path(tmp_path: Path) -> None:
    write_variant(tmp_path / "dist" / "torch-cuda", kernel_id="_relu_a", backend="cuda")
    assert get_local_kernel(tmp_path / "dist").__name__ == "_relu_a"


def test_nothing_found(tmp_path: Path) -> None:
    shapes = (
        "a kernel repo root containing build/, a build/ directory with variant directories, or one variant "
        "directory containing metadata.json"
    )
    (tmp_path / "src").mkdir()
    with pytest.raises(FileNotFoundError) as caught:
        get_local_kernel(tmp_path)
    assert str(caught.value) == f"{tmp_path} holds no kernel: expected {shapes}"
    with pytest.raises(FileNotFoundError) as caught:
        get_local_kernel(tmp_path / "missing")
    assert str(caught.value) == f"{tmp_path / 'missing'} does not exist: expected {shapes}"


def test_a_project_root_is_searched_then_its_build_directory(tmp_path: Path) -> None:
    """As upstream kernels 0.19: the root's own directories first, then build/'s; ``torch-ext`` (a project's
    sources) parses as a noarch variant for a backend named ``ext``, which never stops the search."""
    root = kernel_repo(tmp_path / "relu", {"torch-cuda": "cuda"})
    (root / "torch-ext" / "relu").mkdir(parents=True)
    assert get_local_kernel(root).__name__ == "_relu_torch_cuda_0"


def test_a_project_roots_source_directories_are_passed_over_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``make demo``'s case: LOCAL_KERNELS names the project, whose ``csrc``/``tests`` are not variants; only
    build/'s directories are variants, and only a bad name there is worth a warning."""
    root = kernel_repo(tmp_path / "relu", {"torch-cuda": "cuda"})
    for source in ("relu_cuda", "tests", "torch-ext"):
        (root / source).mkdir()
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    assert get_local_kernel(root).__name__ == "_relu_torch_cuda_0"
    assert [r.getMessage() for r in caplog.records] == []


def test_no_compatible_variant_in_root_nor_build_lists_both(tmp_path: Path) -> None:
    root = kernel_repo(tmp_path / "relu", {"torch-rocm": "rocm"})
    (root / "torch-ext").mkdir()
    with pytest.raises(NoCompatibleVariantError) as caught:
        get_local_kernel(root)
    assert [d.variant.variant_str for d in caught.value.decisions] == ["torch-ext", "torch-rocm"]
    assert str(caught.value).startswith(f"no compatible kernel variant in {root} or {root / 'build'}\n")


def test_unparseable_and_hidden_directories(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = kernel_repo(tmp_path / "relu", {"torch-cuda": "cuda"})
    (root / "build" / "notes").mkdir()
    (root / "build" / ".torch-cuda.tmp123").mkdir()  # a builder's temporary directory: silently ignored
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    assert get_local_kernel(root).__name__ == "_relu_torch_cuda_0"
    assert [r.getMessage() for r in caplog.records] == [
        (
            "skipping variant directory 'notes': invalid variant name 'notes': expected it to start with "
            "'torch', 'tvm-ffi', 'mlx-' or 'sdk'"
        )
    ]


def test_invalid_metadata_names_path_and_field(tmp_path: Path) -> None:
    root = kernel_repo(tmp_path / "relu", {"torch-cuda": "cuda"})
    path = root / "build" / "torch-cuda" / "metadata.json"
    path.write_text('{"name": "relu", "python-depends": [], "backend": {"type": ["gpu"]}}', encoding="utf-8")
    with pytest.raises(ValueError) as caught:
        get_local_kernel(root)
    assert str(caught.value) == f"{path}: invalid field 'backend.type': expected a string, got [\"gpu\"]"


def test_a_backend_type_this_loader_does_not_know_is_no_error_until_needed(tmp_path: Path) -> None:
    """As upstream kernels 0.19 reads it: a newer builder's backend name (or ``agnostic``) in metadata.json is kept,
    and loading does not need it (the name chose the variant)."""
    root = kernel_repo(tmp_path / "relu", {"torch-cuda": "cuda"})
    for backend in ("gpu-of-the-future", "agnostic"):
        reset_loader()
        variant = root / "build" / "torch-cuda"
        write_variant(variant, backend=backend, kernel_id=f"_relu_{backend.replace('-', '_')}")
        assert get_local_kernel(root).__name__ == f"_relu_{backend.replace('-', '_')}"


# --- / no compatible variant ---------------------------------------------------------------------


def test_only_incompatible_variants_gives_the_trace(tmp_path: Path) -> None:
    cu126, cu132 = f"torch212-cxx11-cu126-{LINUX}", f"torch212-cxx11-cu132-{LINUX}"
    root = kernel_repo(tmp_path / "relu", {cu132: "cuda", cu126: "cuda", "torch-cpu": "cpu"})
    with pytest.raises(NoCompatibleVariantError) as caught:
        get_local_kernel(root)
    assert isinstance(caught.value, FileNotFoundError)
    assert str(caught.value) == (
        f"no compatible kernel variant in {root / 'build'}\n"
        "environment: Torch 2.12 (cxx11 ABI), backend cuda 13.0, x86_64-linux\n"
        "variants:\n"
        "  torch-cpu: noarch variant for cpu; the selected backend is cuda\n"
        f"  {cu126}: built for CUDA 12.6 (cu126), major version differs from the environment's CUDA 13.0\n"
        f"  {cu132}: built for CUDA 13.2 (cu132), minor version newer than the environment's CUDA 13.0"
    )
    assert [d.variant.variant_str for d in caught.value.decisions] == ["torch-cpu", cu126, cu132]
    assert all(isinstance(d, VariantRejected) for d in caught.value.decisions)
    assert get_loaded_kernels() == []


# --- GPU architectures and KERNEL_BUILDER_CHECK_GPU_ARCH -----------------------------------------------


def test_gpu_arch_mismatch_and_env_switch(
    tmp_path: Path, machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = kernel_repo(tmp_path / "relu", {CU130: "cuda"}, archs=["8.0", "9.0"])
    machine.gpus = [(9, 0), (10, 0)]
    with pytest.raises(NoCompatibleVariantError) as caught:
        get_local_kernel(root)
    assert str(caught.value) == (
        f"no compatible kernel variant in {root / 'build'}\n"
        "environment: Torch 2.12 (cxx11 ABI), backend cuda 13.0, x86_64-linux, GPUs 9.0, 10.0\n"
        "variants:\n"
        f"  {CU130}: GPU 1 has compute capability 10.0; build provides 8.0, 9.0"
    )
    assert machine.probes == ["cuda"]
    for value in ("0", "off", "FALSE", " no "):
        monkeypatch.setenv("KERNEL_BUILDER_CHECK_GPU_ARCH", value)
        assert get_local_kernel(root).__name__ == f"_relu_{CU130.replace('-', '_')}_0"
    assert machine.probes == ["cuda"]  # disabled: not even probed


def test_cpu_backend_never_probes_gpus(tmp_path: Path, machine: Machine) -> None:
    # (A cpu variant listing GPU archs is refused outright: see test_loader_hostile.)
    root = kernel_repo(tmp_path / "relu", {"torch-cpu": "cpu"})
    machine.env = make_env(backend="cpu", backend_version=None)
    get_local_kernel(root)
    assert machine.probes == []


# --- backend argument ----------------------------------------------------------------------------------


def test_backend_argument(tmp_path: Path) -> None:
    root = kernel_repo(
        tmp_path / "relu", {CU130: "cuda", f"torch212-cxx11-cpu-{LINUX}": "cpu", "torch-cpu": "cpu"}
    )
    assert get_local_kernel(root, "cpu").__file__ == str(
        root / "build" / f"torch212-cxx11-cpu-{LINUX}" / "__init__.py"
    )
    assert get_local_kernel(root, backend="cuda").__file__ == str(root / "build" / CU130 / "__init__.py")
    with pytest.raises(ValueError) as caught:
        get_local_kernel(root, "xpu")
    assert (
        str(caught.value)
        == "invalid backend 'xpu': on this system it must be one of cpu, cuda (detected backend: cuda)"
    )


# --- digest verification ------------------------------------------------------------------------------


def test_tampered_file_fails_verification(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu")
    (variant / "_ops.py").write_text("ops = 'evil'\n", encoding="utf-8")
    (variant / "layers" / "__init__.py").unlink()
    (variant / "extra.py").write_text("", encoding="utf-8")
    with pytest.raises(KernelIntegrityError) as caught:
        get_local_kernel(variant)
    lines = str(caught.value).splitlines()
    assert lines[0] == f"the files of {variant} do not match the digest in its metadata.json:"
    assert lines[1].startswith("  _ops.py: mismatch (sha256 is ")
    assert lines[2:] == [
        "  extra.py: unknown (in the directory, not listed in the digest)",
        "  layers/__init__.py: missing (listed in the digest, not in the directory)",
        (
            f"To fix it, rebuild or restore {variant}. To load it anyway, pass verify_digest=False or set "
            "KERNEL_BUILDER_VERIFY_DIGEST=0."
        ),
    ]
    assert isinstance(caught.value, ValueError)
    assert get_loaded_kernels() == []
    assert "_relu_cpu_0123456789" not in sys.modules


def test_verification_can_be_disabled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    variant = write_variant(tmp_path / "torch-cpu", files={**FILES, "_ops.py": "ops = 1\n"})
    (variant / "_ops.py").write_text("ops = 2\n", encoding="utf-8")
    monkeypatch.setenv("KERNEL_BUILDER_VERIFY_DIGEST", "0")
    with pytest.raises(KernelIntegrityError):
        get_local_kernel(variant, verify_digest=True)  # the argument wins over the variable
    assert get_local_kernel(variant).ops == 2
    reset_loader()
    monkeypatch.delenv("KERNEL_BUILDER_VERIFY_DIGEST")
    assert get_local_kernel(variant, verify_digest=False).ops == 2


def test_no_digest_loads_silently(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kernel_builder")
    variant = write_variant(tmp_path / "torch-cpu", digest=False)
    (variant / "extra.py").write_text("", encoding="utf-8")
    assert get_local_kernel(variant).layers.LAYER == "layer"
    assert caplog.records == []


# --- Python dependencies ------------------------------------------------------------------------------


def test_unknown_dependency(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu", python_depends=["torch", "numpy"])
    with pytest.raises(ValueError) as caught:
        get_local_kernel(variant)
    assert str(caught.value) == (
        f"kernel relu ({variant}) depends on unknown Python package 'numpy'; known dependencies: torch, "
        "einops, helion, tvm-ffi, nvidia-cutlass-dsl, onednn, nki"
    )


@pytest.mark.parametrize(
    ("dependency", "module", "package"),
    [
        ("einops", "einops", "einops"),
        ("tvm-ffi", "tvm_ffi", "apache-tvm-ffi"),
        ("nvidia-cutlass-dsl", "cutlass", "nvidia-cutlass-dsl"),
    ],
)
def test_missing_dependency_before_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dependency: str, module: str, package: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # not installed, whatever this interpreter has
    variant = write_variant(tmp_path / "torch-cuda", backend="cuda", python_depends=["torch", dependency])
    with pytest.raises(ImportError) as caught:
        get_local_kernel(variant)
    assert str(caught.value) == (
        f"kernel relu ({variant}) needs the Python package {package} (python-depends: {dependency}), which "
        f"is not installed; install it with: pip install {package}"
    )
    assert "_relu_cpu_0123456789" not in sys.modules
    assert get_loaded_kernels() == []


def test_dependency_table_of_the_selected_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cutlass", None)
    stubs = tmp_path / "site"
    (stubs / "helion").mkdir(parents=True)
    (stubs / "helion" / "__init__.py").write_text("", encoding="utf-8")
    monkeypatch.syspath_prepend(str(stubs))
    variant = write_variant(
        tmp_path / "torch-cpu", python_depends=["torch", "helion", "nvidia-cutlass-dsl", "onednn"]
    )
    # backend="cpu" needs no CUDA package; onednn (xpu) has no import check anyway; helion is found.
    assert get_local_kernel(variant, "cpu").ops == "ops of _relu_cpu_0123456789._ops"
    assert "helion" not in sys.modules  # found, not imported


# --- LOCAL_KERNELS parsing ----------------------------------------------------------------------------


def test_parse_local_kernels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    value = f" org/relu=~/relu {SEP}kernels-community/activation = rel/act{SEP}{SEP}  "
    assert parse_local_kernels(value) == {
        "org/relu": tmp_path / "relu",
        "kernels-community/activation": tmp_path / "rel" / "act",
    }
    assert parse_local_kernels("") == {}
    assert parse_local_kernels(f"a/b=/x=y{SEP}") == {"a/b": Path("/x=y")}  # splits at the first '='


@pytest.mark.parametrize(
    ("segment", "problem"),
    [
        ("org/relu", "no '=' between repo id and path"),
        ("=/tmp/relu", "empty repo id"),
        ("relu=/tmp/relu", "repo id 'relu' is not of the form <org>/<name>"),
        ("org/relu/x=/tmp/relu", "repo id 'org/relu/x' is not of the form <org>/<name>"),
        ("org/relu=", "empty path"),
    ],
)
def test_parse_local_kernels_errors(segment: str, problem: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_local_kernels(f"a/b=/tmp/b{SEP} {segment} ")
    assert str(caught.value) == f"invalid LOCAL_KERNELS segment {segment!r}: {problem}; expected {FORMAT}"


def test_parse_local_kernels_duplicate() -> None:
    with pytest.raises(ValueError) as caught:
        parse_local_kernels(f"a/b=/tmp/b{SEP}a/b=/tmp/c")
    assert str(caught.value) == (
        "invalid LOCAL_KERNELS segment 'a/b=/tmp/c': repo id 'a/b' is given more than once; "
        f"expected {FORMAT}"
    )


def test_a_huge_local_kernels_value_is_one_short_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 100 KB value used to reach the file system and fail with a raw ``File name too long``."""
    long_name = "x" * 100_000
    monkeypatch.setenv("LOCAL_KERNELS", f"org/relu=/{long_name}")
    with pytest.raises(ValueError) as caught:
        load_local_override("org/relu")
    message = str(caught.value)
    assert message.startswith("invalid LOCAL_KERNELS segment 'org/relu=/xxx")
    assert "(100010 characters)" in message
    assert "the path is 100001 bytes long, more than the file system allows (4096)" in message
    assert len(message) < 400
    monkeypatch.setenv("LOCAL_KERNELS", f"org/relu=/tmp/{'y' * 300}")
    with pytest.raises(ValueError, match="a name in the path is 300 bytes long"):
        load_local_override("org/relu")


def test_a_local_kernels_path_through_a_file_is_missing_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("LOCAL_KERNELS", f"org/relu={tmp_path / 'file' / 'relu'}")
    with pytest.raises(FileNotFoundError, match="which does not exist$"):
        load_local_override("org/relu")


# --- LOCAL_KERNELS overrides --------------------------------------------------------------------------


def test_local_override_missing_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOCAL_KERNELS", f"org/relu={tmp_path / 'gone'}")
    with pytest.raises(FileNotFoundError) as caught:
        load_local_override("org/relu")
    assert str(caught.value) == f"LOCAL_KERNELS maps org/relu to {tmp_path / 'gone'}, which does not exist"
    assert local_kernel_path("org/other") is None


def test_local_override_forwards_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = kernel_repo(tmp_path / "relu", {"torch-cuda": "cuda", "torch-cpu": "cpu"})
    assert load_local_override("org/relu") is None
    monkeypatch.setenv("LOCAL_KERNELS", f"org/relu={root}")  # read at every call
    assert local_kernel_path("org/relu") == root
    cpu = load_local_override("org/relu", "cpu")
    assert cpu is not None and cpu.__file__ == str(root / "build" / "torch-cpu" / "__init__.py")
    cuda = load_local_override("org/relu")
    assert cuda is not None and cuda.__file__ == str(root / "build" / "torch-cuda" / "__init__.py")
    with pytest.raises(ValueError, match="^invalid backend 'rocm'"):
        load_local_override("org/relu", "rocm")
    # The variable is read at every call, and an invalid one is reported even for another repo.
    monkeypatch.setenv("LOCAL_KERNELS", "org/relu")
    with pytest.raises(ValueError, match="^invalid LOCAL_KERNELS segment 'org/relu'"):
        load_local_override("org/other")
