"""The build state beside the outputs: ``.kernel-builder/`` in the kernel root.

``build/`` only ever holds complete variants (and ``CARD.md``): everything unfinished lives here, so an
interrupted or killed build leaves nothing behind in ``build/``.

- ``tmp/``: variants being assembled, and old variants being replaced; swept at the start of every build.
- ``build.lock``: one build of a project at a time. A second one waits, saying so, and then finds the first
  one's results (usually up to date).
- ``<variant>/cmake-build/``: CMake's build tree. CMake refuses a tree made for another directory (a copied,
  moved or renamed project), and a tree from another version of this tool may be laid out differently: both are
  detected through a stamp and re-created.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kernel_builder import __version__
from kernel_builder.errors import BuildError

STATE_DIR = ".kernel-builder"
BUILD_DIR = "build"
TMP_DIR = "tmp"
LOCK_FILE = "build.lock"
TREE_STAMP = "kernel-builder-tree.json"

#: Temporary directories of earlier versions inside build/: ``.<variant>.<random>`` and ``.<variant>.old.<random>``.
_LEGACY_TEMPORARY = re.compile(r"\.[^/]+?\.(old\.)?[a-z0-9_]{8}")
#: ... and ``.CARD.md.<random>.tmp``, a card being written.
_LEGACY_FILE = re.compile(r"\.CARD\.md\.[a-z0-9_]{8}\.tmp")


def state_dir(root: Path) -> Path:
    return root / STATE_DIR


def staging_dir(root: Path) -> Path:
    return state_dir(root) / TMP_DIR


@contextmanager
def project_lock(root: Path, log: Callable[[str], None]) -> Iterator[None]:
    """Hold ``.kernel-builder/build.lock`` (released by the OS if this process dies); say so when waiting.

    An advisory ``flock`` on the file (its own open file, so threads of one process exclude each other too)."""
    import fcntl

    path = state_dir(root) / LOCK_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise BuildError(
            f"cannot create {exc.filename or path}: {exc.strerror}; the kernel directory must be writable"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another kernel-builder build of {root} to finish (it holds {path})")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def sweep(root: Path, build_root: Path) -> None:
    """Remove what interrupted builds left: ``.kernel-builder/tmp/`` and older versions' hidden temporaries in
    ``build/``. Call with the project lock held (no other build is using them)."""
    shutil.rmtree(staging_dir(root), ignore_errors=True)
    shutil.rmtree(_beside(build_root), ignore_errors=True)
    try:
        entries = list(os.scandir(build_root))
    except OSError:
        return
    for entry in entries:
        if _LEGACY_TEMPORARY.fullmatch(entry.name) and entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        elif _LEGACY_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)


def staging_for(root: Path, build_root: Path) -> Path:
    """The staging directory for ``build_root``'s outputs, on its file system so renames into it are atomic.

    Normally ``.kernel-builder/tmp/``; when ``build/`` is on another file system (a symlink to another disk),
    a directory beside ``build/``.
    """
    staging = staging_dir(root)
    staging.mkdir(parents=True, exist_ok=True)
    build_root.mkdir(parents=True, exist_ok=True)
    if os.stat(staging).st_dev != os.stat(build_root).st_dev:
        staging = _beside(build_root)
        staging.mkdir(parents=True, exist_ok=True)
    return staging


def make_staging(root: Path, build_root: Path, name: str) -> Path:
    """A new empty directory for assembling ``name`` (see :func:`staging_for`)."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"{name}.", dir=staging_for(root, build_root)))


def _beside(build_root: Path) -> Path:
    """The staging directory for a ``build/`` on another file system than the kernel root."""
    return build_root.resolve().parent / f"{STATE_DIR}-{TMP_DIR}"


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _renameat2() -> Callable[..., int] | None:
    import ctypes  # only when a variant is swapped in

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        function: Callable[..., int] = libc.renameat2
    except (OSError, AttributeError):
        return None
    return function


def exchange(a: Path, b: Path) -> bool:
    """Swap two directory entries atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False when the system or
    file system cannot, so the caller falls back to two renames."""
    function = _renameat2()
    if function is None:
        return False
    if function(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def write_atomic(path: Path, data: bytes, staging: Path) -> None:
    """Write ``path`` through a file in ``staging`` (same file system) and a rename: never half-written."""
    staging.mkdir(parents=True, exist_ok=True)
    import tempfile

    fd, tmp = tempfile.mkstemp(prefix=f"{path.name}.", dir=staging)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except OSError as error:
        Path(tmp).unlink(missing_ok=True)
        # Name the file the user knows (build/CARD.md), not the staging file it was written through.
        raise OSError(error.errno, error.strerror, str(path)) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --- CMake build trees -------------------------------------------------------------------------------------


def tree_problem(cmake_build: Path) -> str | None:
    """Why an existing CMake build tree cannot be reused (made elsewhere, or by another version), or None."""
    if not cmake_build.exists():
        return None
    try:
        stamp = json.loads((cmake_build / TREE_STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        stamp = None
    if not isinstance(stamp, dict):
        return "it has no kernel-builder stamp"
    made_in = stamp.get("path")
    if not isinstance(made_in, str) or not _same_directory(made_in, cmake_build):
        return f"it was made in {made_in}"
    if stamp.get("tool") != __version__:
        return f"it was made by kernel-builder {stamp.get('tool')}"
    return None


def _same_directory(recorded: str, current: Path) -> bool:
    """The same directory, also when reached through another path (a symlinked parent)."""
    if recorded == str(current):
        return True
    try:
        return os.path.samefile(recorded, current)
    except OSError:  # the recorded directory is gone: the project was moved
        return False


def stamp_tree(cmake_build: Path) -> None:
    """Record where and by which version ``cmake_build`` was configured."""
    data = json.dumps({"path": str(cmake_build), "tool": __version__}, indent=2) + "\n"
    (cmake_build / TREE_STAMP).write_text(data, encoding="utf-8")
