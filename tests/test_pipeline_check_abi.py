"""check-abi on fixture shared objects built on purpose (docs/layout.md), on damaged files,
and against the policy data of auditwheel (manylinux) and abi3audit (abi3info)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from kernel_builder.cli import main
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.check.abi import (
    Violation,
    check_extension,
    check_library,
    judge,
    python_abi_problem,
    read_elf,
    torch_cxx_namespace,
)

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build fixture libraries")
PYTHON_INCLUDE = Path(sysconfig.get_paths()["include"])

BAD_SOURCE = """\
#include <Python.h>
#include <memory>
// Not in the stable ABI (abi3): PyUnicode_AsUTF8.
extern "C" const char *utf8(PyObject *o) { return PyUnicode_AsUTF8(o); }
// In the stable ABI only since Python 3.10.
extern "C" const char *utf8_size(PyObject *o, Py_ssize_t *n) { return PyUnicode_AsUTF8AndSize(o, n); }
// Copying a shared_ptr references __libc_single_threaded@GLIBC_2.32 with glibc >= 2.32.
std::shared_ptr<int> keep(const std::shared_ptr<int> &p) { std::shared_ptr<int> q = p; return q; }
extern "C" int foreign(void);
extern "C" int call_foreign(void) { return foreign(); }
"""

GOOD_SOURCE = """\
#define Py_LIMITED_API 0x03090000
#include <Python.h>
extern "C" PyObject *make(void) { return PyLong_FromLong(1); }
"""

# Calls into libtorch's C++ API (c10::) and into Torch's stable C shim (aoti_torch_*), as a stable-ABI
# kernel must not and may.
TORCH_SOURCE = """\
namespace c10 { int device_count(); }
extern "C" int aoti_torch_get_num_threads(void);
extern "C" int use_both(void) { return c10::device_count() + aoti_torch_get_num_threads(); }
"""


def compile_so(tmp: Path, name: str, source: str, *extra: str) -> Path:
    src = tmp / f"{name}.cpp"
    src.write_text(source)
    out = tmp / f"{name}.abi3.so"
    subprocess.run(
        ["g++", "-shared", "-fPIC", "-O1", f"-I{PYTHON_INCLUDE}", str(src), "-o", str(out), *extra],
        check=True,
    )
    return out


@pytest.fixture(scope="module")
def libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("g++") is None:
        pytest.skip("needs g++ to build fixture libraries")
    tmp = tmp_path_factory.mktemp("abi")
    foreign = tmp / "libforeign.so"
    (tmp / "foreign.c").write_text("int foreign(void) { return 42; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(tmp / "foreign.c"), "-o", str(foreign)], check=True)
    bad = compile_so(tmp, "bad", BAD_SOURCE, f"-L{tmp}", "-lforeign", "-Wl,-rpath,/opt/somewhere")
    good = compile_so(tmp, "good", GOOD_SOURCE)
    torch = compile_so(tmp, "torchy", TORCH_SOURCE)
    return {"bad": bad, "good": good, "torch": torch}


def variant_dir(root: Path, library: Path, name: str = "torch213-cxx11-cpu-x86_64-linux") -> Path:
    variant = root / "build" / name
    variant.mkdir(parents=True)
    shutil.copy(library, variant / library.name)
    (variant / "metadata.json").write_text(
        json.dumps(
            {"name": "fixture", "id": "_fixture_cpu_0", "python-depends": [], "backend": {"type": "cpu"}}
        )
    )
    return variant


@needs_gxx
def test_bad_library_reports_every_kind(libraries: dict[str, Path]) -> None:
    found = {(v.kind, v.detail) for v in check_library(libraries["bad"])}
    assert ("python-abi", "PyUnicode_AsUTF8 is not in the stable ABI (abi3)") in found
    assert (
        "python-abi",
        "PyUnicode_AsUTF8AndSize joined the stable ABI in Python 3.10, after 3.9 (abi3 target)",
    ) in found
    assert (
        "needed",
        "DT_NEEDED libforeign.so is not Torch's, CUDA's (Torch's wheels) or the C/C++ runtime's",
    ) in found
    assert ("runpath", "RUNPATH/RPATH '/opt/somewhere' must be empty (torch loads the libraries)") in found
    assert (
        "symbol-version",
        "__libc_single_threaded@GLIBC_2.32 is not allowed by manylinux_2_28",
    ) in found


@needs_gxx
def test_good_library_has_no_violation(libraries: dict[str, Path]) -> None:
    assert check_library(libraries["good"]) == []


@needs_gxx
def test_stable_abi_variants_may_only_use_the_c_shim(libraries: dict[str, Path], tmp_path: Path) -> None:
    found = check_library(libraries["torch"], stable_abi=True)
    assert [(v.kind, v.detail.split(" ")[0]) for v in found] == [("torch-abi", "_ZN3c1012device_countEv")]
    assert "is libtorch C++ (c10::)" in found[0].detail
    assert check_library(libraries["torch"]) == []  # an ordinary Torch variant may link libtorch's C++ API

    stable = variant_dir(tmp_path / "stable", libraries["torch"], "torch-stable-abi212-cpu-x86_64-linux")
    assert main(["check-abi", str(stable)]) == 1
    ordinary = variant_dir(tmp_path / "ordinary", libraries["torch"])
    assert main(["check-abi", str(ordinary)]) == 0


@needs_gxx
def test_check_abi_cli_exit_codes(
    libraries: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_root = tmp_path / "bad"
    bad = variant_dir(bad_root, libraries["bad"])
    assert main(["check-abi", str(bad_root)]) == 1
    out = capsys.readouterr().out
    assert f"{bad / 'bad.abi3.so'}: python-abi: PyUnicode_AsUTF8 is not in the stable ABI" in out
    assert f"{bad / 'bad.abi3.so'}: needed: DT_NEEDED libforeign.so" in out

    good_root = tmp_path / "good"
    variant_dir(good_root, libraries["good"])
    assert main(["check-abi", str(good_root / "build")]) == 0
    assert capsys.readouterr().out == "checked 1 extension(s): no violations\n"
    assert main(["check-abi", str(tmp_path / "missing")]) == 2


@needs_gxx
def test_read_elf_sees_versions_and_needed(libraries: dict[str, Path]) -> None:
    facts = read_elf(libraries["bad"])
    assert facts.machine == "x86_64"
    assert facts.needed == ("libforeign.so", "libc.so.6")
    assert facts.runpath == ("/opt/somewhere",)
    assert ("__libc_single_threaded", "GLIBC_2.32") in facts.undefined


# --- damaged files: a finding each, never a parser traceback -------------------------------------------------


def damaged_files(directory: Path, real: Path | None) -> dict[str, Path]:
    directory.mkdir(parents=True, exist_ok=True)
    contents = {
        "empty": b"",
        "text": b"#!/bin/sh\necho this is not a shared object\n",
        "random": os.urandom(4096),
        "elf-magic-only": b"\x7fELF" + os.urandom(60),
    }
    if real is not None:
        data = real.read_bytes()
        contents["truncated"] = data[:200]
        contents["cut-in-half"] = data[: len(data) // 2]
    files = {}
    for name, data in contents.items():
        path = directory / f"_{name.replace('-', '_')}.abi3.so"
        path.write_bytes(data)
        files[name] = path
    return files


@pytest.mark.parametrize("name", ["empty", "text", "random", "elf-magic-only", "truncated", "cut-in-half"])
def test_damaged_files_are_findings(name: str, tmp_path: Path, libraries: dict[str, Path]) -> None:
    path = damaged_files(tmp_path, libraries["good"])[name]
    found = check_library(path)
    assert [v.kind for v in found] == ["unreadable"], found
    assert found[0].detail.startswith("not a readable ELF shared object: ")
    expected = {"empty": "empty file", "text": "not an ELF file (it starts with b'#!/b')"}
    if name in expected:
        assert found[0].detail.endswith(expected[name])


def test_check_abi_reports_damaged_extensions_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    variant = tmp_path / "build" / "torch213-cxx11-cpu-x86_64-linux"
    files = damaged_files(variant, None)
    (variant / "metadata.json").write_text("{}")
    assert main(["check-abi", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    lines = captured.out.splitlines()
    assert lines[-1] == f"checked {len(files)} extension(s): {len(files)} violation(s) (unreadable)"
    assert f"{files['empty']}: unreadable: not a readable ELF shared object: empty file" in lines


# --- the policy data comes from auditwheel (test_pipeline_abi_policy.py) and abi3info ------------------------------------------------------


def test_python_symbols_follow_the_stable_abi_manifest() -> None:
    assert python_abi_problem("PyLong_FromLong") is None
    assert python_abi_problem("PyModule_Create2") is None
    assert python_abi_problem("PyUnicode_AsUTF8") == "PyUnicode_AsUTF8 is not in the stable ABI (abi3)"
    assert (
        python_abi_problem("_PyObject_GetDictPtr") == "_PyObject_GetDictPtr is not in the stable ABI (abi3)"
    )
    assert python_abi_problem("PyType_GetModuleByDef") == (
        "PyType_GetModuleByDef joined the stable ABI in Python 3.13, after 3.9 (abi3 target)"
    )
    assert python_abi_problem("malloc") is None


@pytest.mark.parametrize(
    ("symbol", "namespace"),
    [
        ("_ZN3c106detail14torchCheckFailEPKcS2_jPKc", "c10"),
        ("_ZNK2at10TensorBase4sizeEl", "at"),
        ("_ZTVN5torch8autograd4NodeE", "torch"),
        ("_ZTIN3c1013intrusive_ptr_targetE", "c10"),
        ("_ZN6caffe28TypeMeta3NewEv", "caffe2"),
        ("_ZNSt6vectorIiSaIiEE9push_backERKi", None),
        ("_ZN4aten3fooEv", None),
        ("aoti_torch_get_num_threads", None),
        ("_Z3fooi", None),
    ],
)
def test_torch_cxx_namespace(symbol: str, namespace: str | None) -> None:
    assert torch_cxx_namespace(symbol) == namespace


def test_the_build_judges_symbol_versions_as_warnings_unless_werror(tmp_path: Path) -> None:
    so = tmp_path / "_kb.abi3.so"
    version = Violation("symbol-version", so, "GLIBC_2.34 (memcpy)")
    warnings: list[str] = []
    judge("v", [version], werror=False, warn=warnings.append)
    assert warnings == ["v: GLIBC_2.34 (memcpy) (not manylinux_2_28-compliant)"]
    with pytest.raises(BuildError, match=r"ABI check failed:\n  symbol-version: GLIBC_2.34"):
        judge("v", [version], werror=True, warn=warnings.append)
    # Every other kind fails the variant, --werror or not; a symbol version beside it still only warns.
    warnings.clear()
    with pytest.raises(BuildError) as failed:
        judge("v", [version, Violation("needed", so, "libfoo.so")], werror=False, warn=warnings.append)
    assert str(failed.value) == "ABI check failed:\n  needed: libfoo.so"
    assert warnings == ["v: GLIBC_2.34 (memcpy) (not manylinux_2_28-compliant)"]
    judge("v", [], werror=True, warn=warnings.append)  # nothing found: nothing said


def test_check_extension_returns_what_it_judged(libraries: dict[str, Path]) -> None:
    assert check_extension("v", libraries["good"], stable_abi=False, werror=True, warn=print) == []
    with pytest.raises(BuildError, match="ABI check failed"):
        check_extension("v", libraries["bad"], stable_abi=False, werror=False, warn=print)
