"""The record of Hub resolutions (:mod:`kernel_builder.loader.hubcache`): written atomically in the cache, read
back only when every field is one this loader writes, and the time it is trusted for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernel_builder.errors import UsageError
from kernel_builder.loader import hubcache
from kernel_builder.loader.hubcache import Resolution, recalled, remember

SHA = "0123456789abcdef0123456789abcdef01234567"
ENDPOINT = "http://127.0.0.1:1"
VARIANT = "torch212-cxx11-cu130-x86_64-linux"


def resolution(**changes: object) -> Resolution:
    values: dict[str, object] = {
        "endpoint": ENDPOINT,
        "repo_id": "org/relu",
        "request": "version:1",
        "repo_type": "kernel",
        "sha": SHA,
        "checked": 1000.0,
        "publisher_trusted": True,
        "variants": (VARIANT, "torch-cpu"),
        "newest": 2,
        **changes,
    }
    return Resolution(**values)  # type: ignore[arg-type]


def test_a_record_reads_back_as_written(tmp_path: Path) -> None:
    remember(tmp_path, resolution())
    assert recalled(tmp_path, ENDPOINT, "org/relu", "version:1") == resolution()
    assert recalled(tmp_path, ENDPOINT, "org/relu", "version:2") is None
    assert recalled(tmp_path, "https://other", "org/relu", "version:1") is None
    (record,) = (tmp_path / hubcache.RESOLVED).iterdir()
    assert record.suffix == ".json" and not list(record.parent.glob(".*"))  # no temporary left


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sha", "../../../snapshots/elsewhere"),
        ("sha", SHA.upper()),
        ("repo_type", "dataset"),
        ("variants", ["../escape"]),
        ("variants", ["build/x"]),
        ("checked", "yesterday"),
        ("checked", True),
        ("publisher_trusted", "yes"),
        ("newest", -1),
        ("repo_id", "org/other"),
        ("format", 2),
    ],
)
def test_a_record_with_any_field_off_is_ignored(tmp_path: Path, field: str, value: object) -> None:
    remember(tmp_path, resolution())
    (record,) = (tmp_path / hubcache.RESOLVED).iterdir()
    data = json.loads(record.read_text())
    data[field] = value
    record.write_text(json.dumps(data))
    assert recalled(tmp_path, ENDPOINT, "org/relu", "version:1") is None


def test_a_record_that_is_not_json_or_not_a_file_is_ignored(tmp_path: Path) -> None:
    remember(tmp_path, resolution())
    (record,) = (tmp_path / hubcache.RESOLVED).iterdir()
    record.write_text("{")
    assert recalled(tmp_path, ENDPOINT, "org/relu", "version:1") is None
    record.unlink()
    record.mkdir()
    assert recalled(tmp_path, ENDPOINT, "org/relu", "version:1") is None


def test_an_unwritable_cache_only_loses_the_record(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    remember(blocked, resolution())  # no error: the next load asks the Hub
    assert recalled(blocked, ENDPOINT, "org/relu", "version:1") is None


def test_the_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(hubcache.CACHE_TTL, raising=False)
    assert hubcache.ttl() == hubcache.DEFAULT_TTL == 600
    monkeypatch.setenv(hubcache.CACHE_TTL, " 0 ")
    assert hubcache.ttl() == 0
    monkeypatch.setenv(hubcache.CACHE_TTL, "3600")
    assert hubcache.ttl() == 3600
    for bad in ("-1", "inf", "nan", "ten"):
        monkeypatch.setenv(hubcache.CACHE_TTL, bad)
        with pytest.raises(
            UsageError, match=rf"^KERNEL_BUILDER_CACHE_TTL='{bad}' is not a number of seconds"
        ):
            hubcache.ttl()
