"""The backend registry (kernel_builder.backends): its rules, the built-in backends, and a backend added from a test.

The toy backend is registered by the fixture below and nowhere else: every module that sees it (config
validation, variant names, the matrix, metadata, the loader's selection, ``list-variants``) asks the registry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Diagnose, MakeProject

import kernel_builder.backends as backends
from kernel_builder.backends import noarch
from kernel_builder.cli import main
from kernel_builder.config import schema
from kernel_builder.formats.matrix import parse_matrix
from kernel_builder.formats.metadata import read_metadata
from kernel_builder.formats.runtime import Environment
from kernel_builder.formats.variants import Variant, compute_name, noarch_variant, parse_variant
from kernel_builder.loader.resolve import (
    VariantAccepted,
    VariantRejected,
    allowed_backends,
    resolve_variants,
    select_backend,
)

TOY = backends.Backend(name="toyaccel", compute_prefix="toy", aliases=("toy-npu",), in_matrix=True)


@pytest.fixture
def toyaccel() -> Iterator[backends.Backend]:
    """Registers the toy backend for one test."""
    backends.register(TOY)
    try:
        yield TOY
    finally:
        backends.unregister(TOY.name)


# --- the registry itself -------------------------------------------------------------------------------------


def test_builtin_backends_in_registration_order() -> None:
    assert backends.names() == ("cpu", "cuda", "rocm", "xpu", "metal", "neuron", "tpu", "cann")
    assert backends.names(where="kernel_sections") == ("cpu", "cuda", "rocm", "xpu", "metal")
    assert backends.names(where="buildable") == ("cpu", "cuda")
    assert backends.names(where="needs_nvcc") == ("cuda",)
    assert backends.names(where="in_matrix") == ("cpu", "cuda", "rocm", "xpu", "metal")
    assert backends.names(where="loads_everywhere") == ("cpu",)
    assert [b.name for b in backends.all_backends() if b.gpu is not None] == ["cuda", "rocm"]


def test_variant_part_of_each_builtin() -> None:
    parts = {
        name: backends.get(name).variant_part((13, 0) if backends.get(name).versioned else None)
        for name in backends.names()
    }
    assert parts == {
        "cpu": "cpu",
        "cuda": "cu130",
        "rocm": "rocm130",
        "xpu": "xpu130",
        "metal": "metal",
        "neuron": "neuron",
        "tpu": "tpu",
        "cann": "cann130",
    }


def test_variant_part_refuses_a_missing_or_extra_version() -> None:
    with pytest.raises(ValueError, match="backend cpu takes no version, got 1.0"):
        backends.get("cpu").variant_part((1, 0))
    with pytest.raises(ValueError, match="backend cuda needs a version"):
        backends.get("cuda").variant_part(None)
    with pytest.raises(ValueError, match="the minor must be one digit"):
        backends.get("cuda").variant_part((12, 10))


def test_gpu_arch_checks_live_with_their_backend() -> None:
    cuda = backends.get("cuda").gpu
    rocm = backends.get("rocm").gpu
    assert cuda is not None and rocm is not None
    assert cuda.entry_valid("9.0a") and not cuda.entry_valid("gfx942")
    assert cuda.device_runs((8, 6))("8.0") and cuda.device_runs((9, 0))("9.0a+PTX")
    assert not cuda.device_runs((8, 0))("8.6")
    assert cuda.describe_device((9, 0)) == "compute capability 9.0"
    assert rocm.entry_valid("gfx942:xnack+") and not rocm.entry_valid("9.0")
    assert rocm.device_runs("gfx942:sramecc+")("gfx942") and not rocm.device_runs("gfx90a")("gfx942")
    assert rocm.describe_device("gfx942:sramecc+") == "architecture gfx942"


def test_unknown_name() -> None:
    assert backends.find("opencl") is None
    with pytest.raises(backends.UnknownBackendError):
        backends.get("opencl")
    with pytest.raises(backends.UnknownBackendError):
        backends.unregister("opencl")


def test_aliases() -> None:
    assert backends.by_alias("npu") is backends.get("cann")
    assert backends.by_alias("cuda") is backends.get("cuda")
    assert backends.by_alias("npx") is None


@pytest.mark.parametrize(
    ("backend", "clash"),
    [
        (backends.Backend(name="cuda"), "backend cuda: cuda already names backend cuda"),
        # cann's noarch token and alias
        (backends.Backend(name="npu"), "backend npu: npu already names backend cann"),
        (backends.Backend(name="other", aliases=("rocm",)), "backend other: rocm already names backend rocm"),
        (backends.Backend(name="other", compute_prefix="cu"), "compute part 'cu' is backend cuda's already"),
        (backends.Backend(name="cu"), "compute part 'cu' is backend cuda's already"),
        (backends.Backend(name="other", compute_prefix="cpu"), "compute part 'cpu' is backend cpu's already"),
    ],
)
def test_register_refuses_a_clash(backend: backends.Backend, clash: str) -> None:
    with pytest.raises(backends.BackendExistsError, match=clash):
        backends.register(backend)
    assert backends.names()[-1] == "cann"


def test_noarch_names() -> None:
    assert noarch.noarch_name("cuda") == "torch-cuda"
    assert noarch.noarch_name("cann") == "torch-cann"
    assert noarch.noarch_name("universal") == "torch-universal"


def test_importing_the_registry_is_cheap() -> None:
    """No Torch, no build, loader or formats modules: every side of the tool can import it."""
    code = (
        "import sys, kernel_builder.backends; "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith(('kernel_builder.pipeline', "
        "'kernel_builder.loader', 'kernel_builder.formats', 'kernel_builder.config'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- a backend registered from the test ----------------------------------------------------------------------

TOY_TOML = """\
[general]
name = "relu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "toyaccel"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.relu_cpu]
backend = "cpu"
depends = ["torch"]
src = ["relu_cpu/relu.cpp"]
"""


def test_toy_backend_is_unknown_until_registered(diagnose: Diagnose) -> None:
    assert diagnose(TOY_TOML) == (
        "kernel/build.toml:6: error: unknown backend `toyaccel` in `backends`\n"
        "  hint: backends are: cann, cpu, cuda, metal, neuron, rocm, tpu, xpu"
    )


def test_config_accepts_the_toy_backend(diagnose: Diagnose, toyaccel: backends.Backend) -> None:
    assert diagnose(TOY_TOML) == (
        "kernel/build.toml:6: note: backend toyaccel has no kernel sections; it is built as the pure-Python "
        "variant torch-toyaccel"
    )
    # A misspelling is still refused, now with the toy backend among the suggestions.
    assert diagnose(TOY_TOML.replace('"toyaccel"]', '"toyacel"]')) == (
        "kernel/build.toml:6: error: unknown backend `toyacel` in `backends`\n  hint: did you mean `toyaccel`?"
    )
    assert "backends are: cann, cpu, cuda, metal, neuron, rocm, toyaccel, tpu, xpu" in diagnose(
        TOY_TOML.replace('"toyaccel"]', '"opencl"]')
    )
    # It has no compiled form: kernel sections cannot use it, as with neuron or tpu.
    assert "backend `toyaccel` has no compiled form" in diagnose(
        TOY_TOML.replace('backend = "cpu"', 'backend = "toyaccel"')
    )
    # `stable-abi` tables name registered backends too.
    stable = TOY_TOML.replace("[torch]\n", '[torch]\nstable-abi = { toyaccel = "2.11" }\n')
    assert "error" not in diagnose(stable)


def test_list_variants_shows_the_toy_backend(
    make_project: MakeProject, toyaccel: backends.Backend, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(TOY_TOML)
    assert main(["list-variants", "kernel", "--no-probe", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    toy = [row for row in rows if row["backend"] == "toyaccel"]
    assert toy == [
        {
            "variant": "torch-toyaccel",
            "backend": "toyaccel",
            "system": None,
            "required": True,
            "buildable": True,
            "reason": None,
            "cross": False,
        }
    ]
    assert any(row["backend"] == "cpu" for row in rows)
    assert main(["list-variants", "kernel", "--no-probe"]) == 0
    table = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()}
    assert table["torch-toyaccel"] == ["required", "yes"]


def test_variant_names_of_the_toy_backend(toyaccel: backends.Backend) -> None:
    assert compute_name("toyaccel", (1, 2)) == "toy12"
    variant = Variant("torch", (2, 12), (1, 2), "cxx11", "toyaccel", "x86_64", "linux")
    assert variant.name == "torch212-cxx11-toy12-x86_64-linux"
    assert parse_variant(variant.name) == variant
    assert noarch_variant("toyaccel").name == "torch-toyaccel"
    assert parse_variant("torch-toyaccel") == noarch_variant("toyaccel")
    stable = parse_variant("torch-stable-abi211-toy30-aarch64-linux")
    assert (stable.backend, stable.backend_version) == ("toyaccel", (3, 0))


def test_variant_names_refuse_the_toy_backend_once_unregistered() -> None:
    with pytest.raises(ValueError, match="unknown compute 'toy12'"):
        parse_variant("torch212-cxx11-toy12-x86_64-linux")
    # a noarch word is any word (as upstream reads it); only a backend of that name accepts it
    assert parse_variant("torch-toyaccel").backend == "toyaccel"


def test_matrix_metadata_and_loader_know_the_toy_backend(tmp_path: Path, toyaccel: backends.Backend) -> None:
    entry = {"torch": "2.13", "backend": "toyaccel", "version": "1.2", "systems": ["x86_64-linux"]}
    matrix = parse_matrix({"format": 1, "entries": [{**entry, "required": False}]})
    assert matrix.entries[0].compute == "toy12"

    (tmp_path / "metadata.json").write_text(
        json.dumps({"name": "relu", "id": "_relu_0", "backend": {"type": "toyaccel"}, "python-depends": []})
    )
    assert read_metadata(tmp_path).backend_type == "toyaccel"

    env = Environment(
        cpu="x86_64",
        os="linux",
        torch_version=(2, 13),
        cxx11_abi=True,
        backend="toyaccel",
        backend_version=(1, 2),
    )
    assert allowed_backends(env) == ("cpu", "toyaccel", "toy-npu")
    assert select_backend(env, "toy-npu") == "toyaccel"
    names = ["torch-cpu", "torch213-cxx11-toy12-x86_64-linux", "torch213-cxx11-toy13-x86_64-linux"]
    decisions = resolve_variants(names, env, "toyaccel")
    accepted = [d.variant.name for d in decisions if isinstance(d, VariantAccepted)]
    assert accepted == ["torch213-cxx11-toy12-x86_64-linux"]


def test_schema_reads_the_registry_each_time(toyaccel: backends.Backend) -> None:
    assert "toyaccel" in schema.backend_names()
    assert "toyaccel" not in schema.kernel_backend_names()


def test_loader_minor_compatibility_is_a_backend_fact() -> None:
    """A backend that promises CUDA-style minor compatibility gets CUDA's loader rule, with its own title."""
    toy = backends.register(
        backends.Backend(name="toyminor", compute_prefix="tm", title="TM", abi_compatible_minor=True)
    )
    try:
        env = Environment(
            cpu="x86_64",
            os="linux",
            torch_version=(2, 13),
            cxx11_abi=True,
            backend=toy.name,
            backend_version=(1, 2),
        )
        names = [f"torch213-cxx11-tm{v}-x86_64-linux" for v in ("11", "12", "13", "21")]
        decisions = {d.variant.name: d for d in resolve_variants(names, env, toy.name)}
        assert [n for n, d in decisions.items() if isinstance(d, VariantAccepted)] == [names[1], names[0]]
        assert isinstance(rejected := decisions[names[2]], VariantRejected)
        assert rejected.reason == "built for TM 1.3 (tm13), minor version newer than the environment's TM 1.2"
        assert isinstance(rejected := decisions[names[3]], VariantRejected)
        assert (
            rejected.reason == "built for TM 2.1 (tm21), major version differs from the environment's TM 1.2"
        )
    finally:
        backends.unregister(toy.name)
