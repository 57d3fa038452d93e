"""Which files belong to a variant (docs/layout.md, "Which files belong to a variant").

The end-to-end test builds a real kernel whose Python package holds a hidden file and a ``.pyo``, then runs the
build output through the digest check, an upload to the Hub double, ``kernel-builder lock`` and
``kernel-builder download``, and requires the four to agree on one file set.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from build_runs import build, cpu_python, run_json
from cpu_projects import copy_example, write_tree
from hub_server import HubServer, git_blob_oid
from huggingface_hub.utils import filter_repo_objects  # type: ignore[attr-defined]  # lazily exported
from loader_fixtures import write_variant
from matrix_data import CPU_VARIANT
from publish_fixtures import (
    committed_paths,
    run_cli,
)
from publish_fixtures import (
    cpu_machine as cpu_machine,  # noqa: F401 (fixture)
)

from kernel_builder.config import load_project
from kernel_builder.formats.files import (
    GIT_BLOB,
    HUB_IGNORE_PATTERNS,
    file_hashes,
    git_blob_id,
    is_bytecode,
    is_hidden,
    is_variant_file,
    scan_variant,
    sha256_hex,
)
from kernel_builder.formats.lockfile import group_variant_files, read_lock, variant_hash
from kernel_builder.formats.metadata import digest_files, read_metadata, verify_digest
from kernel_builder.pipeline.plan.sources import hidden_python_files, shipped_python_files

REPO = "org/relu"

#: Paths relative to a variant directory, and whether each is a file of the variant.
CASES = {
    "__init__.py": True,
    "layers/__init__.py": True,
    "_relu_cpu_0123456789.abi3.so": True,
    "metadata.json": True,
    "data/config.json": True,
    "notes.pyc.txt": True,
    "my__pycache__/x.py": True,
    "a.b/c.py": True,
    "__pycache__/__init__.cpython-312.pyc": False,
    "layers/__pycache__/x.py": False,
    "stale.pyc": False,
    "legacy.pyo": False,
    "layers/legacy.pyo": False,
    ".private.py": False,
    ".DS_Store": False,
    "layers/.helper.py": False,
    ".hidden/helper.py": False,
    "layers/.cache/x.json": False,
}


@pytest.mark.parametrize(("relpath", "expected"), CASES.items())
def test_the_rule(relpath: str, expected: bool) -> None:
    assert is_variant_file(relpath) is expected
    assert is_variant_file(relpath) is not (is_bytecode(relpath) or is_hidden(relpath))


def test_the_hub_ignore_patterns_download_exactly_the_variant_files() -> None:
    """``snapshot_download(ignore_patterns=...)`` (huggingface_hub's own filter) keeps the same files as the rule."""
    paths = [f"build/{CPU_VARIANT}/{relpath}" for relpath in CASES]
    kept = filter_repo_objects(
        paths, allow_patterns=[f"build/{CPU_VARIANT}/*"], ignore_patterns=list(HUB_IGNORE_PATTERNS)
    )
    assert {path.split("/", 2)[2] for path in kept} == {rel for rel, ok in CASES.items() if ok}


def _variant_tree(root: Path) -> Path:
    for relpath in CASES:
        path = root / relpath
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"content of {relpath}\n", encoding="utf-8")
    return root


def test_scan_digest_and_lock_hash_count_the_same_files(tmp_path: Path) -> None:
    variant = _variant_tree(tmp_path / CPU_VARIANT)
    expected = {rel for rel, ok in CASES.items() if ok}
    assert set(scan_variant(variant).files) == expected
    assert set(digest_files(variant)) == expected - {"metadata.json"}

    objects = {rel: git_blob_id(variant / rel) for rel in CASES}
    grouped = group_variant_files((f"build/{CPU_VARIANT}/{rel}", oid) for rel, oid in objects.items())
    assert set(grouped[CPU_VARIANT]) == expected
    only_variant_files = {rel: oid for rel, oid in objects.items() if rel in expected}
    assert variant_hash(objects.items()) == variant_hash(only_variant_files.items())
    assert variant_hash(objects.items()) != variant_hash(list(only_variant_files.items())[1:])


def test_files_dropped_into_a_variant_do_not_break_its_digest(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu")
    for relpath in (".DS_Store", "stale.pyo", "__pycache__/x.cpython-312.pyc", ".cache/x.json"):
        (variant / relpath).parent.mkdir(parents=True, exist_ok=True)
        (variant / relpath).write_text("dropped\n", encoding="utf-8")
    (variant / "extra.py").write_text("unlisted\n", encoding="utf-8")
    assert verify_digest(variant, read_metadata(variant)) == [
        "extra.py: unknown (in the directory, not listed in the digest)"
    ]
    (variant / "extra.py").unlink()
    assert verify_digest(variant, read_metadata(variant)) == []


def test_an_older_digest_that_lists_a_hidden_file_still_verifies(tmp_path: Path) -> None:
    """Builds made before the rule shipped hidden package files and listed them; they are not checked now."""
    variant = write_variant(
        tmp_path / "torch-cpu", files={"__init__.py": "X = 1\n", ".private.py": "Y = 2\n"}
    )
    data = json.loads((variant / "metadata.json").read_text(encoding="utf-8"))
    assert ".private.py" in data["digest"]["files"]
    assert verify_digest(variant, read_metadata(variant)) == []


def test_file_hashes_read_once_match_hashlib_and_git(tmp_path: Path) -> None:
    path = tmp_path / "blob.bin"
    data = os.urandom(3 << 20) + b"tail"  # more than one chunk
    path.write_bytes(data)
    hashes = file_hashes(path, GIT_BLOB, "sha256", "sha512")
    assert hashes["sha256"] == hashlib.sha256(data).hexdigest() == sha256_hex(path)
    assert hashes["sha512"] == hashlib.sha512(data).hexdigest()
    git = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True, check=True)
    assert hashes[GIT_BLOB] == git.stdout.strip() == git_blob_id(path) == git_blob_oid(data)
    digest = digest_files(tmp_path)["blob.bin"]
    assert digest == base64.b64encode(hashlib.sha256(data).digest()).decode()


def test_the_build_ships_no_hidden_or_bytecode_file(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "k",
        {
            "build.toml": """
                [general]
                name = "kb-k"
                version = 1
                edition = 5
                license = "Apache-2.0"
                backends = ["cpu"]

                [torch-noarch]
            """,
            "torch-ext/kb_k/__init__.py": "",
            "torch-ext/kb_k/.private.py": "",
            "torch-ext/kb_k/sub/.helper.py": "",
            "torch-ext/kb_k/.hidden/mod.py": "",
            "torch-ext/kb_k/legacy.pyo": "",
            "torch-ext/kb_k/__pycache__/x.py": "",
            "torch-ext/kb_k/sub/mod.py": "",
        },
    )
    project = load_project(root).project
    assert shipped_python_files(project) == ["__init__.py", "sub/mod.py"]
    assert hidden_python_files(project) == [".private.py", "sub/.helper.py"]


def _files_under(directory: Path) -> set[str]:
    """Every regular file below ``directory`` (links followed), by ``/``-separated relative path."""
    return {
        path.relative_to(directory).as_posix()
        for path in directory.rglob("*")
        if path.is_file() and "__pycache__" not in path.relative_to(directory).parts
    }


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

    # What the build shipped: the package's sources, the generated _ops.py, the extension, the public API its
    # import check read (symbols.json) and metadata.json.
    shipped = _files_under(variant_dir)
    ops_name = read_metadata(variant_dir).id
    assert shipped == {
        "__init__.py",
        "layers.py",
        "_ops.py",
        f"{ops_name}.abi3.so",
        "symbols.json",
        "metadata.json",
    }

    # Files an editor, the OS or an interpreter drops into a built variant are not part of it either.
    (variant_dir / ".DS_Store").write_bytes(b"finder")
    (variant_dir / "stale.pyo").write_bytes(b"bytecode")

    # 1. The digest lists every shipped file but metadata.json; the directory passes the check, and the loader
    # (which verifies the digest before importing) loads it.
    metadata = read_metadata(variant_dir)
    assert metadata.digest is not None
    digested = set(metadata.digest.files)
    assert digested == shipped - {"metadata.json"}
    assert verify_digest(variant_dir, metadata) == []
    loaded = run_json(
        cpu_python(),
        """
        import json, sys
        from pathlib import Path
        import kernel_builder
        module = kernel_builder.get_local_kernel(Path(sys.argv[1]), backend="cpu")
        print(json.dumps(Path(module.__file__).parent.name))
        """,
        root / "build",
    )
    assert loaded == CPU_VARIANT

    # 2. The upload sends exactly the shipped files.
    hub.add_organization("org")
    upload = run_cli(capsys, "upload", str(root), "--repo-id", REPO, "--allow-incomplete")  # one variant
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
    assert entry.sha == sha  # the lock pins the commit; step 4 checks each file against its tree
    # The tree under build/<variant>/ but *.pyc and __pycache__ (what the `kernels` loader fetches) holds
    # exactly the shipped files, so both loaders see the same variant.
    in_tree = {
        path[len(prefix) :]
        for path in hub.files(REPO, sha)
        if path.startswith(prefix) and not path.endswith(".pyc") and "__pycache__" not in path.split("/")
    }
    assert in_tree == shipped

    # 4. The download fetches and verifies exactly the shipped files.
    download = run_cli(capsys, "download", str(app), "--all-variants")
    assert download.code == 0, download.err
    folder = "kernels--" + REPO.replace("/", "--")
    fetched_dir = Path(os.environ["KERNELS_CACHE"]) / folder / "snapshots" / sha / "build" / CPU_VARIANT
    assert _files_under(fetched_dir) == shipped
