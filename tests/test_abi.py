"""check-abi on fixture shared objects built on purpose (build-output spec §7.4, §10 case 30)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest

from kernel_builder.abi import check_library, limited_api_symbols, read_elf
from kernel_builder.cli import main

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build fixture libraries")
PYTHON_INCLUDE = Path(sysconfig.get_paths()["include"])

BAD_SOURCE = """\
#include <Python.h>
#include <memory>
// Not in the limited API (abi3): PyUnicode_AsUTF8.
extern "C" const char *utf8(PyObject *o) { return PyUnicode_AsUTF8(o); }
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
    tmp = tmp_path_factory.mktemp("abi")
    foreign = tmp / "libforeign.so"
    (tmp / "foreign.c").write_text("int foreign(void) { return 42; }\n")
    subprocess.run(["gcc", "-shared", "-fPIC", str(tmp / "foreign.c"), "-o", str(foreign)], check=True)
    bad = compile_so(tmp, "bad", BAD_SOURCE, f"-L{tmp}", "-lforeign", "-Wl,-rpath,/opt/somewhere")
    good = compile_so(tmp, "good", GOOD_SOURCE)
    return {"bad": bad, "good": good}


def variant_dir(tmp_path: Path, library: Path) -> Path:
    variant = tmp_path / "build" / "torch213-cxx11-cpu-x86_64-linux"
    variant.mkdir(parents=True)
    shutil.copy(library, variant / library.name)
    (variant / "metadata.json").write_text(
        json.dumps(
            {"name": "fixture", "id": "_fixture_cpu_0", "python-depends": [], "backend": {"type": "cpu"}}
        )
    )
    return variant


def test_bad_library_reports_every_kind(libraries: dict[str, Path]) -> None:
    found = {(v.kind, v.detail) for v in check_library(libraries["bad"], PYTHON_INCLUDE)}
    assert ("python-abi", "PyUnicode_AsUTF8 is not in the limited API of Python 3.9 (abi3)") in found
    assert (
        "needed",
        "DT_NEEDED libforeign.so is not Torch's, CUDA's (Torch's wheels) or the C/C++ runtime's",
    ) in found
    assert ("runpath", "RUNPATH/RPATH '/opt/somewhere' must be empty (torch loads the libraries)") in found
    assert (
        "symbol-version",
        "__libc_single_threaded@GLIBC_2.32 is newer than manylinux_2_28 allows",
    ) in found


def test_good_library_has_no_violation_but_the_toolchains(libraries: dict[str, Path]) -> None:
    assert check_library(libraries["good"], PYTHON_INCLUDE) == []


def test_check_abi_cli_exit_codes(
    libraries: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_root = tmp_path / "bad"
    bad = variant_dir(bad_root, libraries["bad"])
    assert main(["check-abi", str(bad_root)]) == 1
    out = capsys.readouterr().out
    assert f"{bad / 'bad.abi3.so'}: python-abi: PyUnicode_AsUTF8" in out
    assert f"{bad / 'bad.abi3.so'}: needed: DT_NEEDED libforeign.so" in out

    good_root = tmp_path / "good"
    variant_dir(good_root, libraries["good"])
    assert main(["check-abi", str(good_root / "build")]) == 0
    assert capsys.readouterr().out == "checked 1 extension(s): no violations\n"
    assert main(["check-abi", str(tmp_path / "missing")]) == 2


def test_limited_api_comes_from_the_headers() -> None:
    names = limited_api_symbols(str(PYTHON_INCLUDE))
    assert {"PyModule_Create2", "PyLong_FromLong", "PyLong_Type"} <= names
    assert "PyUnicode_AsUTF8" not in names  # a CPython-API function
    assert "_PyObject_GetDictPtr" not in names


def test_read_elf_sees_versions_and_needed(libraries: dict[str, Path]) -> None:
    facts = read_elf(libraries["bad"])
    assert facts.needed == ("libforeign.so", "libc.so.6")
    assert facts.runpath == ("/opt/somewhere",)
    assert ("__libc_single_threaded", "GLIBC_2.32") in facts.undefined
