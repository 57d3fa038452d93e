"""The one file lock (``kernel_builder.common.file_lock``): exclusive between threads and processes, released when
its holder dies, and the hooks its users report through: waiting, and a lock file that cannot be made."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernel_builder.common.file_lock import exclusive


class Refused(Exception):
    """What a caller turns an unusable lock file into."""


def _wait_for(condition: object, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def test_a_second_holder_waits_says_so_once_and_gets_it_after(tmp_path: Path) -> None:
    path = tmp_path / "state" / "build.lock"
    waited: list[str] = []
    order: list[str] = []
    with exclusive(path):
        assert path.is_file()  # made, with its directory

        def second() -> None:
            with exclusive(path, waiting=lambda: waited.append("waiting")):
                order.append("second")

        thread = threading.Thread(target=second)
        thread.start()
        _wait_for(lambda: waited)
        time.sleep(0.1)
        order.append("first done")
    thread.join(10)
    assert order == ["first done", "second"]
    assert waited == ["waiting"]


def test_a_free_lock_is_taken_without_waiting(tmp_path: Path) -> None:
    waited: list[str] = []
    for _ in range(2):
        with exclusive(tmp_path / "a.lock", waiting=lambda: waited.append("waiting")):
            pass
    assert waited == []


def test_the_lock_of_a_killed_holder_is_free(tmp_path: Path) -> None:
    """Another process holds it and is killed: nothing stale is left for the next one to wait on."""
    path = tmp_path / "env.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
         "from kernel_builder.common.file_lock import exclusive\n"
         "with exclusive(Path(sys.argv[1])):\n    print('held', flush=True)\n    time.sleep(60)\n", str(path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    waited: list[str] = []
    got: list[str] = []

    def second() -> None:
        with exclusive(path, waiting=lambda: waited.append("waiting")):
            got.append("got it")

    thread = threading.Thread(target=second, daemon=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        thread.start()
        _wait_for(lambda: waited)
        assert waited == ["waiting"] and got == []  # held by the other process
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()
    thread.join(10)
    assert got == ["got it"]


def test_an_unusable_lock_file_is_reported_as_the_callers_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory\n", encoding="utf-8")
    with pytest.raises(Refused, match="File exists"):  # its directory cannot be made
        with exclusive(tmp_path / "file" / "x.lock", unusable=lambda e: Refused(e.strerror)):
            pass
    with pytest.raises(FileExistsError):  # without the hook, the OSError itself
        with exclusive(tmp_path / "file" / "x.lock"):
            pass


def test_an_error_inside_the_block_is_not_the_lock_files(tmp_path: Path) -> None:
    turned: list[OSError] = []

    def unusable(error: OSError) -> Refused:
        turned.append(error)
        return Refused()

    with pytest.raises(FileNotFoundError):
        with exclusive(tmp_path / "a.lock", unusable=unusable):
            (tmp_path / "missing").read_text(encoding="utf-8")
    assert turned == []
    with exclusive(tmp_path / "a.lock", waiting=lambda: pytest.fail("the lock was left held")):
        pass


def test_a_private_lock_is_the_users_alone_and_never_a_link(tmp_path: Path) -> None:
    with exclusive(tmp_path / "stage.lock", private=True):
        pass
    assert stat.S_IMODE(os.stat(tmp_path / "stage.lock").st_mode) == 0o600
    target = tmp_path / "elsewhere"
    (tmp_path / "planted.lock").symlink_to(target)
    with pytest.raises(Refused):
        with exclusive(tmp_path / "planted.lock", private=True, unusable=lambda e: Refused(e.strerror)):
            pass
    assert not target.exists()  # not created through the link
    with exclusive(tmp_path / "planted.lock"):  # a lock of the user's own tree follows it, as before
        pass
    assert target.is_file()
