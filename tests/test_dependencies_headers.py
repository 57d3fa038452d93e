"""CUTLASS headers for kernel sections (build-output §5; §10 case 25 without compiling).

A checkout is a directory tree with ``include/cutlass/cutlass.h`` and ``version.h``; the pip install of the
PyPI pins is replaced by a stand-in for ``subprocess.run``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from stage_fixtures import fake_interpreter, write_files

from kernel_builder.dependencies import CUTLASS_PINS
from kernel_builder.dependencies_headers import checkout_version, cutlass_includes
from kernel_builder.errors import BuildError


def version_h(version: str) -> str:
    major, minor, patch = version.split(".")
    return (
        "#pragma once\n"
        f"#define CUTLASS_MAJOR {major}\n#define CUTLASS_MINOR {minor}\n#define CUTLASS_PATCH {patch}\n"
        "#define CUTLASS_BUILD 0\n"
    )


def checkout(root: Path, version: str | None = "3.6.0", *, tools: bool = True) -> Path:
    files: dict[str, str | bytes] = {"include/cutlass/cutlass.h": "#pragma once\n"}
    if version is not None:
        files["include/cutlass/version.h"] = version_h(version)
    if tools:
        files["tools/util/include/cutlass/util/device_memory.h"] = "#pragma once\n"
    return write_files(root, files)


class Log(list[str]):
    def __call__(self, line: str) -> None:
        self.append(line)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CUTLASS_SRC_DIR", raising=False)


@pytest.fixture
def no_pip(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"unexpected process: {args}")

    monkeypatch.setattr("kernel_builder.dependencies_headers.subprocess.run", refuse)


def test_checkout_gives_its_include_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None) -> None:
    root = checkout(tmp_path / "cutlass")
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(root))
    log = Log()
    assert cutlass_includes("cutlass_3_6", fake_interpreter(), log) == [
        root / "include",
        root / "tools" / "util" / "include",
    ]
    assert log == []


def test_mismatched_checkout_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_pip: None) -> None:
    root = checkout(tmp_path / "cutlass", "3.6.0")
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(root))
    log = Log()
    assert cutlass_includes("cutlass_3_8", fake_interpreter(), log) == [
        root / "include",
        root / "tools" / "util" / "include",
    ]
    assert log == ["warning: CUTLASS_SRC_DIR holds CUTLASS 3.6.0, but cutlass_3_8 pins 3.8.0"]


def test_checkout_of_unknown_version_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = checkout(tmp_path / "cutlass", None, tools=False)
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(root))
    log = Log()
    assert cutlass_includes("cutlass_4_0", fake_interpreter(), log) == [root / "include"]
    assert log == ["warning: CUTLASS_SRC_DIR holds CUTLASS of unknown version, but cutlass_4_0 pins 4.0.0"]


def test_relative_checkout_gives_absolute_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The include dirs are used from the generated project, far from the working directory."""
    checkout(tmp_path / "deps" / "cutlass", "4.0.0")
    monkeypatch.chdir(tmp_path / "deps")
    monkeypatch.setenv("CUTLASS_SRC_DIR", "cutlass")
    includes = cutlass_includes("cutlass_4_0", fake_interpreter(), Log())
    assert includes == [tmp_path / "deps/cutlass/include", tmp_path / "deps/cutlass/tools/util/include"]
    assert all(p.is_absolute() for p in includes)


def test_not_a_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUTLASS_SRC_DIR", str(tmp_path))
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_6", fake_interpreter(), Log())
    assert str(info.value) == f"CUTLASS_SRC_DIR={tmp_path} is not a CUTLASS checkout (no include/cutlass/cutlass.h)"


@pytest.mark.parametrize("pin", [p.value for p in CUTLASS_PINS.values() if not p.pypi])
def test_pin_without_pypi_headers_needs_a_checkout(pin: str, no_pip: None) -> None:
    version = CUTLASS_PINS[pin].version
    with pytest.raises(BuildError) as info:
        cutlass_includes(pin, fake_interpreter(), Log())
    assert str(info.value) == (
        f"{pin} needs CUTLASS {version}, which no PyPI package provides with its C++ headers: "
        f"set CUTLASS_SRC_DIR to a checkout of CUTLASS {version}"
    )


def test_cutlass_4_0_message() -> None:
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_4_0", fake_interpreter(), Log())
    message = str(info.value)
    assert "cutlass_4_0" in message and "4.0.0" in message and "CUTLASS_SRC_DIR" in message
    assert info.value.exit_code == 1


def test_pypi_headers_already_installed(tmp_path: Path, no_pip: None) -> None:
    source = checkout(tmp_path / "site-packages" / "cutlass_library" / "source", "3.6.0")
    log = Log()
    includes = cutlass_includes("cutlass_3_6", fake_interpreter(purelib=tmp_path / "site-packages"), log)
    assert includes == [source / "include", source / "tools" / "util" / "include"]
    assert log == []


def test_pypi_headers_are_installed_with_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    purelib = tmp_path / "site-packages"
    checkout(purelib / "cutlass_library" / "source", "3.5.1")  # another version is installed
    calls: list[list[str]] = []

    def pip(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        checkout(purelib / "cutlass_library" / "source", "3.6.0")
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr("kernel_builder.dependencies_headers.subprocess.run", pip)
    interpreter = fake_interpreter(purelib=purelib)
    log = Log()
    includes = cutlass_includes("cutlass_3_6", interpreter, log)
    source = purelib / "cutlass_library" / "source"
    assert includes == [source / "include", source / "tools" / "util" / "include"]
    assert calls == [
        [str(interpreter.python), "-m", "pip", "install", "--quiet", "--no-deps", "nvidia-cutlass==3.6.0"]
    ]
    assert log == ["installing nvidia-cutlass==3.6.0 into the build environment for cutlass_3_6"]


def test_failed_pip_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def pip(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 1, "", "ERROR: No matching distribution found\n")

    monkeypatch.setattr("kernel_builder.dependencies_headers.subprocess.run", pip)
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_8", fake_interpreter(purelib=tmp_path), Log())
    assert str(info.value) == (
        "cutlass_3_8: could not install nvidia-cutlass==3.8.0 (ERROR: No matching distribution found); "
        "set CUTLASS_SRC_DIR to a checkout of CUTLASS 3.8.0"
    )


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (version_h("3.9.2"), "3.9.2"),
        ("#define CUTLASS_MAJOR 4\n#define   CUTLASS_MINOR   5\n", "4.5.0"),
        ("#define CUTLASS_MAJOR 4\n", None),
        ("", None),
    ],
)
def test_checkout_version(tmp_path: Path, text: str, version: str | None) -> None:
    write_files(tmp_path, {"include/cutlass/version.h": text})
    assert checkout_version(tmp_path) == version
    assert checkout_version(tmp_path / "missing") is None
