"""One lock file per cached environment (isolated, target or emulation root), so parallel builds and processes
create each one once. Its own module: every kind of cached environment takes it, and none of them may import
another's module for it (the import-graph test forbids the cycle that would make)."""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Serialises creation of one environment between parallel builds and processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
