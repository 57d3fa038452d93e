"""Builds that survive real life: moved projects, interrupted and killed builds, concurrent builds, full disks
(the CLI in subprocesses, the real toolchain; the quick project builds in seconds).

Processes a build started are found through a marker in their environment (every descendant inherits it), so
the tests see compilers, CMake and Ninja that outlive the build whoever their parent is by then.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import IO

import pytest
import warm_python
from build_outputs import complete_variants, snapshot
from build_runs import NO_IMPORT_CHECK, STATE_DIR, metadata, run_cli
from cpu_projects import quick_project
from matrix_data import CPU_VARIANT

pytestmark = pytest.mark.slow

VARIANTS = sorted(["CARD.md", CPU_VARIANT, "torch-cuda"])
MARKER_VARIABLE = "KB_TEST_BUILD_MARKER"


def tagged_processes(tag: str) -> list[str]:
    """Running (not zombie) processes whose environment carries ``tag``: ``pid command`` each."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if f"{MARKER_VARIABLE}={tag}".encode() not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            stat = (proc / "stat").read_text()
            command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:120]
        except OSError:
            continue
        if stat.rpartition(")")[2].split()[0] != "Z":
            found.append(f"{proc.name} {command}")
    return found


def wait_for_no_processes(tag: str, seconds: float = 20.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while True:
        left = tagged_processes(tag)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def start_build(root: Path, tag: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "kernel_builder", "build", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, MARKER_VARIABLE: tag},
    )


class RunningBuild:
    """A build in a child process, its output read by threads as it comes, so that a test can wait until the
    build has begun (its first line): a Ctrl-C during the interpreter's own start-up, before kernel-builder's
    code runs, ends it as any Python program (death by SIGINT), which is not what these tests are about."""

    def __init__(self, root: Path, tag: str, *args: str) -> None:
        self.process = start_build(root, tag, *args)
        self.begun = threading.Event()
        self._text: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._readers = [
            threading.Thread(
                target=self._read, args=(getattr(self.process, name), self._text[name]), daemon=True
            )
            for name in ("stdout", "stderr")
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: IO[str] | None, into: list[str]) -> None:
        assert stream is not None
        with stream:
            for line in stream:
                into.append(line)
                self.begun.set()
        self.begun.set()  # it ended without a word

    def wait_begun(self, timeout: float = 60.0) -> None:
        assert self.begun.wait(timeout), "the build printed nothing within a minute"

    def communicate(self, timeout: float) -> tuple[str, str]:
        self.process.wait(timeout=timeout)
        for reader in self._readers:
            reader.join(timeout=timeout)
        return "".join(self._text["stdout"]), "".join(self._text["stderr"])


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    return quick_project(tmp_path / "kb-quick")


# ---------------------------------------------------------------------------------------------------------
# Moved projects and build trees of other versions


@pytest.mark.parametrize("how", ["copy", "move"])
def test_copied_or_moved_project_builds(quick: Path, tmp_path: Path, how: str) -> None:
    """The issue's reproduction: build, ``cp -r`` (or move) the project elsewhere, remove build/, build again."""
    run_cli(["build", quick, NO_IMPORT_CHECK]).check()  # the set-up, not the subject
    elsewhere = tmp_path / "elsewhere" / "renamed"
    elsewhere.parent.mkdir()
    if how == "copy":
        shutil.copytree(quick, elsewhere, symlinks=True)
    else:
        quick.rename(elsewhere)
    shutil.rmtree(elsewhere / "build")
    run = run_cli(["build", elsewhere])
    assert "is different than the directory" not in run.output
    run.check()
    notes = [line for line in run.stderr.splitlines() if "re-creating the CMake build tree" in line]
    assert notes == [
        (
            f"{CPU_VARIANT}: re-creating the CMake build tree (it was made in "
            f"{quick / STATE_DIR / CPU_VARIANT / 'cmake-build'})"
        )
    ]
    assert complete_variants(elsewhere / "build") == VARIANTS
    link = elsewhere / STATE_DIR / "compile_commands.json"
    assert link.resolve() == (elsewhere / STATE_DIR / CPU_VARIANT / "cmake-build" / "compile_commands.json")
    # The re-created tree is reused from then on.
    again = run_cli(["build", elsewhere]).check()
    assert "re-creating" not in again.stderr and "configuring" not in again.stderr


def test_build_tree_of_another_version_is_recreated(quick: Path) -> None:
    run_cli(["build", quick, NO_IMPORT_CHECK]).check()  # the set-up, not the subject
    stamp = quick / STATE_DIR / CPU_VARIANT / "cmake-build" / "kernel-builder-tree.json"
    data = json.loads(stamp.read_text())
    stamp.write_text(json.dumps({**data, "tool": "0.0.1"}))
    shutil.rmtree(quick / "build" / CPU_VARIANT)
    run = run_cli(["build", quick]).check()
    assert (
        f"{CPU_VARIANT}: re-creating the CMake build tree (it was made by kernel-builder 0.0.1)" in run.stderr
    )
    assert complete_variants(quick / "build") == VARIANTS


# ---------------------------------------------------------------------------------------------------------
# Interrupted and killed builds


def test_interrupted_and_killed_builds_leave_only_complete_variants(quick: Path) -> None:
    """20 builds, each of changed sources (a new id: configure, compile, link, assembly and import check run
    again; half of them build their two variants in parallel threads), stopped at a random moment by SIGINT or
    SIGKILL. After each: build/ holds only complete variants
    (and CARD.md), nothing hidden; no process the build started is still running; SIGINT exits 130 with a short
    message. Then a build succeeds."""
    seed = int(os.environ.get("KB_TEST_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    tag = uuid.uuid4().hex
    start = time.monotonic()
    run_cli(["build", quick], env={MARKER_VARIABLE: tag}).check()
    duration = time.monotonic() - start
    assert complete_variants(quick / "build") == VARIANTS
    print(f"[robustness] seed {seed}, full build {duration:.1f} s")
    outcomes = []
    for index in range(20):
        quick_project(quick, marker=f"iteration {index}")
        sig = signal.SIGINT if index % 2 == 0 else signal.SIGKILL
        delay = rng.uniform(0.5, duration)
        parallel = (
            ["--parallel", "2"] if index % 4 >= 2 else []
        )  # variants in threads, each with its commands
        build = RunningBuild(quick, tag, *parallel)
        process = build.process
        build.wait_begun()  # the delay counts from the build's first line, past the interpreter's start-up
        try:
            process.wait(timeout=delay)
            finished_first = True
        except subprocess.TimeoutExpired:
            finished_first = False
            process.send_signal(sig)
        stdout, stderr = build.communicate(timeout=60)
        outcomes.append(
            f"{sig.name} at {delay:.1f} s{' (parallel)' if parallel else ''}: exit {process.returncode}"
        )
        context = f"seed {seed}, iteration {index}, {sig.name} at {delay:.2f} s:\n{stdout}\n{stderr}"
        left = wait_for_no_processes(tag)
        assert left == [], f"processes still running after the build ended ({context}):\n" + "\n".join(left)
        if finished_first or process.returncode == 0:
            assert process.returncode == 0, context
        elif sig == signal.SIGINT:
            assert process.returncode == 130, context
            assert stderr.rstrip().endswith("interrupted"), context
            assert "Traceback" not in stderr, context
        else:
            assert process.returncode == -signal.SIGKILL, context
        entries = complete_variants(quick / "build")
        assert set(entries) <= set(VARIANTS), context
    print("[robustness] " + "; ".join(outcomes))
    final = run_cli(["build", quick], env={MARKER_VARIABLE: tag}).check()
    assert complete_variants(quick / "build") == VARIANTS, final.output
    assert not any((quick / STATE_DIR / "tmp").iterdir()) if (quick / STATE_DIR / "tmp").exists() else True
    assert wait_for_no_processes(tag) == []
    loaded = warm_python.run(
        [sys.executable, "-c", "import sys, kernel_builder; print(kernel_builder.get_local_kernel(sys.argv[1]).ops)",
         str(quick)],
        capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, check=False,
    )  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr


def test_earlier_hidden_temporaries_in_build_are_swept(quick: Path) -> None:
    """Older versions assembled in ``build/.<variant>.<random>``; a build removes what a killed one left."""
    run_cli(["build", quick, NO_IMPORT_CHECK]).check()  # the set-up, not the subject
    leftovers = [quick / "build" / f".{CPU_VARIANT}.k3x_9abz", quick / "build" / ".torch-cuda.old.0a1b2c3d"]
    for leftover in leftovers:
        (leftover / "sub").mkdir(parents=True)
    (quick / STATE_DIR / "tmp" / f"{CPU_VARIANT}.deadbeef").mkdir(parents=True)
    run_cli(["build", quick]).check()
    assert complete_variants(quick / "build") == VARIANTS
    assert list((quick / STATE_DIR / "tmp").iterdir()) == [] if (quick / STATE_DIR / "tmp").exists() else True


# ---------------------------------------------------------------------------------------------------------
# Concurrent builds


def test_concurrent_builds_serialise_and_agree(quick: Path) -> None:
    tag = uuid.uuid4().hex
    first = start_build(quick, tag)
    time.sleep(0.5)
    second = start_build(quick, tag)
    out1, err1 = first.communicate(timeout=600)
    after_first = metadata(quick / "build" / CPU_VARIANT)["digest"]
    out2, err2 = second.communicate(timeout=600)
    assert first.returncode == 0, out1 + err1
    assert second.returncode == 0, out2 + err2
    assert f"waiting for another kernel-builder build of {quick} to finish" in err2, err2
    assert metadata(quick / "build" / CPU_VARIANT)["digest"] == after_first
    assert complete_variants(quick / "build") == VARIANTS
    up_to_date = [line.split()[0] for line in out2.splitlines() if " up to date " in f"{line} "]
    assert sorted(up_to_date) == sorted([CPU_VARIANT, "torch-cuda"]), out2


# ---------------------------------------------------------------------------------------------------------
# A full disk and an unwritable output


def _file_size_limit(limit: int) -> None:
    """In the child before exec: writes past ``limit`` bytes fail with EFBIG (as a full disk fails them)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_full_disk_names_the_path_and_keeps_the_previous_variant(quick: Path) -> None:
    run_cli(["build", quick, NO_IMPORT_CHECK]).check()  # the set-up, not the subject
    before = snapshot(quick / "build" / "torch-cuda")
    big = json.dumps({"data": "x" * (2 << 20)})  # 2 MiB, shipped in every variant
    quick_project(quick, data=big)
    result = subprocess.run(
        [sys.executable, "-m", "kernel_builder", "build", str(quick)],
        capture_output=True, text=True, preexec_fn=lambda: _file_size_limit(1 << 20), check=False,
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error: torch-cuda:")]
    assert line.startswith(f"error: torch-cuda: cannot write {quick / STATE_DIR / 'tmp'}/torch-cuda."), line
    assert line.endswith(
        f"/data.json: File too large; {quick / 'build' / 'torch-cuda'} is unchanged. Free some space or fix the "
        "permissions, then build again"
    ), line
    assert snapshot(quick / "build" / "torch-cuda") == before
    assert complete_variants(quick / "build") == VARIANTS
    run_cli(["build", quick]).check()  # with room again
    assert json.loads((quick / "build" / "torch-cuda" / "data.json").read_text()) == json.loads(big)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_unwritable_build_directory_names_it(quick: Path) -> None:
    run_cli(["build", quick, NO_IMPORT_CHECK]).check()  # the set-up, not the subject
    before = snapshot(quick / "build")
    quick_project(quick, marker="changed")
    (quick / "build").chmod(0o555)
    try:
        run = run_cli(["build", quick])
    finally:
        (quick / "build").chmod(0o755)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.output
    assert f"{quick / 'build'}" in run.stderr and "Permission denied" in run.stderr
    assert snapshot(quick / "build") == before


def test_an_interrupted_parallel_build_waits_for_every_variant_thread() -> None:
    """A worker the pool was starting when Ctrl-C came is not in the pool's own list: the builder waits for
    every thread named after its pool, so that no variant logs after the command said "interrupted"."""
    from kernel_builder.pipeline.builder import _join_threads

    done = threading.Event()

    def late_variant() -> None:
        time.sleep(0.3)
        done.set()

    prefix = f"kernel-builder-variant-test-{uuid.uuid4().hex[:8]}"
    threading.Thread(target=late_variant, name=f"{prefix}_0").start()
    other = threading.Event()
    bystander = threading.Thread(target=other.wait, name="another-pool_0")  # not ours: not waited for
    bystander.start()
    try:
        _join_threads(prefix)
        assert done.is_set()
    finally:
        other.set()
        bystander.join()
