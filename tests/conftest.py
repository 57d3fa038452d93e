"""Shared helpers: kernel projects written into ``tmp_path`` from a build.toml text.

``make_project(text)`` creates every file a well-formed project needs besides ``build.toml`` (each ``src``
file, each ``include`` directory and ``torch-ext/<py_name>/__init__.py``), so a test is about its one
problem only. ``diagnose(text)`` loads it and returns every diagnostic rendered, errors or not.
"""

from __future__ import annotations

import json
import os
import resource
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from hub_server import hub  # noqa: F401  (the Hub double's fixture, docs/loading.md)

from kernel_builder.common import toml as tomllib
from kernel_builder.config import load as config_load
from kernel_builder.config import load_project
from kernel_builder.errors import ConfigError
from kernel_builder.formats.matrix import Matrix

#: The directory ``make_project`` writes into, relative to ``tmp_path`` (the tests' working directory).
PROJECT = "kernel"


class MakeProject(Protocol):
    def __call__(
        self, text: str, *, skip: Collection[str] = (), init: bool = True, name: str = PROJECT
    ) -> Path: ...


class Diagnose(Protocol):
    def __call__(
        self, text: str, *, skip: Collection[str] = (), init: bool = True, matrix: Matrix | None = None
    ) -> str: ...


def _listed_paths(doc: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The ``src`` files and ``include`` directories a parsed build.toml lists, wherever they are."""
    tables: list[Any] = [doc.get(name) for name in ("torch", "tvm-ffi")]
    kernels = doc.get("kernel")
    if isinstance(kernels, dict):
        tables += list(kernels.values())
    files: list[str] = []
    dirs: list[str] = []
    for table in tables:
        if not isinstance(table, dict):
            continue
        for key, out in (("src", files), ("include", dirs)):
            values = table.get(key)
            if isinstance(values, list):
                out += [v for v in values if isinstance(v, str)]
    return files, dirs


def _safe(path: str) -> bool:
    """Only plain relative paths inside the root are created; the bad ones are what tests check."""
    parts = path.split("/")
    return bool(path) and not os.path.isabs(path) and ".." not in parts and not set("*?[\\:") & set(path)


def py_name_for(doc: dict[str, Any]) -> str | None:
    general = doc.get("general")
    name = general.get("name") if isinstance(general, dict) else None
    return name.replace("-", "_") if isinstance(name, str) and name else None


def materialise(root: Path, text: str, *, skip: Collection[str] = (), init: bool = True) -> Path:
    """Write ``build.toml`` with ``text`` into ``root`` plus stubs for everything it lists (not ``skip``)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "build.toml").write_text(text, encoding="utf-8")
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return root
    files, dirs = _listed_paths(doc)
    py_name = py_name_for(doc)
    if init and py_name:
        dirs.append(f"{'tvm-ffi-ext' if 'tvm-ffi' in doc else 'torch-ext'}/{py_name}")
        files.append(f"{dirs[-1]}/__init__.py")
    for rel in dirs:
        if _safe(rel) and rel not in skip:
            (root / rel).mkdir(parents=True, exist_ok=True)
    for rel in files:
        if _safe(rel) and rel not in skip and not (root / rel).is_dir():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text("" if rel.endswith(".py") else f"// {rel}\n", encoding="utf-8")
    return root


def render(*, path: str = PROJECT, matrix: Matrix | None = None) -> str:
    """Every diagnostic of loading ``path``, rendered and joined by newlines (errors or not)."""
    try:
        result = load_project(path, matrix=matrix)
    except ConfigError as error:
        diagnostics = error.diagnostics
    else:
        diagnostics = result.diagnostics
    return "\n".join(d.render() for d in diagnostics)


#: The test files that take longest (``pytest --durations=0`` on the 2-core VM, docs/performance.md), slowest
#: first. Under pytest-xdist (``make test``) each worker takes whole files in collection order, so these start
#: first and the short files fill in around them, instead of one long file finishing alone at the end.
HEAVIEST_FILES = (
    # First: its two-variant build compiles examples/relu for ten CUDA capabilities (and creates the CUDA Torch
    # environment where make test has not); test_pipeline_builder_cuda's relu, in whichever worker is free next,
    # then takes its objects from the compiler cache (tests/cuda_test_env.py).
    "test_pipeline_builder_variants.py",
    # Second: it makes the emulated aarch64 Python that test_pipeline_cross_cuda, later, finds in the cache.
    "test_pipeline_cross.py",
    # The rest by their time on a quiet 2-core machine (docs/performance.md), longest first.
    "test_pipeline_builder_cpu.py",
    "test_pipeline_builder_cuda.py",
    "test_pipeline_builder_robustness.py",
    "test_pipeline_compile_compiler_cache.py",
    "test_examples.py",
    "test_authoring_devtest.py",
    "test_pipeline_cross_cuda.py",
    "test_pipeline_check_import_check_registers.py",
    "test_docs_tutorial.py",
    "test_hub_network_deadline.py",
    "test_authoring_bench.py",
    "test_authoring_devtest_suites.py",
    "test_fixtures_megablocks_style.py",
    "test_pipeline_compile_schema_types.py",
    "test_pipeline_check_import_failure.py",
    "test_nix.py",
    "test_pipeline_check_import_check.py",
)


def pytest_configure(config: pytest.Config) -> None:
    """pytest-xdist hands out files with the most tests first unless told to keep the collection order (ours)."""
    if getattr(config.option, "dist", "no") in ("loadfile", "loadscope"):
        config.option.loadscopereorder = False


def _cpu_seconds() -> float:
    """CPU time of this process and of the children it has waited for (compilers, CMake, interpreters)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(item: pytest.Item, when: str) -> Iterator[None]:
    """Around one phase of a test: its CPU seconds into the report (``KB_TEST_TIMES`` only)."""
    if not os.environ.get("KB_TEST_TIMES"):
        yield
        return
    start = _cpu_seconds()
    yield
    item.user_properties.append((f"cpu-{when}", _cpu_seconds() - start))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    yield from _timed(item, "setup")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    yield from _timed(item, "call")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Iterator[None]:
    yield from _timed(item, "teardown")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """With ``KB_TEST_TIMES=<file>``, each phase of each test is appended to ``<file>`` as it ends (one JSON line:
    node id, phase, wall seconds, CPU seconds of the test process and the children it waited for, outcome), by
    the process that reports (xdist's controller): a run's seconds per file can be read while it runs or after
    it was stopped (``benchmarks/test_times.py``). CPU seconds hardly depend on what else the machine runs."""
    path = os.environ.get("KB_TEST_TIMES")
    if not path or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    cpu = [value for name, value in report.user_properties if name == f"cpu-{report.when}"]
    line = {
        "nodeid": report.nodeid,
        "when": report.when,
        "seconds": report.duration,
        "cpu": cpu[-1] if cpu else None,
        "outcome": report.outcome,
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker, the heaviest files first (a stable sort: the rest keep their order)."""
    if not hasattr(config, "workerinput"):
        return
    rank = {name: index for index, name in enumerate(HEAVIEST_FILES)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


@pytest.fixture(autouse=True)
def _fresh_legacy_warnings() -> Iterator[None]:
    """The legacy warning is given once per file per process; each test starts a fresh "process"."""
    config_load._warned_legacy.clear()
    yield
    config_load._warned_legacy.clear()


@pytest.fixture
def make_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MakeProject:
    """Writes a project into ``tmp_path/<name>`` and makes ``tmp_path`` the working directory."""
    monkeypatch.chdir(tmp_path)

    def make(text: str, *, skip: Collection[str] = (), init: bool = True, name: str = PROJECT) -> Path:
        return materialise(tmp_path / name, text, skip=skip, init=init)

    return make


@pytest.fixture
def diagnose(make_project: MakeProject) -> Diagnose:
    """``diagnose(text)``: write the project, load it as ``kernel`` and return its rendered diagnostics."""

    def run(text: str, *, skip: Collection[str] = (), init: bool = True, matrix: Matrix | None = None) -> str:
        make_project(text, skip=skip, init=init)
        return render(matrix=matrix)

    return run
