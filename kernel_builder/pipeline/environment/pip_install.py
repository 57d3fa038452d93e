"""pip installing into a build environment, with what it is doing shown as it goes.

Creating an environment downloads and unpacks Torch (hundreds of megabytes) and its dependencies: minutes in
which a quiet pip says nothing. pip's own lines say which package it collects, which file it downloads and how
big it is, and (pip 24.1 and newer, ``--progress-bar raw``) how many bytes have arrived; they are read as they
come and turned into short status texts: ``downloading torch-2.13.0+cpu-cp311-…whl (190.6 MB): 40 %``.

The status goes to ``status`` (a live display's row, or a line per change in a log): a download reports every
tenth of its size, so a log gets a handful of lines per file. pip's errors are kept for the failure message.

The pip that runs is the one of the interpreter running kernel-builder, pointed at the environment with
``--python`` (pip 22.3 and newer), when it is new enough for byte counts: a new venv's own pip is the one
bundled with its Python (23.2 for 3.11), which has none. Both read the same configuration (pip's files and
``PIP_*`` variables), so they install the same files.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

from kernel_builder.common import processes

#: The first pip with ``--progress-bar raw`` (machine-readable ``Progress N of M`` lines).
RAW_PROGRESS = (24, 1)
#: A download reports its progress each time this share of it has arrived.
STEP_PERCENT = 10
#: Seconds pip may say nothing (unpacking Torch takes minutes on a busy machine) before the status is repeated
#: with the time spent on it, so that a log shows the build is alive.
HEARTBEAT = 15.0


def _host_pip() -> tuple[int, ...] | None:
    """The version of the pip installed beside this interpreter, or None; read from its metadata, not run."""
    from importlib import metadata

    try:
        version = metadata.version("pip")
    except metadata.PackageNotFoundError:
        return None
    parts: list[int] = []
    for part in version.split(".")[:2]:
        if not part.isdigit():
            break
        parts.append(int(part))
    return tuple(parts)


def pip_command(python: Path) -> list[str]:
    """``pip install`` for the environment whose interpreter is ``python``, with byte counts where pip has them."""
    import sys

    host = _host_pip()
    if host is not None and host >= RAW_PROGRESS:
        return [sys.executable, "-m", "pip", "--python", str(python), "install", "--progress-bar", "raw"]
    return [str(python), "-m", "pip", "install"]


def _size(total: int) -> str:
    """Bytes as pip writes sizes (``190.6 MB``)."""
    value = float(total)
    for unit in ("bytes", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{total} bytes"  # pragma: no cover


def _file_name(text: str) -> str:
    """``torch-2.13.0+cpu-….whl (190.6 MB)`` from pip's ``<url or path> (<size>)``: the file's name, decoded."""
    where, _, size = text.partition(" (")
    name = unquote(where.rstrip("/").rsplit("/", 1)[-1])
    return f"{name} ({size}" if size else name


#: pip's lines that name a file it fetches (a download, its HTTP cache, a local file), and what they say here.
_FETCHING = {
    "Downloading ": "downloading",
    "Using cached ": "using cached",
    "Processing ": "using the local file",
}


@dataclass
class PipOutput:
    """Reads pip's output line by line: status texts for the user, errors for the failure message."""

    status: Callable[[str], None]
    errors: list[str] = field(default_factory=list)
    tail: list[str] = field(default_factory=list)
    _file: str = ""
    _shown_percent: int = -1
    _current: str = ""
    _since: float = 0.0

    def show(self, text: str) -> None:
        import time

        self._current, self._since = text, time.monotonic()
        self.status(text)

    def heartbeat(self) -> None:
        """pip has been quiet for a while: the last status again, with how long it has lasted."""
        import time

        if self._current:
            self.status(f"{self._current}: {time.monotonic() - self._since:.0f} s so far")

    def line(self, text: str) -> None:
        text = text.rstrip()
        if not text.strip():
            return
        self.tail = [*self.tail[-19:], text]
        stripped = text.strip()
        if stripped.startswith("ERROR"):
            self.errors.append(stripped)
        elif stripped.startswith("Progress ") and self._file:
            self._progress(stripped)
        elif stripped.startswith("Collecting "):
            self.show(f"collecting {stripped.removeprefix('Collecting ')}")
        elif stripped.startswith(tuple(_FETCHING)):
            verb = next(v for v in _FETCHING if stripped.startswith(v))
            self._file = _file_name(stripped.removeprefix(verb))
            self._shown_percent = -1
            self.show(f"{_FETCHING[verb]} {self._file}")
        elif stripped.startswith("Installing collected packages: "):
            names = [n.strip() for n in stripped.split(": ", 1)[1].split(",") if n.strip()]
            shown = ", ".join(names[:4]) + (f", … ({len(names)} in all)" if len(names) > 4 else "")
            self.show(f"installing {shown}")
        elif stripped.startswith("Successfully installed "):
            count = len(stripped.removeprefix("Successfully installed ").split())
            self.show(f"installed {count} package{'s' if count != 1 else ''}")

    def _progress(self, text: str) -> None:
        words = text.split()  # "Progress N of M"
        if len(words) != 4 or not (words[1].isdigit() and words[3].isdigit()) or int(words[3]) == 0:
            return
        done, total = int(words[1]), int(words[3])
        percent = min(100, done * 100 // total) // STEP_PERCENT * STEP_PERCENT
        if percent > self._shown_percent:
            self._shown_percent = percent
            name = self._file.split(" (", 1)[0]
            self.show(f"downloading {name}: {percent} % of {_size(total)}")


@dataclass(frozen=True)
class PipResult:
    returncode: int
    errors: tuple[str, ...]  # pip's ``ERROR:`` lines
    tail: tuple[str, ...]  # its last lines, for a failure without an ``ERROR:`` line

    @property
    def detail(self) -> str:
        """The line that says why pip failed."""
        if self.errors:
            return self.errors[-1]
        return self.tail[-1] if self.tail else ""


def run_pip(argv: Sequence[str], status: Callable[[str], None]) -> PipResult:
    """Run ``argv`` (a pip command), its output read as it comes; stops with the build (its process group)."""
    import queue
    import threading

    reader = PipOutput(status)
    process = processes.popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        errors="replace", env=_environment(),
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:  # a thread, so that a quiet pip can be noticed
        assert process.stdout is not None
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    interrupted = True
    try:
        threading.Thread(target=pump, name="pip-output", daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=HEARTBEAT)
            except queue.Empty:
                reader.heartbeat()
                continue
            if line is None:
                break
            reader.line(line)
        process.wait()
        interrupted = False
    finally:
        processes.finish(process, interrupted=interrupted)
        if process.stdout is not None:
            process.stdout.close()
    return PipResult(process.returncode, tuple(reader.errors), tuple(reader.tail))


def _environment() -> dict[str, str]:
    """This process's environment, with pip's lines unbuffered (they are read as they come) and uncoloured."""
    import os

    return {**os.environ, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "PIP_NO_COLOR": "1"}


def install(
    python: Path,
    requirements: Sequence[str],
    *,
    index_url: str | None = None,
    status: Callable[[str], None],
) -> PipResult:
    """``pip install requirements`` into the environment of ``python`` (``index_url`` as an extra index)."""
    argv = [*pip_command(python), "--disable-pip-version-check", *requirements]
    if index_url:
        argv += ["--extra-index-url", index_url]
    return run_pip(argv, status)
