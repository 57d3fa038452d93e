"""Terminal conventions: colour and a live display on a terminal; plain text when piped, with ``NO_COLOR`` (any
non-empty value) or ``--no-color``. The CLI runs in a subprocess on a real pseudo-terminal (``pty``) and on pipes.
"""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from cpu_projects import quick_project, write_tree
from matrix_data import CPU_VARIANT

from kernel_builder.commands.list_variants import MIN_REASON_WIDTH, variants_table
from kernel_builder.common import terminal

REPO = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BROKEN = """
[general]
name = "kb-broken"
version = 1
backends = ["cpu"]
license = "Apache-2.0"
edition = 5

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.k]
backend = "cpu"
src = ["k/k.cpp"]
cuda-capabilities = ["9.0"]
"""


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "TERM", "COLUMNS", "LINES")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return {**env, "TERM": "xterm-256color", **extra}


def on_terminal(
    args: Sequence[str], extra: dict[str, str] | None = None, columns: int = 100
) -> tuple[int, str]:
    """``kernel-builder ARGS`` with its standard output and error on a pseudo-terminal ``columns`` wide: the exit
    status and everything it wrote there."""
    leader, follower = pty.openpty()
    import fcntl
    import struct
    import termios

    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "kernel_builder", *args], stdin=subprocess.DEVNULL, stdout=follower,
        stderr=follower, env=_env(extra or {}), close_fds=True,
    )  # fmt: skip
    os.close(follower)
    chunks: list[bytes] = []
    while True:
        ready, _, _ = select.select([leader], [], [], 120)
        if not ready:
            process.kill()
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: every writer has exited
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return process.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


def piped(args: Sequence[str], extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernel_builder", *args], capture_output=True, text=True, env=_env(extra or {}),
        check=False,
    )  # fmt: skip


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project whose build.toml has one error (a CPU kernel with CUDA capabilities) and its hint."""
    return write_tree(tmp_path_factory.mktemp("broken"), {"build.toml": BROKEN})


def test_errors_are_coloured_on_a_terminal(broken: Path) -> None:
    status, text = on_terminal(["check-config", str(broken)])
    assert status == 2
    assert "\x1b[1;31merror\x1b[0m:" in text, text
    plain = ANSI.sub("", text)
    assert "build.toml:" in plain and "error:" in plain


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (["check-config"], {"NO_COLOR": "1"}),
        (["check-config"], {"NO_COLOR": "no"}),  # any non-empty value
        (["--no-color", "check-config"], {}),  # the global flag, before the command
        (["check-config", "--no-color"], {}),  # and after it
    ],
)
def test_no_colour_when_asked(broken: Path, args: list[str], extra: dict[str, str]) -> None:
    status, text = on_terminal([*args, str(broken)], extra)
    assert status == 2
    assert "error:" in text and not ANSI.search(text), text


def test_an_empty_no_color_keeps_colour(broken: Path) -> None:
    _, text = on_terminal(["check-config", str(broken)], {"NO_COLOR": ""})
    assert ANSI.search(text)


def test_piped_output_is_plain_text(broken: Path) -> None:
    result = piped(["check-config", str(broken)])
    assert result.returncode == 2
    assert "error:" in result.stderr and not ANSI.search(result.stderr + result.stdout)


def test_style_follows_the_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    terminal.configure(no_color=False)
    assert terminal.style("x", "error", Tty()) == "\x1b[1;31mx\x1b[0m"  # type: ignore[arg-type]
    assert terminal.color_labels("a.toml:3: warning: w\n  hint: h", Tty()) == (  # type: ignore[arg-type]
        "\x1b[1ma.toml:3: \x1b[0m\x1b[1;33mwarning\x1b[0m: w\n  \x1b[32mhint:\x1b[0m h"
    )
    terminal.configure(no_color=True)
    try:
        assert terminal.style("x", "error", Tty()) == "x"  # type: ignore[arg-type]
    finally:
        terminal.configure(no_color=False)
    monkeypatch.setenv("TERM", "dumb")
    assert terminal.style("x", "error", Tty()) == "x"  # type: ignore[arg-type]


# --- list-variants: names whole, reasons wrapped ------------------------------------------------------------


def test_list_variants_wraps_reasons_and_keeps_names_on_a_narrow_terminal() -> None:
    status, text = on_terminal(["list-variants", str(REPO / "examples" / "relu"), "--no-probe"], columns=80)
    assert status == 0
    lines = [ANSI.sub("", line) for line in text.replace("\r\n", "\n").splitlines()]
    table = lines[next(i for i, line in enumerate(lines) if line.startswith("variant ")) :]
    assert all(len(line) <= 80 for line in table), table
    names = [line.split()[0] for line in table[1:] if line and not line.startswith(" ")]
    assert CPU_VARIANT in names and "torch213-cxx11-cpu-aarch64-linux" in names
    assert len(table) > len(names) + 1  # some reasons took more than one line
    # Piped, each candidate is one line, its reason whole.
    result = piped(["list-variants", str(REPO / "examples" / "relu"), "--no-probe"])
    assert result.returncode == 0
    rows = result.stdout.splitlines()
    assert len(rows) == len(names) + 1 and any(len(row) > 80 for row in rows)


def test_variants_table_wraps_under_the_reason_column() -> None:
    from types import SimpleNamespace

    long = SimpleNamespace(
        name="torch299-cxx11-cu999-x86_64-linux",
        required=True,
        buildable=False,
        reason="word " * 30,
        cross=False,
    )
    short = SimpleNamespace(name="torch299-cpu", required=False, buildable=True, reason=None, cross=False)
    text = variants_table([long, short], width=90)  # type: ignore[list-item]
    lines = text.splitlines()
    column = lines[0].index("buildable here")
    assert lines[1].startswith("torch299-cxx11-cu999-x86_64-linux  required  no: word")
    continued = [line for line in lines if line.startswith(" ")]
    assert continued and all(line[:column].strip() == "" and line[column] != " " for line in continued)
    assert all(len(line) <= 90 for line in lines)
    # A terminal too narrow for the names keeps them whole, and gives the reason its minimum width.
    narrow = variants_table([long], width=20).splitlines()  # type: ignore[list-item]
    assert narrow[1].startswith(long.name) and max(len(line) for line in narrow) <= column + MIN_REASON_WIDTH


# --- build: a live display on a terminal, plain lines when piped ---------------------------------------------


@pytest.mark.slow
def test_a_serial_build_on_a_terminal_is_live_and_coloured(tmp_path: Path) -> None:
    root = quick_project(tmp_path / "quick")
    status, text = on_terminal(["build", str(root), "--parallel", "1", "--backend", "cpu"])
    assert status == 0, text
    assert "\x1b[?25l" in text  # rich hides the cursor while its live table redraws
    assert ANSI.search(text)
    plain = ANSI.sub("", text)
    assert CPU_VARIANT in plain and "done in" in plain
    # The same build piped (up to date now): stage lines and the table, no escape sequence.
    again = piped(["build", str(root), "--parallel", "1", "--backend", "cpu"])
    assert again.returncode == 0, again.stderr
    assert not ANSI.search(again.stdout + again.stderr)
    assert f"{CPU_VARIANT}: up to date" in again.stderr


def test_the_live_table_never_cuts_a_variant_name() -> None:
    """On a narrow terminal the stage text (a long pip status) is shortened, never the variant's name."""
    import io

    from rich.console import Console

    from kernel_builder.common.progress import RichProgress

    display = RichProgress()
    out = io.StringIO()
    display.console = Console(file=out, width=70, color_system=None)
    long_stage = "downloading torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl: 40 % of 190.6 MB"
    display.stage(CPU_VARIANT, long_stage)
    display.stage("torch214-cxx11-cu130-x86_64-linux", "compiling")
    display.console.print(display.bar.make_tasks_table(display.bar.tasks))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith(CPU_VARIANT + " ") and lines[1].startswith(
        "torch214-cxx11-cu130-x86_64-linux "
    )
    assert all(len(line) <= 70 for line in lines) and "…" in lines[0]
    assert "0/?" in lines[0] and "0:00:00" in lines[0]  # the count and the time keep their place
