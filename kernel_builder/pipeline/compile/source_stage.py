"""The kernel's sources at one path that every checkout shares, so that sccache's nvcc entries are found from any.

sccache splits an nvcc call into its steps and hashes each step's arguments as they are. nvcc hands two of them,
cudafe++ and cicc (the device front end), the source's real path (``--orig_src_path_name``: absolute, with
symlinks resolved), so with sources in the checkout those two steps miss in every other checkout, and they are
most of a ``.cu`` file's compile time. A symlink at a fixed path does not help (nvcc resolves it); a real
directory does. For a CUDA variant built through sccache, the generated project therefore reaches the
sources through a stage: ``<prefix>/<kernel>-<variant>/``, a mirror of the kernel's tree made of hard links to
its files (copies where the file system refuses links), brought up to date before every configure and
compile. The path depends only on the kernel's name and the variant, so it is the same in every checkout and
on every machine, and it does not move when a file is edited (a path derived from the tree's content would
make every file's device front end miss after any edit).

Two checkouts of one kernel share a stage, so a build holds the stage's lock (``flock``) from the moment it
brings the stage up to date until its compile ends; a second build of the same kernel and variant waits.
Hard links share the checkout's modification times and copies keep them, so Ninja sees each file as it is in
the checkout that is building. ccache needs none of this: it treats an nvcc call as one compile and rewrites
paths under the project itself (``compiler_cache``).

The prefix is ``/tmp/kernel-builder-<uid>-sources`` (``KERNEL_BUILDER_SOURCE_STAGE`` names another, or ``off``
for none): fixed, so that machines sharing a cache agree on it, and per user, because a directory in ``/tmp``
that another user could have made is never used (nor one that others may write to).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.common.file_lock import exclusive
from kernel_builder.common.safe_fs import scan_tree

ENV = "KERNEL_BUILDER_SOURCE_STAGE"
#: The most files a stage mirrors; a larger tree is compiled in place (sccache then misses as before).
MAX_FILES = 20000
#: Top-level entries of the kernel root that hold no sources: build output and the editor's link.
_NOT_SOURCES = frozenset({"build", "result", "compile_commands.json"})
_OFF = frozenset({"off", "0", "no", "none", "false"})
_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,80}")


def prefix() -> Path:
    """The directory that holds the stages."""
    given = os.environ.get(ENV, "").strip()
    return Path(given).expanduser() if given else Path(f"/tmp/kernel-builder-{os.getuid()}-sources")


def stage_path(kernel: str, variant: str) -> Path:
    """The stage of ``variant`` of the kernel named ``kernel``: the same wherever the kernel is checked out."""
    name = f"{kernel}-{variant}"
    if not _PLAIN_NAME.fullmatch(name):
        name = hashlib.sha256(name.encode()).hexdigest()[:32]
    return prefix() / name


def _skip(rel: str, is_dir: bool) -> bool:
    if "/" not in rel and rel in _NOT_SOURCES:
        return True
    return is_dir and (rel.rsplit("/", 1)[-1].startswith(".") or rel.endswith("__pycache__"))


def source_files(root: Path) -> dict[str, Path]:
    """The files the stage mirrors: every file of the kernel's tree, links followed, except build output and
    hidden directories (``.git``, ``.kernel-builder``)."""
    return scan_tree(root, skip=_skip, follow=lambda rel, target: True).files


class StageError(Exception):
    """The stage cannot be used; the message says why (the build then compiles in place)."""


def _own_directory(path: Path, *, private: bool) -> None:
    """Make ``path`` (a directory of this user, not a link, not writable by others) or refuse it."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700 if private else 0o755)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise StageError(f"{path} is not a directory")
    if info.st_uid != os.getuid():
        raise StageError(f"{path} belongs to another user")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise StageError(f"{path} is writable by other users")


def _same(source: os.stat_result, staged: os.stat_result) -> bool:
    if (source.st_dev, source.st_ino) == (staged.st_dev, staged.st_ino):
        return True  # the hard link to this very file
    # A copy (no hard link across file systems) keeps the file's size and modification time.
    return (
        staged.st_nlink == 1 and source.st_size == staged.st_size and source.st_mtime_ns == staged.st_mtime_ns
    )


def _place(source: Path, target: Path) -> None:
    """Put ``source`` at ``target`` by replacing the directory entry: a staged file is a hard link to a
    checkout's file, so it is never written through."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    temporary.unlink(missing_ok=True)
    try:
        os.link(source, temporary)
    except OSError:
        shutil.copy2(source, temporary)
    os.replace(temporary, target)


def synchronise(stage: Path, files: dict[str, Path]) -> int:
    """Make ``stage`` hold exactly ``files`` (relative path → the file in the checkout); the number changed."""
    changed = 0
    present = scan_tree(stage).files
    for rel in sorted(set(present) - set(files)):
        (stage / rel).unlink(missing_ok=True)
        changed += 1
    for rel, source in sorted(files.items()):
        target = stage / rel
        try:
            if rel in present and _same(os.stat(source), os.lstat(target)):
                continue
        except OSError:
            pass
        _place(source, target)
        changed += 1
    return changed


@dataclass(frozen=True)
class SourceStage:
    """A kernel's stage: ``path`` mirrors ``root``."""

    root: Path
    path: Path

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def with_originals(self, files: list[str]) -> list[str]:
        """``files`` and, for each one inside the stage, the checkout's file it mirrors: an editor that replaces
        a source (a new inode) leaves the stage's hard link as it was until the next sync, so a no-op check that
        watched the stage alone would miss the edit."""
        base = str(self.path.absolute()) + os.sep
        extra = {str(self.root.absolute() / name[len(base) :]) for name in files if name.startswith(base)}
        return sorted(set(files) | extra)

    @contextlib.contextmanager
    def held(self, log: Callable[[str], None]) -> Iterator[int]:
        """Hold the stage's lock and bring it up to date with the checkout; yields the number of files changed.

        Raises :class:`StageError` when the stage cannot be used (the caller compiles in place)."""

        def unusable(error: OSError) -> StageError:
            return StageError(f"{self.path.parent}: {error.strerror or error}")

        try:
            _own_directory(self.path.parent, private=True)
        except OSError as error:
            raise unusable(error) from None

        def waiting() -> None:
            log(f"waiting for {self.path}: another build of this kernel and variant is using it")

        with exclusive(self.lock_path, waiting=waiting, unusable=unusable, private=True):
            files = source_files(self.root)
            if len(files) > MAX_FILES:
                raise StageError(
                    f"{self.root} has {len(files)} files, more than a stage mirrors ({MAX_FILES})"
                )
            try:
                _own_directory(self.path, private=False)
                changed = synchronise(self.path, files)
            except OSError as error:
                raise StageError(f"{self.path}: {error.strerror or error}") from None
            yield changed


def for_variant(root: Path, kernel: str, variant: str) -> SourceStage:
    return SourceStage(root, stage_path(kernel, variant))


#: In a variant's state directory: the stage its generated project reaches the sources through, so that a build
#: that skips configure (nothing changed) still brings that stage up to date before Ninja looks at it.
MARKER = "source-stage"


def _inside(rel: str) -> bool:
    parts = Path(os.path.normpath(rel)).parts
    return bool(parts) and not Path(rel).is_absolute() and parts[0] != ".."


def turned_off() -> bool:
    """``KERNEL_BUILDER_SOURCE_STAGE=off``: compile in place (sccache's device front end then misses in other
    checkouts, as it did before stages)."""
    return os.environ.get(ENV, "").strip().lower() in _OFF


def choose(
    root: Path, kernel: str, variant: str, *, nvcc: bool, cache_tool: str | None, paths: list[str]
) -> SourceStage | None:
    """The stage for a variant, or None to compile in place: only nvcc through sccache needs one, and only
    when every source and include directory (``paths``, relative to the root) lies inside the root."""
    if not nvcc or cache_tool != "sccache" or turned_off() or not all(_inside(p) for p in paths):
        return None
    return for_variant(root, kernel, variant)


def remember(variant_state: Path, stage: SourceStage | None) -> None:
    marker = variant_state / MARKER
    if stage is None:
        marker.unlink(missing_ok=True)
    else:
        variant_state.mkdir(parents=True, exist_ok=True)
        marker.write_text(str(stage.path) + "\n", encoding="utf-8")


def remembered(variant_state: Path, root: Path) -> SourceStage | None:
    """The stage the variant's generated project uses (:func:`remember`), or None."""
    try:
        text = (variant_state / MARKER).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return SourceStage(root, Path(text)) if text else None
