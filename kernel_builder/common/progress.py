"""How ``build`` shows progress: a live table per variant on a terminal, plain lines elsewhere.

The builder only reports events (stage changes, Ninja's ``[n/m]`` steps); this module renders them. On a
terminal it uses ``rich`` (stage, steps, elapsed time per variant), coloured unless colour is off
(``common.terminal``); in logs and CI it prints one line per stage change, which keeps logs readable and
streamed compiler output intact.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class ProgressSink(Protocol):
    """Where a build reports its progress; the CLI decides how it looks."""

    def stage(self, variant: str, stage: str) -> None: ...

    def step(self, variant: str, done: int, total: int, running: str = "") -> None:
        """``done`` of ``total`` compile steps have ended; ``running`` names the one that runs now (if known)."""


class LogProgress:
    """Stage changes as plain lines (compiler output streams through as written)."""

    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log

    def stage(self, variant: str, stage: str) -> None:
        self.log(f"{variant}: {stage}")

    def step(self, variant: str, done: int, total: int, running: str = "") -> None:
        pass


class PlainProgress:
    def __init__(self, log: Callable[[str], None]) -> None:
        self.log = log
        self._started: dict[str, float] = {}

    def stage(self, variant: str, stage: str) -> None:
        start = self._started.setdefault(variant, time.monotonic())
        self.log(f"[{time.monotonic() - start:6.1f} s] {variant}: {stage}")

    def step(self, variant: str, done: int, total: int, running: str = "") -> None:
        if done == total:
            self.log(f"{variant}: [{done}/{total}] compile steps done")
        elif running.startswith("precompiling"):  # the one step that takes long enough to name in a log
            self.log(f"{variant}: [{done}/{total}] {running}")


class RichProgress:
    """One row per variant: its name, ``[n/m]`` steps, elapsed time and stage."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
        from rich.table import Column

        from kernel_builder.common.terminal import color_wanted

        self.console = Console(stderr=True, no_color=not color_wanted(), highlight=False)
        # A variant's name is never cut (it is what --variant takes): its column is as wide as the longest, and
        # the stage, last, is what a narrow terminal shortens.
        self._names = Column(no_wrap=True)
        self._stages = Column(no_wrap=True, overflow="ellipsis")
        self.bar = Progress(
            TextColumn("{task.description}", table_column=self._names),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[stage]}", table_column=self._stages),
            console=self.console,
        )
        self._tasks: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _task(self, variant: str) -> Any:
        with self._lock:
            if variant not in self._tasks:
                self._tasks[variant] = self.bar.add_task(variant, total=None, stage="")
                names = self._names.min_width = max(self._names.min_width or 0, len(variant))
                # What the name, the bar (20), the count, the time and the gaps leave: rich would rather
                # squeeze the bar and the time out of the row than shorten a long stage text.
                self._stages.max_width = max(12, self.console.width - names - 45)
            return self._tasks[variant]

    def log(self, line: str) -> None:
        self.console.print(line, markup=False, highlight=False)

    def stage(self, variant: str, stage: str) -> None:
        task = self._task(variant)
        self.bar.update(task, stage=stage)
        if stage in (
            "built",
            "up to date",
        ):  # a full bar, also when Ninja had nothing (or nothing shown) to do
            total = next(t.total for t in self.bar.tasks if t.id == task) or 1
            self.bar.update(task, total=total, completed=total)
        if stage in ("built", "up to date", "failed"):
            self.bar.stop_task(task)

    def step(self, variant: str, done: int, total: int, running: str = "") -> None:
        task = self._task(variant)
        if running:
            self.bar.update(task, completed=done, total=total, stage=f"compiling: {running}")
        else:
            self.bar.update(task, completed=done, total=total)


@contextmanager
def progress_display(log: Callable[[str], None], *, live: bool = True) -> Iterator[Any]:
    """A live table when standard error is a terminal that can redraw (and ``live``), else plain lines."""
    import os

    from kernel_builder.common.terminal import is_terminal

    if live and is_terminal(sys.stderr) and os.environ.get("TERM") != "dumb":
        try:
            display = RichProgress()
        except ImportError:
            pass
        else:
            with display.bar:
                yield display
            return
    yield PlainProgress(log)
