"""``get_kernel`` through ``LOCAL_KERNELS`` warns when the project's sources changed since its build
(``kernel_builder.loader.stale``), naming the file and ``kernel-builder build``; a rebuild silences it, and a path
to a build directory is not checked.

A real build of a pure-Python kernel (no compiler: seconds), loaded in a fresh interpreter as users would; the
build skips its import check: each load below imports the kernel itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import warm_python
from build_runs import NO_IMPORT_CHECK, run_cli
from cpu_projects import noarch_project

LOAD = """
import warnings
warnings.simplefilter("always")
from kernel_builder import get_kernel
kernel = get_kernel("kb-org/kb-noarch", version=1)
print("layer:", kernel.layers.LAYER)
"""


def load(mapped: Path) -> subprocess.CompletedProcess[str]:
    return warm_python.run(
        [sys.executable, "-c", LOAD], capture_output=True, text=True, check=False, cwd=mapped.parent,
        env={**os.environ, "LOCAL_KERNELS": f"kb-org/kb-noarch={mapped}"},
    )  # fmt: skip


@pytest.mark.slow
def test_a_stale_build_warns_naming_the_file(tmp_path: Path) -> None:
    root = noarch_project(tmp_path / "kb-noarch")
    run_cli(["build", root, NO_IMPORT_CHECK]).check()
    fresh = load(root)
    assert fresh.returncode == 0, fresh.stderr
    assert "layer: twice" in fresh.stdout and "StaleBuildWarning" not in fresh.stderr

    layers = root / "torch-ext" / "kb_noarch" / "layers" / "__init__.py"
    layers.write_text(layers.read_text(encoding="utf-8").replace("'twice'", "'thrice'"), encoding="utf-8")
    stale = load(root)
    assert stale.returncode == 0, stale.stderr
    assert "layer: twice" in stale.stdout  # the old build, as before; but now with a warning
    assert (
        f"StaleBuildWarning: kb-org/kb-noarch: LOCAL_KERNELS maps it to {root}, whose build/ is older than its "
        "sources: torch-ext/kb_noarch/layers/__init__.py changed since the last build"
    ) in stale.stderr
    assert f"run `kernel-builder build {root}`" in stale.stderr
    # A build directory mapped directly is what the user asked for: no check.
    direct = load(root / "build")
    assert direct.returncode == 0 and "StaleBuildWarning" not in direct.stderr, direct.stderr

    run_cli(["build", root, NO_IMPORT_CHECK]).check()
    rebuilt = load(root)
    assert "layer: thrice" in rebuilt.stdout and "StaleBuildWarning" not in rebuilt.stderr, rebuilt.stderr
