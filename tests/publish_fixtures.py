"""Helpers for the publishing tests: tiny kernel directories with built variants, the CLI run in-process, and
what the Hub double's request log says was written."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer, LoggedRequest
from loader_fixtures import make_env, reset_loader, write_variant

from kernel_builder import cli
from kernel_builder.formats import runtime
from kernel_builder.loader import resolve, trust

REPO = "org/relu"
CPU = "torch-cpu"
CUDA = "torch-cuda"
CARD = "---\nlicense: apache-2.0\n---\n# relu\n\nA tiny test kernel.\n"
BENCHMARK = "def benchmark():\n    return 'relu'\n"
WRITE_METHODS = frozenset({"POST", "PUT", "DELETE", "PATCH"})
CPU_ENV = make_env(backend="cpu", backend_version=None)


def _kernel_id(variant: str, tag: str) -> str:
    return f"_relu_{tag}_{variant.replace('-', '_')}"


def write_kernel(
    root: Path,
    variants: Mapping[str, Mapping[str, Any]] = {CPU: {}, CUDA: {}},
    *,
    tag: str = "a",
    card: str | None = CARD,
    benchmarks: Mapping[str, str] | None = None,
    build_toml: str | None = None,
) -> Path:
    """A kernel directory with ``build/<variant>`` (``write_variant``), ``build/CARD.md`` and ``benchmarks/``."""
    root.mkdir(parents=True, exist_ok=True)
    for name, options in variants.items():
        backend = "cuda" if "cu" in name and "cpu" not in name else "cpu"
        write_variant(
            root / "build" / name, **{"kernel_id": _kernel_id(name, tag), "backend": backend, **options}
        )
    if card is not None:
        (root / "build" / "CARD.md").write_text(card, encoding="utf-8")
    for name, text in (benchmarks if benchmarks is not None else {"benchmark_relu.py": BENCHMARK}).items():
        (root / "benchmarks").mkdir(exist_ok=True)
        (root / "benchmarks" / name).write_text(text, encoding="utf-8")
    if build_toml is not None:
        (root / "build.toml").write_text(build_toml, encoding="utf-8")
    return root


def variant_files(root: Path, prefix: str = "build") -> dict[str, bytes]:
    """Every regular file under ``root`` (following links) as ``{prefix/relative: bytes}``."""
    return {
        f"{prefix}/{path.relative_to(root).as_posix()}": path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


@dataclass
class Run:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> Run:
    capsys.readouterr()
    code = cli.main(list(args))
    captured = capsys.readouterr()
    return Run(code, captured.out, captured.err)


def writes(hub: HubServer) -> list[LoggedRequest]:
    return [request for request in hub.requests if request.method in WRITE_METHODS]


def committed_paths(hub: HubServer) -> list[str]:
    """Every path added or deleted by the commits in the request log (NDJSON bodies), in order."""
    paths = []
    for request in hub.requests:
        if request.method == "POST" and "/commit/" in request.path:
            for line in request.body.decode().splitlines():
                item = json.loads(line)
                if item["key"] in ("file", "lfsFile", "deletedFile", "deletedFolder"):
                    paths.append(item["value"]["path"])
    return paths


def committed_content(hub: HubServer) -> dict[str, bytes]:
    content = {}
    for request in hub.requests:
        if request.method == "POST" and "/commit/" in request.path:
            for line in request.body.decode().splitlines():
                item = json.loads(line)
                if item["key"] == "file":
                    content[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
    return content


def history(hub: HubServer, revision: str, repo_id: str = REPO) -> list[str]:
    """Commit titles from ``revision`` back to the first commit, newest first."""
    titles = []
    sha: str | None = hub.resolve(repo_id, revision)
    while sha is not None:
        commit = hub.commit_info(repo_id, sha)
        titles.append(commit.title)
        sha = commit.parent
    return titles


@pytest.fixture
def cpu_machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A CPU-only x86_64 Linux machine with Torch 2.12, a fresh loader, and fresh trust verdicts."""
    monkeypatch.setattr(runtime, "detect_environment", lambda: CPU_ENV)
    monkeypatch.setattr(resolve, "probe_gpus", lambda backend: [])
    for name in ("KERNEL_BUILDER_VERIFY_DIGEST", "KERNEL_BUILDER_CHECK_GPU_ARCH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(trust, "_verdicts", {})
    reset_loader()
    yield
    reset_loader()


def environ_without(*names: str) -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in names}
