"""Generation stage: registration.h (docs/layout.md), _ops.py , the CMake project .

Nothing here compiles: the CMake project is checked as text, and its quoting through ``cmake -P`` (a script
run of the PyPI CMake, milliseconds). The Torch versions are those of the fake interpreters
(tests/stage_fixtures.py), not the matrix's.
"""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from fake_torch import make_fake_torch
from stage_fixtures import CU130_213, fake_host, fake_interpreter, load, write_files

import kernel_builder
from kernel_builder.backends import gpu_archs
from kernel_builder.errors import BuildError
from kernel_builder.formats import runtime
from kernel_builder.pipeline.environment import toolchain
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, TorchDetails
from kernel_builder.pipeline.environment.toolchain import CudaToolkit
from kernel_builder.pipeline.generate.cmake import (
    ProjectOptions,
    component_target,
    project_fingerprint,
    write_project,
)
from kernel_builder.pipeline.generate.ops import aot_ops_py, noarch_ops_py
from kernel_builder.pipeline.generate.registration import GENERATED_MARKER, is_generated, registration_header
from kernel_builder.pipeline.plan.planner import VariantPlan, plan_build
from kernel_builder.pipeline.plan.unique_id import ops_name

UID = "0123456789"

# --- registration.h ---------------------------------------------------------------------------------------

MACROS = {
    "_CONCAT": "(A, B)",
    "CONCAT": "(A, B)",
    "_STRINGIFY": "(A)",
    "STRINGIFY": "(A)",
    "TORCH_LIBRARY_EXPAND": "(NAME, MODULE)",
    "TORCH_LIBRARY_IMPL_EXPAND": "(NAME, DEVICE, MODULE)",
    "STABLE_TORCH_LIBRARY_EXPAND": "(NAME, MODULE)",
    "STABLE_TORCH_LIBRARY_IMPL_EXPAND": "(NAME, DEVICE, MODULE)",
    "REGISTER_EXTENSION": "(NAME)",
    "_KB_LIBRARY_AT_LINK": "(KIND, KEY, MODULE, UID)",
}


def macro_bodies(text: str) -> dict[str, tuple[str, str]]:
    """``name -> (parameter list, body)`` of every function-like macro, continuation lines joined."""
    joined = text.replace("\\\n", " ")
    found = {}
    for match in re.finditer(r"^#define (\w+)(\([^)]*\))(.*)$", joined, re.MULTILINE):
        found[match[1]] = (match[2], " ".join(match[3].split()))
    return found


def test_registration_header_defines_every_macro() -> None:
    bodies = macro_bodies(registration_header())
    assert {name: params for name, (params, _) in bodies.items()} == MACROS


def test_registration_macros_expand_their_arguments() -> None:
    bodies = {name: body for name, (_, body) in macro_bodies(registration_header()).items()}
    assert bodies["_CONCAT"] == "A##B"
    assert bodies["CONCAT"] == "_CONCAT(A, B)"
    assert bodies["_STRINGIFY"] == "#A"
    assert bodies["STRINGIFY"] == "_STRINGIFY(A)"
    # One macro level between the caller and Torch's macro: the namespace argument is expanded first.
    assert bodies["TORCH_LIBRARY_EXPAND"] == "TORCH_LIBRARY(NAME, MODULE)"
    assert bodies["TORCH_LIBRARY_IMPL_EXPAND"] == "TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)"
    assert bodies["STABLE_TORCH_LIBRARY_EXPAND"] == "STABLE_TORCH_LIBRARY(NAME, MODULE)"
    assert bodies["STABLE_TORCH_LIBRARY_IMPL_EXPAND"] == "STABLE_TORCH_LIBRARY_IMPL(NAME, DEVICE, MODULE)"
    init = bodies["REGISTER_EXTENSION"]
    assert init.startswith("PyMODINIT_FUNC CONCAT(PyInit_, NAME)(void) {")
    assert "STRINGIFY(NAME)" in init and "PyModule_Create(" in init and "PyModuleDef_HEAD_INIT" in init
    # Single-phase, no methods, no per-module state: m_size 0 and every slot NULL.
    assert "STRINGIFY(NAME), NULL, 0, NULL, NULL, NULL, NULL, NULL}" in init


def test_registration_header_form() -> None:
    text = registration_header()
    lines = text.splitlines()
    assert lines[0].startswith(GENERATED_MARKER)
    assert "may be deleted or ignored by version control" in lines[0]
    assert "#pragma once" in lines
    assert re.findall(r"^[ \t]*#[ \t]*include.*$", text, re.MULTILINE) == ["#include <Python.h>"]
    assert registration_header() == (Path(inspect.getfile(is_generated)).parent / "registration.h").read_text(
        encoding="utf-8"
    )


def test_is_generated(tmp_path: Path) -> None:
    generated = tmp_path / "generated.h"
    generated.write_text(registration_header(), encoding="utf-8")
    own = tmp_path / "own.h"
    own.write_text("#pragma once\n" + registration_header(), encoding="utf-8")
    assert is_generated(generated)
    assert not is_generated(own)  # the marker counts only on the first line
    assert not is_generated(tmp_path / "missing.h")
    assert not is_generated(tmp_path)  # a directory cannot be read
    binary = tmp_path / "binary.h"
    binary.write_bytes(b"\xff\xfe" + GENERATED_MARKER.encode())
    assert not is_generated(binary)


# --- _ops.py ----------------------------------------------------------------------------------------------


class FakeOps:
    """``torch.ops``: any attribute is the op namespace of that name."""

    def __getattr__(self, name: str) -> types.SimpleNamespace:
        if name.startswith("__"):
            raise AttributeError(name)
        return types.SimpleNamespace(namespace=name)


def with_ops(torch: types.SimpleNamespace) -> types.SimpleNamespace:
    torch.ops = FakeOps()
    return torch


def test_aot_ops_py_text() -> None:
    text = aot_ops_py("_relu_cpu_0123456789")
    assert text == aot_ops_py("_relu_cpu_0123456789")
    tree = ast.parse(text, feature_version=(3, 9))
    assert [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))] == [
        "import torch",
        "from . import _relu_cpu_0123456789",
    ]
    assert "ops = torch.ops._relu_cpu_0123456789\n" in text
    assert text.startswith("# Generated by kernel-builder.")


def test_aot_ops_py_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing it imports the extension (a stand-in module here) and qualifies op names."""
    name = "_relu_cpu_0123456789"
    package = types.ModuleType("kb_test_relu")
    package.__path__ = []
    extension = types.ModuleType(f"kb_test_relu.{name}")
    monkeypatch.setitem(sys.modules, "torch", with_ops(make_fake_torch()))
    monkeypatch.setitem(sys.modules, "kb_test_relu", package)
    monkeypatch.setitem(sys.modules, f"kb_test_relu.{name}", extension)
    namespace: dict[str, Any] = {"__name__": "kb_test_relu._ops", "__package__": "kb_test_relu"}
    exec(compile(aot_ops_py(name), "_ops.py", "exec"), namespace)  # noqa: S102
    assert namespace[name] is extension
    assert namespace["ops"].namespace == name
    assert namespace["add_op_namespace_prefix"]("relu") == f"{name}::relu"


def test_noarch_ops_py_is_deterministic_and_python39() -> None:
    text = noarch_ops_py("golden", UID)
    assert text == noarch_ops_py("golden", UID)
    tree = ast.parse(text, feature_version=(3, 9))
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [ast.unparse(n) for n in imports] == ["import torch"]  # never kernel_builder
    other = noarch_ops_py("golden", "abcdefghij")
    changed = [(a, b) for a, b in zip(text.splitlines(), other.splitlines()) if a != b]
    assert changed == [(f"UNIQUE_ID = '{UID}'", "UNIQUE_ID = 'abcdefghij'")]


def test_noarch_ops_py_embeds_the_shared_function_verbatim() -> None:
    text = noarch_ops_py("golden", UID)
    assert inspect.getsource(runtime.detect_backend) in text
    tree = ast.parse(text)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == [
        "detect_backend",
        "add_op_namespace_prefix",
    ]


# (fake torch, the backend in the op namespace) for every branch of the detection, npu -> cann included.
BRANCHES: list[tuple[str, types.SimpleNamespace, str]] = [
    ("cpu", make_fake_torch(), "cpu"),
    ("cuda", make_fake_torch(cuda="13.0"), "cuda"),
    ("rocm", make_fake_torch(hip="7.1.25424-4179531dcd"), "rocm"),
    ("metal", make_fake_torch(mps=True), "metal"),
    ("xpu", make_fake_torch(xpu="20250300"), "xpu"),
    ("npu", make_fake_torch(privateuse1="npu"), "cann"),
    ("tpu", make_fake_torch(tpu=True), "tpu"),
    ("neuron", make_fake_torch(neuron=True), "neuron"),
    ("tpu-first", make_fake_torch(tpu=True, neuron=True, cuda="12.6"), "tpu"),
    ("cuda-before-rocm", make_fake_torch(cuda="12.6", hip="7.1.0"), "cuda"),
    ("metal-before-xpu", make_fake_torch(mps=True, xpu="20250300"), "metal"),
    ("xpu-before-npu", make_fake_torch(xpu="2025.3", privateuse1="npu"), "xpu"),
    ("unreadable-cuda", make_fake_torch(cuda="unknown"), "cuda"),
    ("bare-module", types.SimpleNamespace(), "cpu"),
]


def run_noarch_ops(monkeypatch: pytest.MonkeyPatch, torch: types.SimpleNamespace) -> dict[str, Any]:
    monkeypatch.setitem(sys.modules, "torch", with_ops(torch))
    namespace: dict[str, Any] = {"__name__": "golden._ops"}
    exec(compile(noarch_ops_py("golden", UID), "_ops.py", "exec"), namespace)  # noqa: S102
    return namespace


@pytest.mark.parametrize(("torch", "backend"), [b[1:] for b in BRANCHES], ids=[b[0] for b in BRANCHES])
def test_noarch_ops_py_branches(
    monkeypatch: pytest.MonkeyPatch, torch: types.SimpleNamespace, backend: str
) -> None:
    namespace = run_noarch_ops(monkeypatch, torch)
    expected = ops_name("golden", backend, UID)
    assert namespace["NAMESPACE"] == expected
    assert namespace["ops"].namespace == expected
    assert namespace["add_op_namespace_prefix"]("op") == f"{expected}::op"


@pytest.mark.parametrize(("torch", "backend"), [b[1:] for b in BRANCHES], ids=[b[0] for b in BRANCHES])
def test_embedded_detection_agrees(
    monkeypatch: pytest.MonkeyPatch, torch: types.SimpleNamespace, backend: str
) -> None:
    embedded = run_noarch_ops(monkeypatch, torch)["detect_backend"]
    assert embedded is not runtime.detect_backend
    assert embedded(torch) == runtime.detect_backend(torch)
    assert embedded(torch)[0] == backend


def test_noarch_namespace_equals_the_auto_selected_variants_id(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the loader's torch-cann variant records as its id is what _ops.py computes on an NPU."""
    project_backend = "cann"
    namespace = run_noarch_ops(monkeypatch, make_fake_torch(privateuse1="npu"))
    assert namespace["NAMESPACE"] == ops_name("golden", project_backend, UID) == f"_golden_cann_{UID}"


# --- the CMake project ------------------------------------------------------------------------------------

NVCC_FLAGS = (
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr",
)
#: An odd prefix path on purpose: it must reach CMake unchanged.
DETAILS = TorchDetails('/opt/site packages/torch;"x"/share/cmake', True, NVCC_FLAGS, "2.13.0")


def cmake_args(text: str, start: int) -> tuple[list[str], int]:
    """The arguments of the call whose ``(`` ends at ``start``, as CMake reads them, and the offset after ``)``.

    Handles what the generator writes: quoted arguments with ``\\`` escapes (``\\;`` stays as written, as in
    CMake) and unquoted words.
    """
    args: list[str] = []
    i = start
    while True:
        char = text[i]
        if char.isspace():
            i += 1
        elif char == ")":
            return args, i + 1
        elif char == '"':
            value, i = [], i + 1
            while text[i] != '"':
                if text[i] == "\\":
                    value.append("\\;" if text[i + 1] == ";" else text[i + 1])
                    i += 2
                else:
                    value.append(text[i])
                    i += 1
            args.append("".join(value))
            i += 1
        else:
            end = i
            while not text[end].isspace() and text[end] != ")":
                end += 1
            args.append(text[i:end])
            i = end


def cmake_calls(text: str) -> list[tuple[str, list[str], str]]:
    """Every top-level call: (command, arguments, source text of the call)."""
    calls = []
    for match in re.finditer(r"^(\w+)\(", text, re.MULTILINE):
        args, end = cmake_args(text, match.end())
        calls.append((match[1], args, text[match.start() : end]))
    return calls


_GENEX_LITERALS = {"$<1:$>": "$", "$<ANGLE-R>": ">", "$<COMMA>": ","}


def genex_value(text: str) -> str:
    """What CMake's generator expressions make of a value the generator escaped (see test_pipeline_builder_hostile for
    CMake itself evaluating them)."""
    return re.sub(r"\$<1:\$>|\$<ANGLE-R>|\$<COMMA>", lambda m: _GENEX_LITERALS[m.group()], text)


def keyword_args(args: list[str], keywords: tuple[str, ...]) -> dict[str, list[str]]:
    """The ``kb_*`` keyword arguments, as the generator-expression contexts they reach see them."""
    grouped: dict[str, list[str]] = {}
    current = None
    for arg in args:
        if arg in keywords:
            current = grouped.setdefault(arg, [])
        else:
            assert current is not None, f"argument {arg!r} before any keyword"
            current.append(genex_value(arg))
    return grouped


COMMON_KEYWORDS = ("DEFINITIONS", "INCLUDE_DIRS", "LATE_INCLUDE_DIRS", "CXX_OPTIONS", "CUDA_OPTIONS")
COMPONENT_KEYWORDS = ("SOURCES", "INCLUDE_DIRS", "CXX_FLAGS", "CUDA_FLAGS", "GENCODE")


class Generated:
    """A written project and what its CMakeLists.txt says."""

    def __init__(self, project_dir: Path) -> None:
        self.dir = project_dir
        self.text = (project_dir / "CMakeLists.txt").read_text(encoding="utf-8")
        self.calls = cmake_calls(self.text)

    def sets(self) -> dict[str, list[str]]:
        return {args[0]: args[1:] for name, args, _ in self.calls if name == "set"}

    def common(self) -> dict[str, list[str]]:
        [args] = [args for name, args, _ in self.calls if name == "kb_common"]
        return keyword_args(args, COMMON_KEYWORDS)

    def components(self) -> dict[str, dict[str, list[str]]]:
        return {
            args[0]: keyword_args(args[1:], COMPONENT_KEYWORDS)
            for name, args, _ in self.calls
            if name == "kb_component"
        }

    def languages(self) -> list[str]:
        [args] = [args for name, args, _ in self.calls if name == "project"]
        return args[args.index("LANGUAGES") + 1 :]


def toolkit_for(tmp_path: Path, version: tuple[int, int]) -> CudaToolkit:
    root = tmp_path / f"cuda-{version[0]}.{version[1]}"
    return CudaToolkit(root / "bin" / "nvcc", version, root, f"Build cuda_{version[0]}.{version[1]}")


@pytest.fixture(autouse=True)
def _host(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_host(monkeypatch)
    monkeypatch.delenv("NVCC_THREADS", raising=False)


KERNEL_TOML = """\
[general]
name = "gen"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"{torch_extra}]
cxx-flags = ["-DBINDING"]
{torch_keys}
[kernel.gen_cpu]
backend = "cpu"
depends = ["torch"]
src = ["gen_cpu/gen.cpp", "gen_cpu/gen.h"]
include = ["gen_cpu/include"]
cxx-flags = ["-DCPU_ONLY", "-O3"]

[kernel.gen_cuda]
backend = "cuda"
depends = ["torch"]
src = ["gen_cuda/gen.cu", "gen_cuda/gen.cuh"]
{cuda_keys}
"""


def make_root(tmp_path: Path, name: str = "kernel", *, torch_extra: str = "", torch_keys: str = "", cuda_keys: str = "",
              extra: str = "") -> Path:  # fmt: skip
    text = KERNEL_TOML.format(torch_extra=torch_extra, torch_keys=torch_keys, cuda_keys=cuda_keys) + extra
    files: dict[str, str | bytes] = {"build.toml": text, "torch-ext/gen/__init__.py": ""}
    for rel in re.findall(r'"([\w/.-]+\.(?:cpp|h|cu|cuh))"', text):
        files[rel] = "// source\n"
    (tmp_path / name / "gen_cpu" / "include").mkdir(parents=True)
    return write_files(tmp_path / name, files)


def generate(
    tmp_path: Path,
    root: Path,
    interpreter: BuildInterpreter,
    *,
    toolkit: CudaToolkit | None = None,
    options: ProjectOptions | None = None,
    native: tuple[str, ...] | None = None,
) -> tuple[VariantPlan, Generated]:
    plan = plan_build(load(root), interpreter, UID, native_targets=native)
    [variant] = [v for v in plan.variants if v.aot]
    project_dir = tmp_path / "out" / variant.name / "project"
    write_project(project_dir, root, variant, interpreter, DETAILS, toolkit, options or ProjectOptions())
    return variant, Generated(project_dir)


def test_cpu_project(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    variant, gen = generate(tmp_path, root, fake_interpreter("2.13.0+cpu"))
    assert variant.name == "torch213-cxx11-cpu-x86_64-linux"
    assert gen.text.startswith(
        f"# Generated by kernel-builder {kernel_builder.__version__} for variant {variant.name}."
    )
    assert gen.languages() == ["CXX"]
    sets = gen.sets()
    assert sets["CMAKE_CXX_STANDARD"] == ["20"]
    assert sets["CMAKE_CXX_EXTENSIONS"] == ["OFF"]
    assert "CMAKE_CUDA_STANDARD" not in sets and "KB_NVCC_THREADS_FLAG" not in sets
    assert "CMAKE_CUDA_ARCHITECTURES" not in sets
    assert sets["Python_EXECUTABLE"] == ["/opt/python/bin/python3"]
    common = gen.common()
    assert common["DEFINITIONS"] == [
        f"TORCH_EXTENSION_NAME=_gen_cpu_{UID}",
        "CPU_KERNEL",
        "Py_LIMITED_API=0x03090000",
    ]
    assert common["INCLUDE_DIRS"] == [str(gen.dir / "include")]
    assert common["CXX_OPTIONS"] == [
        "-fno-gnu-unique",
        "-ffile-prefix-map=../../..=.",
        f"-ffile-prefix-map={root}=.",
    ]
    assert "LATE_INCLUDE_DIRS" not in common
    assert gen.components() == {
        "kb_binding": {
            "SOURCES": [str(root / "torch-ext/torch_binding.cpp")],
            # The binding sees the cpu section's include directory and the directory of its listed header.
            "INCLUDE_DIRS": [str(root / "gen_cpu/include"), str(root / "gen_cpu")],
            "CXX_FLAGS": ["-DBINDING"],
        },
        "kb_kernel_gen_cpu": {
            "SOURCES": [str(root / "gen_cpu/gen.cpp")],
            "INCLUDE_DIRS": [str(root / "gen_cpu/include")],
            "CXX_FLAGS": ["-DCPU_ONLY", "-O3"],
        },
    }
    assert [c[0] for c in gen.calls][-1] == "kb_extension"
    assert gen.calls[-1][1] == [f"_gen_cpu_{UID}"]


def test_project_files(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    _, gen = generate(tmp_path, root, fake_interpreter("2.13.0+cpu"))
    assert (gen.dir / "include" / "registration.h").read_text(encoding="utf-8") == registration_header()
    module = Path(inspect.getfile(kernel_builder)).parent / "cmake" / "KernelBuilder.cmake"
    assert (gen.dir / "cmake" / "KernelBuilder.cmake").read_bytes() == module.read_bytes()
    assert 'include("${CMAKE_CURRENT_LIST_DIR}/cmake/KernelBuilder.cmake")' in gen.text


def test_a_cuda_project_includes_the_cuda_fragment_and_a_cpu_one_none(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    _, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit_for(tmp_path, (13, 0)))
    module = Path(inspect.getfile(kernel_builder)).parent / "cmake" / "cuda.cmake"
    assert (gen.dir / "cmake" / "cuda.cmake").read_bytes() == module.read_bytes()
    lines = gen.text.splitlines()
    at = lines.index('include("${CMAKE_CURRENT_LIST_DIR}/cmake/KernelBuilder.cmake")')
    assert lines[at + 1] == 'include("${CMAKE_CURRENT_LIST_DIR}/cmake/cuda.cmake")'
    _, cpu = generate(tmp_path / "cpu", make_root(tmp_path / "cpu"), fake_interpreter("2.13.0+cpu"))
    assert sorted(p.name for p in (cpu.dir / "cmake").iterdir()) == ["KernelBuilder.cmake"]
    assert "cuda.cmake" not in cpu.text


def test_the_cuda_fragment_takes_the_architectures_out_of_torchs_flags(tmp_path: Path) -> None:
    """Torch's CMake config adds a -gencode list to the global CUDA flags; the cuda fragment's hook, run once
    Torch is found, removes every architecture flag and keeps the others (CMake's script mode runs it)."""
    cmake_dir = Path(inspect.getfile(kernel_builder)).parent / "cmake"
    script = tmp_path / "strip.cmake"
    script.write_text(
        f'include("{cmake_dir}/KernelBuilder.cmake")\ninclude("{cmake_dir}/cuda.cmake")\n'
        'set(CMAKE_CUDA_FLAGS "-O2 -gencode arch=compute_90,code=sm_90 --expt-relaxed-constexpr -arch=sm_80")\n'
        'set(TORCH_NVCC_FLAGS "--generate-code=arch=compute_80,code=sm_80 -Xfatbin -compress-all")\n'
        "kb_backend_torch()\n"
        'message(STATUS "[${CMAKE_CUDA_FLAGS}] [${TORCH_NVCC_FLAGS}] [${CUDA_NVCC_FLAGS}]")\n',
        encoding="utf-8",
    )
    run = subprocess.run([toolchain.cmake().path, "-P", script], capture_output=True, text=True, check=True)
    assert (
        run.stdout + run.stderr
    ).strip() == "-- [-O2 --expt-relaxed-constexpr] [-Xfatbin -compress-all] []"


def test_project_is_rewritten_and_fingerprinted(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    interpreter = fake_interpreter("2.13.0+cpu")
    plan = plan_build(load(root), interpreter, UID).variants[0]
    project_dir = tmp_path / "project"
    first = write_project(project_dir, root, plan, interpreter, DETAILS, None, ProjectOptions())
    (project_dir / "stale.txt").write_text("left over", encoding="utf-8")
    assert project_fingerprint(project_dir) != first
    assert write_project(project_dir, root, plan, interpreter, DETAILS, None, ProjectOptions()) == first
    assert not (project_dir / "stale.txt").exists()
    other = write_project(
        project_dir, root, plan, interpreter, DETAILS, None, ProjectOptions(gnu_unique_flag=False)
    )
    assert other != first
    assert "-fno-gnu-unique" not in Generated(project_dir).common()["CXX_OPTIONS"]


def test_cuda_project(tmp_path: Path) -> None:
    root = make_root(
        tmp_path, cuda_keys='cuda-capabilities = ["8.0", "9.0a"]\ncuda-flags = ["--use_fast_math"]\n'
    )
    toolkit = toolkit_for(tmp_path, (13, 0))
    variant, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit)
    assert variant.name == "torch213-cxx11-cu130-x86_64-linux"
    assert gen.languages() == ["CXX", "CUDA"]
    sets = gen.sets()
    assert sets["CMAKE_CUDA_COMPILER"] == [str(toolkit.nvcc)]
    assert sets["CUDAToolkit_ROOT"] == [str(toolkit.root)]
    assert sets["CMAKE_CUDA_ARCHITECTURES"] == ["OFF"]
    assert sets["CMAKE_CXX_STANDARD"] == sets["CMAKE_CUDA_STANDARD"] == ["20"]
    assert sets["CMAKE_CUDA_EXTENSIONS"] == ["OFF"]
    common = gen.common()
    assert common["DEFINITIONS"] == [
        f"TORCH_EXTENSION_NAME=_gen_cuda_{UID}",
        "CUDA_KERNEL",
        "USE_CUDA=1",
        "Py_LIMITED_API=0x03090000",
    ]
    assert common["CUDA_OPTIONS"] == [
        "-Xcompiler=-fno-gnu-unique",
        "-Xcompiler=-ffile-prefix-map=../../..=.",
        f"-Xcompiler=-ffile-prefix-map={root}=.",
        "--expt-relaxed-constexpr",
        "-DENABLE_FP8",
    ]
    components = gen.components()
    assert components["kb_kernel_gen_cuda"] == {
        "SOURCES": [str(root / "gen_cuda/gen.cu")],
        "GENCODE": ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90a,code=sm_90a"],
        "CUDA_FLAGS": ["--use_fast_math"],
    }
    assert "kb_kernel_gen_cpu" not in components  # another backend's section
    assert components["kb_binding"] == {
        "SOURCES": [str(root / "torch-ext/torch_binding.cpp")],
        "INCLUDE_DIRS": [str(root / "gen_cuda")],  # the cuda section's header directory, not the cpu one's
        "CXX_FLAGS": ["-DBINDING"],
    }


@pytest.mark.parametrize(
    ("backend", "torch", "cuda"),
    [("cpu", "2.13.0+cpu", None), ("cuda", "2.13.0+cu130", "13.0"), ("cuda", "2.11.0+cu126", "12.6")],
)
def test_exactly_one_backend_macro(tmp_path: Path, backend: str, torch: str, cuda: str | None) -> None:
    root = make_root(tmp_path)
    toolkit = toolkit_for(tmp_path, (int(cuda.split(".")[0]), int(cuda.split(".")[1]))) if cuda else None
    _, gen = generate(tmp_path, root, fake_interpreter(torch, cuda=cuda), toolkit=toolkit)
    definitions = gen.common()["DEFINITIONS"]
    assert [d for d in definitions if d.endswith("_KERNEL")] == [f"{backend.upper()}_KERNEL"]
    assert ("USE_CUDA=1" in definitions) == (backend == "cuda")
    assert [d for d in definitions if d.startswith("TORCH_TARGET_VERSION")] == []
    assert definitions.count("Py_LIMITED_API=0x03090000") == 1


@pytest.mark.parametrize(
    ("torch", "cuda", "standard"),
    [("2.11.0+cpu", None, "17"), ("2.11.0+cu130", "13.0", "17"), ("2.12.0+cpu", None, "20"), ("2.13.0+cu130", "13.0", "20"),
     ("2.14.1+cu130", "13.0", "20")],
)  # fmt: skip
def test_language_standard(tmp_path: Path, torch: str, cuda: str | None, standard: str) -> None:
    root = make_root(tmp_path)
    toolkit = toolkit_for(tmp_path, (13, 0)) if cuda else None
    _, gen = generate(tmp_path, root, fake_interpreter(torch, cuda=cuda), toolkit=toolkit)
    sets = gen.sets()
    assert sets["CMAKE_CXX_STANDARD"] == [standard]
    assert sets["CMAKE_CXX_STANDARD_REQUIRED"] == ["ON"]
    if cuda:
        assert sets["CMAKE_CUDA_STANDARD"] == [standard]


@pytest.mark.parametrize(
    ("abi", "torch", "cuda", "value"),
    [
        ("2.11", "2.13.0+cu130", "13.0", "0x020B000000000000"),
        ("2.12", "2.13.0+cpu", None, "0x020C000000000000"),
        ("2.13", "2.13.0+cpu", None, "0x020D000000000000"),
    ],
)
def test_stable_abi_target_version(
    tmp_path: Path, abi: str, torch: str, cuda: str | None, value: str
) -> None:
    root = make_root(tmp_path, torch_keys=f'stable-abi = "{abi}"\n')
    toolkit = toolkit_for(tmp_path, (13, 0)) if cuda else None
    variant, gen = generate(tmp_path, root, fake_interpreter(torch, cuda=cuda), toolkit=toolkit)
    compute = "cu130" if cuda else "cpu"
    assert variant.name == f"torch-stable-abi{abi.replace('.', '')}-{compute}-x86_64-linux"
    assert gen.common()["DEFINITIONS"][-1] == f"TORCH_TARGET_VERSION={value}"
    # The language standard follows the Torch compiled against, not the ABI version.
    assert gen.sets()["CMAKE_CXX_STANDARD"] == ["20"]


def test_gencode_per_component_and_torch_cu_union(tmp_path: Path) -> None:
    extra = """
[kernel.gen_more]
backend = "cuda"
depends = ["torch"]
src = ["gen_more/more.cu"]
cuda-capabilities = ["7.5", "10.0+PTX"]
"""
    root = make_root(tmp_path, torch_extra=', "torch-ext/binding_kernels.cu"', extra=extra,
                     cuda_keys='cuda-capabilities = ["8.0", "9.0a", "12.0"]\n')  # fmt: skip
    variant, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit_for(tmp_path, (13, 0)))
    by_name = {c.name: c for c in variant.components}
    assert by_name["gen_cuda"].archs == ("8.0", "9.0a", "12.0")
    assert by_name["gen_more"].archs == ("7.5", "10.0+PTX")
    union = ("7.5", "8.0", "9.0a", "10.0+PTX", "12.0")
    assert by_name["_torch_binding"].archs == variant.archs == union
    components = gen.components()
    for component in by_name.values():
        assert components[component_target(component)]["GENCODE"] == gpu_archs.gencode_flags(component.archs)
    assert components["kb_binding"]["SOURCES"] == [
        str(root / "torch-ext/torch_binding.cpp"),
        str(root / "torch-ext/binding_kernels.cu"),
    ]
    assert components["kb_kernel_gen_more"]["GENCODE"] == [
        "-gencode=arch=compute_75,code=sm_75",
        "-gencode=arch=compute_100,code=sm_100",
        "-gencode=arch=compute_100,code=compute_100",
    ]


def test_torch_cu_uses_the_default_list_when_no_component_has_archs(tmp_path: Path) -> None:
    root = make_root(
        tmp_path, torch_extra=', "torch-ext/binding_kernels.cu"', cuda_keys='cuda-minver = "13.2"\n'
    )
    variant, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit_for(tmp_path, (13, 0)))
    assert [c.name for c in variant.components] == ["_torch_binding"]  # gen_cuda is dropped by cuda-minver
    default = gpu_archs.default_capabilities((13, 0))
    assert variant.archs == default
    assert gen.components()["kb_binding"]["GENCODE"] == gpu_archs.gencode_flags(default)


@pytest.mark.parametrize(
    ("cuda_keys", "extra", "threads"),
    [
        ("", "", 8),  # the 13.0 default list has 10 entries
        ('cuda-capabilities = ["8.0", "9.0"]\n', "", 2),
        ('cuda-capabilities = ["9.0a"]\n', "", 1),
        (
            'cuda-capabilities = ["8.0"]\n',
            (
                '\n[kernel.gen_more]\nbackend = "cuda"\ndepends = []\nsrc = ["gen_more/more.cu"]\n'
                'cuda-capabilities = ["7.5", "8.0", "9.0"]\n'
            ),
            3,
        ),
    ],
)
def test_nvcc_threads_from_the_largest_arch_count(
    tmp_path: Path, cuda_keys: str, extra: str, threads: int
) -> None:
    root = make_root(tmp_path, cuda_keys=cuda_keys, extra=extra)
    _, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit_for(tmp_path, (13, 0)))
    assert gen.sets()["KB_NVCC_THREADS_FLAG"] == [f"--threads={threads}"]


def test_nvcc_threads_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_root(tmp_path)
    toolkit = toolkit_for(tmp_path, (13, 0))
    monkeypatch.setenv("NVCC_THREADS", "3")
    _, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit)
    assert gen.sets()["KB_NVCC_THREADS_FLAG"] == ["--threads=3"]
    _, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit, options=ProjectOptions(nvcc_threads=5))
    assert gen.sets()["KB_NVCC_THREADS_FLAG"] == ["--threads=5"]  # --nvcc-threads wins over the variable


STUB_FLAGS = '["-static-global-template-stub=false", "--use_fast_math", "--static-global-template-stub=true"]'


@pytest.mark.parametrize(
    ("torch", "cuda", "kept"),
    [
        ("2.11.0+cu126", "12.6", ["--use_fast_math"]),
        ("2.11.0+cu128", "12.8", ["-static-global-template-stub=false", "--use_fast_math",
                                  "--static-global-template-stub=true"]),
        ("2.13.0+cu130", "13.0", ["-static-global-template-stub=false", "--use_fast_math",
                                  "--static-global-template-stub=true"]),
    ],
)  # fmt: skip
def test_static_global_template_stub_needs_cuda_12_8(
    tmp_path: Path, torch: str, cuda: str, kept: list[str]
) -> None:
    root = make_root(tmp_path, cuda_keys=f"cuda-flags = {STUB_FLAGS}\n")
    version = (int(cuda.split(".")[0]), int(cuda.split(".")[1]))
    _, gen = generate(
        tmp_path, root, fake_interpreter(torch, cuda=cuda), toolkit=toolkit_for(tmp_path, version)
    )
    assert gen.components()["kb_kernel_gen_cuda"]["CUDA_FLAGS"] == kept


def test_native_targets_reach_gencode(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    variant, gen = generate(
        tmp_path, root, CU130_213, toolkit=toolkit_for(tmp_path, (13, 0)), native=("9.0",)
    )
    assert variant.arch_selection == "native"
    assert gen.components()["kb_kernel_gen_cuda"]["GENCODE"] == ["-gencode=arch=compute_90,code=sm_90"]
    assert gen.sets()["KB_NVCC_THREADS_FLAG"] == ["--threads=1"]


ODD = 'odd dir "quoted" ${HOME} $x \\back'  # no `;`: CMake cannot build under such a path (see below)
#: Outside the kernel root a `;` is fine: the interpreter's path, say.
ODD_PYTHON = 'py;thon "x" $y/bin/python3'


def test_paths_with_spaces_and_semicolons_are_quoted(tmp_path: Path) -> None:
    root = make_root(tmp_path, ODD)
    interpreter = fake_interpreter("2.13.0+cpu", python=tmp_path / ODD_PYTHON)
    cutlass = tmp_path / "cut;lass dir" / "include"
    _, gen = generate(tmp_path, root, interpreter, options=ProjectOptions(dependency_includes=(cutlass,)))
    assert gen.common()["INCLUDE_DIRS"] == [str(gen.dir / "include"), str(cutlass)]
    assert gen.sets()["Python_EXECUTABLE"] == [str(interpreter.python)]
    assert gen.components()["kb_kernel_gen_cpu"]["SOURCES"] == [str(root / "gen_cpu/gen.cpp")]
    assert gen.components()["kb_kernel_gen_cpu"]["INCLUDE_DIRS"] == [str(root / "gen_cpu/include")]
    assert gen.common()["CXX_OPTIONS"][-1] == f"-ffile-prefix-map={root}=."
    # A list element keeps its `;` escaped, or CMake would split the prefix path in two.
    [prefix] = [args for name, args, _ in gen.calls if name == "list"]
    assert prefix == ["PREPEND", "CMAKE_PREFIX_PATH", DETAILS.cmake_prefix_path.replace(";", "\\;")]


def test_semicolon_in_the_kernel_root_is_refused(tmp_path: Path) -> None:
    root = make_root(tmp_path, "my;kernel")
    interpreter = fake_interpreter("2.13.0+cpu")
    plan = plan_build(load(root), interpreter, UID).variants[0]
    with pytest.raises(BuildError) as info:
        write_project(
            root / ".kernel-builder" / "project", root, plan, interpreter, DETAILS, None, ProjectOptions()
        )
    assert str(info.value) == (
        f"CMake cannot build in a directory whose path contains `;`: {root}; rename or move it"
    )
    assert not (root / ".kernel-builder").exists()


CMAKE_STUBS = """\
cmake_minimum_required(VERSION 3.26)
project(check NONE)
set(kb_count 0)
function(kb_report keyword)
  foreach(value IN LISTS ARG_${keyword})
    math(EXPR n "${kb_count} + 1")
    set(kb_count ${n} PARENT_SCOPE)
    set(kb_count ${n})
    # Evaluated as the kb_* functions' values are: by generator expressions.
    file(GENERATE OUTPUT "${CMAKE_BINARY_DIR}/values/${n}.txt" CONTENT "${keyword}=[$<1:${value}>]")
  endforeach()
endfunction()
function(kb_common)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "" "DEFINITIONS;INCLUDE_DIRS;LATE_INCLUDE_DIRS;CXX_OPTIONS;CUDA_OPTIONS")
  foreach(keyword DEFINITIONS INCLUDE_DIRS LATE_INCLUDE_DIRS CXX_OPTIONS CUDA_OPTIONS)
    kb_report(${keyword})
  endforeach()
  set(kb_count ${kb_count} PARENT_SCOPE)
endfunction()
function(kb_component name)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "" "SOURCES;INCLUDE_DIRS;CXX_FLAGS;CUDA_FLAGS;GENCODE")
  foreach(keyword SOURCES INCLUDE_DIRS CXX_FLAGS CUDA_FLAGS GENCODE)
    kb_report(${keyword})
  endforeach()
  set(kb_count ${kb_count} PARENT_SCOPE)
endfunction()
"""
CMAKE_TAIL = """\
foreach(value IN LISTS CMAKE_PREFIX_PATH)
  message("CMAKE_PREFIX_PATH=[${value}]")
endforeach()
message("Python_EXECUTABLE=[${Python_EXECUTABLE}]")
"""


def test_cmake_reads_the_quoted_values_back(tmp_path: Path) -> None:
    """The generated calls, run by CMake itself (the kb_* argument parsing, generator expressions evaluated)."""
    root = make_root(tmp_path, ODD)
    interpreter = fake_interpreter("2.13.0+cpu", python=tmp_path / ODD_PYTHON)
    cutlass = tmp_path / "cut;lass dir" / "include"
    _, gen = generate(tmp_path, root, interpreter, options=ProjectOptions(dependency_includes=(cutlass,)))
    scriptable = [call for name, _, call in gen.calls if name in ("set", "list", "kb_common", "kb_component")]
    check = tmp_path / "check"
    check.mkdir()
    (check / "CMakeLists.txt").write_text(
        CMAKE_STUBS + "\n".join(scriptable) + "\n" + CMAKE_TAIL, encoding="utf-8"
    )
    result = subprocess.run(
        [str(toolchain.cmake().path), "-S", str(check), "-B", str(check / "b")],
        capture_output=True,
        text=True,
        check=True,
    )
    evaluated = [
        path.read_text(encoding="utf-8")
        for path in sorted((check / "b" / "values").iterdir(), key=lambda p: int(p.stem))
    ]
    seen = re.findall(r"^(\w+)=\[(.*)\]$", result.stderr + "\n".join(evaluated), re.MULTILINE)
    assert ("SOURCES", str(root / "gen_cpu/gen.cpp")) in seen
    assert ("INCLUDE_DIRS", str(root / "gen_cpu/include")) in seen
    assert ("INCLUDE_DIRS", str(cutlass)) in seen
    assert ("CXX_OPTIONS", f"-ffile-prefix-map={root}=.") in seen
    assert ("CMAKE_PREFIX_PATH", DETAILS.cmake_prefix_path) in seen
    assert ("Python_EXECUTABLE", str(interpreter.python)) in seen


def test_cuda_library_headers_shim(tmp_path: Path) -> None:
    purelib = tmp_path / "site-packages"
    wheel_include = purelib / "nvidia" / "cu13" / "include"
    write_files(
        wheel_include, {"cublas_v2.h": "", "cusparse.h": "", "cuda_runtime.h": "", "crt/host_defines.h": ""}
    )
    toolkit = toolkit_for(tmp_path, (13, 0))
    write_files(toolkit.include, {"cuda_runtime.h": "", "crt/host_defines.h": "", "cusparse.h": ""})
    root = make_root(tmp_path)
    _, gen = generate(
        tmp_path, root, fake_interpreter("2.13.0+cu130", cuda="13.0", purelib=purelib), toolkit=toolkit
    )
    shim = gen.dir / "cuda-library-headers"
    assert sorted(p.name for p in shim.iterdir()) == ["cublas_v2.h"]
    assert (shim / "cublas_v2.h").resolve() == (wheel_include / "cublas_v2.h").resolve()
    assert gen.common()["LATE_INCLUDE_DIRS"] == [str(shim)]


def test_no_shim_without_wheel_headers(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    _, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit_for(tmp_path, (13, 0)))
    assert not (gen.dir / "cuda-library-headers").exists()
    assert "LATE_INCLUDE_DIRS" not in gen.common()


def test_dependency_includes_come_first(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    cutlass = (tmp_path / "cutlass" / "include", tmp_path / "cutlass" / "tools" / "util" / "include")
    _, gen = generate(
        tmp_path, root, fake_interpreter("2.13.0+cpu"), options=ProjectOptions(dependency_includes=cutlass)
    )
    assert gen.common()["INCLUDE_DIRS"] == [str(gen.dir / "include"), *map(str, cutlass)]


# --- kernel_builder.load's namespace-where-used projects and --debug-build --------------------------------------


def source_definitions(gen: Generated) -> dict[str, list[str]]:
    """``set_source_files_properties`` calls: the definition each sets, with the files it sets it on."""
    found = {}
    for name, args, _ in gen.calls:
        if name == "set_source_files_properties":
            *files, properties, key, definition = args
            assert (properties, key) == ("PROPERTIES", "COMPILE_DEFINITIONS")
            found[definition] = files
    return found


def test_namespace_only_where_used(tmp_path: Path) -> None:
    """A file that names the macro other than as a registration macro's namespace gets it defined."""
    root = make_root(tmp_path)
    (root / "torch-ext" / "torch_binding.cpp").write_text(
        "// TORCH_EXTENSION_NAME in a comment does not count\n"
        "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {}\n"
        "static const char *name = STRINGIFY(TORCH_EXTENSION_NAME);\n"
    )
    _, gen = generate(
        tmp_path, root, fake_interpreter("2.13.0+cpu"), options=ProjectOptions(namespace_where_used=True)
    )
    assert gen.common()["DEFINITIONS"] == ["CPU_KERNEL", "Py_LIMITED_API=0x03090000"]
    assert source_definitions(gen) == {
        f"TORCH_EXTENSION_NAME=_gen_cpu_{UID}": [str(root / "torch-ext/torch_binding.cpp")]
    }
    assert "kb_namespace" not in [args[0] for name, args, _ in gen.calls if name == "kb_component"]
    # Before the extension is declared, after the components.
    names = [c[0] for c in gen.calls]
    assert names.index("set_source_files_properties") > max(
        i for i, n in enumerate(names) if n == "kb_component"
    )


def test_namespace_at_link_for_a_binding_that_only_registers(tmp_path: Path) -> None:
    """The template's binding: its registration macros get the namespace from a generated source, so a new
    namespace (every edit) changes neither its command line nor its text."""
    root = make_root(tmp_path)
    (root / "torch-ext" / "torch_binding.cpp").write_text(
        "TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {}\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n"
    )
    variant, gen = generate(
        tmp_path, root, fake_interpreter("2.13.0+cpu"), options=ProjectOptions(namespace_where_used=True)
    )
    assert gen.common()["DEFINITIONS"] == ["CPU_KERNEL", "Py_LIMITED_API=0x03090000"]
    assert source_definitions(gen) == {
        "KERNEL_BUILDER_NAMESPACE_AT_LINK": [str(root / "torch-ext/torch_binding.cpp")]
    }
    source = gen.dir / "namespace" / "kb_namespace.cpp"
    [args] = [args for name, args, _ in gen.calls if name == "kb_component" and args[0] == "kb_namespace"]
    assert args == ["kb_namespace", "SOURCES", str(source)]
    text = source.read_text()
    assert f'return "{variant.ops_name}";' in text and f"PyInit_{variant.ops_name}(void)" in text


def test_namespace_everywhere_when_a_header_uses_it(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    (root / "gen_cpu" / "gen.h").write_text("#define GEN_NS TORCH_EXTENSION_NAME\n")
    _, gen = generate(
        tmp_path, root, fake_interpreter("2.13.0+cpu"), options=ProjectOptions(namespace_where_used=True)
    )
    assert gen.common()["DEFINITIONS"][0] == f"TORCH_EXTENSION_NAME=_gen_cpu_{UID}"
    assert "set_source_files_properties" not in [c[0] for c in gen.calls]


def test_debug_info_flags(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    _, gen = generate(tmp_path, root, fake_interpreter("2.13.0+cpu"), options=ProjectOptions(debug_info=True))
    assert gen.common()["CXX_OPTIONS"][-1] == "-g"
    assert gen.common()["CUDA_OPTIONS"][-2:] == ["-g", "-lineinfo"]


def test_rewriting_the_project_keeps_the_mtime_of_unchanged_files(tmp_path: Path) -> None:
    """Generated headers every compilation includes must not look new to Ninja after each configure."""
    import os

    root = make_root(tmp_path)
    _, gen = generate(tmp_path, root, fake_interpreter("2.13.0+cpu"))
    header, lists = gen.dir / "include" / "registration.h", gen.dir / "CMakeLists.txt"
    for path in (header, lists):
        os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    # Other flags: CMakeLists.txt changes, registration.h does not.
    generate(tmp_path, root, fake_interpreter("2.13.0+cpu"), options=ProjectOptions(debug_info=True))
    assert header.stat().st_mtime_ns == 1_000_000_000
    assert lists.stat().st_mtime_ns != 1_000_000_000


def test_the_root_map_goes_to_the_preprocessor_for_sccache() -> None:
    """sccache hashes compiler options verbatim but not the preprocessor's (``ci.md``, hits from any checkout)."""
    from kernel_builder.pipeline.generate.cmake import _root_prefix_map

    root = Path("/w/relu")
    assert _root_prefix_map(root, "sccache") == (
        "-Wp,-ffile-prefix-map=/w/relu=.",
        "-Xcompiler=-Xpreprocessor,-ffile-prefix-map=/w/relu=.",
    )
    plain = ("-ffile-prefix-map=/w/relu=.", "-Xcompiler=-ffile-prefix-map=/w/relu=.")
    assert _root_prefix_map(root, "ccache") == plain  # ccache leaves it out of the hash by itself
    assert _root_prefix_map(root, None) == plain
    assert _root_prefix_map(Path("/w/a,b"), "sccache")[0] == "-ffile-prefix-map=/w/a,b=."  # -Wp splits at ","


def test_sources_through_the_stage(tmp_path: Path) -> None:
    """nvcc through sccache: every source and include directory is named in the stage that all checkouts
    share (``source_stage``), and the stage's path becomes ``.`` in what the compilers write."""
    root = make_root(tmp_path)
    stage = tmp_path / "stages" / "gen-variant"
    options = ProjectOptions(compiler_cache="sccache", source_stage=stage)
    _, gen = generate(tmp_path, root, CU130_213, toolkit=toolkit_for(tmp_path, (13, 0)), options=options)
    assert str(root) not in "".join(
        v for c in gen.components().values() for key in ("SOURCES", "INCLUDE_DIRS") for v in c.get(key, [])
    )
    assert gen.components()["kb_kernel_gen_cuda"]["SOURCES"] == [str(stage / "gen_cuda/gen.cu")]
    assert f"-ffile-prefix-map={stage}=." in gen.common()["CXX_OPTIONS"]
    assert f"-Xcompiler=-ffile-prefix-map={stage}=." in gen.common()["CUDA_OPTIONS"]
    _, plain = generate(tmp_path, root, CU130_213, toolkit=toolkit_for(tmp_path, (13, 0)))
    assert plain.components()["kb_kernel_gen_cuda"]["SOURCES"] == [str(root / "gen_cuda/gen.cu")]
