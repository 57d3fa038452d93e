"""The processes a build starts, and how they stop with it.

CMake starts Ninja, which starts compilers: killing only the direct child leaves the rest running. So each
command runs in a session of its own (its own process group), and kernel-builder stops the whole group:

- when the build is interrupted (Ctrl-C, SIGINT): :func:`run` and :func:`popen` callers stop their group
  before the ``KeyboardInterrupt`` goes on, and :func:`stop_all` stops every group still running (the groups
  of other threads, for variants built in parallel);
- when kernel-builder itself dies without cleaning up (SIGKILL, a crash): a small watchdog process holds the
  read end of a pipe that only kernel-builder can write to. The kernel closes the pipe when kernel-builder
  dies, whatever killed it, and the watchdog then stops the groups that were still registered.

A terminal's Ctrl-C reaches only kernel-builder (the groups are not in the terminal's foreground group), so the
compilers stop in one orderly way: SIGTERM to the group, SIGKILL to what is left after a grace period.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

#: Seconds a group gets between SIGTERM and SIGKILL (nvcc removes its temporary files on SIGTERM).
GRACE_SECONDS = 3.0

_WATCHDOG = r"""
import os, signal, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
groups, pending = set(), b""
while True:
    chunk = os.read(0, 4096)
    if not chunk:
        break
    pending += chunk
    *lines, pending = pending.split(b"\n")
    for line in lines:
        if line[:1] == b"+":
            groups.add(int(line[1:]))
        elif line[:1] == b"-":
            groups.discard(int(line[1:]))
def signal_all(sig):
    alive = set()
    for group in groups:
        try:
            os.killpg(group, sig)
            alive.add(group)
        except OSError:
            pass
    return alive
groups = signal_all(signal.SIGTERM)
deadline = time.monotonic() + %(grace)r
while groups and time.monotonic() < deadline:
    time.sleep(0.05)
    groups = signal_all(0)
signal_all(signal.SIGKILL)
"""


class _Groups:
    """The process groups this process started and has not seen end (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: set[int] = set()
        self._pipe: int | None = None
        self._watchdog_pid: int | None = None
        self.stopping = threading.Event()

    def _ensure_watchdog(self) -> None:
        if self._pipe is not None and self._watchdog_pid is not None:
            return
        read_end, write_end = os.pipe()  # both close-on-exec: no command inherits the write end
        try:
            actions = [(os.POSIX_SPAWN_DUP2, read_end, 0)]
            devnull = os.open(os.devnull, os.O_RDWR)
            actions += [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
            script = _WATCHDOG % {"grace": GRACE_SECONDS}
            # Its own session: a terminal's Ctrl-C or hang-up does not reach it. Never waited for: it ends when
            # this process does (the pipe closes), so it is no child to reap while this process lives.
            self._watchdog_pid = os.posix_spawn(
                sys.executable, [sys.executable, "-S", "-I", "-c", script], dict(os.environ),
                file_actions=actions, setsid=True,
            )  # fmt: skip
            os.close(devnull)
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self._pipe = write_end

    def _tell(self, line: str) -> None:
        if self._pipe is not None:
            try:
                os.write(self._pipe, line.encode() + b"\n")
            except OSError:  # the watchdog is gone (killed by someone): cleanup on Ctrl-C still works
                pass

    def spawn(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """``subprocess.Popen`` in a new session, registered until :meth:`ended`."""
        with self._lock:
            if self.stopping.is_set():
                raise KeyboardInterrupt
            self._ensure_watchdog()
            process: subprocess.Popen[Any] = subprocess.Popen(list(argv), start_new_session=True, **kwargs)
            self._running.add(process.pid)
            self._tell(f"+{process.pid}")
        return process

    def ended(self, process: subprocess.Popen[Any]) -> None:
        with self._lock:
            if process.pid in self._running:
                self._running.discard(process.pid)
                self._tell(f"-{process.pid}")

    def stop(self, process: subprocess.Popen[Any]) -> None:
        """SIGTERM to the process's group, SIGKILL after the grace period; waits for the process."""
        _signal_group(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        # Its children may outlive it (a compiler Ninja started): whatever is left of the group goes too.
        while _group_alive(process.pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        _signal_group(process.pid, signal.SIGKILL)
        process.wait()
        self.ended(process)

    def stop_all(self) -> None:
        """Stop every registered group (an interrupted build with variants in other threads)."""
        self.stopping.set()
        with self._lock:
            groups = sorted(self._running)
        for group in groups:
            _signal_group(group, signal.SIGTERM)
        deadline = time.monotonic() + GRACE_SECONDS
        while any(_group_alive(g) for g in groups) and time.monotonic() < deadline:
            time.sleep(0.02)
        for group in groups:
            _signal_group(group, signal.SIGKILL)

    def reset(self) -> None:
        """After an interrupted build in a long-lived process (tests): new commands may start again."""
        self.stopping.clear()


def _signal_group(group: int, sig: int) -> None:
    try:
        os.killpg(group, sig)
    except OSError:  # already gone
        pass


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except OSError:
        return False
    return True


GROUPS = _Groups()


def popen(argv: Sequence[str | os.PathLike[str]], **kwargs: Any) -> subprocess.Popen[Any]:
    """Start a command in its own process group. The caller must end with :func:`finish` (in ``finally``)."""
    return GROUPS.spawn([str(a) for a in argv], **kwargs)


def finish(process: subprocess.Popen[Any], *, interrupted: bool) -> None:
    """After :func:`popen`: stop the group if the caller is leaving early, else just unregister it."""
    if interrupted or process.poll() is None:
        GROUPS.stop(process)
    else:
        GROUPS.ended(process)


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    capture: bool = False,
    merge_stderr: bool = False,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
) -> subprocess.CompletedProcess[str]:
    """Run a command to its end in its own process group; an interrupt stops the whole group.

    ``capture``: stdout and stderr are returned (``merge_stderr``: as one stream in ``stdout``); otherwise they
    go where this process's go. Text is decoded with replacement, never failing on a compiler's bytes.
    """
    output = subprocess.PIPE if capture else None
    errors = subprocess.STDOUT if capture and merge_stderr else output
    process = popen(
        argv, cwd=cwd, env=None if env is None else dict(env), stdin=stdin, stdout=output, stderr=errors,
        text=True, errors="replace",
    )  # fmt: skip
    interrupted = True
    try:
        out, err = process.communicate()
        interrupted = False
    finally:
        finish(process, interrupted=interrupted)
    return subprocess.CompletedProcess(process.args, process.returncode, out or "", err or "")
