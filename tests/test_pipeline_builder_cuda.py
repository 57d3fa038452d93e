"""End-to-end CUDA builds with nvcc 13.0 and Torch 2.14.1+cu130, no GPU needed (docs/layout.md
25, 33, and the issue's acceptance build of examples/relu with the full default capability list).

The build interpreter is ``KB_TEST_CUDA_PYTHON`` (default: ``.venv-cu130/bin/python`` in the repository); the
module is skipped with the reason when it is missing. Built variants are loaded in that interpreter: the probe and
relu together, in one (``_loaded``), for the tests that read what the loader gives.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from build_outputs import (
    assert_clean_extension,
    assert_one_ops_name,
    compile_commands,
    cuobjdump,
    extension,
    nvcc,
    object_files,
    python_includes,
    snapshot,
    symbol_table,
    tool_output,
    torch_includes,
    variant_files,
)
from build_runs import (
    NO_COMPILER_CACHE,
    NO_IMPORT_CHECK,
    Built,
    build,
    cpu_python,
    metadata,
    printed,
    require_cuda_python,
    run_cli,
    run_json,
    run_parallel,
)
from compile_probes import (
    PROBE_BINDING_CU,
    PROBE_COMPONENTS,
    PROBE_CUDA,
    PROBE_EFFECTIVE,
    PROBE_ID,
    PROBE_UNION,
    REGISTRATION_PROBE,
    probe_project,
    probe_value,
)
from cpu_projects import copy_example
from cuda_projects import lambda_project, tiny_cuda_project
from cuobjdump_listing import cuobjdump_names, expected_cuobjdump_images
from matrix_data import CUDA_VARIANT

from kernel_builder.config import load_project
from kernel_builder.pipeline.generate.registration import registration_header
from kernel_builder.pipeline.plan.unique_id import compute_unique_id

pytestmark = [pytest.mark.slow, pytest.mark.cuda]

#: CUDA 13.0's default list (docs/layout.md), which examples/relu uses (it names no capabilities).
DEFAULT_13_0 = ("7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX")


@pytest.fixture(scope="session")
def cuda_py() -> Path:
    return require_cuda_python()


@pytest.fixture(scope="session")
def probe(cuda_py: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = probe_project(tmp_path_factory.mktemp("probe-cuda") / "kb-probe")
    run = build(root, "--unique-id", PROBE_ID, NO_IMPORT_CHECK, python=cuda_py)
    printed("probe cuda build", run.seconds)
    return Built(root, run, CUDA_VARIANT)


@pytest.fixture(scope="session")
def relu(cuda_py: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """examples/relu (a copy) with CUDA 13.0's whole default list: the only full-list build of the suite. No
    import check: the tests load it themselves (``_loaded``)."""
    root = copy_example("relu", tmp_path_factory.mktemp("relu-cuda") / "relu")
    run = build(root, NO_IMPORT_CHECK, python=cuda_py)
    printed("examples/relu cuda build (10 capabilities)", run.seconds)
    return Built(root, run, CUDA_VARIANT)


def _tiny(
    cuda_py: Path, tmp_path_factory: pytest.TempPathFactory, name: str, env: dict[str, str] | None = None
) -> Built:
    root = tiny_cuda_project(tmp_path_factory.mktemp(name) / "kb-tiny")
    return Built(root, build(root, NO_IMPORT_CHECK, python=cuda_py, env=env), CUDA_VARIANT)


@pytest.fixture(scope="session")
def tiny_a(cuda_py: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _tiny(cuda_py, tmp_path_factory, "tiny-a")


@pytest.fixture(scope="session")
def tiny_b(cuda_py: Path, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The same sources as ``tiny_a``, built clean (and compiled, not taken from a cache) in another directory."""
    return _tiny(cuda_py, tmp_path_factory, "tiny-b", NO_COMPILER_CACHE)


def cuobjdump_images(cuda_py: Path, binary: Path) -> tuple[set[str], set[str]]:
    """(ELF, PTX) image names of an object file or shared object."""
    tool = cuobjdump(cuda_py)
    elf = cuobjdump_names(tool_output([tool, "--list-elf", binary]))
    ptx = cuobjdump_names(tool_output([tool, "--list-ptx", binary]))
    return elf, ptx


# ---------------------------------------------------------------------------------------------------------
# Loading: the probe and relu in one interpreter (distinct ops names), for the tests that read what it gives

#: The op whose schema case 8 reads, per project.
LOADED_OPS = {"probe": "extension_name", "relu": "relu"}
_LOADED: dict[str, object] = {}


def expected_ops_name(fixture: str, built: Built) -> str:
    """The ops name the project must get, computed from its sources (the probe is built with ``--unique-id``)."""
    project = load_project(built.root).project
    unique_id = PROBE_ID if fixture == "probe" else compute_unique_id(project)
    return f"_{project.py_name}_cuda_{unique_id}"


def loaded(fixture: str, request: pytest.FixtureRequest, cuda_py: Path) -> dict[str, object]:
    """What ``kernel_builder.get_local_kernel`` gives for the project, both projects loaded in one fresh CUDA
    interpreter (once per session): the module's name, its op's schema through the name computed from the
    sources, whether anything registered under the literal ``TORCH_EXTENSION_NAME``, and for the probe its
    host ops' results. A failure is reported for its project alone."""
    if not _LOADED:
        builds = {name: request.getfixturevalue(name) for name in LOADED_OPS}
        body = ""
        for index, (name, op) in enumerate(LOADED_OPS.items(), start=1):
            ops_name = expected_ops_name(name, builds[name])
            extra = ""
            if name == "probe":
                extra = f"""
                    entry["host"] = [module.__name__, module.value(3), torch.ops.{ops_name}.extension_name()]"""
            body += f"""
                try:
                    module = kernel_builder.get_local_kernel(Path(sys.argv[{index}]))
                    entry = {{
                        "module": module.__name__,
                        "schema": str(getattr(torch.ops.{ops_name}, "{op}").default._schema),
                        "literal": hasattr(torch.ops.TORCH_EXTENSION_NAME, "{op}"),
                    }}{extra}
                    seen["{name}"] = entry
                except Exception:
                    seen["{name}"] = traceback.format_exc()
                """
        code = "import json, sys, traceback\nfrom pathlib import Path\nimport torch\nimport kernel_builder\nseen = {}\n"
        code += textwrap.dedent(body) + "print(json.dumps(seen))\n"
        seen = run_json(cuda_py, code, *(builds[name].build for name in LOADED_OPS))
        assert isinstance(seen, dict)
        _LOADED.update(seen)
    entry = _LOADED[fixture]
    assert isinstance(entry, dict), f"loading {fixture} failed:\n{entry}"
    return entry


# ---------------------------------------------------------------------------------------------------------
# Case 8: one ops name everywhere


@pytest.mark.parametrize("fixture", ["probe", "relu"])
def test_one_ops_name_everywhere(fixture: str, request: pytest.FixtureRequest, cuda_py: Path) -> None:
    built: Built = request.getfixturevalue(fixture)
    name = expected_ops_name(fixture, built)
    assert_one_ops_name(built, name)
    op = LOADED_OPS[fixture]
    seen = loaded(fixture, request, cuda_py)
    assert {key: seen[key] for key in ("module", "literal")} == {"module": name, "literal": False}
    schema = seen["schema"]
    assert isinstance(schema, str)
    assert schema.startswith(f"{name}::{op}(")


def test_cuda_probe_loads_and_runs_host_ops(
    probe: Built, cuda_py: Path, request: pytest.FixtureRequest
) -> None:
    """The REGISTER_EXTENSION module imports; its ops (host code) run without a GPU."""
    assert expected_ops_name("probe", probe) == probe.ops_name  # the name the shared load reached the ops by
    seen = loaded("probe", request, cuda_py)
    assert seen["host"] == [probe.ops_name, probe_value(3, "cuda"), probe.ops_name]


# ---------------------------------------------------------------------------------------------------------
# Case 9: registration.h under nvcc


def test_registration_header_compiles_with_nvcc(tmp_path: Path, cuda_py: Path) -> None:
    """C++20 against Torch 2.14 (whose headers need C++20) and C++17 against Torch 2.13's headers."""
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "registration.h").write_text(registration_header(), encoding="utf-8")
    (tmp_path / "probe.cu").write_text(REGISTRATION_PROBE, encoding="utf-8")
    name = "_kb_direct_cpu_0123456789"  # the probe text expects this name
    common = [
        f"-DTORCH_EXTENSION_NAME={name}",
        "-DPy_LIMITED_API=0x03090000",
        "-DCUDA_KERNEL",
        "-Xcompiler=-fPIC",
    ]
    common += [
        f"-I{tmp_path / 'include'}",
        f"-I{python_includes(cuda_py)}",
        "-gencode=arch=compute_80,code=sm_80",
    ]
    commands: list[list[str | Path]] = []
    for std, torch_python in ((17, cpu_python()), (20, cuda_py)):
        includes = [arg for include in torch_includes(torch_python) for arg in ("-isystem", str(include))]
        commands.append(
            [nvcc(), f"-std=c++{std}", *common, *includes, "-c", "probe.cu", "-o", f"probe{std}.o"]
        )
    for result in run_parallel(commands, cwd=tmp_path):
        assert result.returncode == 0, f"{' '.join(result.args)}\n{result.stdout}"


# ---------------------------------------------------------------------------------------------------------
# Cases 10 and 11: every probe file compiled, so it saw exactly its definitions, flags and includes


def test_probe_definitions_and_canaries_cuda(probe: Built) -> None:
    commands = compile_commands(probe)
    expected_files = ["cuda_a/cuda_a_host.cpp", *(f"{c.name}/{c.name}.cu" for c in PROBE_CUDA)]
    assert sorted(commands) == sorted([*expected_files, "torch-ext/torch_binding.cpp", PROBE_BINDING_CU])
    canaries = {c.cxx_canary for c in PROBE_COMPONENTS} | {c.cu_canary for c in PROBE_CUDA if c.cu_canary}
    for rel, command in commands.items():
        seen = {c for c in canaries if f"-D{c}=1" in command}
        if rel == "torch-ext/torch_binding.cpp":
            assert seen == {"CANARY_TORCH_CXX"}, rel
        elif rel == "cuda_a/cuda_a_host.cpp":
            assert seen == {"CANARY_CUDA_A_CXX"}, rel
        elif rel == PROBE_BINDING_CU:
            assert seen == set(), rel
        else:
            component = rel.split("/")[0]
            assert seen == {f"CANARY_{component.upper()}_CU"}, rel
        assert "-std=c++20" in command, rel
        if rel.endswith(".cu"):
            # min(8, the largest arch count of a CUDA component: the binding's union of 5)
            assert "--threads=5" in command, rel
            assert "-Xcompiler=-fno-gnu-unique" in command and "-DENABLE_FP8" in command, rel
            assert "__CUDA_NO_HALF" not in command and "__CUDA_NO_BFLOAT16" not in command, rel


def test_probe_cu_rejects_a_foreign_canary(probe: Built) -> None:
    """The .cu probe is not vacuous: recompiled with another component's cuda-flags canary, it fails."""
    command = compile_commands(probe)["cuda_b/cuda_b.cu"].split()
    output = command.index("-o")
    command[output + 1] = "/dev/null"
    compile_flag = command.index("-c")
    argv = [*command[:compile_flag], "-DCANARY_CUDA_A_CU=1", *command[compile_flag:]]
    result = run_parallel([argv], cwd=probe.cmake_build)[0]
    assert result.returncode != 0
    assert "CANARY_CUDA_A_CU must not reach this file" in result.stdout


# ---------------------------------------------------------------------------------------------------------
# Case 12: the compiled capabilities of each component and of the extension

#: What cuobjdump must list for each probe component: (ELF images, PTX images), written out by hand.
PROBE_IMAGES = {
    "cuda_a": ({"sm_80", "sm_90a"}, set()),
    "cuda_b": ({"sm_90"}, {"sm_90"}),
    "cuda_c": ({"sm_80", "sm_90"}, {"sm_90"}),
    "cuda_d": ({"sm_75", "sm_80"}, set()),
    "cuda_e": ({"sm_80", "sm_100"}, set()),
    "cuda_f": ({"sm_80"}, set()),
}


@pytest.mark.parametrize("component", sorted(PROBE_IMAGES))
def test_component_object_has_exactly_its_capabilities(probe: Built, cuda_py: Path, component: str) -> None:
    expected = PROBE_IMAGES[component]
    assert expected_cuobjdump_images(PROBE_EFFECTIVE[component]) == expected
    (cu_object,) = [
        p for p in object_files(probe.cmake_build, f"kb_kernel_{component}") if p.name.endswith(".cu.o")
    ]
    assert cuobjdump_images(cuda_py, cu_object) == expected


def test_binding_cu_has_the_union_of_capabilities(probe: Built, cuda_py: Path) -> None:
    (cu_object,) = [p for p in object_files(probe.cmake_build, "kb_binding") if p.name.endswith(".cu.o")]
    expected = ({"sm_75", "sm_80", "sm_90", "sm_90a", "sm_100"}, {"sm_90"})
    assert expected_cuobjdump_images(PROBE_UNION) == expected
    assert cuobjdump_images(cuda_py, cu_object) == expected


def test_extension_has_the_union_of_capabilities(probe: Built, cuda_py: Path) -> None:
    elf = set().union(*(images[0] for images in PROBE_IMAGES.values()))
    ptx = set().union(*(images[1] for images in PROBE_IMAGES.values()))
    assert (elf, ptx) == ({"sm_75", "sm_80", "sm_90", "sm_90a", "sm_100"}, {"sm_90"})
    assert cuobjdump_images(cuda_py, extension(probe.variant_dir)) == (elf, ptx)
    assert metadata(probe.variant_dir)["backend"] == {
        "type": "cuda",
        "archs": ["7.5", "8.0", "9.0+PTX", "9.0a", "10.0f"],
    }


def test_dropped_capability_is_reported(probe: Built) -> None:
    assert "warning: [kernel.cuda_f]: capability 7.0 dropped: CUDA 13.0 cannot build it" in probe.run.stderr
    assert "[kernel.cuda_d]: capability" not in probe.run.stderr  # 7.0 is never chosen there


def test_relu_builds_the_full_default_list(relu: Built, cuda_py: Path) -> None:
    """The issue's acceptance: examples/relu for cuda with torch 2.14.1 gets CUDA 13.0's whole default list."""
    assert metadata(relu.variant_dir)["backend"] == {"type": "cuda", "archs": list(DEFAULT_13_0)}
    elf, ptx = cuobjdump_images(cuda_py, extension(relu.variant_dir))
    assert elf == {
        "sm_75",
        "sm_80",
        "sm_86",
        "sm_87",
        "sm_89",
        "sm_90",
        "sm_100",
        "sm_110",
        "sm_120",
        "sm_121",
    }
    assert ptx == {"sm_121"}
    assert (elf, ptx) == expected_cuobjdump_images(DEFAULT_13_0)


def test_relu_cuda_build_is_manylinux_clean(relu: Built) -> None:
    """nvcc's host compilations get the manylinux compatibility header too: check-abi reports nothing."""
    run = run_cli(["check-abi", str(relu.root)])
    assert (run.returncode, run.stdout) == (0, "checked 1 extension(s): no violations\n"), run.output
    assert "not manylinux_2_28-compliant" not in relu.run.output


# ---------------------------------------------------------------------------------------------------------
# Cases 13, 14 and 16: binaries and layout


@pytest.mark.parametrize("fixture", ["probe", "relu"])
def test_binary_checks(fixture: str, request: pytest.FixtureRequest) -> None:
    built: Built = request.getfixturevalue(fixture)
    so = extension(built.variant_dir)
    assert_clean_extension(so)
    assert " UNIQUE " not in symbol_table(so)


def test_layout(probe: Built, relu: Built) -> None:
    assert variant_files(probe.build) == [
        f"{CUDA_VARIANT}/",
        f"{CUDA_VARIANT}/__init__.py",
        f"{CUDA_VARIANT}/_kb_probe_cuda_probe.abi3.so",
        f"{CUDA_VARIANT}/_ops.py",
        f"{CUDA_VARIANT}/metadata.json",
    ]
    assert variant_files(relu.build) == [
        "CARD.md",
        f"{CUDA_VARIANT}/",
        f"{CUDA_VARIANT}/__init__.py",
        f"{CUDA_VARIANT}/_ops.py",
        f"{CUDA_VARIANT}/{relu.ops_name}.abi3.so",
        f"{CUDA_VARIANT}/layers.py",
        f"{CUDA_VARIANT}/metadata.json",
    ]


# ---------------------------------------------------------------------------------------------------------
# Torch's CUDA flags for extensions


def test_extended_lambda_and_relaxed_constexpr_compile(cuda_py: Path, tmp_path: Path) -> None:
    """Device code as real kernels write it compiles: a ``__device__`` lambda in an AT_DISPATCH-style dispatch
    needs ``--expt-extended-lambda`` and a constexpr host function in device code ``--expt-relaxed-constexpr``,
    both of which Torch's CMake package gives extensions. Only Torch's ``-gencode`` list is replaced."""
    root = lambda_project(tmp_path / "kb-lambda")
    run = run_cli(["build", root, "--python", cuda_py, NO_IMPORT_CHECK])  # compiling is the subject
    assert "--extended-lambda nvcc flag" not in run.output
    run.check()
    command = compile_commands(Built(root, run, CUDA_VARIANT))["lambda/lambda.cu"]
    assert "--expt-extended-lambda" in command and "--expt-relaxed-constexpr" in command
    gencode = [
        arg for arg in command.split() if arg.startswith(("-gencode", "--generate-code", "-arch", "-code"))
    ]
    assert gencode == [
        "-gencode=arch=compute_80,code=sm_80"
    ]  # Torch's own list (from TORCH_CUDA_ARCH_LIST) is gone
    assert "__CUDA_NO_HALF" not in command and "-DENABLE_FP8" in command


# ---------------------------------------------------------------------------------------------------------
# Case 25: CUTLASS headers from PyPI


def _build_with_fetched_cutlass(cuda_py: Path, root: Path, dependency: str, body: str) -> tuple[Built, Path]:
    """A tiny CUDA project depending on ``dependency``, built with no CUTLASS_SRC_DIR and an empty user cache, so
    that kernel-builder fetches the headers; the build and that cache."""
    root = tiny_cuda_project(root, name=root.name, depends=[dependency], body=body)
    cache = root.parent / "user-cache"
    run = run_cli(  # finding and compiling the headers is the subject, not the import check
        ["build", root, "--python", cuda_py, NO_IMPORT_CHECK],
        env={"CUTLASS_SRC_DIR": "", "KERNEL_BUILDER_CACHE": str(cache)},
    )
    printed(f"{dependency} build", run.seconds)
    run.check()
    return Built(root, run, CUDA_VARIANT), cache


def test_cutlass_headers_from_pypi(cuda_py: Path, tmp_path: Path) -> None:
    """``depends = ["cutlass_3_6"]`` without CUTLASS_SRC_DIR: the nvidia-cutlass==3.6.0 wheel is fetched (needs
    PyPI, or a pip configured with a mirror), its headers kept in the user cache, and a .cu including
    cutlass/cutlass.h compiles."""
    body = (
        "#include <cutlass/cutlass.h>\n#include <cutlass/version.h>\n\n"
        'static_assert(CUTLASS_MAJOR == 3 && CUTLASS_MINOR == 6, "CUTLASS 3.6 expected");\n'
    )
    built, cache = _build_with_fetched_cutlass(cuda_py, tmp_path / "kb-cutlass", "cutlass_3_6", body)
    command = compile_commands(built)["tiny/tiny.cu"]
    assert f"-I{cache / 'cutlass' / '3.6.0' / 'include'}" in command.split()
    assert (
        metadata(built.variant_dir)["id"]
        == f"_kb_cutlass_cuda_{compute_unique_id(load_project(built.root).project)}"
    )


def test_cutlass_4_headers_from_a_pinned_wheel(cuda_py: Path, tmp_path: Path) -> None:
    """A pin above 3.8: ``depends = ["cutlass_4_4"]`` fetches flashinfer-python 0.6.7 (needs PyPI, or a pip
    configured with a mirror), checks the wheel's SHA-256, keeps its CUTLASS 4.4.2 headers in the user cache, and a
    .cu including cutlass/cutlass.h and cute/tensor.hpp compiles with nvcc."""
    body = (
        "#include <cutlass/cutlass.h>\n#include <cutlass/version.h>\n#include <cute/tensor.hpp>\n\n"
        'static_assert(CUTLASS_MAJOR == 4 && CUTLASS_MINOR == 4 && CUTLASS_PATCH == 2, "CUTLASS 4.4.2 expected");\n'
    )
    built, cache = _build_with_fetched_cutlass(cuda_py, tmp_path / "kb-cutlass4", "cutlass_4_4", body)
    assert "fetching flashinfer-python==0.6.7 for cutlass_4_4" in built.run.output
    command = compile_commands(built)["tiny/tiny.cu"]
    assert f"-I{cache / 'cutlass' / '4.4.2' / 'include'}" in command.split()
    assert f"-I{cache / 'cutlass' / '4.4.2' / 'tools' / 'util' / 'include'}" in command.split()
    assert sorted(p.name for p in (cache / "cutlass" / "4.4.2").iterdir()) == ["include", "tools"]


# ---------------------------------------------------------------------------------------------------------
# --arch LIST: one capability, on a machine without a GPU (a CI smoke build)


def test_explicit_arch_builds_only_that_capability(cuda_py: Path, tmp_path: Path) -> None:
    """``build --arch 9.0`` of a kernel that names no capabilities: the extension holds an sm_90 cubin and
    nothing else, and metadata.json says how its list was chosen."""
    root = tiny_cuda_project(tmp_path / "kb-arch", name="kb-arch")
    toml = root / "build.toml"
    toml.write_text(
        toml.read_text(encoding="utf-8").replace('cuda-capabilities = ["8.0"]\n', ""), encoding="utf-8"
    )
    run = build(root, "--arch", "9.0", NO_IMPORT_CHECK, python=cuda_py)  # what was compiled is the subject
    printed("--arch 9.0 build", run.seconds)
    built = Built(root, run, CUDA_VARIANT)
    assert cuobjdump_images(cuda_py, extension(built.variant_dir)) == ({"sm_90"}, set())
    gencode = [f for f in compile_commands(built)["tiny/tiny.cu"].split() if f.startswith("-gencode")]
    assert gencode == ["-gencode=arch=compute_90,code=sm_90"]
    data = metadata(built.variant_dir)
    assert data["backend"] == {"type": "cuda", "archs": ["9.0"]}
    assert data["arch-selection"] == "explicit"


# ---------------------------------------------------------------------------------------------------------
# Case 33: ids of clean builds, and byte-identical incremental rebuilds


def test_clean_cuda_builds_give_the_same_id(tiny_a: Built, tiny_b: Built) -> None:
    assert tiny_a.root != tiny_b.root
    expected = f"_kb_tiny_cuda_{compute_unique_id(load_project(tiny_a.root).project)}"
    assert tiny_a.ops_name == tiny_b.ops_name == expected


@pytest.mark.parametrize("fixture", ["probe", "relu"])
def test_noop_rebuild_leaves_every_file_identical(
    fixture: str, request: pytest.FixtureRequest, cuda_py: Path
) -> None:
    built: Built = request.getfixturevalue(fixture)
    extra = ["--unique-id", PROBE_ID] if fixture == "probe" else []
    before = snapshot(built.build)
    cache = (built.cmake_build / "CMakeCache.txt").stat().st_mtime_ns
    run = run_cli(["build", built.root, *extra, "--python", cuda_py, "--verbose"]).check()
    printed(f"no-op rebuild of the {fixture} cuda variant (whole CLI call)", run.seconds)
    # No command ran (``--verbose`` prints each as ``+ …``): not CMake, not Ninja, not nvcc. The time is
    # benchmarks/build.py's to measure (``noop``), not a test's on a machine of unknown load.
    assert "+ " not in run.stderr, run.stderr
    assert snapshot(built.build) == before
    assert (built.cmake_build / "CMakeCache.txt").stat().st_mtime_ns == cache
    assert any(line.split()[:3] == [CUDA_VARIANT, "up", "to"] for line in run.stdout.splitlines()), run.stdout
