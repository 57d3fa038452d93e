"""metadata.json: parsing (docs/loading.md), the digest the builder writes (docs/layout.md), its check ."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from loader_fixtures import LAYERS, OPS, recompute_digest, write_variant
from metadata_views import our_view, upstream_view

from kernel_builder.formats import metadata as metadata_module
from kernel_builder.formats.metadata import (
    Digest,
    KernelDependency,
    Metadata,
    Provenance,
    ProvenanceEntry,
    digest_files,
    read_metadata,
    verify_digest,
)


@pytest.fixture(autouse=True)
def _fresh_digest_memo() -> None:
    metadata_module._verified.clear()


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


MINIMAL = {"name": "relu", "id": "_relu_abc", "python-depends": [], "backend": {"type": "cpu"}}


# --- read_metadata ------------------------------------------------------------------------------------------


def test_full_metadata_is_parsed(tmp_path: Path) -> None:
    data = {
        "name": "fused-gelu",
        "id": "_fused_gelu_cuda_3f9a0c2b7d",
        "version": 1,
        "license": "Apache-2.0",
        "upstream": "https://github.com/org/gelu.git",
        "source": "https://github.com/org/kernels.git",
        "python-depends": ["einops"],
        "kernel-depends": [{"repo-id": "org/a", "version": 2}, {"repo-id": "org/b", "revision": "main"}],
        "backend": {"type": "cuda", "archs": ["8.0", "9.0a"]},
        "arch-selection": "native",
        "digest": {"algorithm": "sha256", "files": {"__init__.py": "AAAA"}},
        "provenance": {
            "kernel-builder": {"version": "0.4.0"},
            "kernel": {"commit": "a" * 40, "dirty": True},
        },
        "some-future-key": {"ignored": True},
    }
    meta = read_metadata(write_json(tmp_path / "metadata.json", data))
    assert meta == Metadata(
        name="fused-gelu",
        id="_fused_gelu_cuda_3f9a0c2b7d",
        python_depends=("einops",),
        backend_type="cuda",
        version=1,
        license="Apache-2.0",
        upstream="https://github.com/org/gelu.git",
        source="https://github.com/org/kernels.git",
        kernel_depends=(KernelDependency("org/a", version=2), KernelDependency("org/b", revision="main")),
        backend_archs=("8.0", "9.0a"),
        digest=Digest("sha256", {"__init__.py": "AAAA"}),
        provenance=Provenance(
            kernel=ProvenanceEntry(commit="a" * 40, dirty=True),
            kernel_builder=ProvenanceEntry(version="0.4.0"),
        ),
        arch_selection="native",
    )
    assert meta.python_name == "fused_gelu"
    assert meta.provenance is not None and meta.provenance.dirty_parts == ("kernel",)
    assert hash(meta) == hash(meta)  # frozen and hashable despite the digest mapping


def test_minimal_metadata_and_directory_argument(tmp_path: Path) -> None:
    write_json(tmp_path / "metadata.json", MINIMAL)
    meta = read_metadata(tmp_path)
    assert meta == Metadata(name="relu", id="_relu_abc", python_depends=(), backend_type="cpu")
    assert (meta.version, meta.digest, meta.provenance, meta.backend_archs) == (None, None, None, None)


def test_legacy_provenance_forms(tmp_path: Path) -> None:
    flat = read_metadata(write_json(tmp_path / "a.json", {**MINIMAL, "provenance": {"sha": "b" * 40}}))
    assert flat.provenance == Provenance(kernel=ProvenanceEntry(commit="b" * 40))
    nested = {**MINIMAL, "provenance": {"kernel-builder": {"sha": "c" * 40, "dirty": True}}}
    meta = read_metadata(write_json(tmp_path / "b.json", nested))
    assert meta.provenance == Provenance(kernel_builder=ProvenanceEntry(commit="c" * 40, dirty=True))
    assert meta.provenance.dirty_parts == ("kernel-builder",)


def test_legacy_id_and_default_name(tmp_path: Path) -> None:
    data = {"python-depends": [], "backend": {"type": "cuda"}}
    meta = read_metadata(write_json(tmp_path / "metadata.json", data), default_name="flash-attn")
    assert (meta.name, meta.id, meta.python_name) == ("flash-attn", None, "flash_attn")


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as caught:
        read_metadata(tmp_path / "metadata.json")
    assert str(caught.value) == f"{tmp_path / 'metadata.json'}: metadata.json not found"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({k: v for k, v in MINIMAL.items() if k != "name"}, "missing required field 'name'"),
        (
            {k: v for k, v in MINIMAL.items() if k != "python-depends"},
            "missing required field 'python-depends'",
        ),
        ({k: v for k, v in MINIMAL.items() if k != "backend"}, "missing required field 'backend'"),
        ({**MINIMAL, "backend": {}}, "missing required field 'backend.type'"),
        ({**MINIMAL, "backend": {"type": 3}}, "invalid field 'backend.type': expected a string, got 3"),
        (
            {**MINIMAL, "build-layout": "ZIP"},
            "invalid field 'build-layout': expected one of files, zip, got \"ZIP\"",
        ),
        ({**MINIMAL, "build-layout": None}, "invalid field 'build-layout': expected a string, got null"),
        (
            {**MINIMAL, "name": "Relu"},
            (
                "invalid field 'name': 'Relu' is not a kernel name (lower-case letters, digits and '-', "
                "starting with a letter, not ending with '-')"
            ),
        ),
        ({**MINIMAL, "id": "class"}, "invalid field 'id': 'class' is not a Python identifier"),
        ({**MINIMAL, "id": "1relu"}, "invalid field 'id': '1relu' is not a Python identifier"),
        ({**MINIMAL, "version": True}, "invalid field 'version': expected an integer, got true"),
        (
            {**MINIMAL, "python-depends": "einops"},
            "invalid field 'python-depends': expected a list of strings, got \"einops\"",
        ),
        ({**MINIMAL, "python-depends": [1]}, "invalid field 'python-depends[0]': expected a string, got 1"),
        (
            {**MINIMAL, "backend": {"type": "cuda", "archs": "8.0"}},
            "invalid field 'backend.archs': expected a list of strings, got \"8.0\"",
        ),
        (
            {**MINIMAL, "digest": {"algorithm": "sha256", "files": {"a.py": 1}}},
            "invalid field 'digest.files.a.py': expected a base64 string, got 1",
        ),
        ({**MINIMAL, "digest": {"files": {}}}, "missing required field 'digest.algorithm'"),
        (
            {**MINIMAL, "kernel-depends": [{"repo-id": "org/a"}]},
            "invalid field 'kernel-depends[0]': expected exactly one of 'version' and 'revision'",
        ),
        (
            {**MINIMAL, "provenance": {"kernel": {"dirty": "yes"}}},
            "invalid field 'provenance.kernel.dirty': expected true or false, got \"yes\"",
        ),
        (  # the kernels loader refuses an abbreviated commit, so a build never writes one
            {**MINIMAL, "provenance": {"kernel": {"commit": "abcdef1", "dirty": False}}},
            "invalid field 'provenance.kernel.commit': expected a full git commit id (40 or 64 hexadecimal "
            'digits), got "abcdef1"',
        ),
        (
            {**MINIMAL, "provenance": {"sha": "HEAD"}},
            "invalid field 'provenance.sha': expected a full git commit id (40 or 64 hexadecimal digits), "
            'got "HEAD"',
        ),
    ],
)
def test_invalid_fields_name_path_field_and_reason(
    tmp_path: Path, data: dict[str, Any], message: str
) -> None:
    path = write_json(tmp_path / "metadata.json", data)
    with pytest.raises(ValueError) as caught:
        read_metadata(path)
    assert str(caught.value) == f"{path}: {message}"


def test_invalid_json_and_top_level(tmp_path: Path) -> None:
    path = tmp_path / "metadata.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match=r"^.*metadata\.json: not valid JSON: Expecting property name"):
        read_metadata(path)
    write_json(path, [])
    with pytest.raises(ValueError) as caught:
        read_metadata(path)
    assert str(caught.value) == f"{path}: expected a JSON object at the top level, got list"


# --- one model, written and read (and read by the kernels loader) -----------------------------------------

FULL = Metadata(
    name="fused-gelu",
    id="_fused_gelu_cuda_3f9a0c2b7d",
    version=2,
    license="Apache-2.0",
    upstream="https://github.com/org/gelu.git",
    source="https://github.com/org/kernels.git",
    python_depends=("einops", "nvidia-cutlass-dsl"),
    kernel_depends=(KernelDependency("org/a", version=2), KernelDependency("org/b", revision="main")),
    backend_type="cuda",
    backend_archs=("8.0", "9.0a", "10.0+PTX"),
    arch_selection="native",
    digest=Digest("sha256", {"__init__.py": "AAAA", "layers/x.py": "BBBB"}),
    provenance=Provenance(
        kernel=ProvenanceEntry(commit="a" * 40, dirty=True), kernel_builder=ProvenanceEntry(version="0.1.0")
    ),
)
NOARCH = Metadata(
    name="relu", id="_relu_cpu_0123456789", version=1, license="MIT", python_depends=(), backend_type="cpu",
    digest=Digest("sha256", {}), provenance=Provenance(kernel_builder=ProvenanceEntry(version="0.1.0")),
)  # fmt: skip


@pytest.mark.parametrize("meta", [FULL, NOARCH], ids=["full", "noarch"])
def test_what_we_write_both_readers_read_back(tmp_path: Path, meta: Metadata) -> None:
    path = tmp_path / "metadata.json"
    path.write_text(meta.to_json(), encoding="utf-8")
    assert read_metadata(path) == meta
    assert Metadata.from_json(meta.to_json(), path) == meta  # text and bytes alike
    assert upstream_view(path) == our_view(meta)


def test_written_layout_is_the_documented_one() -> None:
    """Keys in the documented order, 2-space indentation, a trailing newline; kernel-builder before kernel."""
    text = FULL.to_json()
    assert text.endswith("}\n") and text.startswith('{\n  "name": "fused-gelu",\n  "id": ')
    assert list(json.loads(text)) == [
        "name", "id", "version", "license", "upstream", "source", "python-depends", "kernel-depends",
        "backend", "arch-selection", "digest", "provenance",
    ]  # fmt: skip
    assert list(json.loads(text)["provenance"]) == ["kernel-builder", "kernel"]
    minimal = json.loads(NOARCH.to_json())
    assert (minimal["kernel-depends"], minimal["backend"]) == ([], {"type": "cpu"})  # always written
    assert "arch-selection" not in minimal and "upstream" not in minimal and "kernels-minver" not in minimal


def test_what_the_upstream_builder_writes_we_read_as_upstream_does(tmp_path: Path) -> None:
    """A metadata.json as Hugging Face's kernel-builder writes it: every key it may write, including the builder's
    own git state and ``kernels-minver``, and keys this tool does not know (ignored by both readers)."""
    data = {
        "name": "flash-attn3",
        "id": "_flash_attn3_cuda_7a8b9c0d1e",
        "version": 1,
        "kernels-minver": "0.12.0",
        "license": "BSD-3-Clause",
        "upstream": "https://github.com/Dao-AILab/flash-attention",
        "python-depends": ["einops"],
        "kernel-depends": [{"repo-id": "kernels-community/b", "revision": "v1"}],
        "backend": {"type": "cuda", "archs": ["10.0", "8.0", "9.0a"]},
        "digest": {"algorithm": "sha512", "files": {"__init__.py": "QUFB", "_ops.py": "QkJC"}},
        "provenance": {
            "kernel-builder": {"version": "0.9.1", "commit": "c" * 40, "dirty": False},
            "kernel": {"commit": "D" * 64, "dirty": True},
        },
        "future-key": [1, 2],
    }
    path = write_json(tmp_path / "metadata.json", data)
    ours = read_metadata(path)
    assert our_view(ours) == upstream_view(path)
    assert ours.kernels_minver == (0, 12, 0)
    assert ours.provenance is not None and ours.provenance.dirty_parts == ("kernel",)
    # Written back, it is still the same record for both readers (the unknown key is not kept).
    path.write_text(ours.to_json(), encoding="utf-8")
    assert read_metadata(path) == ours and upstream_view(path) == our_view(ours)


@pytest.mark.parametrize(
    ("backend", "expected_type", "expected_archs"),
    [
        ({"type": "cuda", "archs": ["9.0"]}, "cuda", ("9.0",)),
        # a backend-agnostic build (kernels 0.19): no backend, and its other fields are not read
        ({"type": "agnostic"}, None, None),
        ({"type": "agnostic", "archs": ["9.0"]}, None, None),
        # a backend this loader does not know (a newer builder's): kept as written, no error until something needs it
        ({"type": "opencl"}, "opencl", None),
        ({"type": "opencl", "archs": "not even a list"}, "opencl", None),
        ({"type": "CUDA"}, "CUDA", None),
    ],
)
def test_agnostic_and_unknown_backends_read_as_upstream_reads_them(
    tmp_path: Path, backend: dict[str, Any], expected_type: str | None, expected_archs: tuple[str, ...] | None
) -> None:
    path = write_json(
        tmp_path / "metadata.json", {**MINIMAL, "license": "MIT", "version": 1, "backend": backend}
    )
    ours = read_metadata(path)
    assert (ours.backend_type, ours.backend_archs) == (expected_type, expected_archs)
    assert ours.backend_known == (expected_type in (None, "cuda"))
    upstream_backend = upstream_view(path)["backend"]
    if ours.backend_known:
        assert upstream_backend == (expected_type, None if expected_archs is None else list(expected_archs))
    else:  # upstream: an error only when the backend is asked for, and its archs not read either
        assert upstream_backend[0].startswith("unknown: unknown backend") and upstream_backend[1] is None


@pytest.mark.parametrize("layout", ["files", "zip", None])
def test_the_build_layout_is_read_and_written_back(tmp_path: Path, layout: str | None) -> None:
    data = {**MINIMAL, "license": "MIT", "version": 1}
    if layout is not None:
        data["build-layout"] = layout
    path = write_json(tmp_path / "metadata.json", data)
    ours = read_metadata(path)
    assert ours.build_layout == (layout or "files")
    assert our_view(ours) == upstream_view(path)
    assert ("build-layout" in ours.to_dict()) == (
        layout == "zip"
    )  # what older loaders cannot read, only when needed
    path.write_text(ours.to_json(), encoding="utf-8")
    assert read_metadata(path) == ours


def test_legacy_files_round_trip_as_the_record_read() -> None:
    """A legacy flat provenance or a file without ``id`` is written back in today's form, same values."""
    path = Path("metadata.json")
    legacy = Metadata.from_json(json.dumps({**MINIMAL, "provenance": {"sha": "b" * 40}}), path)
    assert json.loads(legacy.to_json())["provenance"] == {"kernel": {"commit": "b" * 40}}
    assert Metadata.from_json(legacy.to_json(), path) == legacy
    no_id = Metadata.from_json(
        json.dumps({"python-depends": [], "backend": {"type": "cpu"}}), path, default_name="old-kernel"
    )
    assert "id" not in json.loads(no_id.to_json())
    assert Metadata.from_json(no_id.to_json(), path) == no_id


# --- digest_files -------------------------------------------------------------------------------------------


def test_digest_files_matches_an_independent_recomputation(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "v", digest=False)
    (variant / "metadata.json.sigstore").write_text("sig", encoding="utf-8")
    (variant / "layers" / "metadata.json").write_text("{}", encoding="utf-8")  # nested: counts
    (variant / "__pycache__").mkdir()
    (variant / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (variant / "layers" / "__pycache__").mkdir()
    (variant / "layers" / "__pycache__" / "data.txt").write_text("cached", encoding="utf-8")
    (variant / "stray.pyc").write_bytes(b"\0")
    (variant / "kernel.abi3.so").write_bytes(b"\x7fELF")
    files = digest_files(variant)
    assert list(files) == [
        "__init__.py",
        "_ops.py",
        "kernel.abi3.so",
        "layers/__init__.py",
        "layers/metadata.json",
    ]
    assert files == recompute_digest(variant)
    assert files["kernel.abi3.so"] == base64.b64encode(hashlib.sha256(b"\x7fELF").digest()).decode()


def test_digest_files_follows_file_links_only_and_supports_sha512(tmp_path: Path) -> None:
    outside = tmp_path / "blobs"
    outside.mkdir()
    (outside / "blob").write_text("ops = 1\n", encoding="utf-8")
    (outside / "pkg").mkdir()
    (outside / "pkg" / "mod.py").write_text("x = 2\n", encoding="utf-8")
    variant = tmp_path / "v"
    variant.mkdir()
    (variant / "_ops.py").symlink_to(outside / "blob")  # the Hub cache stores every file as such a link
    assert digest_files(variant, "sha512") == {
        "_ops.py": base64.b64encode(hashlib.sha512(b"ops = 1\n").digest()).decode(),
    }
    (variant / "sub").symlink_to(outside / "pkg", target_is_directory=True)
    os.mkfifo(variant / "pipe")
    with pytest.raises(ValueError) as caught:
        digest_files(variant)
    assert str(caught.value) == (
        f"{variant}: cannot digest pipe (a FIFO), sub (a symlink to a directory (not followed))"
    )


def test_digest_files_rejects_other_algorithms(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as caught:
        digest_files(tmp_path, "md5")
    assert str(caught.value) == "unsupported digest algorithm 'md5' (expected sha256 or sha512)"


# --- verify_digest ------------------------------------------------------------------------------------------


def test_verify_digest_passes_and_is_memoised_per_real_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    variant = write_variant(tmp_path / "v")
    meta = read_metadata(variant)
    assert verify_digest(variant, meta) == []
    calls: list[Path] = []

    def counting(path: Path, algorithm: str) -> str:
        calls.append(path)
        return ""

    monkeypatch.setattr(metadata_module, "_hash_file", counting)
    link = tmp_path / "link"
    link.symlink_to(variant, target_is_directory=True)
    assert verify_digest(link, meta) == []
    assert calls == []


def test_verify_digest_reports_every_problem(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "v")
    meta = read_metadata(variant)
    (variant / "_ops.py").write_text("ops = 'tampered'\n", encoding="utf-8")
    (variant / "layers" / "__init__.py").unlink()
    (variant / "extra.py").write_text("", encoding="utf-8")
    actual = base64.b64encode(hashlib.sha256(b"ops = 'tampered'\n").digest()).decode()
    assert meta.digest is not None
    expected = meta.digest.files["_ops.py"]
    assert verify_digest(variant, meta) == [
        f"_ops.py: mismatch (sha256 is {actual}, digest lists {expected})",
        "extra.py: unknown (in the directory, not listed in the digest)",
        "layers/__init__.py: missing (listed in the digest, not in the directory)",
    ]
    # A failure is not memoised: restoring the files makes it pass.
    (variant / "_ops.py").write_text(OPS, encoding="utf-8")
    (variant / "layers" / "__init__.py").write_text(LAYERS, encoding="utf-8")
    os.remove(variant / "extra.py")
    assert verify_digest(variant, meta) == []


def test_verify_digest_unsupported_algorithm_and_no_digest(tmp_path: Path) -> None:
    variant = write_variant(
        tmp_path / "v", extra={"digest": {"algorithm": "md5", "files": {"__init__.py": "x"}}}
    )
    assert verify_digest(variant, read_metadata(variant)) == [
        "unsupported algorithm 'md5' (expected sha256 or sha512)",
        "_ops.py: unknown (in the directory, not listed in the digest)",
        "layers/__init__.py: unknown (in the directory, not listed in the digest)",
    ]
    bare = write_variant(tmp_path / "bare", digest=False)
    assert verify_digest(bare, read_metadata(bare)) == []


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            {"repo-id": "../x", "version": 1},
            "each half of <org>/<name> uses letters, digits, '_', '-' and '.', not at its start or end",
        ),
        ({"repo-id": "org/x", "revision": "../../main"}, "it contains '..' or '@{', or is '@'"),
    ],
)
def test_kernel_depends_names_are_validated(tmp_path: Path, entry: dict[str, object], problem: str) -> None:
    path = tmp_path / "metadata.json"
    data = {
        "name": "relu",
        "id": "_relu_cpu_x",
        "python-depends": [],
        "backend": {"type": "cpu"},
        "kernel-depends": [entry],
    }
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError) as caught:
        read_metadata(path)
    assert str(caught.value) == f"{path}: invalid field 'kernel-depends[0]': {problem}"


@pytest.mark.parametrize(
    ("relpath", "problem"),
    [
        ("../../../../etc/hostname", "a path that leaves the variant directory ('..')"),
        ("relu/../../x.py", "a path that leaves the variant directory ('..')"),
        ("/etc/hostname", "an absolute path"),
        ("C:/x.py", "an absolute path"),
        ("relu\\x.py", "a path with a backslash (keys are '/'-separated)"),
        ("relu//x.py", "a path with an empty or '.' component"),
        ("./x.py", "a path with an empty or '.' component"),
        ("", "an empty path"),
        ("x\n.py", "a path with a control character"),
    ],
)
def test_digest_entries_outside_the_variant_are_refused_not_skipped(
    tmp_path: Path, relpath: str, problem: str
) -> None:
    """A digest key that is not a plain relative path would otherwise be dropped as a hidden path (it starts
    with ``.``) or point outside the variant: the whole metadata.json is refused."""
    digest = {"algorithm": "sha256", "files": {relpath: "AAAA", "relu/__init__.py": "AAAA"}}
    path = write_json(tmp_path / "metadata.json", {**MINIMAL, "digest": digest})
    with pytest.raises(ValueError) as caught:
        read_metadata(path)
    assert str(caught.value) == (
        f"{path}: invalid field 'digest.files.{json.dumps(relpath)}': {problem}; a digest lists only files "
        f"inside its own variant directory, so this metadata.json is refused"
    )
