"""Isolated build environments: one cached virtual environment per (Torch pin, compute backend).

Upstream needs Nix to build every variant; here each variant gets a plain venv, created with pip, that holds
the pinned Torch of its matrix entry (and, for CUDA, what the toolkit needs). Environments live under the
user cache directory, are shared by every project, and are reused until ``--refresh-envs``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import venv
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.common.file_lock import exclusive
from kernel_builder.errors import BuildError
from kernel_builder.formats.matrix import MatrixEntry
from kernel_builder.pipeline.environment import pip_install
from kernel_builder.pipeline.environment.env_facts import cache_root
from kernel_builder.pipeline.environment.provision import toolkit_requirements
from kernel_builder.pipeline.environment.target_env import link_cudart

__all__ = [
    "MARKER",
    "EnvSpec",
    "cache_root",
    "ensure_env",
    "ensure_toolkit_env",
    "env_dir",
    "env_ready",
    "purelib_of",
    "python_of",
    "toolkit_env_dir",
    "toolkit_requirements",
]

MARKER = "kernel-builder-env.json"


@dataclass(frozen=True)
class EnvSpec:
    torch_pin: str
    compute: str  # "cpu", "cu130", ...
    index_url: str | None

    @classmethod
    def for_entry(cls, entry: MatrixEntry) -> EnvSpec:
        if entry.torch_pin is None:
            raise BuildError(
                f"matrix entry torch {entry.torch_str} {entry.compute} has no torch-pin to install"
            )
        return cls(entry.torch_pin, entry.compute, entry.index_url)

    @property
    def key(self) -> str:
        return f"torch{self.torch_pin}-{self.compute}-py{sys.version_info[0]}{sys.version_info[1]}"

    @property
    def requirement(self) -> str:
        return f"torch=={self.torch_pin}"


def env_dir(spec: EnvSpec) -> Path:
    return cache_root() / "envs" / spec.key


def python_of(env: Path) -> Path:
    return env / "bin" / "python"


def _fresh(env: Path) -> Path:
    """A new virtual environment beside ``env`` (``.<name>.tmp``), to be renamed to it once complete; whatever
    was at either place before is removed."""
    tmp = env.with_name(f".{env.name}.tmp")
    for old in (env, tmp):
        if old.exists():
            shutil.rmtree(old)
    venv.EnvBuilder(with_pip=True, symlinks=True).create(tmp)
    return tmp


def _install_toolkit(tmp: Path, toolkit: list[str], show: Callable[[str], None]) -> None:
    """Install NVIDIA's PyPI toolkit packages ``toolkit`` into the environment being made at ``tmp`` (removed,
    and the build stopped, if pip fails), completed as a toolkit root."""
    result = pip_install.install(python_of(tmp), toolkit, status=show)
    if result.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise BuildError(f"cannot install the CUDA toolkit from PyPI: {result.detail[-400:]}")
    _complete_toolkit(tmp)


def toolkit_env_dir(cuda: tuple[int, int]) -> Path:
    return cache_root() / "toolkits" / f"cuda{cuda[0]}.{cuda[1]}-py{sys.version_info[0]}{sys.version_info[1]}"


def purelib_of(env: Path) -> Path:
    """The site-packages of an environment made by this interpreter's ``venv``."""
    return env / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def ensure_toolkit_env(
    cuda: tuple[int, int],
    *,
    refresh: bool = False,
    log: Callable[[str], None] = lambda _: None,
    status: Callable[[str], None] | None = None,
) -> Path:
    """The site-packages of an environment with NVIDIA's PyPI toolkit of CUDA ``cuda`` and nothing else (no
    Torch: a hundred megabytes, not gigabytes), created as needed: this host's nvcc of that release for a cross
    build where the system has none (docs/cross.md). Shared and kept like the build environments."""
    toolkit = toolkit_requirements(cuda)
    env = toolkit_env_dir(cuda)
    with exclusive(env.parent / f".{env.name}.lock"):
        marker = env / MARKER
        if marker.is_file() and not refresh and python_of(env).exists():
            return purelib_of(env)
        log(
            f"creating the CUDA {cuda[0]}.{cuda[1]} toolkit environment {env.name} (pip install {' '.join(toolkit)})"
        )
        tmp = _fresh(env)
        _install_toolkit(tmp, toolkit, status or log)
        os.rename(tmp, env)
        marker.write_text(json.dumps({"toolkit": toolkit}, indent=2) + "\n")
        return purelib_of(env)


def _complete_toolkit(env: Path) -> None:
    """What NVIDIA's PyPI toolkit packages in ``env`` lack of a toolkit root that Torch's CMake config reads:
    the development link of the CUDA runtime (``toolchain.link_cudart``)."""
    for lib in env.glob("lib/python*/site-packages/nvidia/cu[0-9]*/lib"):
        link_cudart(lib)


def env_ready(spec: EnvSpec) -> bool:
    """Whether ``spec``'s environment exists complete (its marker written last) and can be reused."""
    env = env_dir(spec)
    return (env / MARKER).is_file() and python_of(env).exists()


def ensure_env(
    spec: EnvSpec,
    *,
    refresh: bool = False,
    log: Callable[[str], None] = lambda _: None,
    cuda_toolkit: tuple[int, int] | None = None,
    torch_requirement: str | None = None,
    status: Callable[[str], None] | None = None,
) -> Path:
    """The interpreter of ``spec``'s environment, created (or re-created with ``refresh``) as needed; with
    ``cuda_toolkit``, the environment also brings that CUDA release's compiler from PyPI. ``torch_requirement``
    (the exact wheel ``provision.resolve_torch`` judged to be of the right flavour) replaces ``torch==<pin>``.
    ``status`` gets what pip is doing while it installs (``pip_install``: the package, the file and its size, how
    much of it has arrived); without it, ``log`` does."""
    toolkit = toolkit_requirements(cuda_toolkit) if cuda_toolkit is not None else []
    env = env_dir(spec)
    with exclusive(env.parent / f".{spec.key}.lock"):
        marker = env / MARKER
        if marker.is_file() and not refresh and python_of(env).exists():
            recorded = json.loads(marker.read_text()).get("toolkit", [])
            if recorded == toolkit:
                _complete_toolkit(env)  # an environment made before its toolkit was completed
                return python_of(env)
        wheel = f": {torch_requirement.rsplit('/', 1)[-1]}" if torch_requirement else ""
        log(f"creating build environment {spec.key} (pip install {spec.requirement}{wheel})")
        show = status or log
        tmp = _fresh(env)
        result = pip_install.install(
            python_of(tmp), [torch_requirement or spec.requirement], index_url=spec.index_url, status=show
        )
        if result.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            where = spec.index_url or "PyPI"
            detail = f" ({result.detail})" if result.detail else ""
            raise BuildError(f"torch {spec.torch_pin} not available from {where}{detail}")
        if toolkit:
            log(f"installing the CUDA toolkit from PyPI ({', '.join(toolkit)})")
            _install_toolkit(tmp, toolkit, show)
        # Only bin/python is used, and a venv's interpreter works after the directory is renamed.
        os.rename(tmp, env)
        marker.write_text(
            json.dumps({"torch": spec.torch_pin, "compute": spec.compute, "toolkit": toolkit}, indent=2)
            + "\n"
        )
        return python_of(env)
