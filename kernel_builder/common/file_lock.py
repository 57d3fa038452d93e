"""The one file lock: an advisory ``flock`` on a lock file, held for a ``with`` block.

Every lock of the tool is this one: a project's build (``.kernel-builder/build.lock``), each cached environment
while it is created, a shared source stage. The operating system releases it when its holder dies, so a killed
build never leaves a stale lock behind, and each use opens the file anew, so threads of one process exclude
each other as separate processes do.

Not the ``filelock`` package: it imports ``logging`` and some forty other modules, and a no-op build, which
takes the project's lock, imports nothing it does not use (docs/performance.md).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def exclusive(
    path: Path,
    *,
    waiting: Callable[[], None] | None = None,
    unusable: Callable[[OSError], Exception] | None = None,
    private: bool = False,
) -> Iterator[None]:
    """Hold ``path`` (created, with its directory, when missing) exclusively.

    ``waiting`` is called once when another holder makes this one wait, before it does. ``unusable`` turns the
    error of a lock file that cannot be created or opened into the caller's own; an error raised inside the block
    is never passed to it. ``private``: a lock in a directory that others may reach (a shared stage): only this
    user may read it, and a symbolic link in its place is refused rather than followed.
    """
    flags = os.O_RDWR | os.O_CREAT | (os.O_NOFOLLOW if private else 0)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, flags, 0o600 if private else 0o644)
    except OSError as error:
        if unusable is None:
            raise
        raise unusable(error) from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock
