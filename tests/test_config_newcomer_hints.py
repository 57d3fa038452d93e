"""The hints a newcomer's first mistakes in ``build.toml`` get: a one-letter typo of a key (``scr``), a source
file name that is almost right, and a CPU kernel without ``src`` (the example must be a C++ file, not ``.cu``);
and ``build`` run in a subdirectory of the project finds the project's build.toml."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernel_builder.config import load_project
from kernel_builder.config.schema import one_typo_apart
from kernel_builder.errors import ConfigError

BUILD_TOML = """\
[general]
name = "my-relu"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu"]

[torch]
src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]

[kernel.my_relu_cpu]
backend = "cpu"
depends = ["torch"]
src = ["my_relu_cpu/relu_cpu.cpp"]
"""
FILES = ("torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h", "my_relu_cpu/relu_cpu.cpp")


def project(tmp_path: Path, text: str = BUILD_TOML) -> Path:
    root = tmp_path / "my-relu"
    for name in FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("// x\n", encoding="utf-8")
    (root / "torch-ext" / "my_relu").mkdir()
    (root / "torch-ext" / "my_relu" / "__init__.py").write_text("", encoding="utf-8")
    (root / "build.toml").write_text(text, encoding="utf-8")
    return root


def errors(root: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_project(root)
    return str(info.value)


def test_one_typo_apart() -> None:
    assert one_typo_apart("scr", "src") and one_typo_apart("srcs", "src") and one_typo_apart("sr", "src")
    assert one_typo_apart("sxc", "src")
    assert (
        not one_typo_apart("src", "src")
        and one_typo_apart("rsc", "src")
        and not one_typo_apart("csr", "src")
        and not one_typo_apart("s", "src")
    )


def test_a_transposed_key_gets_did_you_mean(tmp_path: Path) -> None:
    root = project(tmp_path, BUILD_TOML.replace('src = ["my_relu_cpu', 'scr = ["my_relu_cpu'))
    text = errors(root)
    assert "unknown key `scr` in [kernel.my_relu_cpu]\n  hint: did you mean `src`?" in text, text


def test_a_missing_source_suggests_the_file_that_exists(tmp_path: Path) -> None:
    root = project(tmp_path, BUILD_TOML.replace("my_relu_cpu/relu_cpu.cpp", "my_relu_cpu/relu.cpp"))
    text = errors(root)
    assert "source file `my_relu_cpu/relu.cpp` in [kernel.my_relu_cpu] `src` does not exist" in text
    assert "hint: did you mean `my_relu_cpu/relu_cpu.cpp`?" in text, text


def test_a_missing_source_with_nothing_close_keeps_the_plain_hint(tmp_path: Path) -> None:
    root = project(tmp_path, BUILD_TOML.replace("my_relu_cpu/relu_cpu.cpp", "my_relu_cpu/zzzz.cpp"))
    assert "did you mean" not in errors(root)


def test_a_cpu_kernel_without_src_gets_a_cpp_example(tmp_path: Path) -> None:
    root = project(tmp_path, BUILD_TOML.replace('src = ["my_relu_cpu/relu_cpu.cpp"]\n', ""))
    text = errors(root)
    # The kernel's directory has a source: that is the example.
    assert 'hint: add `src = ["my_relu_cpu/relu_cpu.cpp"]`' in text, text
    (root / "my_relu_cpu" / "relu_cpu.cpp").unlink()
    (root / "my_relu_cpu").rmdir()
    text = errors(root)
    assert 'hint: add `src = ["my_relu_cpu/my_relu_cpu.cpp"]`' in text, text
    assert ".cu" not in text


def test_commands_in_a_subdirectory_find_the_project(tmp_path: Path) -> None:
    root = project(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "kernel_builder", "check-config"], cwd=root / "my_relu_cpu", capture_output=True,
        text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("../build.toml: ok"), result.stdout
    assert f"note: using the kernel project at .. ({root / 'build.toml'})" in result.stderr
    # Outside any project, the message is the usual one.
    outside = subprocess.run(
        [sys.executable, "-m", "kernel_builder", "check-config"], cwd=tmp_path, capture_output=True, text=True,
        check=False,
    )  # fmt: skip
    assert outside.returncode == 2 and "build.toml not found" in outside.stderr
