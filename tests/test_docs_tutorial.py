"""docs/tutorial.md: its commands run, in order, in a fresh directory, with the Hub double (slow: one CPU build)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hub_server import HubServer
from matrix_data import CPU_VARIANT

DOC = Path(__file__).resolve().parent.parent / "docs" / "tutorial.md"
SKIP_MARK = "<!-- not run by the tutorial test"
BLOCK = re.compile(r"(?P<before>[^\n]*)\n```(?P<lang>sh|python)\n(?P<body>.*?)```", re.DOTALL)


def tutorial_script(text: str) -> tuple[str, int]:
    """One bash script of the page's ``sh`` and ``python`` blocks, in order; and how many blocks it has."""
    parts = ["set -euo pipefail"]
    count = 0
    for match in BLOCK.finditer(text):
        if match["before"].startswith(SKIP_MARK):
            continue
        count += 1
        body = match["body"]
        parts.append(body if match["lang"] == "sh" else f"python - <<'KB_TUTORIAL_PY'\n{body}KB_TUTORIAL_PY")
    return "\n".join(parts) + "\n", count


def test_script_extraction_keeps_order_and_skips_marked_blocks() -> None:
    script, count = tutorial_script(DOC.read_text(encoding="utf-8"))
    assert count >= 8
    assert "pip install" not in script
    order = [script.index(s) for s in ("kernel-builder init", "kernel-builder build", "kernel-builder test",
                                        "kernel_builder.load", "LOCAL_KERNELS", "kernel-builder upload --allow-incomplete\n")]  # fmt: skip
    assert order == sorted(order)


@pytest.mark.slow
def test_tutorial_commands_run(hub: HubServer, tmp_path: Path) -> None:
    script, _ = tutorial_script(DOC.read_text(encoding="utf-8"))
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONDONTWRITEBYTECODE": "1"}  # fmt: skip
    result = subprocess.run(
        ["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output

    project = tmp_path / "my-relu"
    assert (project / "build" / CPU_VARIANT / "metadata.json").is_file()
    # Each Python step printed its result: the local load, LOCAL_KERNELS, and the load from the Hub.
    assert "tensor([0., 2.])" in result.stdout
    assert "tensor([0., 4.])" in result.stdout
    assert "tensor([0., 6.])" in result.stdout
    assert "passed" in result.stdout and "failed" not in result.stdout
    bench = json.loads((project / "bench.json").read_text())
    assert bench["device"] == "cpu" and bench["source"] == "benchmarks/"
    (case,) = bench["results"]
    assert case["name"] == "relu" and case["matches"] is True and case["kernel_gbps"] > 0
    assert case["kernel"]["runs"] == 100 and case["reference"]["median_us"] > 0
    assert "dry run: nothing was changed" in result.stdout
    files = hub.files("my-org/my-relu", "v1")
    assert f"build/{CPU_VARIANT}/metadata.json" in files
    assert "benchmarks/benchmark.py" in files
    assert "README.md" in hub.files("my-org/my-relu", "main")
