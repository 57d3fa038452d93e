"""``kernel-builder update-matrix``: the maintainer's one step to add a Torch release (docs/variant-matrix.md),
end to end through the CLI, with PyPI's recorded answer from a file or served over loopback — never PyPI."""

from __future__ import annotations

import base64
import json
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from publish_fixtures import run_cli

from kernel_builder.commands import update_matrix
from kernel_builder.formats.matrix import PACKAGED_MATRIX

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pypi"
ANSWER = FIXTURES / "torch.json"


@pytest.fixture
def before(tmp_path: Path) -> Path:
    """A copy of the matrix before Torch 2.15."""
    path = tmp_path / "build-matrix.json"
    shutil.copyfile(FIXTURES / "build-matrix-2.14.json", path)
    return path


def test_it_proposes_and_writes_nothing_by_default(before: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = before.read_text()
    run = run_cli(capsys, "update-matrix", "2.15", "--matrix", str(before), "--pypi-json", str(ANSWER))
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0] == "entries of torch 2.15 (torch 2.15.0 on PyPI):"
    assert json.loads(lines[3]) == {"torch": "2.15", "torch-pin": "2.15.0", "backend": "cuda", "version": "13.2",
                                    "systems": ["x86_64-linux", "aarch64-linux"], "required": True}  # fmt: skip
    assert "    2.12: torch-pin 2.12.0 -> 2.12.1 (4 entries)" in lines
    assert "    2.14: optional -> required (4 entries)" in lines
    assert lines[-1] == f"nothing written: run again with --write to write {before}"
    assert before.read_text() == text


def test_write_gives_the_shipped_matrix(before: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Naming the CUDA flavours PyTorch published for 2.15 (its RFC), the written file is the shipped one but
    for 2.14's cu126, which PyTorch's notice (not PyPI) gave."""
    run = run_cli(
        capsys, "update-matrix", "2.15", "--cuda", "13.0, 13.2", "--write",
        "--matrix", str(before), "--pypi-json", str(ANSWER),
    )  # fmt: skip
    assert run.code == 0, run.err
    assert run.out.splitlines()[-1] == (
        f"wrote {before}; record the facts above in the notes of kernel_builder/formats/matrix.py"
    )
    cu126_214 = '"torch": "2.14", "torch-pin": "2.14.1", "backend": "cuda", "version": "12.6"'
    shipped = [line for line in PACKAGED_MATRIX.read_text().splitlines() if cu126_214 not in line]
    assert before.read_text().splitlines() == shipped


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["2"], "error: TORCH '2': expected major.minor, such as 2.16 or 13.2"),
        (["2.15", "--cuda", "13"], "error: --cuda '13': expected major.minor, such as 2.16 or 13.2"),
    ],
)
def test_usage_errors(
    args: list[str], message: str, before: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = run_cli(capsys, "update-matrix", *args, "--matrix", str(before), "--pypi-json", str(ANSWER))
    assert (run.code, run.err.strip()) == (2, message)


def test_a_release_pypi_does_not_have(before: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_cli(capsys, "update-matrix", "2.16", "--matrix", str(before), "--pypi-json", str(ANSWER))
    assert (run.code, run.err.strip()) == (1, "error: PyPI has no release of torch 2.16")


@contextmanager
def pypi(pages: dict[str, bytes]) -> Iterator[tuple[str, list[str], list[str | None]]]:
    """PyPI's JSON API over loopback: ``pages`` by path; yields its torch URL, the paths asked and the
    ``Authorization`` header of each request."""
    asked: list[str] = []
    authorization: list[str | None] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            asked.append(self.path)
            authorization.append(self.headers.get("Authorization"))
            body = pages.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/pypi/torch", asked, authorization
    finally:
        server.shutdown()
        server.server_close()


def test_an_older_release_is_read_from_its_own_answer(
    before: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Re-proposing 2.14 (PyPI's newest is 2.15.0): the project's answer, then 2.14.1's own for its metadata."""
    own = {"info": {"version": "2.14.1", "requires_python": ">=3.10",
                    "requires_dist": ['cuda-toolkit[cudart]==13.0.3; platform_system == "Linux"']}}  # fmt: skip
    pages = {"/pypi/torch/json": ANSWER.read_bytes(), "/pypi/torch/2.14.1/json": json.dumps(own).encode()}
    with pypi(pages) as (url, asked, _):
        monkeypatch.setattr(update_matrix, "PYPI_TORCH", url)
        run = run_cli(capsys, "update-matrix", "2.14", "--cuda", "13.0,13.2", "--matrix", str(before))
    assert run.code == 0, run.err
    assert asked == ["/pypi/torch/json", "/pypi/torch/2.14.1/json"]
    assert (
        '    - 2.14 cu130: PyPI\'s flavour (cuda-toolkit[cudart]==13.0.3; platform_system == "Linux")'
        in run.out
    )


def test_a_mirror_with_credentials_in_its_url_is_asked_as_pip_asks(
    before: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A PyPI mirror named with ``user:token@`` gets them as HTTP basic authentication (pip's way), not in the
    request line: the request goes through the same helper as every index read."""
    with pypi({"/pypi/torch/json": ANSWER.read_bytes()}) as (url, asked, authorization):
        monkeypatch.setattr(update_matrix, "PYPI_TORCH", url.replace("http://", "http://maint:s3cret@"))
        run = run_cli(capsys, "update-matrix", "2.15", "--matrix", str(before))
    assert run.code == 0, run.err
    assert asked == ["/pypi/torch/json"]
    assert authorization == ["Basic " + base64.b64encode(b"maint:s3cret").decode()]


def test_pypi_out_of_reach(
    before: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setattr(update_matrix, "PYPI_TORCH", f"http://127.0.0.1:{port}/pypi/torch")
    run = run_cli(capsys, "update-matrix", "2.15", "--matrix", str(before))
    assert run.code == 1
    assert run.err.startswith(
        f"error: cannot read PyPI's metadata of torch (http://127.0.0.1:{port}/pypi/torch/json): "
    )
    assert run.err.rstrip().endswith("check the network, or pass --pypi-json FILE with a saved answer")
