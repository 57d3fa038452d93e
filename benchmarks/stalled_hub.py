"""How long a Hub request holds its caller when the Hub stalls, with the DEFAULT network settings.

    python benchmarks/stalled_hub.py [--baseline CHECKOUT] [--cases silent,mid-body] [--cap 400] [--baseline-only]
                                      [--json PATH]

Two local servers misbehave the way a broken Hub or proxy does:

- ``silent``: accepts the connection, reads the request, and never answers;
- ``mid-body``: answers a file's metadata (``HEAD``) in full, then, for every ``GET``, sends the status line,
  the headers and the first bytes of the body, and stalls.

Against each, three requests of the loader run in a fresh interpreter with no ``KERNEL_BUILDER_HUB_*``
variable set (the defaults): the branch listing (``Hub.branches``), the tree listing (``Hub.tree_files``) and a
file download (``Hub.download_file``). Each is timed until it raises; the row shows the error's type and its
first 160 characters. ``--baseline`` runs the same cases with another checkout's ``kernel_builder`` (e.g. a
worktree of the commit before a change) for the before/after figures. ``--cap`` ends a case that runs longer.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

from common import REPO, RESULTS, machine, table, write_json

SHA = "0123456789abcdef0123456789abcdef01234567"
TARGET_S = 60.0

#: Run in a fresh interpreter: one request against the stalling server; prints the outcome as JSON.
PROBE = textwrap.dedent(
    """
    import json, sys, time
    from kernel_builder.hub import Hub, RemoteRepo
    case, sha = sys.argv[1], sys.argv[2]
    hub = Hub(offline=False)
    repo = RemoteRepo("org/stalled", "kernel")
    start = time.monotonic()
    try:
        if case == "branch listing":
            hub.branches(repo)
        elif case == "tree listing":
            hub.tree_files(repo, sha, "build")
        else:
            hub.download_file(repo, sha, "build/torch-cpu/metadata.json")
        outcome = "returned"
    except BaseException as error:
        outcome = f"{type(error).__name__}: {error}"
    print(json.dumps({"seconds": time.monotonic() - start, "outcome": outcome}))
    """
)


class StallingServer:
    """A TCP server on loopback that reads each request and then stalls (``silent``) or stalls after the
    headers and a few bytes of the body (``mid-body``); stalls end when the client closes or at :meth:`stop`."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.stopping = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            buffer = b""
            while not self.stopping.is_set():
                while b"\r\n\r\n" not in buffer:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    buffer += chunk
                head, _, buffer = buffer.partition(b"\r\n\r\n")
                method = head.split(b" ", 1)[0]
                if self.mode == "mid-body" and method == b"HEAD":
                    connection.sendall(self._headers(1 << 20))
                    continue
                if self.mode == "mid-body":
                    connection.sendall(self._headers(1 << 20) + b'{"')
                self._wait(connection)
                return

    @staticmethod
    def _headers(length: int) -> bytes:
        return (
            f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n"
            f'ETag: "{"ab" * 20}"\r\nX-Repo-Commit: {SHA}\r\n\r\n'
        ).encode()

    def _wait(self, connection: socket.socket) -> None:
        connection.settimeout(0.2)
        while not self.stopping.is_set():
            try:
                if not connection.recv(1):
                    return  # the client gave up
            except TimeoutError:
                continue
            except OSError:
                return

    def stop(self) -> None:
        self.stopping.set()
        self.listener.close()


def run_case(python: str, checkout: Path, server: StallingServer, case: str, cap: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="stalled-hub-") as scratch:
        env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("KERNEL_BUILDER_HUB_", "HF_", "KERNELS_"))
        }
        env.update(
            {
                "PYTHONPATH": str(checkout),
                "HF_ENDPOINT": server.url,
                "KERNELS_CACHE": str(Path(scratch) / "cache"),
                "HF_HOME": str(Path(scratch) / "home"),
                "HF_TOKEN": "hf_dummy_benchmark_token",
                "HF_HUB_DISABLE_TELEMETRY": "1",
                "HF_HUB_DISABLE_XET": "1",
            }
        )
        start = time.monotonic()
        try:
            done = subprocess.run(
                [python, "-c", PROBE, case, SHA],
                env=env,
                cwd=scratch,
                capture_output=True,
                text=True,
                timeout=cap,
            )
        except subprocess.TimeoutExpired:
            return {"seconds": time.monotonic() - start, "outcome": f"still waiting after {cap:g} s (killed)"}
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            return {"seconds": time.monotonic() - start, "outcome": f"probe failed: {done.stderr[-400:]}"}
        result: dict[str, Any] = json.loads(lines[-1])
        return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", type=Path, help="another checkout to measure the same way (the before)")
    parser.add_argument("--cases", default="silent,mid-body")
    parser.add_argument("--cap", type=float, default=400.0, help="seconds after which a case is ended")
    parser.add_argument("--baseline-only", action="store_true", help="measure only the --baseline checkout")
    parser.add_argument("--json", type=Path, default=RESULTS / "stalled_hub.json")
    args = parser.parse_args()
    sides = [] if args.baseline_only else [("this checkout", REPO)]
    if args.baseline is not None:
        sides.insert(0, ("baseline", args.baseline.resolve()))
    rows: list[list[object]] = []
    records: list[dict[str, Any]] = []
    for mode in args.cases.split(","):
        server = StallingServer(mode)
        try:
            for case in ("branch listing", "tree listing", "file download"):
                for side, checkout in sides:
                    result = run_case(sys.executable, checkout, server, case, args.cap)
                    seconds = float(result["seconds"])
                    outcome = " ".join(str(result["outcome"]).split())
                    verdict = "met" if seconds <= TARGET_S and "killed" not in outcome else "not met"
                    rows.append([mode, case, side, round(seconds, 1), verdict, outcome[:160]])
                    records.append({"server": mode, "case": case, "side": side, **result})
                    print(
                        table(["server", "request", "code", "seconds", "<= 60 s", "error"], rows[-1:]),
                        flush=True,
                    )
        finally:
            server.stop()
    print()
    print(table(["server", "request", "code", "seconds", "<= 60 s", "error"], rows))
    write_json(args.json, {"machine": machine(), "target_s": TARGET_S, "cases": records})


if __name__ == "__main__":
    main()
