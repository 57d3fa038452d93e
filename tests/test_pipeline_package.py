"""Package stage: assembling ``build/<variant>/`` (docs/layout.md).

The extension is any file of bytes here; nothing is compiled and the import check is a callback.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
from metadata_views import our_view, upstream_view
from stage_fixtures import CPU_213, CU130_213, fake_host, load, write_files

import kernel_builder
from kernel_builder.config import KernelProject
from kernel_builder.errors import BuildError
from kernel_builder.formats.metadata import ProvenanceEntry, read_metadata
from kernel_builder.pipeline import package
from kernel_builder.pipeline.generate.ops import aot_ops_py, noarch_ops_py
from kernel_builder.pipeline.package import (
    assemble,
    check_op_namespaces,
    git_provenance,
    lint_op_namespaces,
    sync_card,
    variant_metadata,
)
from kernel_builder.pipeline.plan.planner import VariantPlan, plan_build
from kernel_builder.pipeline.plan.scan import scan_sources
from kernel_builder.pipeline.plan.sources import id_input_files

UID = "0123456789"
SO_BYTES = b"\x7fELF not really a shared object"

AOT_TOML = """\
[general]
name = "pack"
version = 3
edition = 5
license = "MIT"
backends = ["cpu", "cuda"]
upstream = "https://github.com/org/upstream.git"
source = "https://github.com/org/kernels.git"
python-depends = ["einops"]
kernel-depends = [{ repo-id = "org/a", version = 2 }, { repo-id = "org/b", revision = "main" }]

[general.cuda]
python-depends = ["nvidia-cutlass-dsl"]
kernel-depends = [{ repo-id = "org/c", version = 1 }]

[torch]
src = ["torch-ext/torch_binding.cpp"]

[kernel.pack_cpu]
backend = "cpu"
depends = ["torch"]
src = ["pack_cpu/pack.cpp"]

[kernel.pack_cuda]
backend = "cuda"
depends = ["torch"]
src = ["pack_cuda/pack.cu"]
cuda-capabilities = ["9.0a", "12.0"]

[kernel.pack_cuda_more]
backend = "cuda"
depends = ["torch"]
src = ["pack_cuda/more.cu"]
cuda-capabilities = ["8.0", "10.0+PTX"]
"""

PACKAGE_FILES: dict[str, str | bytes] = {
    "torch-ext/pack/__init__.py": "from ._ops import ops\n",
    "torch-ext/pack/_ops.py": "# the user's own copy: replaced\n",
    "torch-ext/pack/types.pyi": "x: int\n",
    "torch-ext/pack/layers/__init__.py": "",
    "torch-ext/pack/layers/_ops.py": "# a nested module of that name is the user's\n",
    "torch-ext/pack/layers/sub/deep.py": "DEEP = 1\n",
    "torch-ext/pack/notes.txt": "not shipped\n",
    "torch-ext/pack/data.json": "{}\n",
    "torch-ext/pack/__pycache__/__init__.cpython-311.pyc": b"\x00",
    "torch-ext/pack/layers/__pycache__/deep.cpython-311.pyc": b"\x00",
    "torch-ext/pack/stale.pyc": b"\x00",
}

SOURCES: dict[str, str | bytes] = {
    "torch-ext/torch_binding.cpp": "// binding\n",
    "pack_cpu/pack.cpp": "// cpu\n",
    "pack_cuda/pack.cu": "// cuda\n",
    "pack_cuda/more.cu": "// cuda\n",
}

NOARCH_TOML = """\
[general]
name = "pack"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda", "rocm", "cann"]

[torch-noarch]
pyext = ["json"]
cuda-capabilities = ["9.0a", "8.0"]
rocm-archs = ["gfx942", "gfx90a"]
"""


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An x86_64 Linux host, and git that sees no repository above ``tmp_path`` and no user configuration."""
    fake_host(monkeypatch)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    for var in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)


def aot_project(tmp_path: Path) -> KernelProject:
    return load(write_files(tmp_path / "kernel", {"build.toml": AOT_TOML, **SOURCES, **PACKAGE_FILES}))


def noarch_project(tmp_path: Path) -> KernelProject:
    return load(write_files(tmp_path / "kernel", {"build.toml": NOARCH_TOML, **PACKAGE_FILES}))


def variant_plan(
    project: KernelProject, backend: str, *, native: tuple[str, ...] | None = None
) -> VariantPlan:
    interpreter = CU130_213 if backend == "cuda" else CPU_213
    build = plan_build(project, interpreter, UID, native_targets=native)
    [variant] = [v for v in build.variants if v.backend == backend]
    return variant


def extension(tmp_path: Path) -> Path:
    path = tmp_path / "stage" / "built.abi3.so"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(SO_BYTES)
    return path


def build_aot(tmp_path: Path, backend: str = "cpu", **kwargs: Any) -> tuple[KernelProject, VariantPlan, Path]:
    project = aot_project(tmp_path)
    plan = variant_plan(project, backend, native=kwargs.pop("native", None))
    out = assemble(project, plan, UID, project.root / "build", extension(tmp_path), kwargs.pop("provenance", None),
                   kwargs.pop("import_check", None), sources=scan_sources(project))  # fmt: skip
    return project, plan, out


def assemble_again(project: KernelProject, plan: VariantPlan, tmp_path: Path) -> Path:
    """The variant of :func:`build_aot` assembled once more from the project as it is now."""
    return assemble(project, plan, UID, project.root / "build", extension(tmp_path), None, None,
                    sources=scan_sources(project))  # fmt: skip


def files_of(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def expected_digest(directory: Path) -> dict[str, str]:
    """The digest recomputed from the spec: sha256, padded base64, ``/`` paths sorted, metadata.json left out."""
    digest = {}
    for rel in sorted(files_of(directory)):
        if rel != "metadata.json":
            digest[rel] = base64.b64encode(hashlib.sha256((directory / rel).read_bytes()).digest()).decode()
    return digest


# --- layout -----------------------------------------------------------------------------------------------


def test_aot_layout(tmp_path: Path) -> None:
    project, plan, out = build_aot(tmp_path)
    assert out == project.root / "build" / "torch213-cxx11-cpu-x86_64-linux"
    assert files_of(out) == [
        "__init__.py",
        "_ops.py",
        f"_pack_cpu_{UID}.abi3.so",
        "layers/__init__.py",
        "layers/_ops.py",
        "layers/sub/deep.py",
        "metadata.json",
        "types.pyi",
    ]
    assert (out / f"_pack_cpu_{UID}.abi3.so").read_bytes() == SO_BYTES
    assert stat.S_IMODE((out / f"_pack_cpu_{UID}.abi3.so").stat().st_mode) == 0o755
    assert stat.S_IMODE(out.stat().st_mode) == 0o755
    assert (out / "_ops.py").read_text(encoding="utf-8") == aot_ops_py(plan.ops_name)
    assert (out / "layers/_ops.py").read_text(encoding="utf-8") == PACKAGE_FILES[
        "torch-ext/pack/layers/_ops.py"
    ]
    assert sorted(p.name for p in (project.root / "build").iterdir()) == ["torch213-cxx11-cpu-x86_64-linux"]


def test_noarch_layout_and_pyext(tmp_path: Path) -> None:
    project = noarch_project(tmp_path)
    plan = variant_plan(project, "cann")
    out = assemble(
        project, plan, UID, project.root / "build", None, None, None, sources=scan_sources(project)
    )
    assert out.name == "torch-cann"
    # pyext = ["json"]: .json shipped; .txt never; .pyi only when listed (it is not, here).
    assert files_of(out) == [
        "__init__.py",
        "_ops.py",
        "data.json",
        "layers/__init__.py",
        "layers/_ops.py",
        "layers/sub/deep.py",
        "metadata.json",
    ]
    assert (out / "_ops.py").read_text(encoding="utf-8") == noarch_ops_py("pack", UID)


def test_assembling_again_replaces_the_variant(tmp_path: Path) -> None:
    project, plan, out = build_aot(tmp_path)
    (project.root / "torch-ext/pack/layers/sub/deep.py").unlink()
    (project.root / "torch-ext/pack/layers/new.py").write_text("", encoding="utf-8")
    again = assemble_again(project, plan, tmp_path)
    assert again == out
    assert "layers/new.py" in files_of(out) and "layers/sub/deep.py" not in files_of(out)
    assert [p.name for p in (project.root / "build").iterdir()] == [out.name]  # no temporary leftovers


def test_other_variants_are_untouched(tmp_path: Path) -> None:
    project, _, cpu = build_aot(tmp_path)
    before = {rel: (cpu / rel).read_bytes() for rel in files_of(cpu)}
    cuda = assemble(
        project,
        variant_plan(project, "cuda"),
        UID,
        project.root / "build",
        extension(tmp_path),
        None,
        None,
        sources=scan_sources(project),
    )
    assert cuda.name == "torch213-cxx11-cu130-x86_64-linux"
    assert {rel: (cpu / rel).read_bytes() for rel in files_of(cpu)} == before


# --- metadata.json ----------------------------------------------------------------------------------------


def test_metadata_of_a_cpu_variant(tmp_path: Path) -> None:
    _, _, out = build_aot(tmp_path)
    text = (out / "metadata.json").read_text(encoding="utf-8")
    data = json.loads(text)
    assert text == json.dumps(data, indent=2) + "\n"  # 2-space indentation, trailing newline
    assert list(data) == [
        "name",
        "id",
        "version",
        "kernels-minver",
        "license",
        "upstream",
        "source",
        "python-depends",
        "kernel-depends",
        "backend",
        "digest",
        "provenance",
    ]
    assert data["name"] == "pack"
    assert data["id"] == f"_pack_cpu_{UID}"
    assert data["version"] == 3
    assert data["kernels-minver"] == "0.17.0"  # kernel-depends: the first kernels release that resolves them
    assert data["license"] == "MIT"
    assert data["upstream"] == "https://github.com/org/upstream.git"
    assert data["source"] == "https://github.com/org/kernels.git"
    assert data["python-depends"] == ["einops"]
    assert data["kernel-depends"] == [
        {"repo-id": "org/a", "version": 2},
        {"repo-id": "org/b", "revision": "main"},
    ]
    assert data["backend"] == {"type": "cpu"}  # no archs for cpu
    assert data["provenance"] == {"kernel-builder": {"version": kernel_builder.__version__}}


def test_metadata_of_a_cuda_variant(tmp_path: Path) -> None:
    _, _, out = build_aot(tmp_path, "cuda")
    data = read_json(out / "metadata.json")
    assert data["id"] == f"_pack_cuda_{UID}"
    assert data["python-depends"] == ["einops", "nvidia-cutlass-dsl"]  # general, then [general.cuda]
    assert data["kernel-depends"] == [
        {"repo-id": "org/a", "version": 2},
        {"repo-id": "org/b", "revision": "main"},
        {"repo-id": "org/c", "version": 1},
    ]
    # The union of the components' lists in numeric order (a string sort would put 10.0 first).
    assert data["backend"] == {"type": "cuda", "archs": ["8.0", "9.0a", "10.0+PTX", "12.0"]}
    assert "arch-selection" not in data


def test_metadata_of_a_native_build(tmp_path: Path) -> None:
    _, _, out = build_aot(tmp_path, "cuda", native=("9.0", "12.0"))
    data = read_json(out / "metadata.json")
    # 9.0a consumes 9.0; 10.0+PTX serves 12.0 (the other kernel's 12.0 too).
    assert data["backend"] == {"type": "cuda", "archs": ["9.0a", "10.0+PTX", "12.0"]}
    assert data["arch-selection"] == "native"
    assert list(data)[-4:] == ["backend", "arch-selection", "digest", "provenance"]


def test_metadata_of_noarch_variants(tmp_path: Path) -> None:
    project = noarch_project(tmp_path)
    backends = {}
    for backend in ("cpu", "cuda", "rocm", "cann"):
        out = assemble(
            project,
            variant_plan(project, backend),
            UID,
            project.root / "build",
            None,
            None,
            None,
            sources=scan_sources(project),
        )
        data = read_json(out / "metadata.json")
        assert list(data) == [
            "name", "id", "version", "kernels-minver", "license", "python-depends", "kernel-depends", "backend",
            "digest", "provenance",
        ]  # fmt: skip
        assert data["python-depends"] == [] and data["kernel-depends"] == []
        assert data["kernels-minver"] == "0.14.0"  # no loader feature beyond the current layout
        assert data["id"] == f"_pack_{backend}_{UID}"
        backends[out.name] = data["backend"]
    assert backends == {
        "torch-cpu": {"type": "cpu"},
        "torch-cuda": {"type": "cuda", "archs": ["9.0a", "8.0"]},  # as written in build.toml
        "torch-rocm": {"type": "rocm", "archs": ["gfx942", "gfx90a"]},
        "torch-cann": {"type": "cann"},
    }


@pytest.mark.parametrize("backend", ["cpu", "cuda", "noarch-rocm"])
def test_the_kernels_loader_reads_what_we_write(tmp_path: Path, backend: str) -> None:
    """Every variant's metadata.json, read by the ``kernels`` loader's own parser, holds the values ours reads,
    provenance included."""
    kernel = ProvenanceEntry(commit="0123456789abcdef" * 2 + "01234567", dirty=True)
    if backend.startswith("noarch-"):
        project = noarch_project(tmp_path)
        plan = variant_plan(project, backend.removeprefix("noarch-"))
        out = assemble(
            project, plan, UID, project.root / "build", None, kernel, None, sources=scan_sources(project)
        )
    else:
        _, _, out = build_aot(
            tmp_path, backend, native=("9.0", "12.0") if backend == "cuda" else None, provenance=kernel
        )
    ours = read_metadata(out)
    assert ours.provenance is not None and ours.provenance.kernel == kernel
    assert upstream_view(out / "metadata.json") == our_view(ours)
    assert (out / "metadata.json").read_text(encoding="utf-8") == ours.to_json()  # the model writes the file


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_digest_is_recomputed(tmp_path: Path, backend: str) -> None:
    _, _, out = build_aot(tmp_path, backend)
    digest = read_json(out / "metadata.json")["digest"]
    assert digest["algorithm"] == "sha256"
    assert list(digest["files"]) == sorted(digest["files"])
    assert digest["files"] == expected_digest(out)
    assert all(value.endswith("=") for value in digest["files"].values())  # 32 bytes: padded base64


def test_variant_metadata_omits_empty_archs(tmp_path: Path) -> None:
    project = aot_project(tmp_path)
    plan = variant_plan(project, "cuda")
    empty = VariantPlan(plan.variant, "cuda", plan.ops_name, plan.components, ())
    assert variant_metadata(project, empty, {}, None).to_dict()["backend"] == {"type": "cuda"}
    with_commit = variant_metadata(project, plan, {}, ProvenanceEntry(commit="a" * 40, dirty=True)).to_dict()
    assert with_commit["provenance"] == {
        "kernel-builder": {"version": kernel_builder.__version__},
        "kernel": {"commit": "a" * 40, "dirty": True},
    }


# --- provenance -------------------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def provenance(project: KernelProject) -> ProvenanceEntry | None:
    return git_provenance(project, id_input_files(project))


def test_provenance_without_git(tmp_path: Path) -> None:
    project = aot_project(tmp_path)
    assert provenance(project) is None


@pytest.fixture
def repo(tmp_path: Path) -> KernelProject:
    """The AOT fixture in ``tmp_path/kernel``, committed in a repository rooted at ``tmp_path``."""
    project = aot_project(tmp_path)
    write_files(tmp_path, {"other/readme.md": "outside the kernel\n", ".gitignore": "ignored_*.py\n"})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "init")
    return project


@needs_git
def test_provenance_of_a_clean_tree(repo: KernelProject, tmp_path: Path) -> None:
    assert provenance(repo) == ProvenanceEntry(commit=git(tmp_path, "rev-parse", "HEAD"), dirty=False)
    # Changes to files that are not id inputs keep it clean.
    write_files(
        repo.root, {"torch-ext/pack/notes.txt": "edited\n", "README.md": "new\n", "pack_cpu/unlisted.h": ""}
    )
    write_files(tmp_path, {"other/readme.md": "edited\n"})
    assert provenance(repo) == ProvenanceEntry(commit=git(tmp_path, "rev-parse", "HEAD"), dirty=False)


@pytest.mark.parametrize(
    "change",
    [
        "modified source",
        "modified build.toml",
        "modified shipped file",
        "staged change",
        "untracked shipped file",
        "ignored shipped file",
        "deleted shipped file",
    ],
)
@needs_git
def test_provenance_is_dirty_when_an_id_input_changes(
    repo: KernelProject, tmp_path: Path, change: str
) -> None:
    root = repo.root
    if change == "modified source":
        write_files(root, {"pack_cuda/pack.cu": "// changed\n"})
    elif change == "modified build.toml":
        write_files(root, {"build.toml": AOT_TOML + "# changed\n"})
    elif change == "modified shipped file":
        write_files(root, {"torch-ext/pack/types.pyi": "y: int\n"})
    elif change == "staged change":
        write_files(root, {"pack_cpu/pack.cpp": "// staged\n"})
        git(root, "add", "pack_cpu/pack.cpp")
    elif change == "untracked shipped file":
        write_files(root, {"torch-ext/pack/layers/new.py": ""})
    elif change == "ignored shipped file":
        write_files(root, {"torch-ext/pack/ignored_module.py": ""})
        assert git(root, "status", "--porcelain") == ""  # git itself hides it
    else:
        (root / "torch-ext/pack/layers/sub/deep.py").unlink()
    project = load(root)
    assert provenance(project) == ProvenanceEntry(commit=git(tmp_path, "rev-parse", "HEAD"), dirty=True)


@needs_git
def test_provenance_in_metadata(repo: KernelProject, tmp_path: Path) -> None:
    plan = variant_plan(repo, "cpu")
    out = assemble(
        repo,
        plan,
        UID,
        repo.root / "build",
        extension(tmp_path),
        provenance(repo),
        None,
        sources=scan_sources(repo),
    )
    assert read_json(out / "metadata.json")["provenance"] == {
        "kernel-builder": {"version": kernel_builder.__version__},
        "kernel": {"commit": git(tmp_path, "rev-parse", "HEAD"), "dirty": False},
    }


@needs_git
def test_repository_without_commits_has_no_provenance(tmp_path: Path) -> None:
    project = aot_project(tmp_path)
    git(tmp_path, "init", "-q")
    assert provenance(project) is None


# --- failures leave the previous variant --------------------------------------------------------------------


def snapshot(directory: Path) -> dict[str, bytes]:
    return {rel: (directory / rel).read_bytes() for rel in files_of(directory)}


def test_failing_import_check_keeps_the_previous_variant(tmp_path: Path) -> None:
    project, plan, out = build_aot(tmp_path)
    before = snapshot(out)
    checked: list[Path] = []

    def import_check(candidate: Path) -> None:
        checked.append(candidate)
        assert (candidate / "metadata.json").is_file()  # checked complete, before the rename
        raise BuildError("import check failed: boom")

    (project.root / "torch-ext/pack/layers/new.py").write_text("", encoding="utf-8")
    with pytest.raises(BuildError, match="boom"):
        assemble(
            project,
            plan,
            UID,
            project.root / "build",
            extension(tmp_path),
            None,
            import_check,
            sources=scan_sources(project),
        )
    [candidate] = checked
    assert candidate.parent == project.root / ".kernel-builder" / "tmp"  # never inside build/
    assert not candidate.exists()
    assert snapshot(out) == before
    assert [p.name for p in (project.root / "build").iterdir()] == [out.name]


def test_interrupted_assembly_leaves_no_temporary_directory(tmp_path: Path) -> None:
    project = aot_project(tmp_path)
    plan = variant_plan(project, "cpu")

    def interrupt(candidate: Path) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        assemble(
            project,
            plan,
            UID,
            project.root / "build",
            extension(tmp_path),
            None,
            interrupt,
            sources=scan_sources(project),
        )
    assert list((project.root / "build").iterdir()) == []
    assert list((project.root / ".kernel-builder" / "tmp").iterdir()) == []


def test_replacing_swaps_in_one_step_and_leaves_no_temporary(tmp_path: Path) -> None:
    project, plan, out = build_aot(tmp_path)
    inode = out.stat().st_ino
    (project.root / "torch-ext/pack/layers/new.py").write_text("", encoding="utf-8")
    assemble_again(project, plan, tmp_path)
    assert out.stat().st_ino != inode and (out / "layers/new.py").is_file()
    assert [p.name for p in (project.root / "build").iterdir()] == [out.name]
    assert list((project.root / ".kernel-builder" / "tmp").iterdir()) == []


@pytest.mark.parametrize("swap", [True, False], ids=["exchange", "two-renames"])
def test_failed_rename_puts_the_previous_variant_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swap: bool
) -> None:
    """A full disk or a permission error on build/ names the path and keeps the previous variant."""
    project, plan, out = build_aot(tmp_path)
    before = snapshot(out)
    real_rename = os.rename

    def no_space(*args: object) -> bool:
        raise OSError(28, "No space left on device", str(out))

    def rename(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        if Path(dst) == out and not Path(src).name.endswith(".old"):
            raise OSError(13, "Permission denied", str(src), None, str(dst))
        real_rename(src, dst)

    if swap:
        monkeypatch.setattr(package, "exchange", no_space)
        problem = "No space left on device"
    else:
        monkeypatch.setattr(package, "exchange", lambda a, b: False)
        monkeypatch.setattr(os, "rename", rename)
        problem = "Permission denied"
    with pytest.raises(BuildError) as info:
        assemble_again(project, plan, tmp_path)
    assert str(info.value) == (
        f"cannot write {out}: {problem}; {out} is unchanged. Free some space or fix the permissions, then build again"
    )
    assert snapshot(out) == before
    assert [p.name for p in (project.root / "build").iterdir()] == [out.name]
    assert list((project.root / ".kernel-builder" / "tmp").iterdir()) == []


def test_unwritable_staging_names_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, plan, out = build_aot(tmp_path)
    before = snapshot(out)
    real_copyfile = shutil.copyfile

    def copyfile(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> object:
        if str(dst).endswith(".abi3.so"):
            raise OSError(28, "No space left on device", str(dst))
        return real_copyfile(src, dst)

    monkeypatch.setattr(shutil, "copyfile", copyfile)
    with pytest.raises(BuildError) as info:
        assemble_again(project, plan, tmp_path)
    message = str(info.value)
    assert message.startswith(f"cannot write {project.root / '.kernel-builder' / 'tmp'}/")
    assert message.endswith(
        f".abi3.so: No space left on device; {out} is unchanged. Free some space or fix the "
        "permissions, then build again"
    )
    assert snapshot(out) == before
    assert list((project.root / ".kernel-builder" / "tmp").iterdir()) == []


# --- op-namespace check -----------------------------------------------------------------------------------

LITERAL = """\
import torch

from ._ops import add_op_namespace_prefix


@torch.library.custom_op("myns::op", mutates_args=())
def op(x: torch.Tensor) -> torch.Tensor:
    return x.clone()
"""


def test_literal_namespace_fails_with_file_and_line(tmp_path: Path) -> None:
    project = aot_project(tmp_path)
    write_files(project.root, {"torch-ext/pack/layers/ops.py": LITERAL})
    with pytest.raises(BuildError) as info:
        lint_op_namespaces(scan_sources(project))
    assert str(info.value) == (
        "op registrations must use the unique namespace:\n"
        "  torch-ext/pack/layers/ops.py:6: `custom_op` registers an op without add_op_namespace_prefix(...)\n"
        '  hint: use add_op_namespace_prefix("name") from ._ops (a literal namespace breaks side-by-side loading)'
    )


def test_the_variant_ships_the_bytes_of_the_scan(tmp_path: Path) -> None:
    """A package file edited after the plan's scan (while the extension compiles) is shipped as scanned: the
    variant holds the bytes its id hashed, and a file added since is not shipped."""
    project = aot_project(tmp_path)
    plan = variant_plan(project, "cpu")
    sources = scan_sources(project)
    init = project.root / "torch-ext/pack/__init__.py"
    scanned = init.read_bytes()
    init.write_text("raise RuntimeError('edited during the compile')\n", encoding="utf-8")
    write_files(project.root, {"torch-ext/pack/added.py": ""})
    out = assemble(
        project, plan, UID, project.root / "build", extension(tmp_path), None, None, sources=sources
    )
    assert (out / "__init__.py").read_bytes() == scanned
    assert not (out / "added.py").exists()


def test_prefixed_namespace_passes(tmp_path: Path) -> None:
    project = aot_project(tmp_path)
    fixed = LITERAL.replace('"myns::op"', 'add_op_namespace_prefix("op")')
    write_files(project.root, {"torch-ext/pack/layers/ops.py": fixed})
    lint_op_namespaces(scan_sources(project))
    out = assemble(
        project,
        variant_plan(project, "cpu"),
        UID,
        project.root / "build",
        extension(tmp_path),
        None,
        None,
        sources=scan_sources(project),
    )
    assert (out / "layers/ops.py").read_text(encoding="utf-8") == fixed


CHECKED = """\
import torch
from torch.library import custom_op, register_fake, triton_op

from . import _ops
from ._ops import add_op_namespace_prefix


@custom_op(add_op_namespace_prefix("good"), mutates_args=())
def good(x): ...


@_ops.add_op_namespace_prefix
def not_a_registration(x): ...


@torch.library.register_fake(_ops.add_op_namespace_prefix("good"))
def good_fake(x): ...


@triton_op("ns::" + "bad", mutates_args=())
def bad_concatenation(x): ...


@register_fake(name="keyword_only")
def bad_keyword(x): ...


@torch.library.register_kernel(PREFIXED, "cpu")
def bad_name(x): ...


@torch.library.register_torch_dispatch(add_op_namespace_prefix("ok"), object)
class Dispatch: ...


@torch.library.register_vmap("lit::vmap")
async def bad_vmap(x): ...


def outer():
    @custom_op("nested::ok", mutates_args=())  # not top level: not checked
    def inner(x): ...
"""


def test_check_op_namespaces_cases() -> None:
    files = {"broken.py": b"def f(:\n", "data.json": b"{", "ops.py": CHECKED.encode()}
    problems = check_op_namespaces(files)
    assert problems == [
        "broken.py:1: syntax error: invalid syntax",
        "ops.py:20: `triton_op` registers an op without add_op_namespace_prefix(...)",
        "ops.py:24: `register_fake` registers an op without add_op_namespace_prefix(...)",
        "ops.py:28: `register_kernel` registers an op without add_op_namespace_prefix(...)",
        "ops.py:36: `register_vmap` registers an op without add_op_namespace_prefix(...)",
    ]


# --- build/CARD.md ----------------------------------------------------------------------------------------


def test_card_is_mirrored_and_removed(tmp_path: Path) -> None:
    project = aot_project(tmp_path)
    build_root = project.root / "build"
    card = project.root / "CARD.md"
    sync_card(project, build_root)
    assert not build_root.exists()  # no card, nothing to write
    card.write_bytes(b"# pack\n\r\nbytes \xc3\xa9 kept\n")
    sync_card(project, build_root)
    # As a template renders (the upstream builder renders every card): its last newline goes.
    assert (build_root / "CARD.md").read_bytes() == card.read_bytes()[:-1]
    card.write_bytes(b"# pack v2\r\n")
    sync_card(project, build_root)
    assert (build_root / "CARD.md").read_bytes() == b"# pack v2"
    card.unlink()
    sync_card(project, build_root)
    assert not (build_root / "CARD.md").exists()


def test_a_card_that_cannot_be_written_names_build_card_not_the_staging_file(tmp_path: Path) -> None:
    """The card is written through a staging file under .kernel-builder/tmp/; a failure names the target the
    user knows (a read-only build/ failed like this with the internal staging path)."""
    project = aot_project(tmp_path)
    build_root = project.root / "build"
    (project.root / "CARD.md").write_text("# card\n")
    (build_root / "CARD.md" / "in-the-way").mkdir(parents=True)  # the rename onto it fails
    with pytest.raises(BuildError) as caught:
        sync_card(project, build_root)
    message = str(caught.value)
    assert message.startswith(f"cannot write {build_root / 'CARD.md'}: ")
    assert ".kernel-builder" not in message
    assert list((project.root / ".kernel-builder" / "tmp").iterdir()) == []  # the staging file is gone
