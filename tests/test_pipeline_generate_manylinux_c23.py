"""glibc >= 2.38's C23 redirects turned off by the manylinux header (kernel_builder/pipeline/generate/manylinux.py).

glibc 2.38 headers bind ``sscanf``, ``strtol``, ``strtoull`` ... to ``__isoc23_*`` (GLIBC_2.38) whenever GNU
extensions are on, as g++ always has them. A glibc >= 2.38 host compiles with its own headers; on an older one
(CI's has 2.36) headers that redirect are put first among the C library's include directories:
``tests/fixtures/glibc-c23-replica`` (a replica of 2.38's logic over this host's glibc, see its README), or a
real set of glibc >= 2.38 headers when ``KB_TEST_GLIBC_HEADERS`` names one (the ``usr/include`` of an unpacked
``libc6-dev``). The fixture kernel
``tests/fixtures/libc-c23`` calls the three functions from C++ and from CUDA host code; without the header its
objects reference ``__isoc23_*``, with it the functions a glibc 2.28 system has.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from build_runs import REPO, build, require_cuda_python, run_cli

from kernel_builder.pipeline.check.abi import check_library
from kernel_builder.pipeline.generate.manylinux import C23_HEADER_NAME, C23_REDIRECTS_OFF, write_compat

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

FIXTURE = REPO / "tests" / "fixtures" / "libc-c23"
REPLICA = REPO / "tests" / "fixtures" / "glibc-c23-replica"
C23_NAMES = {"__isoc23_sscanf", "__isoc23_strtol", "__isoc23_strtoull"}
CUDA_SOURCE = r"""
#include <cstdio>
#include <cstdlib>
__global__ void twice(int *out) { out[threadIdx.x] *= 2; }
extern "C" long long parse_cuda(const char *text) {
  int scanned = 0;
  std::sscanf(text, "%d", &scanned);
  return scanned + std::strtol(text, nullptr, 0) + static_cast<long long>(std::strtoull(text, nullptr, 0));
}
"""


def host_glibc() -> tuple[int, int]:
    version = (os.confstr("CS_GNU_LIBC_VERSION") or "").split()
    if len(version) != 2 or version[0] != "glibc":
        return (0, 0)
    major, minor = version[1].split(".")[:2]
    return int(major), int(minor)


def header_dirs() -> list[Path]:
    """The redirecting headers, in search order: a real set when given; none on a host whose own headers
    redirect (glibc >= 2.38: Ubuntu 24.04, Debian 13); else the replica."""
    real = os.environ.get("KB_TEST_GLIBC_HEADERS")
    if not real:
        return [] if host_glibc() >= (2, 38) else [REPLICA]
    root = Path(real)
    multiarch = [p for p in root.iterdir() if (p / "bits" / "libc-header-start.h").exists()]
    return [*multiarch, root]


def include_flags(first: list[Path]) -> list[str]:
    """g++'s own include directories with ``first`` just before the C library's (after libstdc++'s, whose
    ``<cstdlib>`` reaches ``<stdlib.h>`` with ``#include_next``), as ``-nostdinc -isystem ...``; none for none."""
    if not first:
        return []
    listing = subprocess.run(
        ["g++", "-xc++", "-E", "-v", "/dev/null"], capture_output=True, text=True, check=True
    ).stderr
    block = listing.split("#include <...> search starts here:")[1].split("End of search list.")[0]
    dirs = [line.strip() for line in block.splitlines() if line.strip()]
    libc = next(
        i
        for i, d in enumerate(dirs)
        if Path(d, "features.h").exists() or Path(d, "bits", "libc-header-start.h").exists()
    )
    ordered = [*dirs[:libc], *(str(p) for p in first), *dirs[libc:]]
    return ["-nostdinc", *(f"-isystem{d}" for d in ordered)]  # one word each: CMake de-duplicates words


def nvcc_flags(flags: list[str]) -> list[str]:
    """:func:`include_flags` as nvcc takes them."""
    return [
        "-Xcompiler=-nostdinc" if flag == "-nostdinc" else f"-isystem={flag.removeprefix('-isystem')}"
        for flag in flags
    ]


def undefined(path: Path) -> set[str]:
    """The undefined symbols of an object or library, with their versions (``name@VERSION``) where bound."""
    dynamic = ["-D"] if path.suffix == ".so" else []
    out = subprocess.run(
        ["nm", *dynamic, "--undefined-only", str(path)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def names(symbols: set[str]) -> set[str]:
    return {s.split("@")[0] for s in symbols}


@pytest.fixture(scope="module")
def compat(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("c23") / "manylinux"
    write_compat(directory, Path(shutil.which("g++") or "g++"))
    return directory


def test_the_switch_is_macros_only_and_first(compat: Path) -> None:
    """nvcc's host compiler reads the switch again before its own preprocessed output: a declaration there
    would be a second one. The main header includes it before anything else."""
    assert (compat / C23_HEADER_NAME).read_text() == C23_REDIRECTS_OFF
    code = [
        line for line in C23_REDIRECTS_OFF.splitlines() if line and not line.startswith(("/*", "   ", "#"))
    ]
    assert code == []
    main = (compat / "kb_manylinux.h").read_text().splitlines()
    assert main[2] == f'#include "{C23_HEADER_NAME}"'  # after the comment and #pragma once


def test_cxx_calls_bind_to_glibc_2_28_functions(tmp_path: Path, compat: Path) -> None:
    flags = ["-O2", "-shared", "-fPIC", *include_flags(header_dirs())]
    source = FIXTURE / "csrc" / "parse_host.cpp"
    plain, clean = tmp_path / "plain.so", tmp_path / "clean.so"
    subprocess.run(["g++", *flags, str(source), "-o", str(plain)], check=True)
    subprocess.run(
        ["g++", *flags, f"-include{compat / 'kb_manylinux.h'}", str(source), str(compat / "kb_manylinux.cpp"),
         "-o", str(clean)],
        check=True,
    )  # fmt: skip
    assert names(undefined(plain)) >= C23_NAMES  # the headers do redirect
    after = undefined(clean)
    assert not names(after) & C23_NAMES, after
    assert {"__isoc99_sscanf@GLIBC_2.7", "strtol@GLIBC_2.2.5", "strtoull@GLIBC_2.2.5"} <= after
    assert check_library(clean) == []


def nvcc() -> str:
    found = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not Path(found).exists():
        pytest.skip("no nvcc: install CUDA 13.0 or put it on PATH")
    return found


@pytest.mark.cuda
@pytest.mark.slow
def test_cuda_host_calls_need_the_switch_before_cuda_runtime(tmp_path: Path, compat: Path) -> None:
    """nvcc includes cuda_runtime.h (and with it <stdlib.h>) before a --pre-include: the main header alone
    comes too late for strtol; the switch through the host compiler's -include (what the generated CMake
    project passes) comes first."""
    source = tmp_path / "parse.cu"
    source.write_text(CUDA_SOURCE)
    base = [nvcc(), "-c", "-arch=sm_80", "-Xcompiler=-fPIC"]
    base += nvcc_flags(include_flags(header_dirs()))
    main = f"--pre-include={compat / 'kb_manylinux.h'}"
    switch = f"-Xcompiler=-include,{compat / C23_HEADER_NAME}"
    objects = {}
    for label, extra in (("plain", []), ("pre-include only", [main]), ("as generated", [main, switch])):
        objects[label] = tmp_path / f"{label.replace(' ', '-')}.o"
        subprocess.run([*base, *extra, str(source), "-o", str(objects[label])], check=True)
    assert names(undefined(objects["plain"])) >= C23_NAMES
    assert "__isoc23_strtol" in undefined(objects["pre-include only"])
    assert not names(undefined(objects["as generated"])) & C23_NAMES
    assert {"__isoc99_sscanf", "strtol", "strtoull"} <= undefined(objects["as generated"])


@pytest.mark.cuda
@pytest.mark.slow
def test_fixture_kernel_passes_check_abi(tmp_path: Path) -> None:
    """The whole build of the fixture kernel, its C++ and CUDA files compiled against the redirecting
    headers: check-abi finds nothing, and the extension imports no __isoc23_* function."""
    python = require_cuda_python()
    root = tmp_path / "libc-c23"
    shutil.copytree(FIXTURE, root)
    flags = include_flags(header_dirs())
    cuda_flags = nvcc_flags(flags)
    toml = root / "build.toml"
    text = toml.read_text()
    text = text.replace(
        'cuda-capabilities = ["8.0"]\n',
        'cuda-capabilities = ["8.0"]\n'
        f"cxx-flags = {json_list(flags)}\ncuda-flags = {json_list(cuda_flags)}\n",
    )
    toml.write_text(text)
    build(root, "--no-import-check", python=python)
    report = run_cli(["check-abi", root])
    assert report.returncode == 0, report.output
    assert "no violations" in report.output
    (extension,) = (root / "build").glob("*/_libc_c23_cuda_*.so")
    symbols = undefined(extension)
    assert not names(symbols) & C23_NAMES, symbols
    assert {"__isoc99_sscanf@GLIBC_2.7", "strtol@GLIBC_2.2.5", "strtoull@GLIBC_2.2.5"} <= symbols
    assert not any(re.search(r"@GLIBC_2\.(29|3\d)", s) for s in symbols), symbols


def json_list(values: list[str]) -> str:
    import json

    return "[" + ", ".join(json.dumps(v) for v in values) + "]"
