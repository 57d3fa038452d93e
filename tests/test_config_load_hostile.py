"""Malformed and hostile build.toml files: one positioned error, exit 2, no traceback, no hang, file untouched.

Each case runs through the three commands that read build.toml first: ``check-config``, ``build`` (which
stops at the config stage) and ``update-build``. Cases that used to hang run in a subprocess with a timeout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel_builder.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "relu"
COMMANDS = [["check-config"], ["build"], ["update-build", "--license", "MIT"]]
COMMAND_IDS = ["check-config", "build", "update-build"]


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    """A copy of examples/relu without its build output."""
    root = tmp_path / "relu"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", "__pycache__"))
    return root


def run(command: list[str], path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main([*command, str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, err


def run_subprocess(command: list[str], path: Path, timeout: float = 30) -> tuple[int, str]:
    """The CLI in a child process: a hang fails the test after ``timeout`` seconds instead of stalling it."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "kernel_builder", *command, str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"kernel-builder {command[0]} did not finish within {timeout} s")
    assert "Traceback" not in result.stdout + result.stderr
    return result.returncode, result.stderr


def write(kernel: Path, text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    (kernel / "build.toml").write_bytes(data)
    return data


def expect_refused(code: int, err: str, fragment: str, kernel: Path, before: bytes | None = None) -> None:
    assert code == 2, err
    assert f"{kernel}/build.toml" in err
    assert fragment in err, err
    if before is not None:
        assert (kernel / "build.toml").read_bytes() == before


GOOD = (EXAMPLE / "build.toml").read_text()


# --- reading the file -----------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_non_utf8_file(kernel: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    before = write(kernel, b"\xff\xfe[general]\n")
    code, err = run(command, kernel, capsys)
    expect_refused(code, err, "error: cannot read build.toml: not valid UTF-8", kernel, before)


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_build_toml_linked_to_dev_zero(kernel: Path, command: list[str]) -> None:
    (kernel / "build.toml").unlink()
    (kernel / "build.toml").symlink_to("/dev/zero")
    code, err = run_subprocess(command, kernel)
    expect_refused(
        code, err, "error: cannot read build.toml: it is a character device, not a regular file", kernel
    )
    assert (kernel / "build.toml").is_symlink()


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_build_toml_that_is_a_fifo(kernel: Path, command: list[str]) -> None:
    (kernel / "build.toml").unlink()
    os.mkfifo(kernel / "build.toml")
    code, err = run_subprocess(command, kernel)
    expect_refused(code, err, "error: cannot read build.toml: it is a FIFO, not a regular file", kernel)


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_build_toml_over_the_size_limit(kernel: Path, command: list[str]) -> None:
    with open(kernel / "build.toml", "wb") as handle:
        handle.write(GOOD.encode())
        handle.truncate(64 << 20)  # 64 MiB (sparse: cheap to make)
    code, err = run_subprocess(command, kernel)
    expect_refused(
        code, err, "error: cannot read build.toml: it is larger than 1 MiB (67108864 bytes)", kernel
    )
    assert (kernel / "build.toml").stat().st_size == 64 << 20


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_a_hundred_thousand_kernel_sections(kernel: Path, command: list[str]) -> None:
    text = GOOD + "".join(f'[kernel.k{i}]\nbackend = "cpu"\n' for i in range(100_000))
    before = write(kernel, text)
    code, err = run_subprocess(command, kernel)
    expect_refused(code, err, "it is larger than 1 MiB", kernel, before)


def test_path_argument_longer_than_the_file_system_allows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = tmp_path / ("k" * 300)
    for command in COMMANDS:
        code = main([*command, str(long)])
        out, err = capsys.readouterr()
        assert code == 2 and "Traceback" not in out + err
        assert f"{long}/build.toml: error: cannot read build.toml: " in err
        assert "File name too long" in err


# --- nesting --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    ["[" * 1000 + "]" * 1000, "{a = " * 1000 + "1" + "}" * 1000, "[" * 1000],
    ids=["arrays", "inline-tables", "unclosed"],
)
@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_nesting_beyond_the_limit(
    kernel: Path, command: list[str], value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = write(kernel, GOOD + f"\n[kernel.deep]\nx = {value}\n")
    line = GOOD.count("\n") + 3
    code, err = run(command, kernel, capsys)
    expect_refused(code, err, f"build.toml:{line}:", kernel, before)
    assert "error: values are nested more than 16 levels deep" in err


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_dotted_keys_beyond_the_nesting_limit(
    kernel: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = write(kernel, GOOD + "\n[kernel.deep]\n" + ".".join(["a"] * 1000) + " = 1\n")
    code, err = run(command, kernel, capsys)
    expect_refused(code, err, "error: tables are nested more than 16 levels deep", kernel, before)


# --- values ---------------------------------------------------------------------------------------------


def _with(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


def _line(text: str, fragment: str) -> int:
    return text[: text.index(fragment)].count("\n") + 1


CASES = {
    "version-overflow": (
        _with("version = 1", "version = 99999999999999999999999"),
        "version = 9",
        "`version` must be between 0 and 2147483647",
    ),
    "newline-in-repo-id": (
        _with('repo-id = "kernel-builder-examples/relu"', 'repo-id = "kernel-builder-examples/relu\\n"'),
        "repo-id =",
        "[general.hub] `repo-id` contains a control character (U+000A)",
    ),
    "newline-in-minver": (
        _with(
            'src = ["torch-ext/torch_binding.cpp"', 'minver = "2.12\\n"\nsrc = ["torch-ext/torch_binding.cpp"'
        ),
        "minver =",
        "[torch] `minver` contains a control character (U+000A)",
    ),
    "newline-in-section-name": (
        _with("[kernel.relu_cpu]", '[kernel."relu\\ncpu"]'),
        '[kernel."relu',
        "the key `relu\\ncpu` contains a control character (U+000A)",
    ),
    "escape-in-flag": (
        _with(
            'src = ["relu_cpu/relu_cpu.cpp"]',
            'src = ["relu_cpu/relu_cpu.cpp"]\ncxx-flags = ["-O2\\u001b[31m"]',
        ),
        "cxx-flags",
        "[kernel.relu_cpu] `cxx-flags` contains a control character (U+001B)",
    ),
    "semicolon-in-flag": (
        _with(
            'src = ["relu_cpu/relu_cpu.cpp"]', 'src = ["relu_cpu/relu_cpu.cpp"]\ncxx-flags = ["-DLIST=a;b"]'
        ),
        "cxx-flags",
        "flag `-DLIST=a;b` in [kernel.relu_cpu] `cxx-flags` contains `;`, which CMake cannot pass inside one flag",
    ),
    "semicolon-in-source": (
        _with('src = ["relu_cpu/relu_cpu.cpp"]', 'src = ["relu_cpu/relu;cpu.cpp"]'),
        'src = ["relu_cpu/relu;cpu.cpp"]',
        "path `relu_cpu/relu;cpu.cpp` in [kernel.relu_cpu] `src` contains `;`, which CMake cannot pass inside one path",
    ),
    "dollar-in-source": (
        _with('src = ["relu_cpu/relu_cpu.cpp"]', 'src = ["relu_cpu/a$(b).cpp"]'),
        'src = ["relu_cpu/a$(b).cpp"]',
        "path `relu_cpu/a$(b).cpp` in [kernel.relu_cpu] `src` contains `$(`, which CMake passes on as a build-tool variable reference (Ninja then stops with `bad $-escape`)",
    ),
    "long-section-name": (
        _with("[kernel.relu_cpu]", f"[kernel.{'k' * 200}]"),
        "[kernel.kkk",
        "the kernel section name `" + "k" * 200 + "` is longer than 64 characters",
    ),
    "long-name": (
        _with('name = "relu"', f'name = "{"r" * 300}"'),
        'name = "rrr',
        "[general] `name` is longer than 64 characters",
    ),
    "long-source-path": (
        _with('src = ["relu_cpu/relu_cpu.cpp"]', f'src = ["relu_cpu/{"x" * 300}.cpp"]'),
        f'src = ["relu_cpu/{"x" * 300}',
        "longer than the file system allows",
    ),
    "long-string": (
        _with('license = "Apache-2.0"', f'license = "{"x" * 5000}"'),
        'license = "xxx',
        "[general] `license` is longer than 4096 characters",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_values_are_checked_at_their_line(
    kernel: Path, command: list[str], case: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text, at, message = CASES[case]
    before = write(kernel, text)
    line = _line(text, at)
    code, err = run(command, kernel, capsys)
    expect_refused(code, err, f"build.toml:{line}:", kernel, before)
    assert message in err


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_syntax_error_at_the_end_of_the_document_has_a_line(
    kernel: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    text = GOOD + "\n[kernel.tail]\nsrc = ["
    write(kernel, text)
    code, err = run(command, kernel, capsys)
    expect_refused(
        code, err, f"build.toml:{text.count(chr(10)) + 1}:{len('src = [') + 1}: error: invalid TOML", kernel
    )


# --- sources the user cannot read -------------------------------------------------------------------------


@pytest.fixture
def shared_kernel() -> Iterator[Path]:
    """A copy of examples/relu in a directory every user can enter (for a run as another user)."""
    base = Path(tempfile.mkdtemp(prefix="kb-shared-"))
    base.chmod(0o755)
    root = base / "relu"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", "__pycache__"))
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    try:
        yield root
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("command", COMMANDS, ids=COMMAND_IDS)
def test_source_inside_an_unreadable_directory(shared_kernel: Path, command: list[str]) -> None:
    (shared_kernel / "relu_cpu").chmod(0)
    before = (shared_kernel / "build.toml").read_bytes()
    argv = [sys.executable, "-m", "kernel_builder", *command, str(shared_kernel)]
    if os.geteuid() == 0:  # root reads every directory: run as an unprivileged user instead
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop privileges")
        argv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
        reach = subprocess.run(
            [*argv[:4], sys.executable, "-c", "import kernel_builder"], capture_output=True
        )
        if reach.returncode != 0:  # e.g. a checkout under a `mktemp -d` directory (mode 0700)
            pytest.skip(
                "the unprivileged user cannot import this checkout's kernel_builder (a parent is 0700)"
            )
    env = {
        **os.environ,
        "HOME": str(shared_kernel.parent),
        "XDG_CACHE_HOME": str(shared_kernel.parent / ".cache"),
    }
    result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
    err = result.stderr
    assert "Traceback" not in result.stdout + err
    line = _line(GOOD, 'src = ["relu_cpu/relu_cpu.cpp"]')
    expect_refused(
        result.returncode,
        err,
        f"build.toml:{line}: error: source file `relu_cpu/relu_cpu.cpp`",
        shared_kernel,
        before,
    )
    assert "Permission denied" in err


# --- update-build -----------------------------------------------------------------------------------------

DOTTED_V4 = """\
general.name = "gelu"
general.version = 1
general.license = "Apache-2.0"
general.backends = ["cpu"]
torch.src = ["torch-ext/torch_binding.cpp"]
kernel.gelu_cpu.backend = "cpu"
kernel.gelu_cpu.src = ["gelu_cpu/gelu.cpp"]
kernel.gelu_cpu.depends = ["torch"]
"""


def test_update_build_rewrites_a_file_written_with_dotted_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_builder.config import load_project

    root = tmp_path / "gelu"
    for rel in ("torch-ext/torch_binding.cpp", "gelu_cpu/gelu.cpp", "torch-ext/gelu/__init__.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    (root / "build.toml").write_text(DOTTED_V4)
    before = load_project(root).project.config
    assert main(["update-build", str(root)]) == 0, capsys.readouterr().err
    after = load_project(root).project
    assert after.form == 5 and after.config == before
    text = (root / "build.toml").read_text()
    assert "general.edition = 5" in text or "edition = 5" in text
    assert "kernel.gelu_cpu.backend" in text  # the user's layout is kept
