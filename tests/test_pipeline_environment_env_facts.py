"""Per-environment facts (``kernel_builder.pipeline.environment.env_facts``): asked once, asked again when a file they
depend on changes, appears or goes away, and never wrong because of a damaged or unwritable cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kernel_builder.pipeline.environment import env_facts


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _asker(watched: list[Path], answers: list[str]) -> tuple[list[int], Callable[[], tuple[str, list[Path]]]]:
    calls = [0]

    def ask() -> tuple[str, list[Path]]:
        calls[0] += 1
        return answers[calls[0] - 1], watched

    return calls, ask


def test_asked_once_then_again_when_a_watched_file_changes(tmp_path: Path) -> None:
    tool = tmp_path / "tool"
    tool.write_text("v1", encoding="utf-8")
    calls, ask = _asker([tool], ["first", "second", "third"])
    assert env_facts.remembered("tool", [str(tool)], ask) == "first"
    assert env_facts.remembered("tool", [str(tool)], ask) == "first"
    assert calls == [1]
    tool.write_text("version 2", encoding="utf-8")  # rewritten: another size and time
    assert env_facts.remembered("tool", [str(tool)], ask) == "second"
    tool.unlink()  # gone
    assert env_facts.remembered("tool", [str(tool)], ask) == "third"
    assert calls == [3]


def test_a_package_installed_into_a_watched_directory_is_noticed(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    site.mkdir()
    calls, ask = _asker([site], ["before", "after"])
    assert env_facts.remembered("probe", ["python"], ask) == "before"
    (site / "torch").mkdir()  # a new entry changes the directory's time
    assert env_facts.remembered("probe", ["python"], ask) == "after"
    assert calls == [2]


def test_a_missing_file_that_appears_is_noticed(tmp_path: Path) -> None:
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    calls, ask = _asker([nvcc], ["none", "found"])
    assert env_facts.remembered("nvcc", [str(nvcc)], ask) == "none"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text("#!/bin/sh\n", encoding="utf-8")
    assert env_facts.remembered("nvcc", [str(nvcc)], ask) == "found"


def test_keys_are_separate(tmp_path: Path) -> None:
    calls, ask = _asker([], ["a", "b"])
    assert env_facts.remembered("kind", ["one"], ask) == "a"
    assert env_facts.remembered("kind", ["two"], ask) == "b"
    assert env_facts.remembered("kind", ["one"], ask) == "a"
    assert calls == [2]


def test_damaged_entries_are_asked_again(cache: Path) -> None:
    calls, ask = _asker([], ["a", "b"])
    assert env_facts.remembered("kind", ["k"], ask) == "a"
    (entry,) = (cache / "facts" / "kind").iterdir()
    entry.write_text("{not json", encoding="utf-8")
    assert env_facts.remembered("kind", ["k"], ask) == "b"
    assert calls == [2]


def test_an_unwritable_cache_only_costs_asking_again(cache: Path) -> None:
    cache.write_text("a file where the cache directory would be", encoding="utf-8")
    calls, ask = _asker([], ["a", "b"])
    assert env_facts.remembered("kind", ["k"], ask) == "a"
    assert env_facts.remembered("kind", ["k"], ask) == "b"
    assert calls == [2]


def test_identity_changes_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "f"
    assert env_facts.identity(path) == [str(path), None]
    path.write_text("x", encoding="utf-8")
    first = env_facts.identity(path)
    assert first[0] == str(path) and first[1] == 1
    path.write_text("xy", encoding="utf-8")
    assert env_facts.identity(path) != first
