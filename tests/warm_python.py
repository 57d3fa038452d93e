"""Fresh Python processes with Torch already imported: a fork server for the tests' child interpreters.

Many tests run a snippet in a new interpreter (``python -c CODE ARGS``) because that is how users load a kernel
and because a kernel registers things with Torch that one process cannot take twice. Each such interpreter used to
spend about 2.5 s of CPU importing Torch, the same import every time. :func:`run` gives the same child the same
way, except that it is forked from a server that imported Torch once (and nothing else: not kernel_builder, not
``kernels``, not the Hub client, whose settings are read from the environment when they are imported).

The child is a real process of its own: its own process id and session, its argument vector, environment,
working directory and standard streams as asked, ``sys.path`` as ``PYTHONPATH`` and the mode (``-c``, ``-m``,
a script) make it, ``__main__`` fresh, exit status as Python gives it (``SystemExit``, an uncaught exception's
traceback and 1, ``atexit`` functions run). What differs from a new interpreter is only what Torch's import did
in the server: its modules are already in ``sys.modules`` and environment variables that Torch reads when it is
imported are the server's. A call that asks for interpreter options (``-X``, ``-I``, ``-W``, ...) or another
interpreter, or that runs where ``fork`` is not the way (not Linux), or with ``KB_TEST_WARM_PYTHON=0``, runs a new
interpreter instead, through :func:`subprocess.run`.

One server per test process (each pytest-xdist worker), started at the first call; it ends with that process.
"""

from __future__ import annotations

import array
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: What the server imports before it forks (module names), and nothing of this repository's.
PRELOAD = ("torch",)
_HEADER = struct.Struct("!I")


def enabled() -> bool:
    return sys.platform == "linux" and os.environ.get("KB_TEST_WARM_PYTHON", "1") != "0"


# --- the client -----------------------------------------------------------------------------------------------


class _Server:
    """The running server of this process: its socket path and process."""

    _lock = threading.Lock()
    _instance: _Server | None = None

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="kb-warm-python-"))
        self.socket = self.directory / "socket"
        ready_r, ready_w = os.pipe()
        # The server reads nothing from this pipe: it ends when the pipe does, i.e. when this process ends.
        self._lifeline_r, self._lifeline_w = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, __file__, "serve", str(self.socket), str(ready_w), str(self._lifeline_r)],
            pass_fds=(ready_w, self._lifeline_r),
            env={k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"},
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(ready_w)
        os.close(self._lifeline_r)
        with os.fdopen(ready_r, "rb") as ready:
            if ready.read(1) != b"1":
                raise RuntimeError("the warm Python server did not start")

    @classmethod
    def get(cls) -> _Server:
        with cls._lock:
            if cls._instance is None or cls._instance.process.poll() is not None:
                cls._instance = cls()
            return cls._instance


def _mode(args: Sequence[str]) -> bool:
    """Whether the arguments after the interpreter are ones the server runs: ``-c CODE``, ``-m MOD``, a script,
    optionally after ``-u`` or ``-B``; any other option (``-X``, ``-I``, ``-W``, ...) is not."""
    rest = list(args)
    while rest and rest[0] in ("-u", "-B"):
        rest.pop(0)
    if not rest:
        return False
    first = rest[0]
    if first in ("-c", "-m"):
        return len(rest) >= 2
    return not first.startswith("-")


def run(
    args: Sequence[str | os.PathLike[str]],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
    input: str | None = None,
    capture_output: bool = True,
    text: bool = True,
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(args, ...)`` for ``args = [sys.executable, ...]``, served by a fork of the warm server.

    The keyword arguments mean what they mean for :func:`subprocess.run`; the output is captured and decoded (as
    UTF-8 with replacement in a served run)."""
    argv = [os.fspath(a) for a in args]
    # The same environment, not merely the same binary: another venv's python links to the same interpreter.
    same_python = bool(argv) and os.path.dirname(os.path.abspath(argv[0])) == os.path.dirname(sys.executable)
    assert capture_output and text, "warm_python.run captures text output; use subprocess.run otherwise"
    if not (enabled() and same_python and _mode(argv[1:])):
        return subprocess.run(
            argv, env=env, cwd=cwd, timeout=timeout, input=input, capture_output=True, text=True, check=check
        )
    server = _Server.get()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe()
    request = json.dumps(
        {
            "argv": argv[1:],
            "env": dict(os.environ if env is None else env),
            "cwd": os.fspath(cwd) if cwd is not None else os.getcwd(),
        }
    ).encode()
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(server.socket))
        fds = array.array("i", [in_r, out_w, err_w])
        connection.sendmsg(
            [_HEADER.pack(len(request)), request], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)]
        )
    finally:
        for fd in (in_r, out_w, err_w):
            os.close(fd)
    pid = int(_read_line(connection))
    writer = threading.Thread(target=_feed, args=(in_w, (input or "").encode()), daemon=True)
    writer.start()
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        out, err, status = _collect(connection, out_r, err_r, deadline)
    except subprocess.TimeoutExpired:
        _kill(pid)
        raise subprocess.TimeoutExpired(argv, timeout or 0) from None
    finally:
        connection.close()
        os.close(out_r)
        os.close(err_r)
    writer.join()
    result = subprocess.CompletedProcess(
        argv, status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    )
    if check:
        result.check_returncode()
    return result


def _feed(fd: int, data: bytes) -> None:
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
    except BrokenPipeError:
        pass


def _read_line(connection: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk:
            raise RuntimeError("the warm Python server closed the connection")
        data += chunk
    return data.decode().strip()


def _collect(
    connection: socket.socket, out_r: int, err_r: int, deadline: float | None
) -> tuple[bytes, bytes, int]:
    """Both streams until they end, and the exit status the server reports."""
    buffers = {out_r: bytearray(), err_r: bytearray()}
    open_fds = [out_r, err_r, connection.fileno()]
    status_text = b""
    status: int | None = None
    while out_r in open_fds or err_r in open_fds or status is None:
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, _, _ = select.select(open_fds, [], [], wait)
        if not ready and deadline is not None and time.monotonic() >= deadline:
            raise subprocess.TimeoutExpired([], 0)
        for fd in ready:
            if fd == connection.fileno():
                chunk = connection.recv(4096)
                status_text += chunk
                if not chunk or status_text.endswith(b"\n"):
                    open_fds.remove(fd)
                    status = int(status_text.strip() or b"1")
                continue
            chunk = os.read(fd, 65536)
            if chunk:
                buffers[fd] += chunk
            else:
                open_fds.remove(fd)
    return bytes(buffers[out_r]), bytes(buffers[err_r]), status


def _kill(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --- the server -----------------------------------------------------------------------------------------------


def _serve(socket_path: str, ready_fd: int, lifeline_fd: int) -> None:
    import importlib

    for name in PRELOAD:
        importlib.import_module(name)
    base_path = _base_sys_path()
    import gc

    gc.freeze()  # the imports stay out of the children's collections: fewer pages copied after fork
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(socket_path)
    listener.listen(64)
    os.write(ready_fd, b"1")
    os.close(ready_fd)
    children: dict[int, socket.socket] = {}
    while True:
        ready, _, _ = select.select([listener.fileno(), lifeline_fd], [], [], 0.05)
        if (
            lifeline_fd in ready
        ):  # the test process ended: so does the server, leaving nothing in the temp dir
            shutil.rmtree(os.path.dirname(socket_path), ignore_errors=True)
            os._exit(0)
        if listener.fileno() in ready:
            connection, _ = listener.accept()
            request, fds = _receive(connection)
            pid = os.fork()
            if pid == 0:
                listener.close()
                for other in children.values():
                    other.close()
                connection.close()
                _child(request, fds, base_path)
            for fd in fds:
                os.close(fd)
            connection.sendall(f"{pid}\n".encode())
            children[pid] = connection
        gone = [pid for pid, connection in children.items() if _closed(connection)]
        for pid in gone:  # the client ended (killed, say): so does its child, as a child of it would
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for pid in list(children):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                connection = children.pop(pid)
                try:
                    connection.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass
                connection.close()


def _closed(connection: socket.socket) -> bool:
    """Whether the client closed its end (it sends nothing after the request)."""
    ready, _, _ = select.select([connection.fileno()], [], [], 0)
    if not ready:
        return False
    try:
        return connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _receive(connection: socket.socket) -> tuple[dict[str, Any], list[int]]:
    fds = array.array("i")
    data, ancillary, _, _ = connection.recvmsg(65536, socket.CMSG_LEN(3 * fds.itemsize))
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - (len(payload) % fds.itemsize)])
    (length,) = _HEADER.unpack(data[: _HEADER.size])
    body = data[_HEADER.size :]
    while len(body) < length:
        body += connection.recv(length - len(body))
    return json.loads(body), list(fds)


def _base_sys_path() -> list[str]:
    """The interpreter's own ``sys.path`` entries: without this script's directory and ``PYTHONPATH``'s."""
    own = {os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p}
    own.add(os.path.dirname(os.path.abspath(__file__)))
    return [p for p in sys.path if os.path.abspath(p) not in own]


def _child(request: dict[str, Any], fds: list[int], base_path: list[str]) -> None:
    """Become the requested interpreter run, then exit with its status (never returns)."""
    import io

    status = 1
    try:
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        args = list(request["argv"])
        unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
        while args and args[0] in ("-u", "-B"):
            unbuffered = unbuffered or args[0] == "-u"
            if args[0] == "-B":
                sys.dont_write_bytecode = True
            args.pop(0)
        if os.environ.get("PYTHONDONTWRITEBYTECODE"):
            sys.dont_write_bytecode = True
        encoding = os.environ.get("PYTHONIOENCODING", "utf-8").split(":")[0] or "utf-8"
        sys.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)), encoding=encoding)
        sys.stdout = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(1, "w", closefd=False)), encoding=encoding, write_through=unbuffered
        )
        sys.stderr = io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
            encoding=encoding,
            errors="backslashreplace",
            line_buffering=True,
        )
        python_path = [os.path.abspath(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        status = _run(args, python_path, base_path)
    except BaseException:  # noqa: BLE001 - the child's own failure to start, reported as Python would
        import traceback

        traceback.print_exc()
        status = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)


def _run(args: list[str], python_path: list[str], base_path: list[str]) -> int:
    import atexit
    import runpy
    import types

    if args[0] == "-c":
        first, argv0 = "", "-c"
    elif args[0] == "-m":
        first, argv0 = os.getcwd(), "-m"
    else:
        first, argv0 = os.path.dirname(os.path.abspath(args[0])), args[0]
    sys.path[:] = [first, *python_path, *base_path]
    status = 0
    try:
        if args[0] == "-c":
            sys.argv = [argv0, *args[2:]]
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(args[1], "<string>", "exec"), main.__dict__)
        elif args[0] == "-m":
            sys.argv = [argv0, *args[2:]]
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = [argv0, *args[1:]]
            runpy.run_path(args[0], run_name="__main__")
    except SystemExit as stop:
        status = _exit_status(stop.code)
    except BaseException:
        import traceback

        traceback.print_exc()
        status = 1
    import threading as _threading

    _threading._shutdown()  # type: ignore[attr-defined]  # as at a normal exit: non-daemon threads finish first
    atexit._run_exitfuncs()
    return status


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__" and len(sys.argv) == 5 and sys.argv[1] == "serve":
    _serve(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
