"""The tests' fork server (tests/warm_python.py) gives a child what a new interpreter would: its arguments,
environment, working directory, streams, ``sys.path`` and exit status; and another environment's interpreter
is never served by it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import warm_python

pytestmark = [
    pytest.mark.slow,  # the server imports Torch once
    pytest.mark.skipif(not warm_python.enabled(), reason="the fork server runs on Linux, unless disabled"),
]


def test_arguments_environment_directory_and_status(tmp_path: Path) -> None:
    code = (
        "import os, sys\n"
        "print(sys.argv, os.getcwd(), os.environ['KB_PROBE'], sys.path[0] == '')\n"
        "print('to stderr', file=sys.stderr)\n"
        "sys.exit(3)\n"
    )
    env = {**os.environ, "KB_PROBE": "value"}
    done = warm_python.run([sys.executable, "-c", code, "a", "b c"], env=env, cwd=tmp_path)
    assert done.returncode == 3
    assert done.stdout == f"['-c', 'a', 'b c'] {tmp_path} value True\n"
    assert done.stderr == "to stderr\n"


def test_torch_is_there_already_and_nothing_of_ours() -> None:
    code = "import sys, time; t = time.perf_counter(); import torch; print('kernel_builder' in sys.modules, time.perf_counter() - t < 0.5)"
    assert warm_python.run([sys.executable, "-c", code]).stdout == "False True\n"


def test_an_uncaught_exception_and_stdin() -> None:
    failed = warm_python.run([sys.executable, "-c", "raise ValueError('boom')"])
    assert failed.returncode == 1 and failed.stderr.strip().splitlines()[-1] == "ValueError: boom"
    echoed = warm_python.run([sys.executable, "-c", "import sys; print(sys.stdin.read()[::-1])"], input="abc")
    assert echoed.stdout == "cba\n"


def test_pythonpath_a_script_and_a_module(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "kb_probe_mod.py").write_text("import sys\nprint('module', sys.argv[1:])\n")
    script = tmp_path / "script.py"
    script.write_text("import sys, kb_probe_mod\nprint('script', sys.path[0], sys.argv[1:])\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "lib")}
    ran = warm_python.run([sys.executable, str(script), "x"], env=env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout == f"module ['x']\nscript {tmp_path} ['x']\n"
    as_module = warm_python.run([sys.executable, "-m", "kb_probe_mod", "y"], env=env)
    assert as_module.stdout == "module ['y']\n"


def test_a_timeout_kills_the_child() -> None:
    start = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        warm_python.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=1)
    assert time.monotonic() - start < 10


def test_atexit_functions_and_threads_finish_as_at_a_normal_exit() -> None:
    code = (
        "import atexit, threading, time\n"
        "atexit.register(lambda: print('atexit'))\n"
        "threading.Thread(target=lambda: (time.sleep(0.2), print('thread'))).start()\n"
    )
    assert warm_python.run([sys.executable, "-c", code]).stdout == "thread\natexit\n"


def test_another_environments_interpreter_is_run_as_it_is(tmp_path: Path) -> None:
    """A venv's python links to the same binary, but it is another environment: a new process, not a fork."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    other = tmp_path / "venv" / "bin" / "python"
    done = warm_python.run([str(other), "-c", "import sys; print(sys.prefix)"])
    assert done.stdout.strip() == str(tmp_path / "venv")
