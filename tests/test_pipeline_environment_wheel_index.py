"""Reading what pip's sources offer (kernel_builder/pipeline/environment/wheel_index.py): pip's settings in pip's
order, listings from a loopback simple-API index (JSON and HTML) and local find-links, the wheels this
interpreter installs, and a wheel's ``Requires-Dist`` read with a few range requests and kept by its hash."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from simple_index import SimpleIndex, serve
from test_pipeline_environment_provision import CU130_RUNTIME, write_wheel

from kernel_builder.pipeline.environment import wheel_index
from kernel_builder.pipeline.environment.wheel_index import (
    PYPI,
    ListingUnsupported,
    PipSources,
    installable,
    listing,
    requires_dist,
    sources_from_config,
)


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleIndex]:
    directory = tmp_path / "files"
    write_wheel(directory, "2.13.0+cpu", [])
    write_wheel(directory, "2.13.0", [CU130_RUNTIME, "filelock"])
    write_wheel(directory, "2.13.0", [], tag="cp311-cp311-win_amd64")  # no Linux interpreter installs it
    write_wheel(directory, "2.12.0", [])
    monkeypatch.setenv("KERNEL_BUILDER_CACHE", str(tmp_path / "cache"))
    wheel_index.clear_listings()
    with serve(SimpleIndex(directory)) as running:
        yield running
    wheel_index.clear_listings()


def test_pip_settings_in_pips_order() -> None:
    """``[install]`` overrides ``[global]``, the environment overrides both; lists are whitespace-separated."""
    items = [
        ("global", "index-url", "https://mirror.example/simple/"),
        ("global", "extra-index-url", "file:///opt/a/simple file:///opt/b/simple"),
        ("install", "index-url", "https://install.example/simple"),
        ("global", "find-links", "/opt/wheels"),
        (":env:", "find-links", "/tmp/w1 /tmp/w2"),
        ("global", "constraint", "/etc/c.txt"),
        ("freeze", "index-url", "https://ignored.example/simple"),
    ]
    sources = sources_from_config(items)
    assert sources == PipSources(
        indexes=("https://install.example/simple", "file:///opt/a/simple", "file:///opt/b/simple"),
        find_links=("/tmp/w1", "/tmp/w2"),
        constraints=("/etc/c.txt",),
        cert=None,
        constraint_setting="global.constraint",
    )
    with_env = sources_from_config([*items, (":env:", "constraint", "/dev/null")])
    assert (with_env.constraints, with_env.constraint_setting) == (("/dev/null",), "PIP_CONSTRAINT")
    assert sources_from_config([]).indexes == (PYPI,)
    assert sources_from_config([(":env:", "no-index", "1"), (":env:", "find-links", "/w")]).indexes == ()


def test_json_and_html_listings_agree(index: SimpleIndex) -> None:
    as_json = listing(index.url, "torch")
    index.json = False
    wheel_index.clear_listings()
    as_html = listing(index.url, "torch")
    assert as_json.problem is None and as_html.problem is None
    assert len(as_json.files) == 4
    assert as_json.files == as_html.files
    assert all(f.sha256 and len(f.sha256) == 64 for f in as_json.files)
    assert index.count("/simple/torch/") == 2


def test_a_listing_is_fetched_once_per_process(index: SimpleIndex) -> None:
    for _ in range(3):
        listing(index.url, "torch")
    assert index.count("/simple/torch/") == 1
    assert listing(index.url, "no-such-project").files == ()  # a 404 is an empty listing, not a problem


def test_installable_wheels_newest_first_best_tag(index: SimpleIndex) -> None:
    found = [listing(index.url, "torch")]
    chosen = installable("torch", SpecifierSet("==2.13.0"), found)
    assert [(str(w.version), w.filename.rsplit("-", 3)[-3]) for w in chosen] == [
        ("2.13.0+cpu", "py3"),
        ("2.13.0", "py3"),
    ]
    assert installable("torch", SpecifierSet("==2.13.0") & SpecifierSet("<2.13"), found) == []
    assert [w.version for w in installable("torch", SpecifierSet(), found)] == [
        Version("2.13.0+cpu"),
        Version("2.13.0"),
        Version("2.12.0"),
    ]


def test_requires_python_excludes_a_file(index: SimpleIndex) -> None:
    index.requires_python["torch-2.12.0-py3-none-any.whl"] = ">=4"
    assert installable("torch", SpecifierSet("==2.12.0"), [listing(index.url, "torch")]) == []


def test_requires_dist_in_three_range_requests_then_from_the_cache(index: SimpleIndex) -> None:
    (untagged,) = [
        w
        for w in installable("torch", SpecifierSet("==2.13.0"), [listing(index.url, "torch")])
        if not w.version.local
    ]
    assert requires_dist(untagged) == [CU130_RUNTIME, "filelock"]
    reads = [(path, byte_range) for path, byte_range in index.requests if path.startswith("/files/")]
    assert 1 <= len(reads) <= 3 and all(byte_range for _, byte_range in reads), reads
    index.requests.clear()
    assert requires_dist(untagged) == [CU130_RUNTIME, "filelock"]
    assert index.requests == []  # kept on disk by the wheel's sha256


def test_a_server_without_byte_ranges_is_not_read_whole(index: SimpleIndex) -> None:
    index.ranges = False
    (untagged,) = [
        w
        for w in installable("torch", SpecifierSet("==2.13.0"), [listing(index.url, "torch")])
        if not w.version.local
    ]
    with pytest.raises(ListingUnsupported, match="not served in byte ranges"):
        requires_dist(untagged)


def test_local_find_links_and_an_unreachable_index(tmp_path: Path) -> None:
    directory = tmp_path / "wheels"
    write_wheel(directory, "2.13.0", [CU130_RUNTIME])
    wheel_index.clear_listings()
    local = listing(str(directory), "torch", find_links=True)
    assert [w.filename for w in local.files] == ["torch-2.13.0-py3-none-any.whl"]
    assert requires_dist(local.files[0]) == [CU130_RUNTIME]
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    unreachable = listing(f"http://127.0.0.1:{port}/simple", "torch")
    assert unreachable.files == () and str(unreachable.problem).startswith("it is not reachable from here (")
    assert listing(str(tmp_path / "nowhere"), "torch").problem == "it does not exist"
