"""Facts about this environment's tools, asked once and kept until a file they come from changes.

A build asks the build interpreter where its Torch is, the host compiler and nvcc for their versions, and the
compiler where glibc's libraries are: a dozen short subprocesses, which were most of a no-op rebuild. Their
answers only change when files change — an interpreter, a compiler, a directory packages are installed into —
so each answer is kept in the user cache (``<cache>/facts/<kind>/``) together with the identity (size, time,
inode) of every file and directory it depends on, and is used again only while all of those are unchanged.
Installing or removing a package changes its directory's time; replacing a compiler changes its identity.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: The layout of an entry; another layout (another kernel-builder) is asked afresh.
_FORMAT = 1


def cache_root() -> Path:
    """``$KERNEL_BUILDER_CACHE``, else ``$XDG_CACHE_HOME/kernel-builder``, else ``~/.cache/kernel-builder``."""
    if os.environ.get("KERNEL_BUILDER_CACHE"):
        return Path(os.environ["KERNEL_BUILDER_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-builder"


def identity(path: str | os.PathLike[str]) -> list[Any]:
    """What changes when ``path`` (followed through links) is replaced, rewritten, or appears or goes away;
    for a directory, when an entry is added, removed or renamed."""
    try:
        st = os.stat(path)
    except OSError:
        return [os.fspath(path), None]
    return [os.fspath(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev]


def remembered(
    kind: str,
    key: Sequence[object],
    compute: Callable[[], tuple[Any, Sequence[str | os.PathLike[str]]]],
) -> Any:
    """The answer of ``compute`` for ``key``, asked again only when a file it depends on changed.

    ``compute`` returns the answer (JSON data) and the paths it depends on; their :func:`identity` is kept
    with it and compared at each use. A missing, damaged or read-only cache only costs asking again.
    """
    from kernel_builder import __version__

    text = json.dumps([_FORMAT, __version__, kind, list(key)], default=str)
    entry = cache_root() / "facts" / kind / f"{hashlib.sha256(text.encode()).hexdigest()[:32]}.json"
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
        watched = data["watched"]
        if isinstance(watched, list) and all(identity(w[0]) == w for w in watched):
            return data["value"]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    value, paths = compute()
    record = {"value": value, "watched": [identity(p) for p in paths]}
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        staging = entry.with_name(f".{entry.name}.{os.getpid()}")
        staging.write_text(json.dumps(record), encoding="utf-8")
        os.replace(staging, entry)
    except OSError:
        pass
    return value
