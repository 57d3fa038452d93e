"""Helpers for the loader tests: tiny pure-Python variant directories and environment records.

``write_variant`` renders a flat (or legacy nested) variant into a directory: ``__init__.py`` with relative
imports, ``_ops.py``, ``layers/__init__.py`` and a ``metadata.json`` whose digest is recomputed here with a
few independent lines (not with ``kernel_builder.formats.metadata``). ``reset_loader`` forgets every kernel the loader
imported, so each test starts from a fresh process state.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer, files_from_directory

from kernel_builder.formats import metadata as metadata_module
from kernel_builder.formats.runtime import Environment
from kernel_builder.loader import importer

INIT = "from ._ops import ops\nfrom . import layers\n\nNAME = __name__\n"
OPS = "ops = 'ops of ' + __name__\n"
LAYERS = "from .._ops import ops\n\nLAYER = 'layer'\n"
FILES = {"__init__.py": INIT, "_ops.py": OPS, "layers/__init__.py": LAYERS}

# A CUDA 13.0 build of Torch 2.12 on x86_64 Linux; tests change what they are about.
ENV = Environment(
    cpu="x86_64",
    os="linux",
    torch_version=(2, 12),
    cxx11_abi=True,
    backend="cuda",
    backend_version=(13, 0),
    python_version=(3, 12),
)


def make_env(**changes: Any) -> Environment:
    return replace(ENV, **changes)


def recompute_digest(root: Path) -> dict[str, str]:
    """sha256, base64, of every file except metadata.json(.sigstore), __pycache__ and *.pyc (no symlinks)."""
    result = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        rel = relative.as_posix()
        if (
            path.is_file()
            and rel not in ("metadata.json", "metadata.json.sigstore")
            and "__pycache__" not in relative.parts
            and not rel.endswith(".pyc")
        ):
            result[rel] = base64.b64encode(hashlib.sha256(path.read_bytes()).digest()).decode()
    return result


def write_variant(
    directory: Path,
    *,
    name: str | None = "relu",
    kernel_id: str | None = "_relu_cpu_0123456789",
    backend: str = "cpu",
    archs: Sequence[str] | None = None,
    python_depends: Sequence[str] = (),
    files: Mapping[str, str] = FILES,
    digest: bool = True,
    nested: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write a variant directory; ``name``/``kernel_id`` ``None`` leave the key out (legacy builds)."""
    directory.mkdir(parents=True, exist_ok=True)
    package = directory / ((name or "relu").replace("-", "_") if nested else "")
    for rel, text in files.items():
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(text, encoding="utf-8")
    backend_table: dict[str, Any] = {"type": backend}
    if archs is not None:
        backend_table["archs"] = list(archs)
    meta: dict[str, Any] = {
        "name": name,
        "id": kernel_id,
        "version": 1,
        "license": "Apache-2.0",
        "python-depends": list(python_depends),
        "kernel-depends": [],
        "backend": backend_table,
    }
    if digest:
        meta["digest"] = {"algorithm": "sha256", "files": recompute_digest(directory)}
    meta.update(extra or {})
    meta = {key: value for key, value in meta.items() if value is not None}
    (directory / "metadata.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return directory


def variant_backend(name: str) -> str:
    """The backend a test variant named ``name`` is for: cpu unless the name says CUDA (``cu…``)."""
    return "cuda" if "cu" in name and "cpu" not in name else "cpu"


def commit_variants(
    hub: HubServer,
    directory: Path,
    variants: Mapping[str, Mapping[str, Any]],
    *,
    kernel_id: Callable[[str], str],
    repo_id: str,
    branch: str = "main",
    repo_type: str = "kernel",
    extra: Mapping[str, bytes | str] | None = None,
) -> str:
    """Write each variant (``write_variant`` with ``options``) into ``directory/<name>`` and commit them as
    ``build/<name>`` (plus ``extra``) on ``branch``; returns the commit SHA."""
    for name, options in variants.items():
        write_variant(
            directory / name, **{"kernel_id": kernel_id(name), "backend": variant_backend(name), **options}
        )
    files = files_from_directory(directory, "build") if variants else {}
    return hub.commit(repo_id, {**files, **(extra or {})}, branch=branch, repo_type=repo_type)


def reset_loader() -> None:
    """Forget every imported kernel: registry, aliases, digest passes and their ``sys.modules`` entries."""
    with importer._lock:
        for module_id in list(importer._origin):
            prefix = module_id + "."
            for name in [n for n in sys.modules if n == module_id or n.startswith(prefix)]:
                del sys.modules[name]
        importer._loaded.clear()
        importer._by_path.clear()
        importer._origin.clear()
    metadata_module._verified.clear()


#: The variant that :data:`ENV` loads from a one-variant Hub repository (:func:`seed_version_one`).
ENV_VARIANT = "torch212-cxx11-cu130-x86_64-linux"


def seed_version_one(
    hub: HubServer,
    directory: Path,
    *,
    tag: str,
    repo_id: str = "org/relu",
    files: Mapping[str, str] = FILES,
) -> str:
    """A trusted organization's repository with one variant for :data:`ENV` on branch ``v1`` (module id
    ``_relu_<tag>_<variant>``), written under ``directory``; returns the commit."""
    hub.add_organization(repo_id.split("/")[0], trusted=True)
    hub.create_repo(repo_id)
    hub.create_branch(repo_id, "v1")
    return commit_variants(
        hub,
        directory,
        {ENV_VARIANT: {"files": files}},
        kernel_id=lambda name: f"_relu_{tag}_" + name.replace("-", "_"),
        repo_id=repo_id,
        branch="v1",
    )


@pytest.fixture
def env_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process looks like :data:`ENV` with no GPU to probe (no torch import), with a fresh loader and trust
    cache."""
    from kernel_builder.formats import runtime
    from kernel_builder.loader import resolve, trust

    monkeypatch.setattr(runtime, "detect_environment", lambda: ENV)
    monkeypatch.setattr(resolve, "probe_gpus", lambda backend: [])
    monkeypatch.setattr(trust, "_verdicts", {})
    reset_loader()
    yield
    reset_loader()


@pytest.fixture
def fresh_loader() -> Iterator[None]:
    """No kernel imported before the test, none left after it (the machine as it is, unlike :func:`env_machine`)."""
    reset_loader()
    yield
    reset_loader()
