"""Commands in their own process groups, stopped with the build (``kernel_builder.common.processes``).

A helper Python process plays kernel-builder: it starts ``sh`` running two ``sleep`` processes (a command and its
child, as CMake and Ninja) through :func:`processes.run`, then is interrupted or killed. The sleeps carry a
marker argument, so the test finds them wherever they were re-parented.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from foreground_jobs import restore_ctrl_c

from kernel_builder.common import processes

REPO = Path(__file__).resolve().parent.parent

PLAYER = """
import sys
from kernel_builder.common import processes
try:
    processes.run(["sh", "-c", "sleep 300.{tag} & sleep 301.{tag}; wait"])
except KeyboardInterrupt:
    print("interrupted", flush=True)
    sys.exit(130)
"""


def sleepers(tag: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if cmdline.startswith(b"sleep\0") and tag.encode() in cmdline and state != "Z":
            found.append(int(proc.name))
    return found


def wait_until(condition, seconds: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return bool(condition())


@pytest.fixture
def player() -> Iterator[tuple[subprocess.Popen[str], str]]:
    tag = str(uuid.uuid4().int % 10**9)
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PLAYER.format(tag=tag))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,  # a process group of its own, as a shell gives a foreground job
        preexec_fn=restore_ctrl_c,
    )  # fmt: skip
    assert wait_until(lambda: len(sleepers(tag)) == 2), "the command did not start"
    yield process, tag
    for pid in sleepers(tag):
        os.kill(pid, signal.SIGKILL)
    process.kill()
    process.communicate()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_the_whole_group_stops_with_the_build(player: tuple[subprocess.Popen[str], str], sig: int) -> None:
    """SIGINT: the build stops the group itself. SIGTERM and SIGKILL end the build without cleanup: the
    watchdog sees its pipe close and stops the group."""
    process, tag = player
    process.send_signal(sig)
    out, _ = process.communicate(timeout=30)
    if sig == signal.SIGINT:
        assert process.returncode == 130 and out == "interrupted\n"
    else:
        assert process.returncode == -sig
    assert wait_until(lambda: sleepers(tag) == []), f"still running: {sleepers(tag)}"


def test_a_terminal_ctrl_c_reaches_only_kernel_builder(player: tuple[subprocess.Popen[str], str]) -> None:
    """Commands are not in kernel-builder's process group: a signal to that group (as a terminal sends) reaches
    the build, which then stops them in order."""
    process, tag = player
    assert all(os.getpgid(pid) != process.pid for pid in sleepers(tag))
    os.killpg(process.pid, signal.SIGINT)
    process.communicate(timeout=30)
    assert process.returncode == 130
    assert wait_until(lambda: sleepers(tag) == [])


def test_run_returns_output_and_status() -> None:
    result = processes.run(
        [sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
        capture=True,
    )
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    merged = processes.run(
        [sys.executable, "-c", "import sys; print('a', flush=True); print('b', file=sys.stderr)"],
        capture=True,
        merge_stderr=True,
    )
    assert merged.stdout == "a\nb\n"
    assert processes.GROUPS._running == set()
