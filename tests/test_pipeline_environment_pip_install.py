"""What pip does while a build environment is created is shown as it happens: the package, the file and its size,
how much of it has arrived. Real pip, installing from a local package index over loopback."""

from __future__ import annotations

import base64
import hashlib
import os
import random
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from simple_index import SimpleIndex, serve

from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment import pip_install
from kernel_builder.pipeline.environment.isolated_envs import EnvSpec, ensure_env, env_dir
from kernel_builder.pipeline.environment.pip_install import PipOutput, pip_command


def write_wheel(directory: Path, name: str, version: str, payload: int) -> Path:
    """A pure-Python wheel of ``name`` carrying ``payload`` bytes of incompressible data (pip shows byte counts
    only for downloads above 512 KiB)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b"",
        f"{name}/blob.bin": random.Random(0).randbytes(payload),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for member, data in files.items():
            archive.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            records.append(f"{member},sha256={digest},{len(data)}")
        archive.writestr(f"{info}/RECORD", "\n".join([*records, f"{info}/RECORD,,"]) + "\n")
    return path


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleIndex]:
    """pip sees only a local index holding a 2 MB ``torch`` 0.0.1, with no cache and no configuration file."""
    directory = tmp_path / "wheels"
    write_wheel(directory, "torch", "0.0.1", 2_000_000)
    for name in [n for n in os.environ if n.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_NO_CACHE_DIR", "1")
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    with serve(SimpleIndex(directory)) as served:
        monkeypatch.setenv("PIP_INDEX_URL", served.url)
        yield served


def test_pip_lines_become_status_texts() -> None:
    shown: list[str] = []
    reader = PipOutput(shown.append)
    for line in [
        "Looking in indexes: https://pypi.org/simple",
        "Collecting torch==2.13.0",
        "  Downloading https://example.org/files/torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl "
        "(190.6 MB)",
        "Progress 0 of 190600000",
        "Progress 9000000 of 190600000",  # under a tenth: nothing new
        "Progress 40000000 of 190600000",
        "Progress 41000000 of 190600000",  # the same tenth again
        "Progress 190600000 of 190600000",
        "Processing /opt/wheels/sympy-1.14.0-py3-none-any.whl",
        "Installing collected packages: mpmath, sympy, networkx, jinja2, torch",
        "Successfully installed jinja2-3.1 mpmath-1.3 networkx-3.5 sympy-1.14 torch-2.13.0+cpu",
    ]:
        reader.line(line)
    wheel = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert shown == [
        "collecting torch==2.13.0",
        f"downloading {wheel} (190.6 MB)",
        f"downloading {wheel}: 0 % of 190.6 MB",
        f"downloading {wheel}: 20 % of 190.6 MB",
        f"downloading {wheel}: 100 % of 190.6 MB",
        "using the local file sympy-1.14.0-py3-none-any.whl",
        "installing mpmath, sympy, networkx, jinja2, … (5 in all)",
        "installed 5 packages",
    ]
    assert reader.errors == []


def test_errors_are_kept_for_the_message() -> None:
    reader = PipOutput(lambda _: None)
    reader.line("ERROR: Could not find a version that satisfies the requirement torch==9")
    reader.line("ERROR: No matching distribution found for torch==9")
    assert reader.errors[-1] == "ERROR: No matching distribution found for torch==9"


def test_a_quiet_pip_is_reported_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    """While pip says nothing (unpacking Torch), its last status is repeated with the time it has lasted."""
    import sys

    monkeypatch.setattr(pip_install, "HEARTBEAT", 0.3)
    script = "import time; print('Installing collected packages: torch', flush=True); time.sleep(1.5); "
    script += "print('Successfully installed torch-0.0.1')"
    shown: list[str] = []
    result = pip_install.run_pip([sys.executable, "-c", script], shown.append)
    assert result.returncode == 0
    assert shown[0] == "installing torch" and shown[-1] == "installed 1 package"
    alive = shown[1:-1]
    assert alive and all(re.fullmatch(r"installing torch: \d+ s so far", text) for text in alive), shown


def test_the_running_interpreters_pip_installs_with_byte_counts() -> None:
    """This test environment's pip is new enough: it installs into the environment with ``--python`` and
    ``--progress-bar raw``."""
    command = pip_command(Path("/env/bin/python"))
    assert command[1:] == ["-m", "pip", "--python", "/env/bin/python", "install", "--progress-bar", "raw"]


@pytest.mark.slow
def test_environment_creation_shows_what_pip_does(index: SimpleIndex) -> None:
    spec = EnvSpec("0.0.1", "cpu", None)
    logged: list[str] = []
    status: list[str] = []
    python = ensure_env(spec, log=logged.append, status=status.append)
    assert python.exists()
    assert logged == [f"creating build environment {spec.key} (pip install torch==0.0.1)"]
    assert status[0] == "collecting torch==0.0.1"
    assert "downloading torch-0.0.1-py3-none-any.whl (2.0 MB)" in status
    progress = [s for s in status if s.startswith("downloading torch-0.0.1-py3-none-any.whl: ")]
    assert progress[-1] == "downloading torch-0.0.1-py3-none-any.whl: 100 % of 2.0 MB", status
    assert status[-2:] == ["installing torch", "installed 1 package"]
    assert index.count("/files/torch-0.0.1-py3-none-any.whl") == 1


@pytest.mark.slow
def test_a_failed_install_names_pips_error(index: SimpleIndex) -> None:
    spec = EnvSpec("0.0.2", "cpu", None)
    status: list[str] = []
    with pytest.raises(BuildError) as caught:
        ensure_env(spec, status=status.append)
    assert str(caught.value) == (
        "torch 0.0.2 not available from PyPI (ERROR: No matching distribution found for torch==0.0.2)"
    )
    assert not [s for s in status if s.startswith(("downloading", "installing"))]
    assert not env_dir(spec).exists()


def test_an_old_pip_installs_with_the_environments_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pip without byte counts beside kernel-builder: the environment's pip runs, and its lines still show."""
    monkeypatch.setattr(pip_install, "_host_pip", lambda: (23, 2))
    assert pip_command(Path("/env/bin/python")) == ["/env/bin/python", "-m", "pip", "install"]
