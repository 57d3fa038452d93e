"""The child process that renders one card (kernel_builder/pipeline/card_sandbox.py): its protocol and its limits."""

from __future__ import annotations

import json
import subprocess
import sys

from kernel_builder.pipeline.card_sandbox import RENDER_MEMORY, RENDER_SECONDS


def render(template: str, **context: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kernel_builder.pipeline.card_sandbox"],
        input=json.dumps({"template": template, "context": context}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_fills_the_template_on_standard_output() -> None:
    done = render("{{ repo_id }}: {{ functions|join(', ') }}\n", repo_id="org/k", functions=["a", "b"])
    assert (done.returncode, done.stdout, done.stderr) == (0, "org/k: a, b", "")  # one trailing newline goes


def test_a_bad_card_is_one_line_on_standard_error_and_status_3() -> None:
    done = render("{{ ''.__class__ }}")
    assert done.returncode == 3 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "unsafe" in done.stderr


def test_it_limits_itself_before_rendering() -> None:
    code = (
        "import resource, runpy, sys, io, json\n"
        "sys.stdin = io.StringIO(json.dumps({'template': '', 'context': {}}))\n"
        "sys.argv = ['card_sandbox']\n"
        "try:\n"
        "    runpy.run_module('kernel_builder.pipeline.card_sandbox', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(resource.getrlimit(resource.RLIMIT_AS)[0], resource.getrlimit(resource.RLIMIT_CPU)[0])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.split() == [str(RENDER_MEMORY), str(RENDER_SECONDS)]
