"""CUTLASS release archives fetched over HTTP from a real server on 127.0.0.1 (``KERNEL_BUILDER_CUTLASS_MIRROR``).

The archives are small synthetic ones laid out as GitHub's source archives (``cutlass-<version>/`` with a few
headers and files a build does not need); their SHA-256 is given through ``KERNEL_BUILDER_CUTLASS_<X>_<Y>_SHA256``,
so the shipped table of real hashes is not involved except where a test says so.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from stage_fixtures import fake_interpreter
from test_pipeline_environment_cutlass import Log, isolate_cutlass_settings

from kernel_builder.errors import BuildError
from kernel_builder.formats.dependencies import CUTLASS_PINS
from kernel_builder.pipeline.environment.cutlass import cached_headers, checkout_version, cutlass_includes
from kernel_builder.pipeline.environment.cutlass_archive import archive_url, unpack_headers


def version_h(version: str) -> bytes:
    major, minor, patch = version.split(".")
    return f"#pragma once\n#define CUTLASS_MAJOR {major}\n#define CUTLASS_MINOR {minor}\n#define CUTLASS_PATCH {patch}\n".encode()


HEADERS = {
    "include/cutlass/cutlass.h": b"#pragma once\n",
    "include/cute/tensor.hpp": b"#pragma once\n",
    "tools/util/include/cutlass/util/device_memory.h": b"#pragma once\n",
}
NOT_NEEDED = {
    "README.md": b"cutlass\n",
    "examples/00_basic_gemm/gemm.cu": b"int main() {}\n",
    "tools/profiler/x.h": b"",
}


def make_archive(version: str = "3.9.2", *, headers_version: str | None = None, extra: Any = ()) -> bytes:
    """A .tar.gz laid out as GitHub's archive of tag v<version>; ``extra``: (TarInfo, bytes | None) to add."""
    top = f"cutlass-{version}"
    files = {**HEADERS, **NOT_NEEDED, "include/cutlass/version.h": version_h(headers_version or version)}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info, data in extra:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


class Server:
    """A real HTTP server on 127.0.0.1; ``routes`` maps a path to (mode, body). Modes: ``ok``, ``truncated`` (half
    the body, then close), ``stall`` (part of the body, then silence), ``silent`` (no response at all), ``404``."""

    def __init__(self) -> None:
        self.routes: dict[str, tuple[str, bytes]] = {}
        self.requests: list[str] = []
        self.release = threading.Event()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                pass

            def do_GET(self) -> None:
                outer.requests.append(self.path)
                mode, body = outer.routes.get(self.path, ("404", b""))
                if mode == "silent":
                    outer.release.wait(10)
                    return
                if mode == "404":
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "ok":
                    self.wfile.write(body)
                elif mode == "truncated":
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                elif mode == "stall":
                    self.wfile.write(body[:100])
                    self.wfile.flush()
                    outer.release.wait(10)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def serve(self, version: str, body: bytes, mode: str = "ok", prefix: str = "/mirror") -> str:
        self.routes[f"{prefix}/v{version}.tar.gz"] = (mode, body)
        return self.base + prefix

    def stop(self) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


@pytest.fixture
def server() -> Iterator[Server]:
    running = Server()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_cutlass_settings(monkeypatch, tmp_path)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"unexpected process (pip): {args}")

    monkeypatch.setattr("kernel_builder.pipeline.environment.cutlass.processes.run", refuse)


def use(monkeypatch: pytest.MonkeyPatch, mirror: str, body: bytes, pin: str = "cutlass_3_9") -> None:
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_MIRROR", mirror)
    monkeypatch.setenv(f"KERNEL_BUILDER_{pin.upper()}_SHA256", hashlib.sha256(body).hexdigest())


def cache_entries() -> list[str]:
    parent = cached_headers("3.9.2").parent
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


def test_fetched_once_then_built_offline(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    body = make_archive()
    use(monkeypatch, server.serve("3.9.2", body), body)
    log = Log()
    includes = cutlass_includes("cutlass_3_9", fake_interpreter(), log)
    cache = cached_headers("3.9.2")
    assert includes == [cache / "include", cache / "tools" / "util" / "include"]
    assert sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*") if p.is_file()) == sorted(
        [*HEADERS, "include/cutlass/version.h"]
    )  # only the header directories: no README, examples or profiler sources
    assert log == [
        f"fetching CUTLASS 3.9.2 for cutlass_3_9 from {server.base}/mirror/v3.9.2.tar.gz "
        f"(its headers are kept in {cache})"
    ]
    assert server.requests == ["/mirror/v3.9.2.tar.gz"]
    assert cache_entries() == ["3.9.2"]  # no download or staging directory left
    server.stop()
    again = Log()
    assert cutlass_includes("cutlass_3_9", fake_interpreter(), again, offline=True) == includes
    assert cutlass_includes("cutlass_3_9", fake_interpreter(), again) == includes
    assert again == []


def test_a_file_mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An air-gapped machine: the mirror is a directory of archives (file://)."""
    body = make_archive("4.0.0")
    (tmp_path / "mirror").mkdir()
    (tmp_path / "mirror" / "v4.0.0.tar.gz").write_bytes(body)
    use(monkeypatch, (tmp_path / "mirror").as_uri(), body, "cutlass_4_0")
    includes = cutlass_includes("cutlass_4_0", fake_interpreter(), Log())
    assert checkout_version(includes[0].parent) == "4.0.0"


def test_a_wheel_pin_uses_the_archive_when_a_mirror_is_set(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = make_archive("3.6.0")
    use(monkeypatch, server.serve("3.6.0", body), body, "cutlass_3_6")
    includes = cutlass_includes("cutlass_3_6", fake_interpreter(), Log())  # pip would fail the test
    assert includes[0] == cached_headers("3.6.0") / "include"


def test_wrong_hash_is_refused(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    body = make_archive()
    mirror = server.serve("3.9.2", body)
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_MIRROR", mirror)
    digest = hashlib.sha256(body).hexdigest()
    with pytest.raises(BuildError) as info:  # the shipped hash of the real v3.9.2 archive
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())
    assert str(info.value) == (
        f"cutlass_3_9: {mirror}/v3.9.2.tar.gz has SHA-256 {digest}, expected {CUTLASS_PINS['cutlass_3_9'].archive_sha256}: "
        "refusing it (a wrong or altered file; if the expected value is wrong, set KERNEL_BUILDER_CUTLASS_3_9_SHA256)"
    )
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_3_9_SHA256", "0" * 64)
    with pytest.raises(BuildError, match=f"has SHA-256 {digest}, expected {'0' * 64}: refusing it"):
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())
    assert cache_entries() == []


def test_a_pin_with_no_known_hash_is_not_downloaded(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    assert CUTLASS_PINS["cutlass_4_5"].archive_sha256 is None
    body = make_archive("4.5.2")
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_MIRROR", server.serve("4.5.2", body))
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_4_5", fake_interpreter(), Log())
    assert str(info.value) == (
        "cutlass_4_5: no SHA-256 of the CUTLASS 4.5.2 archive (v4.5.2.tar.gz) is known to this version of "
        "kernel-builder, so it will not download it: set KERNEL_BUILDER_CUTLASS_4_5_SHA256 to the archive's SHA-256 "
        "(sha256sum of https://github.com/NVIDIA/cutlass/archive/refs/tags/v4.5.2.tar.gz, fetched on a machine you "
        "trust), or KERNEL_BUILDER_CUTLASS_4_5_DIR to a checkout of v4.5.2"
    )
    assert server.requests == []
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_4_5_SHA256", "not-a-hash")
    with pytest.raises(BuildError, match="^KERNEL_BUILDER_CUTLASS_4_5_SHA256='not-a-hash' is not a SHA-256"):
        cutlass_includes("cutlass_4_5", fake_interpreter(), Log())
    use(monkeypatch, server.base + "/mirror", body, "cutlass_4_5")
    assert checkout_version(cutlass_includes("cutlass_4_5", fake_interpreter(), Log())[0].parent) == "4.5.2"


def test_corrupt_archive(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    body = b"\x1f\x8b" + os.urandom(4000)  # a gzip magic number, then garbage
    use(monkeypatch, server.serve("3.9.2", body), body)
    with pytest.raises(BuildError, match=r"v3\.9\.2\.tar\.gz: not a readable \.tar\.gz archive \("):
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())
    assert cache_entries() == []


def test_archive_of_another_version(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    body = make_archive("3.9.2", headers_version="3.9.0")
    mirror = server.serve("3.9.2", body)
    use(monkeypatch, mirror, body)
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())
    assert str(info.value) == f"{mirror}/v3.9.2.tar.gz holds CUTLASS 3.9.0, not 3.9.2"
    assert cache_entries() == []


def test_truncated_download(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    body = make_archive()
    mirror = server.serve("3.9.2", body, "truncated")
    use(monkeypatch, mirror, body)
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())
    message = str(info.value)
    assert message.startswith(
        f"cutlass_3_9: could not download {mirror}/v3.9.2.tar.gz: the download was cut short"
    )
    assert "(truncated); try again, or without network, set KERNEL_BUILDER_CUTLASS_MIRROR" in message
    assert cache_entries() == []


@pytest.mark.parametrize("mode", ["stall", "silent"])
def test_timeout(server: Server, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    """A server that stops sending (or never answers) fails the fetch after the configured timeout."""
    body = make_archive()
    use(monkeypatch, server.serve("3.9.2", body, mode), body)
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_TIMEOUT", "0.5")
    started = time.monotonic()
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())
    assert time.monotonic() - started < 5
    received = 100 if mode == "stall" else 0
    assert f": timed out: no data for 0.5 s (after {received} bytes); on a slow link raise " in str(
        info.value
    )
    assert "KERNEL_BUILDER_CUTLASS_TIMEOUT (seconds)" in str(info.value)
    assert cache_entries() == []


def test_bad_timeout_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_3_9_SHA256", "0" * 64)
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_TIMEOUT", "soon")
    with pytest.raises(BuildError, match="^KERNEL_BUILDER_CUTLASS_TIMEOUT='soon' is not a positive number"):
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())


def test_offline_machine_and_missing_release(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    body = make_archive()
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_3_9_SHA256", hashlib.sha256(body).hexdigest())
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_MIRROR", server.base + "/empty")
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())
    assert str(info.value).startswith(
        f"cutlass_3_9: could not download {server.base}/empty/v3.9.2.tar.gz: HTTP 404 Not Found; without network"
    )
    closed = server.base
    server.stop()  # nothing listens on that port any more: what a machine without network sees
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_MIRROR", closed)
    with pytest.raises(BuildError) as info:
        cutlass_includes("cutlass_3_9", fake_interpreter(), Log())
    assert str(info.value).startswith(f"cutlass_3_9: could not download {closed}/v3.9.2.tar.gz: [Errno 111]")
    assert str(info.value).endswith(
        "without network, set KERNEL_BUILDER_CUTLASS_MIRROR to a mirror holding v3.9.2.tar.gz (a file:// directory "
        "works) or KERNEL_BUILDER_CUTLASS_3_9_DIR to a checkout of v3.9.2"
    )
    assert cache_entries() == []


def _link(name: str, target: str, *, hard: bool = False) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.LNKTYPE if hard else tarfile.SYMTYPE
    info.linkname = target
    return info


def _file(name: str) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = 3
    return info, b"x;\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            [_file("cutlass-3.9.2/include/../../evil.h")],
            "unsafe member name 'cutlass-3.9.2/include/../../evil.h'",
        ),
        ([_file("/etc/evil.h")], "not a CUTLASS release archive (expected one top directory)"),
        (
            [(_link("cutlass-3.9.2/include/cutlass/passwd", "../../../../etc/passwd"), None)],
            "link cutlass-3.9.2/include/cutlass/passwd -> ../../../../etc/passwd leaves the header directories",
        ),
        (
            [(_link("cutlass-3.9.2/include/cutlass/abs", "/etc/passwd"), None)],
            "link cutlass-3.9.2/include/cutlass/abs -> /etc/passwd leaves the header directories",
        ),
        (
            [(_link("cutlass-3.9.2/include/cutlass/hard", "cutlass-3.9.2/README.md", hard=True), None)],
            "cutlass-3.9.2/include/cutlass/hard is neither a file, a directory nor a symbolic link",
        ),
    ],
)
def test_unsafe_archives_are_refused(tmp_path: Path, extra: Any, message: str) -> None:
    archive = tmp_path / "v3.9.2.tar.gz"
    archive.write_bytes(make_archive(extra=extra))
    with pytest.raises(BuildError) as info:
        unpack_headers(archive, tmp_path / "out", "v3.9.2.tar.gz")
    assert str(info.value) == f"v3.9.2.tar.gz: {message}"
    assert not (tmp_path / "out").exists()
    assert not (tmp_path.parent / "evil.h").exists()


def test_a_link_inside_the_headers_is_kept(tmp_path: Path) -> None:
    archive = tmp_path / "v3.9.2.tar.gz"
    archive.write_bytes(
        make_archive(extra=[(_link("cutlass-3.9.2/include/cutlass/alias.h", "cutlass.h"), None)])
    )
    unpack_headers(archive, tmp_path / "out", "v3.9.2.tar.gz")
    assert (tmp_path / "out/include/cutlass/alias.h").read_bytes() == b"#pragma once\n"


def test_archive_url(monkeypatch: pytest.MonkeyPatch) -> None:
    pin = CUTLASS_PINS["cutlass_3_9"]
    monkeypatch.delenv("KERNEL_BUILDER_CUTLASS_MIRROR", raising=False)
    assert archive_url(pin) == "https://github.com/NVIDIA/cutlass/archive/refs/tags/v3.9.2.tar.gz"
    monkeypatch.setenv("KERNEL_BUILDER_CUTLASS_MIRROR", "https://mirror.example/cutlass/")
    assert archive_url(pin) == "https://mirror.example/cutlass/v3.9.2.tar.gz"


def test_the_shipped_table() -> None:
    """Each pin names one exact release; every hash is a SHA-256 of GitHub's archive of its tag, or unknown."""
    assert {p.value: p.version for p in CUTLASS_PINS.values()} == {
        "cutlass_2_10": "2.10.0", "cutlass_3_5": "3.5.1", "cutlass_3_6": "3.6.0", "cutlass_3_8": "3.8.0",
        "cutlass_3_9": "3.9.2", "cutlass_4_0": "4.0.0", "cutlass_4_4": "4.4.2", "cutlass_4_5": "4.5.2",
    }  # fmt: skip
    for pin in CUTLASS_PINS.values():
        assert pin.archive_sha256 is None or (
            len(pin.archive_sha256) == 64 and int(pin.archive_sha256, 16) >= 0
        )
    assert [p.value for p in CUTLASS_PINS.values() if p.archive_sha256 is None] == ["cutlass_4_5"]
