"""Isolated build environments (docs/layout.md "Build environments").

The unit tests replace venv creation and pip with fakes (no network, no Torch download); the one slow test runs
the real pip against an empty local index and checks the failure message and that nothing is left behind.
The pins here are the test's own EnvSpecs and matrices, not the shipped matrix's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernel_builder.errors import BuildError
from kernel_builder.formats.matrix import parse_matrix
from kernel_builder.pipeline.environment import isolated_envs as envs
from kernel_builder.pipeline.environment import pip_install
from kernel_builder.pipeline.environment.isolated_envs import (
    MARKER,
    EnvSpec,
    cache_root,
    ensure_env,
    env_dir,
    python_of,
    toolkit_requirements,
)
from kernel_builder.pipeline.environment.pip_install import PipResult, pip_command

PY = f"py{sys.version_info[0]}{sys.version_info[1]}"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own cache directory."""
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# --- EnvSpec and where environments live -------------------------------------------------------------------


def test_env_spec_key_and_requirement() -> None:
    spec = EnvSpec("2.14.1", "cu130", None)
    assert spec.key == f"torch2.14.1-cu130-{PY}"
    assert spec.requirement == "torch==2.14.1"
    assert EnvSpec("2.13.0", "cpu", "https://download.pytorch.org/whl/cpu").key == f"torch2.13.0-cpu-{PY}"


def test_env_spec_from_matrix_entries() -> None:
    matrix = parse_matrix({"format": 1, "entries": [
        {"torch": "2.13", "torch-pin": "2.13.0", "backend": "cpu", "systems": ["x86_64-linux"], "required": True,
         "index-url": "https://download.pytorch.org/whl/cpu"},
        {"torch": "2.14", "torch-pin": "2.14.1", "backend": "cuda", "version": "13.0", "systems": ["x86_64-linux"],
         "required": False},
        {"torch": "2.13", "backend": "metal", "systems": ["aarch64-darwin"], "required": True},
    ]})  # fmt: skip
    cpu, cuda, metal = matrix.entries
    assert EnvSpec.for_entry(cpu) == EnvSpec("2.13.0", "cpu", "https://download.pytorch.org/whl/cpu")
    assert EnvSpec.for_entry(cuda) == EnvSpec("2.14.1", "cu130", None)
    with pytest.raises(BuildError, match="matrix entry torch 2.13 metal has no torch-pin to install"):
        EnvSpec.for_entry(metal)


def test_environments_are_keyed_by_pin_and_compute_only() -> None:
    """The index is where the pin comes from, not part of what the environment is: shared across projects."""
    a = EnvSpec("2.13.0", "cpu", "https://download.pytorch.org/whl/cpu")
    b = EnvSpec("2.13.0", "cpu", None)
    assert env_dir(a) == env_dir(b)
    assert env_dir(EnvSpec("2.13.0", "cu130", None)) != env_dir(a)
    assert env_dir(EnvSpec("2.14.1", "cpu", None)) != env_dir(a)


def test_cache_root_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "explicit"
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", "")  # empty counts as unset
    assert cache_root() == tmp_path / "xdg" / "kernel-builder"
    monkeypatch.delenv("KERNEL_BUILDER_CACHE")
    assert cache_root() == tmp_path / "xdg" / "kernel-builder"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_root() == tmp_path / "home" / ".cache" / "kernel-builder"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert cache_root() == tmp_path / "home" / ".cache" / "kernel-builder"


def test_env_dir_is_under_the_cache(_cache: Path) -> None:
    spec = EnvSpec("2.13.0", "cpu", None)
    assert env_dir(spec) == _cache / "envs" / spec.key
    assert python_of(env_dir(spec)) == _cache / "envs" / spec.key / "bin" / "python"


# --- the CUDA toolkit from PyPI ------------------------------------------------------------------------------


@pytest.mark.parametrize(("cuda", "release"), [((13, 0), "13.0"), ((13, 2), "13.2")])
def test_toolkit_requirements_pin_one_release(cuda: tuple[int, int], release: str) -> None:
    requirements = toolkit_requirements(cuda)
    assert requirements == [
        f"nvidia-cuda-nvcc=={release}.*",
        f"nvidia-cuda-crt=={release}.*",
        f"nvidia-nvvm=={release}.*",
        f"nvidia-cuda-cccl=={release}.*",
        f"nvidia-cuda-runtime=={release}.*",
    ]
    assert len({r.split("==")[1] for r in requirements}) == 1


@pytest.mark.parametrize("cuda", [(12, 6), (12, 8), (11, 8)])
def test_toolkit_requirements_before_cuda_13_name_cuda_home(cuda: tuple[int, int]) -> None:
    version = f"{cuda[0]}.{cuda[1]}"
    with pytest.raises(BuildError) as caught:
        toolkit_requirements(cuda)
    message = str(caught.value)
    assert message.startswith(
        f"no CUDA {version} compiler here: no nvcc {version} in CUDA_HOME, PATH or /usr/local/cuda"
    )
    assert "carry ptxas and libnvvm but no nvcc" in message  # why PyPI cannot provide it
    assert message.endswith(f"install CUDA {version} and set CUDA_HOME to it")


# --- ensure_env with venv and pip faked ---------------------------------------------------------------------


class FakeTools:
    """Stands in for ``venv`` and ``pip``: records what ran; ``fail`` makes the n-th pip call fail."""

    def __init__(self) -> None:
        self.created: list[Path] = []
        self.pip: list[list[str]] = []
        self.fail: dict[int, str] = {}

    def env_builder(self, **kwargs: Any) -> SimpleNamespace:
        assert kwargs == {"with_pip": True, "symlinks": True}

        def create(path: str | Path) -> None:
            path = Path(path)
            (path / "bin").mkdir(parents=True)
            (path / "bin" / "python").write_text("#!/bin/sh\n", encoding="utf-8")
            self.created.append(path)

        return SimpleNamespace(create=create)

    def run_pip(self, argv: list[str], status: Any) -> PipResult:
        self.pip.append(list(argv))
        stderr = self.fail.get(len(self.pip), "")
        errors = tuple(line for line in stderr.splitlines() if line.startswith("ERROR"))
        return PipResult(1 if stderr else 0, errors, tuple(stderr.splitlines()))


@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> FakeTools:
    fake = FakeTools()
    monkeypatch.setattr(envs, "venv", SimpleNamespace(EnvBuilder=fake.env_builder))
    monkeypatch.setattr(pip_install, "run_pip", fake.run_pip)
    return fake


CPU = EnvSpec("2.13.0", "cpu", "https://download.pytorch.org/whl/cpu")
CU130 = EnvSpec("2.14.1", "cu130", None)


def test_creates_the_environment_with_the_pin(tools: FakeTools, _cache: Path) -> None:
    lines: list[str] = []
    python = ensure_env(CPU, log=lines.append)
    env = _cache / "envs" / CPU.key
    assert python == env / "bin" / "python" and python.exists()
    assert tools.created == [env.with_name(f".{env.name}.tmp")]  # created aside, renamed when complete
    (argv,) = tools.pip
    tmp_python = env.with_name(f".{env.name}.tmp") / "bin" / "python"
    assert argv == [
        *pip_command(tmp_python), "--disable-pip-version-check", "torch==2.13.0",
        "--extra-index-url", "https://download.pytorch.org/whl/cpu",
    ]  # fmt: skip
    assert str(tmp_python) in argv
    assert json.loads((env / MARKER).read_text()) == {"torch": "2.13.0", "compute": "cpu", "toolkit": []}
    assert lines == [f"creating build environment {CPU.key} (pip install torch==2.13.0)"]
    assert not env.with_name(f".{env.name}.tmp").exists()


def test_pypi_pin_has_no_extra_index(tools: FakeTools) -> None:
    ensure_env(CU130)
    (argv,) = tools.pip
    assert "--extra-index-url" not in argv and argv[-1] == "torch==2.14.1"


def test_an_existing_environment_is_reused(tools: FakeTools) -> None:
    first = ensure_env(CPU)
    lines: list[str] = []
    assert ensure_env(CPU, log=lines.append) == first
    assert len(tools.created) == 1 and len(tools.pip) == 1
    assert lines == []


def test_a_pypi_toolkit_gets_the_runtimes_development_link(
    tools: FakeTools, monkeypatch: pytest.MonkeyPatch, _cache: Path
) -> None:
    """NVIDIA's runtime wheel ships ``libcudart.so.13`` alone; Torch's CMake config looks for ``libcudart.so``:
    the environment is completed with the link when it is made, and when an older one is reused."""
    cu132 = EnvSpec("2.15.0", "cu132", None)
    made = tools.env_builder

    def with_runtime(**kwargs: Any) -> SimpleNamespace:
        builder = made(**kwargs)

        def create(path: str | Path) -> None:
            builder.create(path)
            lib = Path(path) / "lib" / "python3.11" / "site-packages" / "nvidia" / "cu13" / "lib"
            lib.mkdir(parents=True)
            (lib / "libcudart.so.13").write_bytes(b"\x7fELF")  # what the torch wheel's dependencies bring

        return SimpleNamespace(create=create)

    monkeypatch.setattr(envs, "venv", SimpleNamespace(EnvBuilder=with_runtime))
    ensure_env(cu132, cuda_toolkit=(13, 2))
    link = (
        env_dir(cu132) / "lib" / "python3.11" / "site-packages" / "nvidia" / "cu13" / "lib" / "libcudart.so"
    )
    assert link.is_symlink() and str(link.readlink()) == "libcudart.so.13"
    link.unlink()  # an environment made before: completed when reused, and nothing installed again
    ensure_env(cu132, cuda_toolkit=(13, 2))
    assert link.is_symlink() and link.resolve() == link.with_name("libcudart.so.13")
    assert len(tools.pip) == 2  # torch, then the toolkit, once


def test_a_toolkit_environment_holds_the_toolkit_alone(tools: FakeTools, _cache: Path) -> None:
    """The host nvcc of a cross build's CUDA release: NVIDIA's packages of that release, no Torch; made once."""
    lines: list[str] = []
    purelib = envs.ensure_toolkit_env((13, 2), log=lines.append)
    env = _cache / "toolkits" / f"cuda13.2-{PY}"
    assert purelib == env / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
    (argv,) = tools.pip
    assert argv[-5:] == toolkit_requirements((13, 2)) and not any(a.startswith("torch") for a in argv)
    assert json.loads((env / MARKER).read_text()) == {"toolkit": toolkit_requirements((13, 2))}
    assert lines == [
        f"creating the CUDA 13.2 toolkit environment cuda13.2-{PY} (pip install {' '.join(toolkit_requirements((13, 2)))})"
    ]
    assert envs.ensure_toolkit_env((13, 2)) == purelib and len(tools.pip) == 1
    tools.fail[2] = "ERROR: No matching distribution found for nvidia-cuda-nvcc==13.9.*"
    with pytest.raises(
        BuildError, match=r"^cannot install the CUDA toolkit from PyPI: .*nvidia-cuda-nvcc==13\.9"
    ):
        envs.ensure_toolkit_env((13, 9))
    assert not (
        _cache / "toolkits" / f"cuda13.9-{PY}"
    ).exists()  # nothing half-made is left (the lock file stays)
    assert not (_cache / "toolkits" / f".cuda13.9-{PY}.tmp").exists()


def test_link_cudart_leaves_a_toolkit_that_has_it(tmp_path: Path) -> None:
    from kernel_builder.pipeline.environment.target_env import link_cudart

    (tmp_path / "libcudart.so.13").write_bytes(b"")
    (tmp_path / "libcudart.so").write_bytes(b"a system toolkit's own")
    link_cudart(tmp_path)
    assert not (tmp_path / "libcudart.so").is_symlink()
    link_cudart(tmp_path / "missing")  # no runtime at all: nothing to link, no error


def test_refresh_recreates_it(tools: FakeTools, _cache: Path) -> None:
    ensure_env(CPU)
    stale = env_dir(CPU) / "stale-file"
    stale.write_text("x", encoding="utf-8")
    ensure_env(CPU, refresh=True)
    assert len(tools.created) == 2 and len(tools.pip) == 2
    assert not stale.exists()
    assert (env_dir(CPU) / MARKER).is_file()


def test_a_half_made_environment_is_recreated(tools: FakeTools) -> None:
    """No marker (an interrupted creation): the directory is not trusted."""
    env = env_dir(CPU)
    (env / "bin").mkdir(parents=True)
    (env / "bin" / "python").write_text("", encoding="utf-8")
    ensure_env(CPU)
    assert len(tools.created) == 1
    assert (env / MARKER).is_file()


def test_a_leftover_temporary_directory_is_replaced(tools: FakeTools) -> None:
    env = env_dir(CPU)
    leftover = env.with_name(f".{env.name}.tmp")
    (leftover / "junk").mkdir(parents=True)
    ensure_env(CPU)
    assert not leftover.exists() and python_of(env).exists()


def test_pin_not_available(tools: FakeTools) -> None:
    tools.fail[1] = (
        "ERROR: Could not find a version\nERROR: No matching distribution found for torch==2.13.0\n"
    )
    with pytest.raises(BuildError) as caught:
        ensure_env(CPU)
    assert str(caught.value) == (
        "torch 2.13.0 not available from https://download.pytorch.org/whl/cpu "
        "(ERROR: No matching distribution found for torch==2.13.0)"
    )
    assert not env_dir(CPU).exists()
    assert not env_dir(CPU).with_name(f".{env_dir(CPU).name}.tmp").exists()


def test_pin_not_available_from_pypi(tools: FakeTools) -> None:
    tools.fail[1] = "ERROR: No matching distribution found for torch==2.14.1"
    with pytest.raises(BuildError, match=r"^torch 2\.14\.1 not available from PyPI \("):
        ensure_env(CU130)


def test_cuda_toolkit_is_installed_and_recorded(tools: FakeTools) -> None:
    lines: list[str] = []
    ensure_env(CU130, cuda_toolkit=(13, 0), log=lines.append)
    assert len(tools.pip) == 2
    assert tools.pip[1][-5:] == toolkit_requirements((13, 0))
    marker = json.loads((env_dir(CU130) / MARKER).read_text())
    assert marker["toolkit"] == toolkit_requirements((13, 0))
    assert lines[-1].startswith("installing the CUDA toolkit from PyPI (nvidia-cuda-nvcc==13.0.*")
    # Reused as long as the same toolkit is wanted ...
    ensure_env(CU130, cuda_toolkit=(13, 0))
    assert len(tools.created) == 1
    # ... and re-created when the toolkit changes (here: the system's nvcc now matches, none is wanted).
    ensure_env(CU130)
    assert len(tools.created) == 2
    assert json.loads((env_dir(CU130) / MARKER).read_text())["toolkit"] == []


def test_toolkit_failure_leaves_nothing(tools: FakeTools) -> None:
    tools.fail[2] = "ERROR: No matching distribution found for nvidia-cuda-nvcc==13.0.*"
    with pytest.raises(BuildError, match="cannot install the CUDA toolkit from PyPI: .*nvidia-cuda-nvcc"):
        ensure_env(CU130, cuda_toolkit=(13, 0))
    assert not env_dir(CU130).exists()


def test_cuda_12_toolkit_fails_before_creating_anything(tools: FakeTools) -> None:
    with pytest.raises(BuildError, match="set CUDA_HOME"):
        ensure_env(EnvSpec("2.13.0", "cu126", None), cuda_toolkit=(12, 6))
    assert tools.created == [] and tools.pip == []


# --- case 27: a pin the entry's index lacks (real pip) ---------------------------------------------------


@pytest.mark.slow
def test_pin_missing_from_an_empty_local_index(tmp_path: Path) -> None:
    index = tmp_path / "empty-index"
    index.mkdir()
    url = index.as_uri()
    spec = EnvSpec("0.0.1", "cpu", url)
    with pytest.raises(BuildError) as caught:
        ensure_env(spec)
    assert str(caught.value).startswith(f"torch 0.0.1 not available from {url}")
    envs_root = cache_root() / "envs"
    assert not env_dir(spec).exists()
    assert [p.name for p in envs_root.iterdir() if p.is_dir()] == []  # not even the temporary one
