"""Which files belong to a variant (docs/layout.md, "Which files belong to a variant").

The end-to-end test builds a real kernel whose Python package holds a hidden file and a ``.pyo``, then runs the
build output through the digest check, an upload to the Hub double, ``kernel-builder lock`` and
``kernel-builder download``, and requires the four to agree on one file set.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from build_fixtures import CPU_VARIANT, build, copy_example
from hub_server import HubServer, git_blob_oid
from publish_fixtures import (
    committed_paths,
    run_cli,
)
from publish_fixtures import (
    cpu_machine as cpu_machine,  # noqa: F401 (fixture)
)

from kernel_builder.formats.lockfile import read_lock
from kernel_builder.formats.metadata import read_metadata, verify_digest

REPO = "org/relu"


def _files_under(directory: Path) -> set[str]:
    """Every regular file below ``directory`` (links followed), by ``/``-separated relative path."""
    return {
        path.relative_to(directory).as_posix()
        for path in directory.rglob("*")
        if path.is_file() and "__pycache__" not in path.relative_to(directory).parts
    }


def _lock_hash(hub: HubServer, sha: str, variant: str, files: set[str]) -> str:
    """The ``git_lfs_concat`` hash of exactly ``files`` of ``build/<variant>/`` as the double stores them."""
    stored = hub.files(REPO, sha)
    digest = hashlib.sha256()
    for relpath in sorted(files, key=str.encode):
        data = stored[f"build/{variant}/{relpath}"]
        digest.update(relpath.encode())
        digest.update(bytes.fromhex(git_blob_oid(data)))
    return "sha256-" + digest.hexdigest()


@pytest.mark.slow
@pytest.mark.usefixtures("cpu_machine")
def test_hidden_and_pyo_files_agree_across_build_digest_upload_lock_and_download(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = copy_example("relu", tmp_path / "relu")
    package = root / "torch-ext" / "relu"
    (package / ".private.py").write_text("SECRET = 1\n", encoding="utf-8")
    (package / ".hidden").mkdir()
    (package / ".hidden" / "helper.py").write_text("HELPER = 1\n", encoding="utf-8")
    (package / "legacy.pyo").write_bytes(b"\x03\xf3\r\n old bytecode")
    run = build(root, "--backend", "cpu")
    assert "torch-ext/relu/.private.py: hidden, not shipped" in run.output
    variant_dir = root / "build" / CPU_VARIANT

    # What the build shipped: the package's sources, the generated _ops.py, the extension and metadata.json.
    shipped = _files_under(variant_dir)
    ops_name = read_metadata(variant_dir).id
    assert shipped == {"__init__.py", "layers.py", "_ops.py", f"{ops_name}.abi3.so", "metadata.json"}

    # Files an editor, the OS or an interpreter drops into a built variant are not part of it either.
    (variant_dir / ".DS_Store").write_bytes(b"finder")
    (variant_dir / "stale.pyo").write_bytes(b"bytecode")

    # 1. The digest: it lists every shipped file but metadata.json, and the directory passes the check.
    metadata = read_metadata(variant_dir)
    assert metadata.digest is not None
    digested = set(metadata.digest.files)
    assert digested == shipped - {"metadata.json"}
    assert verify_digest(variant_dir, metadata) == []

    # 2. The upload sends exactly the shipped files.
    hub.add_organization("org")
    upload = run_cli(capsys, "upload", str(root), "--repo-id", REPO)
    assert upload.code == 0, upload.err
    prefix = f"build/{CPU_VARIANT}/"
    uploaded = {path[len(prefix) :] for path in committed_paths(hub) if path.startswith(prefix)}
    assert uploaded == shipped
    sha = hub.resolve(REPO, "v1")

    # 3. The lock hashes exactly the shipped files.
    app = tmp_path / "app"
    app.mkdir()
    (app / "pyproject.toml").write_text(
        f'[project]\nname = "app"\nversion = "0.1"\n\n[tool.kernels.dependencies]\n"{REPO}" = 1\n',
        encoding="utf-8",
    )
    lock = run_cli(capsys, "lock", str(app))
    assert lock.code == 0, lock.err
    (entry,) = read_lock(app / "kernels.lock")
    assert entry.sha == sha
    assert entry.variants[CPU_VARIANT].hash == _lock_hash(hub, sha, CPU_VARIANT, shipped)

    # 4. The download fetches and verifies exactly the shipped files.
    download = run_cli(capsys, "download", str(app), "--all-variants")
    assert download.code == 0, download.err
    folder = "kernels--" + REPO.replace("/", "--")
    fetched_dir = Path(os.environ["KERNELS_CACHE"]) / folder / "snapshots" / sha / "build" / CPU_VARIANT
    assert _files_under(fetched_dir) == shipped
