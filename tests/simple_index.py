"""A local package index for the tests: the simple repository API over loopback, from a directory of wheels.

:class:`SimpleIndex` serves ``/simple/<project>/`` as PEP 691 JSON (when asked for it and ``json`` is on) or
PEP 503 HTML, with each file's sha256 and ``Requires-Python``, and ``/files/<name>`` with HTTP ``Range``
requests (``ranges`` off: the whole file, as a server without range support does). Every request is logged
(:attr:`SimpleIndex.requests`: path and ``Range`` header) so tests can count what a command asked. pip itself
can install from it.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from packaging.utils import canonicalize_name, parse_wheel_filename


@dataclass
class SimpleIndex:
    directory: Path
    json: bool = True
    ranges: bool = True
    requires_python: dict[str, str] = field(default_factory=dict)  # file name -> Requires-Python
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    port: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/simple"

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.requests if p == path)

    def files_of(self, project: str) -> list[Path]:
        name = canonicalize_name(project)
        return sorted(
            p
            for p in self.directory.glob("*.whl")
            if canonicalize_name(parse_wheel_filename(p.name)[0]) == name
        )


def _handler(index: SimpleIndex) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            index.requests.append((self.path, self.headers.get("Range")))
            page = re.fullmatch(r"/simple/([^/]+)/", self.path)
            if page:
                self._project(page[1])
            elif self.path.startswith("/files/") and (index.directory / unquote(self.path[7:])).is_file():
                self._file(index.directory / unquote(self.path[7:]))
            else:
                self.send_error(404)

        def do_HEAD(self) -> None:
            index.requests.append((f"HEAD {self.path}", None))
            path = index.directory / unquote(self.path[7:]) if self.path.startswith("/files/") else None
            if path is None or not path.is_file():
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Length", str(path.stat().st_size))
            self.send_header("Accept-Ranges", "bytes" if index.ranges else "none")
            self.end_headers()

        def _project(self, project: str) -> None:
            files = index.files_of(project)
            if not files:
                self.send_error(404)
                return
            entries = [
                {
                    "filename": p.name,
                    "url": f"/files/{p.name}",
                    "hashes": {"sha256": hashlib.sha256(p.read_bytes()).hexdigest()},
                    "requires-python": index.requires_python.get(p.name),
                }
                for p in files
            ]
            if index.json and "application/vnd.pypi.simple.v1+json" in self.headers.get("Accept", ""):
                body = json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": entries})
                kind = "application/vnd.pypi.simple.v1+json"
            else:
                links = "".join(
                    f'<a href="{e["url"]}#sha256={e["hashes"]["sha256"]}"'  # type: ignore[index]
                    + (f' data-requires-python="{e["requires-python"]}"' if e["requires-python"] else "")
                    + f">{e['filename']}</a>\n"
                    for e in entries
                )
                body = f"<!DOCTYPE html><html><body>\n{links}</body></html>\n"
                kind = "text/html"
            self._send(200, body.encode(), {"Content-Type": kind})

        def _file(self, path: Path) -> None:
            data = path.read_bytes()
            wanted = self.headers.get("Range")
            match = re.fullmatch(r"bytes=(\d*)-(\d*)", wanted or "")
            if not index.ranges or match is None:
                self._send(200, data, {"Content-Type": "application/octet-stream"})
                return
            if match[1]:
                start, end = int(match[1]), min(int(match[2] or len(data) - 1), len(data) - 1)
            else:
                start, end = max(0, len(data) - int(match[2])), len(data) - 1
            headers = {
                "Content-Type": "application/octet-stream",
                "Content-Range": f"bytes {start}-{end}/{len(data)}",
            }
            self._send(206, data[start : end + 1], headers)

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in {**headers, "Content-Length": str(len(body))}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def serve(index: SimpleIndex) -> Iterator[SimpleIndex]:
    """Run ``index`` on 127.0.0.1 (an ephemeral port) for the duration of the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(index))
    index.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
