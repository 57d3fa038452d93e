"""``kernel-builder check-config [PATH]``: where it looks, what it prints, how it exits (docs/build-toml.md)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import MakeProject

from kernel_builder.cli import main

FORMS = Path(__file__).parent / "fixtures" / "forms"

V5_SUMMARY = """\
{path}: ok (edition 5)
  name:      gelu (Python package gelu)
  version:   2
  license:   Apache-2.0
  framework: torch
  backends:  cpu, cuda
  kernels:
    gelu_cuda  cuda   capabilities: 8.0, 9.0a
    gelu_cpu   cpu
"""


@pytest.fixture
def v5(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The golden v5 project in ``tmp_path/gelu``; ``tmp_path`` is the working directory."""
    shutil.copytree(FORMS / "v5", tmp_path / "gelu")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "gelu"


@pytest.mark.parametrize(
    ("argument", "shown"),
    [
        ("gelu", "gelu/build.toml"),
        ("gelu/", "gelu/build.toml"),
        ("gelu/build.toml", "gelu/build.toml"),
        ("./gelu/../gelu", "gelu/build.toml"),
    ],
)
def test_path_is_a_directory_or_the_file(
    v5: Path, capsys: pytest.CaptureFixture[str], argument: str, shown: str
) -> None:
    assert main(["check-config", argument]) == 0
    assert capsys.readouterr() == (V5_SUMMARY.format(path=shown), "")


def test_absolute_path(v5: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(v5)]) == 0
    assert capsys.readouterr().out == V5_SUMMARY.format(path=f"{v5}/build.toml")


def test_no_path_means_the_current_directory(
    v5: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(v5)
    assert main(["check-config"]) == 0
    assert capsys.readouterr() == (V5_SUMMARY.format(path="build.toml"), "")


def test_legacy_summary_and_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(FORMS / "v1", tmp_path / "v1")
    monkeypatch.chdir(tmp_path / "v1")
    assert main(["check-config", "."]) == 0
    out, err = capsys.readouterr()
    assert out == (
        "build.toml: ok (edition 5, read from legacy v1 form)\n"
        "  name:      gelu (Python package gelu)\n"
        "  version:   1\n"
        "  license:   NOASSERTION\n"
        "  framework: torch\n"
        "  backends:  cuda, rocm\n"
        "  kernels:\n"
        "    gelu       cuda   capabilities: 8.0, 9.0\n"
        "    gelu_rocm  rocm   archs: gfx90a, gfx942\n"
    )
    assert err == (
        "build.toml: warning: legacy v1 form (kernel sections have no 'backend' and [general] has no 'backends'); "
        "upgraded to edition 5 in memory. Run 'kernel-builder update-build .' to rewrite the file.\n"
        'build.toml:3: warning: no `license`: metadata will carry "NOASSERTION"\n'
        '  hint: add `license = "<SPDX id>"` to [general] (or run `kernel-builder update-build --license <id>`)\n'
    )


NOARCH = """\
[general]
name = "relu-triton"
version = 0
edition = 5
license = "MIT"
backends = ["cuda", "xpu"]

[torch-noarch]
cuda_capabilities = ["8.0", "9.0"]
"""


def test_summary_of_a_noarch_kernel(make_project: MakeProject, capsys: pytest.CaptureFixture[str]) -> None:
    make_project(NOARCH)
    assert main(["check-config", "kernel"]) == 0
    assert capsys.readouterr() == (
        (
            "kernel/build.toml: ok (edition 5)\n"
            "  name:      relu-triton (Python package relu_triton)\n"
            "  version:   0\n"
            "  license:   MIT\n"
            "  framework: torch-noarch\n"
            "  backends:  cuda, xpu\n"
            "  cuda-capabilities: 8.0, 9.0\n"
            "  kernels:   none\n"
        ),
        "",
    )


MIXED = """\
[general]
name = "act"
version = 1
edition = 5
license = "MIT"
backends = ["cpu", "cuda", "rocm"]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.act_cuda]
backend = "cuda"
depends = ["torch"]
src = ["act/act.cu"]
cuda-minver = "12.8"

[kernel.act_rocm]
backend = "rocm"
depends = ["torch"]
src = ["act/act.hip"]

[kernel.act_metal]
backend = "metal"
depends = ["torch"]
src = ["act/act.metal"]
"""


def test_summary_lists_every_kernel_with_backend_and_capabilities(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(MIXED)
    assert main(["check-config", "kernel"]) == 0
    out, err = capsys.readouterr()
    assert out == (
        "kernel/build.toml: ok (edition 5)\n"
        "  name:      act (Python package act)\n"
        "  version:   1\n"
        "  license:   MIT\n"
        "  framework: torch\n"
        "  backends:  cpu, cuda, rocm\n"
        "  pure-Python variants: torch-cpu\n"
        "  kernels:\n"
        "    act_cuda   cuda   capabilities: default list of each CUDA version; CUDA >= 12.8\n"
        "    act_rocm   rocm   archs: all supported\n"
        "    act_metal  metal    (not built: backend not in backends)\n"
    )
    assert err == (
        "kernel/build.toml:6: note: backend cpu has no kernel sections; it is built as the pure-Python variant "
        "torch-cpu\n"
        "kernel/build.toml:22: warning: [kernel.act_metal] is never built: its backend `metal` is not in "
        "`backends`\n"
        '  hint: add "metal" to `general.backends`, or remove the section\n'
    )


def test_werror_turns_warnings_into_exit_2(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(MIXED)
    assert main(["check-config", "--werror", "kernel"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("\nerror: warnings treated as errors (--werror)\n")


def test_werror_with_only_a_note_passes(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(MIXED.split("\n[kernel.act_metal]")[0])
    assert main(["check-config", "--werror", "kernel"]) == 0


def test_error_exits_2_with_diagnostics_only(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(NOARCH.replace("version = 0", "version = -1"))
    assert main(["check-config", "kernel"]) == 2
    assert capsys.readouterr() == (
        "",
        "kernel/build.toml:3: error: `version` must be 0 or greater\n  hint: write `version = 1`\n",
    )


def test_debug_adds_a_traceback_on_errors(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    make_project(NOARCH.replace("version = 0", "version = -1"))
    assert main(["check-config", "--debug", "kernel"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert (
        "kernel_builder.errors.ConfigError: kernel/build.toml:3: error: `version` must be 0 or greater" in err
    )
    assert err.endswith(
        "kernel/build.toml:3: error: `version` must be 0 or greater\n  hint: write `version = 1`\n"
    )


def test_debug_adds_nothing_without_errors(v5: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", "--debug", "gelu"]) == 0
    assert capsys.readouterr() == (V5_SUMMARY.format(path="gelu/build.toml"), "")


def test_missing_directory_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["check-config", "nowhere"]) == 2
    assert capsys.readouterr() == (
        "",
        (
            "nowhere/build.toml: error: build.toml not found\n"
            f"  hint: looked for {tmp_path}/nowhere/build.toml; pass the kernel directory or its build.toml\n"
        ),
    )


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["check-config", "--no-such-flag"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith("kernel-builder: error: unrecognized arguments: --no-such-flag\n")
