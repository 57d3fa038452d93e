"""Helpers for the end-to-end build tests: tiny kernel projects rendered into temporary directories, the CLI
run in a subprocess, and the binary tools (nm, readelf, cuobjdump) that inspect what it produced.

The projects are kept cheap on purpose: only the binding file includes a Torch header (``torch/library.h``,
a few seconds with g++); kernel sources are plain C++ or ``.cu`` files without Torch headers, so nvcc spends
a few seconds per architecture on them. Each test module builds each project once (session-scoped fixtures)
and many tests inspect the result.

Loading a built kernel always happens in a fresh subprocess with ``PYTHONDONTWRITEBYTECODE=1``: Torch op
namespaces are process-global, and an import in the test process would write ``__pycache__`` into the
variant directories whose exact contents other tests check.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from matrix_data import CPU_VARIANT as CPU_VARIANT  # the variants of the two test interpreters
from matrix_data import CUDA_VARIANT as CUDA_VARIANT

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"
STATE_DIR = ".kernel-builder"


# ---------------------------------------------------------------------------------------------------------
# Interpreters and tools


def cpu_python() -> Path:
    """The interpreter running the tests; its Torch is the CPU build the cpu variant needs."""
    return Path(sys.executable)


def cuda_python() -> Path | None:
    """The CUDA build interpreter: ``KB_TEST_CUDA_PYTHON``, else ``.venv-cu130/bin/python`` in the repo."""
    configured = os.environ.get("KB_TEST_CUDA_PYTHON")
    path = Path(configured) if configured else REPO / ".venv-cu130" / "bin" / "python"
    if not path.is_absolute():
        path = REPO / path
    return path if path.exists() else None


def require_cuda_python() -> Path:
    """The CUDA interpreter, or skip with the reason (the Makefile creates ``.venv-cu130`` for CI)."""
    path = cuda_python()
    where = os.environ.get("KB_TEST_CUDA_PYTHON") or str(REPO / ".venv-cu130" / "bin" / "python")
    if path is None:
        pytest.skip(
            f"no CUDA build interpreter at {where} (set KB_TEST_CUDA_PYTHON to a Python with torch+cu130)"
        )
    if (
        shutil.which("nvcc") is None
        and not Path("/usr/local/cuda/bin/nvcc").exists()
        and not os.environ.get("CUDA_HOME")
    ):
        pytest.skip("no nvcc: install CUDA 13.0 or set CUDA_HOME")
    return path


def nvcc() -> Path:
    for candidate in (
        Path(os.environ["CUDA_HOME"]) / "bin" / "nvcc" if os.environ.get("CUDA_HOME") else None,
        Path(shutil.which("nvcc") or "/nonexistent"),
        Path("/usr/local/cuda/bin/nvcc"),
    ):
        if candidate is not None and candidate.exists():
            return candidate
    pytest.skip("no nvcc found (CUDA_HOME, PATH, /usr/local/cuda)")


def cuobjdump(python: Path) -> Path:
    """The ``cuobjdump`` shipped with the CUDA interpreter's ``triton`` (docs/layout.md)."""
    prefix = python.parent.parent
    for found in sorted(prefix.glob("lib/python3*/site-packages/triton/backends/nvidia/bin/cuobjdump")):
        return found
    system = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    if Path(system).exists():
        return Path(system)
    pytest.skip(f"no cuobjdump (triton's copy under {prefix}, or CUDA's)")


def tool_output(argv: Sequence[str | os.PathLike[str]]) -> str:
    result = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{argv[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def dynamic_symbols(so: Path) -> str:
    """``nm -D`` of a shared object."""
    return tool_output(["nm", "-D", so])


def dynamic_section(so: Path) -> str:
    return tool_output(["readelf", "-dW", so])


def symbol_table(so: Path) -> str:
    return tool_output(["readelf", "-sW", so])


def python_includes(python: Path) -> Path:
    out = tool_output([python, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"])
    return Path(out.strip())


def torch_includes(python: Path) -> list[Path]:
    out = tool_output(
        [
            python,
            "-c",
            "import importlib.util as u; print(u.find_spec('torch').submodule_search_locations[0])",
        ]
    )
    include = Path(out.strip()) / "include"
    return [include, include / "torch" / "csrc" / "api" / "include"]


# ---------------------------------------------------------------------------------------------------------
# Running the CLI and built kernels


@dataclass(frozen=True)
class CliRun:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def check(self) -> CliRun:
        assert self.returncode == 0, (
            f"kernel-builder {' '.join(self.argv)} exited {self.returncode}:\n{self.output}"
        )
        return self


def run_cli(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    prelude: str = "",
    cwd: Path | None = None,
) -> CliRun:
    """``python -m kernel_builder ARGS`` in a subprocess (the tests' interpreter), timed.

    ``prelude`` is Python run before the CLI is imported (e.g. to change ``kernel_builder.__version__``).
    """
    argv = tuple(str(a) for a in args)
    if prelude:
        command = [
            sys.executable,
            "-c",
            f"{prelude}\nimport sys\nfrom kernel_builder.cli import main\nsys.exit(main(sys.argv[1:]))",
            *argv,
        ]
    else:
        command = [sys.executable, "-m", "kernel_builder", *argv]
    start = time.monotonic()
    result = subprocess.run(
        command, capture_output=True, text=True, env={**os.environ, **(env or {})}, cwd=cwd, check=False
    )
    return CliRun(argv, result.returncode, result.stdout, result.stderr, time.monotonic() - start)


def build(
    root: Path,
    *extra: str | os.PathLike[str],
    python: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> CliRun:
    """``kernel-builder build ROOT`` (with ``--python`` for a CUDA build); must succeed."""
    args: list[str | os.PathLike[str]] = ["build", root, *extra]
    if python is not None:
        args += ["--python", python]
    return run_cli(args, env=env).check()


#: For the second of two clean builds compared byte for byte: compiled for real, not taken from the
#: compiler cache the first one filled (which would make the comparison hold trivially).
NO_COMPILER_CACHE = {"KERNEL_BUILDER_COMPILER_CACHE": "off"}


def run_python(
    python: Path,
    code: str,
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Run ``code`` in a fresh ``python`` (no bytecode written; this checkout importable); return stdout."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    full_env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": path, **(env or {})}
    result = subprocess.run(
        [str(python), "-c", textwrap.dedent(code), *[str(a) for a in args]],
        capture_output=True, text=True, env=full_env, cwd=cwd, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"python failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def run_json(
    python: Path,
    code: str,
    *args: str | os.PathLike[str],
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> object:
    """Like :func:`run_python`; the last line of stdout is JSON."""
    return json.loads(run_python(python, code, *args, cwd=cwd, env=env).strip().splitlines()[-1])


@dataclass(frozen=True)
class Built:
    """A project built into ``root``; ``run`` is the CLI call that built it."""

    root: Path
    run: CliRun
    variant: str = CPU_VARIANT

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def variant_dir(self) -> Path:
        return self.build / self.variant

    @property
    def cmake_build(self) -> Path:
        return self.root / STATE_DIR / self.variant / "cmake-build"

    @property
    def ops_name(self) -> str:
        value = metadata(self.variant_dir)["id"]
        assert isinstance(value, str)
        return value


# ---------------------------------------------------------------------------------------------------------
# Inspecting outputs


def variant_files(variant_dir: Path) -> list[str]:
    """Every entry under a variant directory (directories end in ``/``), sorted."""
    return sorted(
        p.relative_to(variant_dir).as_posix() + ("/" if p.is_dir() else "") for p in variant_dir.rglob("*")
    )


def snapshot(directory: Path) -> dict[str, tuple[str, int]]:
    """(sha256, mtime_ns) of every file under ``directory``, and the mtime of every directory."""
    result: dict[str, tuple[str, int]] = {".": ("dir", directory.stat().st_mtime_ns)}
    for path in sorted(directory.rglob("*")):
        rel = path.relative_to(directory).as_posix()
        if path.is_dir():
            result[rel] = ("dir", path.stat().st_mtime_ns)
        else:
            result[rel] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return result


def contents(directory: Path) -> dict[str, str]:
    """sha256 of every file under ``directory`` (bytes only)."""
    return {k: v[0] for k, v in snapshot(directory).items() if v[0] != "dir"}


def metadata(variant_dir: Path) -> dict[str, object]:
    data = json.loads((variant_dir / "metadata.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def extension(variant_dir: Path) -> Path:
    (so,) = variant_dir.glob("*.so")
    return so


def compile_commands(built: Built) -> dict[str, str]:
    """The compile command of each of the kernel's compiled files (relative to the kernel root), from CMake's
    database; the generated sources of the build's own (under ``.kernel-builder/``, e.g. the manylinux
    compatibility source) are left out."""
    entries = json.loads((built.cmake_build / "compile_commands.json").read_text(encoding="utf-8"))
    commands = {Path(e["file"]).relative_to(built.root).as_posix(): e["command"] for e in entries}
    return {rel: command for rel, command in commands.items() if not rel.startswith(f"{STATE_DIR}/")}


def cmake_cache_value(cmake_build: Path, key: str) -> str:
    for line in (cmake_build / "CMakeCache.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith(f"{key}:"):
            return line.split("=", 1)[1]
    raise AssertionError(f"{key} not in {cmake_build / 'CMakeCache.txt'}")


def object_files(cmake_build: Path, target: str) -> list[Path]:
    """The object files CMake compiled for one object library: ``kb_binding`` (the binding) or
    ``kb_kernel_<section>`` (a kernel section)."""
    return sorted((cmake_build / "CMakeFiles" / f"{target}.dir").rglob("*.o"))


def git(root: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
    }  # fmt: skip
    return subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=True
    ).stdout


def git_init(root: Path) -> None:
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "fixture")


# ---------------------------------------------------------------------------------------------------------
# Writing projects


def write_tree(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def copy_example(name: str, dest: Path) -> Path:
    """A copy of ``examples/<name>`` without build output, so tests never write into the repository."""
    ignore = shutil.ignore_patterns("build", STATE_DIR, "registration.h", "__pycache__")
    shutil.copytree(EXAMPLES / name, dest, ignore=ignore)
    return dest


_EXAMPLE_BUILDS: dict[str, Built] = {}


def built_example(name: str, factory: pytest.TempPathFactory) -> Built:
    """``examples/<name>`` copied and built with the tests' interpreter, once per test session: every test that
    needs the example's default build shares this one (and must not change it)."""
    if name not in _EXAMPLE_BUILDS:
        root = copy_example(name, factory.mktemp(f"example-{name}") / name)
        _EXAMPLE_BUILDS[name] = Built(root, build(root))
    return _EXAMPLE_BUILDS[name]


GENERAL = """
[general]
name = "{name}"
version = 1
edition = 5
license = "Apache-2.0"
backends = {backends}
"""


def _toml_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


# --- the probe project: compile definitions, flags and includes per component  -------

#: The probe's unique id (passed with --unique-id), so the sources can check the exact extension name.
PROBE_ID = "probe"


@dataclass(frozen=True)
class ProbeComponent:
    name: str  # "torch" for the binding component, else the kernel section
    backend: str | None  # None: compiled into every variant (the binding)
    cxx_canary: str
    cu_canary: str | None = None
    capabilities: tuple[str, ...] = ()

    @property
    def include_header(self) -> str:
        return f"inc_{self.name}.h"

    @property
    def include_dir(self) -> str:
        return "torch-ext/include" if self.name == "torch" else f"{self.name}/include"


#: Each CUDA kernel section is one tiny .cu with its own capability list . cuda_a also has a
#: C++ file, to show its cxx-flags reach that file and not its .cu.
PROBE_COMPONENTS = (
    ProbeComponent("torch", None, "CANARY_TORCH_CXX"),
    ProbeComponent("probe_cpu", "cpu", "CANARY_PROBE_CPU_CXX"),
    ProbeComponent("cuda_a", "cuda", "CANARY_CUDA_A_CXX", "CANARY_CUDA_A_CU", ("8.0", "9.0a")),
    ProbeComponent("cuda_b", "cuda", "CANARY_CUDA_B_CXX", "CANARY_CUDA_B_CU", ("9.0+PTX",)),
    ProbeComponent("cuda_c", "cuda", "CANARY_CUDA_C_CXX", "CANARY_CUDA_C_CU", ("8.0", "9.0+PTX")),
    ProbeComponent("cuda_d", "cuda", "CANARY_CUDA_D_CXX", "CANARY_CUDA_D_CU", ("7.0", "7.5", "8.0")),
    ProbeComponent("cuda_e", "cuda", "CANARY_CUDA_E_CXX", "CANARY_CUDA_E_CU", ("8.0", "10.0f")),
    ProbeComponent("cuda_f", "cuda", "CANARY_CUDA_F_CXX", "CANARY_CUDA_F_CU", ("7.0", "8.0")),
)
PROBE_CUDA = tuple(c for c in PROBE_COMPONENTS if c.backend == "cuda")
#: The effective lists on CUDA 13.0 . In cuda_d, 7.5 serves the 7.5 target
#: (the largest same-major entry wins), so 7.0 is never chosen; in cuda_f, 7.0 would serve 7.5 but CUDA 13
#: cannot target it: it is dropped with a warning.
PROBE_EFFECTIVE = {
    "cuda_a": ("8.0", "9.0a"),
    "cuda_b": ("9.0+PTX",),
    "cuda_c": ("8.0", "9.0+PTX"),
    "cuda_d": ("7.5", "8.0"),
    "cuda_e": ("8.0", "10.0f"),
    "cuda_f": ("8.0",),
}
#: The CUDA file of the binding component and its effective list on CUDA 13.0: the union of the kernels' lists.
PROBE_BINDING_CU = "torch-ext/torch_binding_cuda.cu"
PROBE_UNION = ("7.5", "8.0", "9.0+PTX", "9.0a", "10.0f")
#: An included header that no `src` lists .
PROBE_UNLISTED_HEADER = "probe_cpu/unlisted_helper.h"


def probe_checks(component: ProbeComponent, language: str) -> str:
    """Preprocessor checks that ``#error`` unless this file sees exactly what it should ."""
    lines = [
        f"// Probe checks for component {component.name}, compiled as {language}.",
        "#if !defined(TORCH_EXTENSION_NAME)",
        '#error "TORCH_EXTENSION_NAME is not defined"',
        "#endif",
        "#if !defined(Py_LIMITED_API) || Py_LIMITED_API != 0x03090000",
        '#error "Py_LIMITED_API is not 0x03090000"',
        "#endif",
        "#if __cplusplus != 202002L",
        '#error "not compiled as C++20"',
        "#endif",
        (
            "#if (defined(CPU_KERNEL) + defined(CUDA_KERNEL) + defined(ROCM_KERNEL) + defined(METAL_KERNEL) + "
            "defined(XPU_KERNEL)) != 1"
        ),
        '#error "not exactly one *_KERNEL definition"',
        "#endif",
        "#if defined(CUDA_KERNEL) && !(defined(USE_CUDA) && USE_CUDA == 1)",
        '#error "a cuda variant without USE_CUDA=1"',
        "#endif",
        "#if defined(CPU_KERNEL) && (defined(USE_CUDA) || defined(USE_ROCM) || defined(USE_XPU))",
        '#error "a cpu variant with a GPU USE_* definition"',
        "#endif",
    ]
    if component.backend is not None:
        macro = f"{component.backend.upper()}_KERNEL"
        lines += [f"#if !defined({macro})", f'#error "{macro} is not defined"', "#endif"]
    own = component.cu_canary if language == "CUDA" else component.cxx_canary
    for other in PROBE_COMPONENTS:
        for canary in (other.cxx_canary, other.cu_canary):
            if canary is None:
                continue
            if canary == own:
                lines += [f"#if !defined({canary})", f'#error "{canary} should reach this file"', "#endif"]
            else:
                lines += [f"#if defined({canary})", f'#error "{canary} must not reach this file"', "#endif"]
        header = other.include_header
        if other is component:
            lines += [
                f'#if !__has_include("{header}")',
                f'#error "own include dir missing ({header})"',
                "#endif",
            ]
        elif component.backend is None and other.backend is not None:
            # The binding sees the include directories of the variant's kernel sections, and only those.
            macro = f"{other.backend.upper()}_KERNEL"
            lines += [
                f'#if defined({macro}) && !__has_include("{header}")',
                f'#error "the binding does not see the include dir of {other.name}"',
                "#endif",
                f'#if !defined({macro}) && __has_include("{header}")',
                f'#error "include dir of {other.name} leaked into another backend\'s binding"',
                "#endif",
            ]
        else:
            lines += [
                f'#if __has_include("{header}")',
                f'#error "include dir of {other.name} leaked"',
                "#endif",
            ]
    lines += [
        "#define KB_PROBE_STR2(x) #x",
        "#define KB_PROBE_STR(x) KB_PROBE_STR2(x)",
        "namespace {",
        "constexpr bool kb_probe_same(const char *a, const char *b) {",
        "  while (*a != 0 && *a == *b) { ++a; ++b; }",
        "  return *a == *b;",
        "}",
        "}  // namespace",
        "#if defined(CPU_KERNEL)",
        (
            f'static_assert(kb_probe_same(KB_PROBE_STR(TORCH_EXTENSION_NAME), "_kb_probe_cpu_{PROBE_ID}"), '
            '"wrong TORCH_EXTENSION_NAME");'
        ),
        "#elif defined(CUDA_KERNEL)",
        (
            f'static_assert(kb_probe_same(KB_PROBE_STR(TORCH_EXTENSION_NAME), "_kb_probe_cuda_{PROBE_ID}"), '
            '"wrong TORCH_EXTENSION_NAME");'
        ),
        "#endif",
        f'#include "{component.include_header}"',
    ]
    return "\n".join(lines) + "\n"


def probe_project(root: Path) -> Path:
    """``kb-probe``: a binding, a cpu kernel and five one-file cuda kernels, every file a probe."""
    sections = []
    files: dict[str, str] = {}
    for index, component in enumerate(PROBE_COMPONENTS):
        files[f"{component.include_dir}/{component.include_header}"] = (
            f"#pragma once\n#define {component.name.upper()}_TAG {index + 1}\n"
        )
        if component.backend is None:
            continue
        src = [f"{component.name}/{component.name}.{'cpp' if component.backend == 'cpu' else 'cu'}"]
        if component.name == "cuda_a":
            src.append("cuda_a/cuda_a_host.cpp")
        src.append(f"{component.include_dir}/{component.include_header}")
        section = [
            f"[kernel.{component.name}]",
            f'backend = "{component.backend}"',
            "depends = []",
            f"src = {_toml_list(src)}",
            f'include = ["{component.include_dir}"]',
            f'cxx-flags = ["-D{component.cxx_canary}=1"]',
        ]
        if component.backend == "cuda":
            section += [
                f'cuda-flags = ["-D{component.cu_canary}=1"]',
                f"cuda-capabilities = {_toml_list(component.capabilities)}",
            ]
        sections.append("\n".join(section))
    for component in PROBE_CUDA:
        tag = f"{component.name.upper()}_TAG"
        files[f"{component.name}/{component.name}.cu"] = (
            probe_checks(component, "CUDA")
            + f"\n__global__ void kb_probe_{component.name}_kernel(int *out) {{ *out = {tag}; }}\n\n"
            f"int kb_probe_{component.name}_tag() {{ return {tag}; }}\n"
        )
    files["cuda_a/cuda_a_host.cpp"] = (
        probe_checks(PROBE_COMPONENTS[2], "C++")
        + "\n#include <cstdint>\n\n"
        + "".join(f"int kb_probe_{c.name}_tag();\n" for c in PROBE_CUDA)
        + "\nint64_t kb_probe_cuda_value(int64_t x) {\n  return x * 1000"
        + "".join(f" + kb_probe_{c.name}_tag()" for c in PROBE_CUDA)
        + ";\n}\n"
    )
    files["probe_cpu/probe_cpu.cpp"] = (
        probe_checks(PROBE_COMPONENTS[1], "C++")
        + '#include "unlisted_helper.h"\n#include <cstdint>\n\n'
        + "int64_t kb_probe_cpu_value(int64_t x) { return x * 1000 + PROBE_CPU_TAG + kb_probe_helper(); }\n"
    )
    files[PROBE_UNLISTED_HEADER] = "#pragma once\ninline int kb_probe_helper() { return 0; }\n"
    # A .cu in [torch] src: compiled only into cuda variants, with the union of the kernels' capabilities, the
    # binding's include directories and neither cxx-flags nor any kernel's cuda-flags.
    files[PROBE_BINDING_CU] = (
        probe_checks(PROBE_COMPONENTS[0], "CUDA")
        + "\n__global__ void kb_probe_binding_kernel(int *out) { *out = TORCH_TAG; }\n"
    )
    files["torch-ext/torch_binding.h"] = (
        "#pragma once\n#include <cstdint>\n\n"
        "int64_t kb_probe_cpu_value(int64_t x);\nint64_t kb_probe_cuda_value(int64_t x);\n"
    )
    files["torch-ext/torch_binding.cpp"] = probe_checks(PROBE_COMPONENTS[0], "C++") + textwrap.dedent(
        """
        #include <string>

        #include <torch/library.h>

        #include "registration.h"
        #include "torch_binding.h"

        std::string kb_probe_extension_name() { return STRINGIFY(TORCH_EXTENSION_NAME); }

        TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
          ops.def("extension_name() -> str", &kb_probe_extension_name);
        #if defined(CPU_KERNEL)
          ops.def("value(int x) -> int", &kb_probe_cpu_value);
        #elif defined(CUDA_KERNEL)
          ops.def("value(int x) -> int", &kb_probe_cuda_value);
        #endif
        }

        REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
        """
    )
    files["torch-ext/kb_probe/__init__.py"] = '''
        """The probe kernel: its ops report what the build gave them."""

        from ._ops import add_op_namespace_prefix, ops


        def value(x: int) -> int:
            return ops.value(x)


        __all__ = ["add_op_namespace_prefix", "ops", "value"]
    '''
    build_toml = GENERAL.format(name="kb-probe", backends='["cpu", "cuda"]') + textwrap.dedent(
        """
        [torch]
        src = [
          "torch-ext/torch_binding.cpp",
          "torch-ext/torch_binding_cuda.cu",
          "torch-ext/torch_binding.h",
          "torch-ext/include/inc_torch.h",
        ]
        include = ["torch-ext/include"]
        cxx-flags = ["-DCANARY_TORCH_CXX=1"]
        """
    )
    files["build.toml"] = build_toml + "\n" + "\n\n".join(sections) + "\n"
    return write_tree(root, files)


def probe_value(x: int, backend: str) -> int:
    """What the probe's ``value`` op returns: ``x * 1000`` plus the tags of the components compiled in."""
    tags = {c.name: i + 1 for i, c in enumerate(PROBE_COMPONENTS)}
    if backend == "cpu":
        return x * 1000 + tags["probe_cpu"]
    return x * 1000 + sum(tags[c.name] for c in PROBE_CUDA)


# --- the counter project: an inline function with a static local  ---------------


def counter_project(root: Path, *, marker: str = "", backends: Sequence[str] = ("cpu",)) -> Path:
    """``kb-counter``: ``bump()`` increments a static local of an inline function in a shared header.

    ``marker`` goes into a comment of the kernel source: one different byte gives a different id.
    """
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name="kb-counter", backends=_toml_list(backends))
            + textwrap.dedent(
                """
                [torch]
                src = ["torch-ext/torch_binding.cpp"]

                [kernel.counter]
                backend = "cpu"
                depends = []
                src = ["counter/bump.cpp", "counter/counter.h"]
                """
            ),
            "counter/counter.h": """
                #pragma once
                // Without -fno-gnu-unique, GCC makes this static a STB_GNU_UNIQUE symbol, which the dynamic loader
                // shares between every library that defines it, even when they are loaded with RTLD_LOCAL.
                inline long &kb_shared_counter() {
                  static long value = 0;
                  return value;
                }
            """,
            "counter/bump.cpp": f"""
                // {marker or "original"}
                #include <cstdint>

                #include "counter.h"
                #include "offset.h"

                int64_t kb_counter_bump() {{ return ++kb_shared_counter() + KB_COUNTER_OFFSET; }}
            """,
            # Listed in no `src`: outside the id, so changing it relinks without a new id ("Up to date").
            "counter/offset.h": "#pragma once\n#define KB_COUNTER_OFFSET 0\n",
            "torch-ext/torch_binding.cpp": """
                #include <cstdint>

                #include <torch/library.h>

                #include "registration.h"

                int64_t kb_counter_bump();

                TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) { ops.def("bump() -> int", &kb_counter_bump); }

                REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
            """,
            "torch-ext/kb_counter/__init__.py": """
                from ._ops import ops


                def bump() -> int:
                    return ops.bump()
            """,
        },
    )


# --- a pure-Python project  ------------------------------------------------------------


def noarch_project(root: Path) -> Path:
    """``kb-noarch``: a ``[torch-noarch]`` kernel with a custom op, a subpackage and data files."""
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name="kb-noarch", backends='["cpu", "cuda"]')
            + '\n[torch-noarch]\npyext = ["py", "json"]\n',
            "torch-ext/kb_noarch/__init__.py": """
                import torch

                from . import layers
                from ._ops import add_op_namespace_prefix, ops


                @torch.library.custom_op(add_op_namespace_prefix("twice"), mutates_args=())
                def twice(x: torch.Tensor) -> torch.Tensor:
                    return x * 2


                __all__ = ["layers", "ops", "twice"]
            """,
            "torch-ext/kb_noarch/layers/__init__.py": "from .._ops import ops\n\nLAYER = 'twice'\n",
            "torch-ext/kb_noarch/data.json": '{"shipped": true}\n',
            "torch-ext/kb_noarch/notes.txt": "not shipped: txt is not in pyext\n",
            "torch-ext/kb_noarch/stub.pyi": "# not shipped: pyi is not in this pyext\n",
            "torch-ext/kb_noarch/_ops.py": "# a user copy: replaced by the generated one\n",
        },
    )


# --- a quick cpu project: every build stage, seconds each (interrupted, copied and concurrent builds) --------


def quick_project(root: Path, *, marker: str = "", data: str = "", repo_id: str = "") -> Path:
    """``kb-quick``: a cpu kernel whose one source includes no Torch header (so compiling takes a second), a
    pure-Python ``torch-cuda`` variant beside it, a ``CARD.md``, and a shipped data file ``data.json``.

    A build runs every stage (probe, Torch check, configure, compile, link, install, ABI check, assembly, import
    check) in seconds. ``marker`` changes one source comment: a new id, so the next build does all of them again.
    """
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name="kb-quick", backends='["cpu", "cuda"]')
            + (f'\n[general.hub]\nrepo-id = "{repo_id}"\n' if repo_id else "")
            + textwrap.dedent(
                """
                [torch]
                pyext = ["py", "json"]

                [kernel.quick]
                backend = "cpu"
                depends = []
                src = ["quick/quick.cpp"]
                """
            ),
            "quick/quick.cpp": f"""
                // {marker or "original"}
                #include "registration.h"

                REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
            """,
            "torch-ext/kb_quick/__init__.py": """
                from ._ops import ops

                __all__ = ["ops"]
            """,
            "torch-ext/kb_quick/data.json": data or '{"quick": true}\n',
            "CARD.md": "# kb-quick\n\nA kernel for build-robustness tests.\n",
        },
    )


def complete_variants(build_dir: Path) -> list[str]:
    """The entries of ``build/``, each checked complete: ``CARD.md``, or a variant whose ``metadata.json`` digest
    matches its files. Fails on anything else (a partial variant, a hidden temporary, a stray file)."""
    from kernel_builder.formats.metadata import digest_files

    names = []
    for entry in sorted(build_dir.iterdir()) if build_dir.exists() else []:
        assert not entry.name.startswith("."), f"hidden entry in build/: {entry.name}"
        if entry.name == "CARD.md":
            assert entry.is_file()
            names.append(entry.name)
            continue
        assert entry.is_dir(), f"not a variant directory: {entry}"
        data = metadata(entry)
        digest = data["digest"]
        assert isinstance(digest, dict), entry
        assert digest["files"] == digest_files(entry), f"{entry} is incomplete"
        names.append(entry.name)
    return names


# --- tiny CUDA projects without a Torch-including file  ---------------------------------


def tiny_cuda_project(
    root: Path, *, name: str = "kb-tiny", depends: Sequence[str] = (), body: str = ""
) -> Path:
    """One kernel section with one ``.cu`` (capability 8.0) that also defines the module init function.

    No file includes a Torch header, so the whole build is a configure plus a few seconds of nvcc.
    """
    py_name = name.replace("-", "_")
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name=name, backends='["cuda"]')
            + textwrap.dedent(
                f"""
                [torch]

                [kernel.tiny]
                backend = "cuda"
                depends = {_toml_list(depends)}
                src = ["tiny/tiny.cu"]
                cuda-capabilities = ["8.0"]
                """
            ),
            "tiny/tiny.cu": body
            + textwrap.dedent(
                """
                #include "registration.h"

                __global__ void kb_tiny_kernel(float *out) { out[threadIdx.x] = 1.0f; }

                REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
                """
            ),
            f"torch-ext/{py_name}/__init__.py": "from ._ops import ops\n",
        },
    )


def many_cuda_project(root: Path, *, files: int = 32, name: str = "kb-many") -> Path:
    """One kernel section of ``files`` small ``.cu`` files (capability 8.0) sharing one header, plus the file
    that defines the module init function: a kernel whose build time is in nvcc's per-file steps (each file
    instantiates a templated elementwise kernel for three types), for measuring compiler caches and
    distributed compiles (``benchmarks/scaling.py``). Like :func:`tiny_cuda_project`, no Torch header."""
    py_name = name.replace("-", "_")
    sources = [f"many/k{index:03d}.cu" for index in range(files)]
    tree = {
        "build.toml": GENERAL.format(name=name, backends='["cuda"]')
        + textwrap.dedent(
            f"""
            [torch]

            [kernel.many]
            backend = "cuda"
            depends = []
            src = {_toml_list(["many/common.cuh", "many/register.cu", *sources])}
            cuda-capabilities = ["8.0"]
            """
        ),
        "many/common.cuh": textwrap.dedent(
            """
            #pragma once
            #include <cuda_fp16.h>

            template <typename T, int K>
            __device__ __forceinline__ T kb_many_step(T x) {
              float v = static_cast<float>(x);
            #pragma unroll
              for (int i = 0; i < 8; ++i) v = v * (1.0f + K * 1e-3f) + 0.5f * i;
              return static_cast<T>(v);
            }

            template <typename T, int K>
            __global__ void kb_many_kernel(T *out, const T *in, int n) {
              for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
                out[i] = kb_many_step<T, K>(in[i]);
            }
            """
        ),
        "many/register.cu": '#include "registration.h"\n\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n',
        f"torch-ext/{py_name}/__init__.py": "from ._ops import ops\n",
    }
    for index, source in enumerate(sources):
        tree[source] = textwrap.dedent(
            f"""
            #include "common.cuh"

            template __global__ void kb_many_kernel<float, {index}>(float *, const float *, int);
            template __global__ void kb_many_kernel<double, {index}>(double *, const double *, int);
            template __global__ void kb_many_kernel<__half, {index}>(__half *, const __half *, int);
            """
        )
    return write_tree(root, tree)


#: Device code as real kernels write it: an ``AT_DISPATCH``-style macro that runs a lambda per dtype, a
#: ``__device__`` lambda defined in host code and handed to a kernel template (needs nvcc's
#: ``--extended-lambda``), and a ``constexpr`` host function called from device code (``--expt-relaxed-constexpr``).
#: ``kb_lambda_fill(out, n, dtype)`` writes ``i * 2 + 1`` to ``out[i]`` (float: dtype 0, double: dtype 1).
LAMBDA_KERNEL = """
#include <cstdint>

constexpr int kb_lambda_scale() { return 2; }  // host-only constexpr, used on the device

template <typename scalar_t, typename F>
__global__ void kb_lambda_apply(scalar_t *out, int64_t n, F f) {
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = f(static_cast<scalar_t>(i));
}

#define KB_DISPATCH_CASE(value, type, ...) \\
  case value: {                           \\
    using scalar_t = type;                \\
    __VA_ARGS__();                        \\
    break;                                \\
  }
#define KB_DISPATCH_FLOATING(dtype, ...)          \\
  switch (dtype) {                                \\
    KB_DISPATCH_CASE(0, float, __VA_ARGS__)       \\
    KB_DISPATCH_CASE(1, double, __VA_ARGS__)      \\
    default:                                      \\
      break;                                      \\
  }

void kb_lambda_fill(void *out, int64_t n, int dtype) {
  if (n == 0) return;
  KB_DISPATCH_FLOATING(dtype, [&] {
    auto affine = [] __device__(scalar_t x) { return x * kb_lambda_scale() + scalar_t(1); };
    int threads = 128;
    int blocks = static_cast<int>((n + threads - 1) / threads);
    kb_lambda_apply<<<blocks, threads>>>(static_cast<scalar_t *>(out), n, affine);
  });
}
"""


def lambda_project(root: Path, *, binding: bool = False, capabilities: Sequence[str] = ("8.0",)) -> Path:
    """``kb-lambda``: :data:`LAMBDA_KERNEL` in a cuda kernel section.

    Without ``binding`` no file includes a Torch header (a few seconds of nvcc: compile checks only); with it,
    ``torch-ext/torch_binding.cpp`` registers ``fill(Tensor out) -> ()`` so a GPU can run the kernel.
    """
    files = {
        "build.toml": GENERAL.format(name="kb-lambda", backends='["cuda"]')
        + textwrap.dedent(
            f"""
            [torch]
            {'src = ["torch-ext/torch_binding.cpp"]' if binding else ""}

            [kernel.lambda]
            backend = "cuda"
            depends = []
            src = ["lambda/lambda.cu"]
            cuda-capabilities = {_toml_list(capabilities)}
            """
        ),
        "lambda/lambda.cu": LAMBDA_KERNEL
        + ("" if binding else '\n#include "registration.h"\n\nREGISTER_EXTENSION(TORCH_EXTENSION_NAME)\n'),
        "torch-ext/kb_lambda/__init__.py": """
            from ._ops import ops


            def fill(out):
                ops.fill(out)
                return out
        """,
    }
    if binding:
        files["torch-ext/torch_binding.cpp"] = """
            #include <torch/library.h>
            #include <ATen/core/Tensor.h>

            #include "registration.h"

            void kb_lambda_fill(void *out, int64_t n, int dtype);

            void kb_fill(at::Tensor &out) {
              TORCH_CHECK(out.is_cuda() && out.is_contiguous(), "out must be a contiguous CUDA tensor");
              TORCH_CHECK(out.scalar_type() == at::kFloat || out.scalar_type() == at::kDouble, "float or double");
              kb_lambda_fill(out.data_ptr(), out.numel(), out.scalar_type() == at::kFloat ? 0 : 1);
            }

            TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
              ops.def("fill(Tensor(a!) out) -> ()");
              ops.impl("fill", c10::DeviceType::CUDA, &kb_fill);
            }

            REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
        """
    return write_tree(root, files)


# --- registration.h compiled directly  -------------------------------------------------------

REGISTRATION_PROBE = """
#include <torch/library.h>

#include "registration.h"

#define KB_EXPECT(cond) static_assert(cond, #cond)
namespace {
constexpr bool kb_same(const char *a, const char *b) {
  while (*a != 0 && *a == *b) { ++a; ++b; }
  return *a == *b;
}
}  // namespace
#define KB_PASTED_abc 1
KB_EXPECT(CONCAT(KB_PASTED_, abc) == 1);
KB_EXPECT(kb_same(STRINGIFY(TORCH_EXTENSION_NAME), "_kb_direct_cpu_0123456789"));
KB_EXPECT(kb_same(_STRINGIFY(TORCH_EXTENSION_NAME), "TORCH_EXTENSION_NAME"));

int64_t kb_direct_one(int64_t x) { return x + 1; }

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, m) { m.def("one(int x) -> int", &kb_direct_one); }
TORCH_LIBRARY_IMPL_EXPAND(TORCH_EXTENSION_NAME, CPU, m) {}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
"""


def run_parallel(
    commands: Sequence[Sequence[str | os.PathLike[str]]], *, cwd: Path
) -> list[subprocess.CompletedProcess[str]]:
    """Run compiler commands two at a time (the CI host has two cores)."""
    results: list[subprocess.CompletedProcess[str]] = []
    for start in range(0, len(commands), 2):
        batch = [
            subprocess.Popen(
                [str(a) for a in argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
            )
            for argv in commands[start : start + 2]
        ]
        for argv, proc in zip(commands[start : start + 2], batch):
            out, _ = proc.communicate()
            results.append(subprocess.CompletedProcess([str(a) for a in argv], proc.returncode, out, ""))
    return results


def printed(label: str, seconds: float) -> None:
    """Report a measured time (shown with ``pytest -s`` or in the captured output of a failure)."""
    print(f"[timing] {label}: {seconds:.2f} s")


#: The DT_NEEDED entries an extension may have (docs/layout.md): Torch's libraries, the CUDA runtime, glibc,
#: libstdc++ and libgcc_s.
ALLOWED_NEEDED = re.compile(
    r"lib(c10|c10_cuda|torch|torch_cpu|torch_cuda)\.so|libcudart\.so\.\d+|"
    r"lib(c|m|dl|pthread|rt)\.so\.\d+|libstdc\+\+\.so\.6|libgcc_s\.so\.1"
)


def needed(so: Path) -> list[str]:
    """The DT_NEEDED entries of a shared object."""
    return [
        line.split("[", 1)[1].rstrip("]") for line in dynamic_section(so).splitlines() if "(NEEDED)" in line
    ]


def undefined_symbols(so: Path) -> set[str]:
    """Names (without ``@VERSION``) of the dynamic symbols ``so`` imports."""
    out = tool_output(["nm", "-D", "--undefined-only", so])
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


def assert_clean_extension(so: Path) -> None:
    """What every built extension must be (docs/layout.md): abi3-named, linked only against the allowed
    libraries (never libpython or libtorch_python), without RPATH/RUNPATH, importing only ``PyModule_Create2``
    from Python."""
    assert so.name.endswith(".abi3.so")
    entries = needed(so)
    assert not [n for n in entries if "python" in n], entries
    assert [n for n in entries if not ALLOWED_NEEDED.fullmatch(n)] == []
    assert "libtorch_python.so" not in entries and "libtorch.so" in entries
    dynamic = dynamic_section(so)
    assert "(RUNPATH)" not in dynamic and "(RPATH)" not in dynamic
    assert {s for s in undefined_symbols(so) if s.startswith(("Py", "_Py"))} == {"PyModule_Create2"}


def assert_one_ops_name(built: Built, name: str) -> None:
    """Build-output, on disk: ``name`` is the .so's name, its ``PyInit_`` symbol and _ops.py's."""
    assert built.ops_name == name
    assert [p.name for p in built.variant_dir.glob("*.so")] == [f"{name}.abi3.so"]
    init_symbols = [
        line.split()[-1]
        for line in dynamic_symbols(extension(built.variant_dir)).splitlines()
        if "PyInit_" in line
    ]
    assert init_symbols == [f"PyInit_{name}"]
    ops_py = (built.variant_dir / "_ops.py").read_text(encoding="utf-8")
    assert f"from . import {name}" in ops_py
    assert f"ops = torch.ops.{name}\n" in ops_py
    assert f'return "{name}::" + op_name' in ops_py
