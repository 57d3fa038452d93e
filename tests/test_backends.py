"""The backend registry (kernel_builder.backends): its rules, the built-in backends, and a backend added from a test.

The toy backend is registered by the fixture below and nowhere else: every module that sees it (config
validation, variant names, the matrix, metadata, the loader's selection, ``list-variants``) asks the registry.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import Diagnose, MakeProject
from stage_fixtures import fake_host

import kernel_builder.backends as backends
from kernel_builder.backends import noarch
from kernel_builder.cli import main
from kernel_builder.config import load_project, schema
from kernel_builder.formats.matrix import parse_matrix
from kernel_builder.formats.metadata import read_metadata
from kernel_builder.formats.runtime import Environment, detect_backend
from kernel_builder.formats.variants import Variant, compute_name, noarch_variant, parse_variant
from kernel_builder.loader.resolve import (
    Accepted,
    Rejected,
    allowed_backends,
    resolve_variants,
    select_backend,
)
from kernel_builder.pipeline.environment.interpreter import TorchDetails, quick_probe
from kernel_builder.pipeline.generate.cmake import ProjectOptions, write_project
from kernel_builder.pipeline.plan.candidates import aot_candidates
from kernel_builder.pipeline.plan.planner import plan_build

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
    accepted = [d.variant.name for d in decisions if isinstance(d, Accepted)]
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
        assert [n for n, d in decisions.items() if isinstance(d, Accepted)] == [names[1], names[0]]
        assert isinstance(rejected := decisions[names[2]], Rejected)
        assert rejected.reason == "built for TM 1.3 (tm13), minor version newer than the environment's TM 1.2"
        assert isinstance(rejected := decisions[names[3]], Rejected)
        assert (
            rejected.reason == "built for TM 2.1 (tm21), major version differs from the environment's TM 1.2"
        )
    finally:
        backends.unregister(toy.name)


# --- a compiled backend, added by its module and its CMake fragment alone --------------------------------------

#: The whole of the toy compiled backend: this module, and the CMake fragment beside it. Nothing else of the tool
#: is changed or patched for it: every stage that plans, names or generates its variant asks the registry.
COMPILED_TOY_MODULE = '''\
"""toyaccel: an accelerator programmed in C++, whose Torch builds say so in ``torch.version.toy``."""

from pathlib import Path

from kernel_builder.backends.registry import Backend, TorchBuild

BACKEND = Backend(
    name="toyaccel",
    compute_prefix="toy",
    kernel_sections=True,
    general_table=frozenset({"minver", "maxver"}),
    in_matrix=True,
    buildable=True,
    cmake_define="TOY_KERNEL",
    use_define="USE_TOY=1",
    torch_build=TorchBuild("toy"),
    cmake_fragment=Path(__file__).with_name("toyaccel.cmake"),
)
'''
COMPILED_TOY_FRAGMENT = """\
macro(kb_backend_torch)
  message(STATUS "toyaccel: after Torch")
endmacro()
function(kb_backend_extension name)
  message(STATUS "toyaccel: extension ${name}")
endfunction()
"""
#: TOY_TOML with the toy's own kernel section, and a [general.toyaccel] table that bounds its compute version.
COMPILED_TOY_TOML = TOY_TOML.replace("[torch]\n", '[general.toyaccel]\nminver = "1.0"\n\n[torch]\n') + (
    '\n[kernel.relu_toy]\nbackend = "toyaccel"\ndepends = ["torch"]\nsrc = ["relu_toy/relu.cpp", "relu_toy/relu.h"]\n'
)
TOY_VARIANT = "torch213-cxx11-toy12-x86_64-linux"


@pytest.fixture
def compiled_toy(tmp_path: Path) -> Iterator[backends.Backend]:
    """The toy compiled backend's module and fragment, written into the test's directory, imported and
    registered as a built-in one is (``kernel_builder/backends/__init__.py``)."""
    folder = tmp_path / "toy_backend"
    folder.mkdir()
    (folder / "toyaccel.py").write_text(COMPILED_TOY_MODULE, encoding="utf-8")
    (folder / "toyaccel.cmake").write_text(COMPILED_TOY_FRAGMENT, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("toyaccel_backend", folder / "toyaccel.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    backend: backends.Backend = backends.register(module.BACKEND)
    try:
        yield backend
    finally:
        backends.unregister(backend.name)


def _toy_torch(site: Path) -> None:
    """A Torch as the build reads it without importing it: a package with the version file a toy build has."""
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "__init__.py").write_text("", encoding="utf-8")
    (site / "torch" / "version.py").write_text(
        "__version__ = '2.13.0+toy12'\ncuda: Optional[str] = None\ntoy = '1.2'\n", encoding="utf-8"
    )


def test_a_compiled_backend_added_by_its_module_plans_and_generates_a_variant(
    compiled_toy: backends.Backend,
    make_project: MakeProject,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake_host(monkeypatch)  # an x86_64 Linux host, which builds
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    _toy_torch(tmp_path / "site")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    # The build interpreter's Torch is a toyaccel build of compute version 1.2, read from its version.py.
    interpreter = quick_probe(sys.executable)
    assert interpreter.torch_builds == (("toy", "1.2"),)
    assert interpreter.backend() == ("toyaccel", (1, 2))
    assert interpreter.torch_build == "toy12"
    assert interpreter.variant().name == TOY_VARIANT

    project = load_project(make_project(COMPILED_TOY_TOML)).project
    entry = {"torch": "2.13", "backend": "toyaccel", "version": "1.2", "systems": ["x86_64-linux"]}
    matrix = parse_matrix({"format": 1, "entries": [{**entry, "required": True}]})
    # The matrix candidate is buildable here (the host builds it natively; no cross build).
    candidates = [c for c in aot_candidates(project, matrix) if c.backend == "toyaccel"]
    assert [(c.name, c.buildable, c.required, c.cross) for c in candidates] == [
        (TOY_VARIANT, True, True, False)
    ]

    plan = plan_build(project, interpreter, "0123456789", matrix=matrix)
    assert [v.name for v in plan.variants] == [TOY_VARIANT]
    assert plan.diagnostics == ()  # in the matrix, within [general.toyaccel]'s bounds
    assert plan.skipped == (
        (
            "cpu",
            "no cpu variant is built: the build interpreter's torch is a toyaccel build (torch 2.13.0+toy12)",
        ),
    )
    (variant,) = plan.variants
    assert (variant.backend, variant.ops_name) == ("toyaccel", "_relu_toyaccel_0123456789")
    assert [(c.name, c.sources) for c in variant.components] == [
        ("_torch_binding", ("torch-ext/torch_binding.cpp",)),
        ("relu_toy", ("relu_toy/relu.cpp",)),
    ]
    # Bounds of its own [general.toyaccel] table exclude it like any backend's.
    bounded = COMPILED_TOY_TOML.replace('minver = "1.0"', 'minver = "1.3"')
    skipped = plan_build(load_project(make_project(bounded)).project, interpreter, "0", matrix=matrix)
    assert skipped.variants == ()
    assert (
        "toyaccel",
        "no toyaccel variant is built: toyaccel 1.2 is outside [general.toyaccel] minver/maxver",
    ) in (skipped.skipped)

    # Its CMake project: its definitions, its languages, and its fragment, copied in and included.
    project_dir = tmp_path / "generated"
    details = TorchDetails(str(tmp_path / "site" / "torch" / "share" / "cmake"), True, (), "2.13.0+toy12")
    write_project(project_dir, project.root, variant, interpreter, details, None, ProjectOptions())
    text = (project_dir / "CMakeLists.txt").read_text(encoding="utf-8")
    fragment = project_dir / "cmake" / "toyaccel.cmake"
    assert fragment.read_text(encoding="utf-8") == COMPILED_TOY_FRAGMENT
    lines = text.splitlines()
    at = lines.index('include("${CMAKE_CURRENT_LIST_DIR}/cmake/KernelBuilder.cmake")')
    assert lines[at + 1 : at + 3] == [
        'include("${CMAKE_CURRENT_LIST_DIR}/cmake/toyaccel.cmake")',
        "kb_find_torch()",
    ]
    assert "project(_relu_toyaccel_0123456789 LANGUAGES CXX)" in lines
    assert '"TOY_KERNEL" "USE_TOY=1" "Py_LIMITED_API=0x03090000"' in text
    assert "CUDA" not in text.replace("CUDA_OPTIONS", "")
    # The fragment's hooks replace KernelBuilder.cmake's empty ones (CMake's script mode runs them).
    assert _run_hooks(project_dir / "cmake", "toyaccel.cmake") == [
        "-- toyaccel: after Torch",
        "-- toyaccel: extension _relu_toyaccel",
    ]
    assert _run_hooks(project_dir / "cmake", None) == []


def _run_hooks(cmake_dir: Path, fragment: str | None) -> list[str]:
    """What KernelBuilder.cmake's backend hooks print, with ``fragment`` included after it (or none)."""
    from kernel_builder.pipeline.environment.toolchain import cmake

    script = cmake_dir / "hooks.cmake"
    script.write_text(
        f'include("{cmake_dir}/KernelBuilder.cmake")\n'
        + (f'include("{cmake_dir}/{fragment}")\n' if fragment else "")
        + "kb_backend_torch()\nkb_backend_extension(_relu_toyaccel)\n",
        encoding="utf-8",
    )
    run = subprocess.run([cmake().path, "-P", script], capture_output=True, text=True, check=True)
    return (run.stdout + run.stderr).splitlines()


TORCH_BUILD_VALUES = {
    "cuda": ["13.0", "12.6", " 12.8 ", "13.0.1", "13", "13.0a", "x.y", "", "١٣.٠"],
    "hip": ["7.1.25424-4179531dcd", "6.4", "6.4-xyz", "6.4.1", "6.4abc-1", "6", "", "-6.4"],
    "xpu": ["20250300", "2025.3", "20250300.1", "202503.x", "20253", "20250300abc", "2025.x", "abc", ""],
}


@pytest.mark.parametrize(
    "values",
    [{attribute: value} for attribute, values in TORCH_BUILD_VALUES.items() for value in values]
    + [{"cuda": "13.0", "hip": "7.1"}, {"hip": "7.1", "xpu": "2025.3"}, {"cuda": "", "hip": "6.4"}, {}],
)
def test_the_registry_reads_a_torch_build_as_the_loader_detects_it(values: dict[str, str]) -> None:
    """The build reads ``version.py`` through the registry; the loader's ``detect_backend`` (whose copy in
    ``_ops.py`` cannot ask the registry) reads the running Torch: for the built-in backends they agree."""
    torch = SimpleNamespace(version=SimpleNamespace(**{"cuda": None, "hip": None, "xpu": None, **values}))
    assert backends.torch_build_of(values) == detect_backend(torch)


# --- docs/backends.md ----------------------------------------------------------------------------------------

BACKENDS_MD = Path(__file__).resolve().parent.parent / "docs" / "backends.md"


def _table_rows(text: str, heading: str) -> list[list[str]]:
    """The cells of the table under ``heading`` (header and rule left out)."""
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[2:]]


def test_the_docs_describe_every_field_and_list_every_builtin_backend() -> None:
    import dataclasses

    text = BACKENDS_MD.read_text(encoding="utf-8")
    described = {
        name.strip("` ")
        for row in _table_rows(text, "What a backend describes")
        for name in row[0].split(",")
    }
    assert {f.name for f in dataclasses.fields(backends.Backend)} - described == set()
    listed = {
        name.strip("` ") for row in _table_rows(text, "The built-in backends") for name in row[0].split(",")
    }
    assert listed == set(backends.names())
    fragments = {row[0].strip("`"): row[4] for row in _table_rows(text, "The built-in backends")}
    for backend in backends.all_backends():
        fragment = backend.cmake_fragment
        if fragment is None:
            assert fragments.get(backend.name, "none") == "none"
        else:  # shipped with the package's CMake files (`kernel_builder/cmake/*.cmake`)
            assert fragment.is_file() and fragment.parent.name == "cmake" and fragment.suffix == ".cmake"
            assert fragments[backend.name] == f"`cmake/{fragment.name}`"
