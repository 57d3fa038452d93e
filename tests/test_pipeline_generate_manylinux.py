"""The manylinux_2_28 compatibility header and source (kernel_builder/pipeline/generate/manylinux.py, docs/manylinux.md).

Fixture libraries are compiled with the host's g++ twice — plainly and with the generated header and source —
and compared: the plain one needs symbol versions newer than manylinux_2_28 allows, the other none, and both
compute exactly the same values and throw the same exceptions.
"""

from __future__ import annotations

import ctypes
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from build_runs import run_cli
from cpu_projects import copy_example
from matrix_data import CPU_VARIANT

from kernel_builder.errors import BuildError
from kernel_builder.pipeline.abi_policy import manylinux_policy
from kernel_builder.pipeline.check.abi import check_library
from kernel_builder.pipeline.generate.manylinux import (
    COMPAT_SOURCE,
    check_compiler,
    compat_header,
    glibc_definitions,
    host_glibc_libraries,
    symbol_pins,
    write_compat,
)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

# Calls that glibc >= 2.29 / 2.34 and GCC >= 11 version newer than manylinux_2_28 allows, and entry points to
# compare the results of the two builds.
FIXTURE = r"""
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <memory>
#include <new>
#include <pthread.h>

std::shared_ptr<int> keep(const std::shared_ptr<int> &p) { std::shared_ptr<int> q = p; return q; }

extern "C" double maths(double x) { return std::exp(x) + std::log(x) + std::pow(x, 1.5) + std::log2(x) + std::exp2(x); }

extern "C" int shared_count(void) {
  auto p = std::make_shared<int>(7);
  auto q = keep(p);
  return static_cast<int>(q.use_count()) * 10 + *q;
}

extern "C" int dl_self(void) {
  void *handle = dlopen(nullptr, RTLD_LAZY);
  int found = handle != nullptr && dlsym(handle, "strlen") != nullptr;
  if (handle) dlclose(handle);
  return found;
}

static void *run(void *arg) { *static_cast<int *>(arg) += 1; return nullptr; }
extern "C" int thread_once(void) {
  int value = 41;
  pthread_t thread;
  if (pthread_create(&thread, nullptr, run, &value) != 0) return -1;
  pthread_join(thread, nullptr);
  return value;
}

// 0: allocated, 1: std::bad_array_new_length, 2: another std::bad_alloc
extern "C" int huge_allocation(std::size_t n) {
  try {
    std::allocator<double> allocator;
    double *p = allocator.allocate(n);
    allocator.deallocate(p, n);
    return 0;
  } catch (const std::bad_array_new_length &) {
    return 1;
  } catch (const std::bad_alloc &) {
    return 2;
  }
}
"""


def allowed_glibc() -> frozenset[str]:
    policy = manylinux_policy("x86_64")
    assert policy is not None
    return frozenset(f"GLIBC_{v}" for v in policy.symbol_versions["GLIBC"])


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("manylinux")
    (tmp / "fixture.cpp").write_text(FIXTURE)
    header, source = write_compat(tmp / "compat", Path(shutil.which("g++") or "g++"))
    base = ["g++", "-std=c++20", "-O2", "-shared", "-fPIC"]
    plain, clean = tmp / "plain.so", tmp / "clean.so"
    subprocess.run([*base, str(tmp / "fixture.cpp"), "-o", str(plain)], check=True)
    subprocess.run(
        [*base, f"-include{header}", str(tmp / "fixture.cpp"), str(source), "-o", str(clean)], check=True
    )
    return {"plain": plain, "clean": clean, "header": header}


def glibc_at_least(major: int, minor: int) -> bool:
    version = os.confstr("CS_GNU_LIBC_VERSION") or ""
    parts = version.split()[-1].split(".") if version.startswith("glibc") else ["0", "0"]
    return (int(parts[0]), int(parts[1])) >= (major, minor)


@pytest.mark.skipif(not glibc_at_least(2, 34), reason="the host's glibc is old enough to need no pins")
def test_plain_build_is_not_manylinux_2_28(builds: dict[str, Path]) -> None:
    found = {v.detail.split(" ")[0] for v in check_library(builds["plain"]) if v.kind == "symbol-version"}
    assert {"exp@GLIBC_2.29", "pow@GLIBC_2.29", "__libc_single_threaded@GLIBC_2.32"} <= found
    assert "_ZSt28__throw_bad_array_new_lengthv@GLIBCXX_3.4.29" in found


def test_compat_build_is_manylinux_2_28(builds: dict[str, Path]) -> None:
    assert check_library(builds["clean"]) == []


def test_both_builds_compute_the_same(builds: dict[str, Path]) -> None:
    plain, clean = ctypes.CDLL(str(builds["plain"])), ctypes.CDLL(str(builds["clean"]))
    for library in (plain, clean):
        library.maths.restype = ctypes.c_double
        library.maths.argtypes = [ctypes.c_double]
        library.huge_allocation.argtypes = [ctypes.c_size_t]
    for x in (0.001, 0.5, 1.0, math.pi, 17.25, 700.0):
        assert plain.maths(x) == clean.maths(x)  # bit for bit: the same libm code runs
    for name in ("shared_count", "dl_self", "thread_once"):
        assert getattr(plain, name)() == getattr(clean, name)()
    assert (clean.shared_count(), clean.dl_self(), clean.thread_once()) == (27, 1, 42)
    too_many = (1 << 63) // 4  # more doubles than a size_t counts bytes
    assert plain.huge_allocation(too_many) == clean.huge_allocation(too_many) == 1
    assert plain.huge_allocation(16) == clean.huge_allocation(16) == 0


def test_the_compat_source_throws_bad_array_new_length(tmp_path: Path, builds: dict[str, Path]) -> None:
    """new T[n] with an impossible n: both builds throw std::bad_array_new_length, the compat one from its copy
    of libstdc++'s helper (GCC >= 11; older libstdc++ never calls it)."""
    probe = tmp_path / "probe.cpp"
    probe.write_text(
        "#include <new>\n#include <cstddef>\n"
        'extern "C" int array_new(std::size_t n) {\n'
        "  try { double *p = new double[n]; delete[] p; return 0; }\n"
        "  catch (const std::bad_array_new_length &) { return 1; }\n"
        "  catch (const std::bad_alloc &) { return 2; } }\n"
    )
    outputs = []
    for extra in ([], [f"-include{builds['header']}", str(builds["header"].parent / "kb_manylinux.cpp")]):
        out = tmp_path / f"array{len(extra)}.so"
        subprocess.run(
            ["g++", "-O2", "-shared", "-fPIC", *extra[:1], str(probe), *extra[1:], "-o", str(out)], check=True
        )
        library = ctypes.CDLL(str(out))
        library.array_new.argtypes = [ctypes.c_size_t]
        outputs.append((library.array_new(1 << 62), library.array_new(4)))
    assert outputs[0] == outputs[1] == (1, 0)


@pytest.mark.skipif(not glibc_at_least(2, 34), reason="the host's glibc is old enough to need no pins")
def test_pins_bind_to_the_newest_allowed_version() -> None:
    pins = symbol_pins(host_glibc_libraries("g++"), allowed_glibc())
    assert pins["pthread_create"] == "GLIBC_2.2.5"  # moved into libc in 2.34, still there under its old name
    assert pins["dlopen"] == "GLIBC_2.2.5"
    assert pins["exp"] == "GLIBC_2.2.5"  # libm: 2.29 is the default
    # Of several allowed versions, the newest: the one a glibc 2.28 system binds to (2.2.5 and 2.3.3 are
    # older ABIs of these functions).
    assert pins["timer_create"] == "GLIBC_2.3.3"  # of 2.2.5, 2.3.3 and 2.34
    assert pins["pthread_getaffinity_np"] == "GLIBC_2.3.4"  # of 2.3.3, 2.3.4 and 2.32
    assert "memcpy" not in pins  # its default (2.14) is allowed
    assert "stat" not in pins  # only GLIBC_2.33 exists: nothing to pin to (check-abi reports such uses)
    libc = next(p for p in host_glibc_libraries("g++") if p.name == "libc.so.6")
    assert ("GLIBC_2.34", True) in glibc_definitions(libc)["pthread_create"]


def test_header_text() -> None:
    text = compat_header({"exp": "GLIBC_2.2.5"}, rename_single_threaded=True)
    assert '__asm__(".symver exp,exp@GLIBC_2.2.5");' in text
    assert "#define __libc_single_threaded __kb_libc_single_threaded" in text
    assert "#if defined(__linux__) && !defined(__CUDA_ARCH__)" in text
    bare = compat_header({}, rename_single_threaded=False)
    assert ".symver" not in bare and "__libc_single_threaded" not in bare
    assert "std::bad_array_new_length" in COMPAT_SOURCE


# --- a compiler that cannot produce compliant binaries -------------------------------------------------------

STATIC_ONLY_CXX = """#!/bin/sh
# g++ as a custom GCC install without a shared libstdc++ would answer (e.g. the GPU machine's default $CXX).
case "$1" in
  -print-file-name=libstdc++.so) echo libstdc++.so; exit 0 ;;
  -print-file-name=libstdc++.a) echo /opt/custom-gcc/lib64/libstdc++.a; exit 0 ;;
esac
exec g++ "$@"
"""


@pytest.fixture
def static_only_cxx(tmp_path: Path) -> Path:
    compiler = tmp_path / "bin" / "custom-g++"
    compiler.parent.mkdir()
    compiler.write_text(STATIC_ONLY_CXX)
    compiler.chmod(0o755)
    return compiler


def test_check_compiler_refuses_a_static_only_libstdcxx(static_only_cxx: Path) -> None:
    with pytest.raises(BuildError) as caught:
        check_compiler(static_only_cxx)
    assert str(caught.value) == (
        f"the C++ compiler {static_only_cxx} has only a static libstdc++ (/opt/custom-gcc/lib64/libstdc++.a): an "
        "extension built with it would carry its own libstdc++, which clashes with the one Torch loads and is not "
        "manylinux_2_28-compliant; set CXX to a compiler with a shared libstdc++ (e.g. CXX=/usr/bin/g++)"
    )
    check_compiler(Path(shutil.which("g++") or "g++"))  # the system compiler passes


def test_build_with_that_compiler_fails_before_configuring(
    static_only_cxx: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = copy_example("relu", tmp_path / "relu")
    monkeypatch.setenv("CXX", str(static_only_cxx))
    run = run_cli(["build", str(root)])
    assert run.returncode == 1, run.output
    assert f"the C++ compiler {static_only_cxx} has only a static libstdc++" in run.output
    assert "compiling" not in run.output and "Traceback" not in run.output
    assert not (root / "build" / CPU_VARIANT).exists()


def test_header_is_kept_in_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second computation (a fresh process: the in-memory cache cleared) reads no glibc symbol table, and
    gives the same header; a no-op rebuild would otherwise spend seconds on it."""
    from kernel_builder.pipeline.generate import manylinux

    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    compiler = shutil.which("g++") or "g++"
    manylinux._header_for.cache_clear()
    first = manylinux._header_for(compiler)
    assert list((tmp_path / "cache" / "manylinux").glob("*.h"))

    def must_not_parse(library: Path) -> dict[str, list[tuple[str, bool]]]:
        raise AssertionError(f"parsed {library} although the header is cached")

    manylinux._header_for.cache_clear()
    monkeypatch.setattr(manylinux, "glibc_definitions", must_not_parse)
    try:
        assert manylinux._header_for(compiler) == first
    finally:
        manylinux._header_for.cache_clear()
