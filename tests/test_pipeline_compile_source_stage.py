"""The kernel's sources at one path for every checkout (``kernel_builder.pipeline.compile.source_stage``).

The end-to-end check, that nvcc through sccache compiles nothing in another checkout once the stage is in
use, is in ``tests/test_pipeline_compile_compiler_cache.py``; these tests check the stage itself.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from cpu_projects import write_tree

from kernel_builder.pipeline.compile import source_stage
from kernel_builder.pipeline.compile.compiler_output import Cleaner

TREE = {
    "build.toml": "[general]\n",
    "kernels/relu.cu": "// relu\n",
    "kernels/common.cuh": "// header\n",
    "torch-ext/relu/__init__.py": "",
    "build/torch213-cpu/x.so": "built",
    ".kernel-builder/state": "state",
    ".git/HEAD": "ref",
    "torch-ext/relu/__pycache__/x.pyc": "",
}
STAGED = {"build.toml", "kernels/relu.cu", "kernels/common.cuh", "torch-ext/relu/__init__.py"}


@pytest.fixture(autouse=True)
def _prefix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    prefix = tmp_path / "stages"
    monkeypatch.setenv(source_stage.ENV, str(prefix))
    return prefix


def _files(directory: Path) -> set[str]:
    return {p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file()}


def test_the_path_depends_on_the_kernel_and_variant_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = source_stage.for_variant(tmp_path / "a" / "relu", "relu", "torch213-cxx11-cu130-x86_64-linux")
    b = source_stage.for_variant(tmp_path / "elsewhere" / "relu", "relu", "torch213-cxx11-cu130-x86_64-linux")
    assert a.path == b.path == tmp_path / "stages" / "relu-torch213-cxx11-cu130-x86_64-linux"
    assert source_stage.stage_path("a b/../c", "v").name != "a b/../c-v"  # not a plain name: hashed
    assert len(source_stage.stage_path("a b/../c", "v").name) == 32
    monkeypatch.delenv(source_stage.ENV)
    assert source_stage.prefix() == Path(f"/tmp/kernel-builder-{os.getuid()}-sources")


def test_the_stage_mirrors_the_sources_as_hard_links(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "a" / "relu", TREE)
    stage = source_stage.for_variant(root, "relu", "v")
    with stage.held(print) as changed:
        assert changed == len(STAGED)
        assert _files(stage.path) == STAGED  # no build output, state, hidden or bytecode directory
        for rel in STAGED:
            assert (stage.path / rel).samefile(root / rel)
    with stage.held(print) as changed:
        assert changed == 0  # nothing to do for an unchanged checkout


def test_another_checkout_replaces_entries_and_never_writes_through(tmp_path: Path) -> None:
    first = write_tree(tmp_path / "a" / "relu", TREE)
    second = write_tree(tmp_path / "b" / "c" / "relu", {**TREE, "kernels/relu.cu": "// edited\n",
                                                        "kernels/new.cuh": "// new\n"})  # fmt: skip
    (second / "kernels" / "common.cuh").unlink()
    with source_stage.for_variant(first, "relu", "v").held(print):
        pass
    stage = source_stage.for_variant(second, "relu", "v")
    with stage.held(print) as changed:
        assert changed == 5  # each of the 4 files is the other checkout's, and one is gone
        assert (stage.path / "kernels" / "relu.cu").read_text() == "// edited\n"
        assert _files(stage.path) == STAGED - {"kernels/common.cuh"} | {"kernels/new.cuh"}
    assert (first / "kernels" / "relu.cu").read_text() == "// relu\n"
    assert (first / "kernels" / "common.cuh").is_file()


def test_a_copy_is_kept_when_size_and_time_match(tmp_path: Path) -> None:
    """Where a hard link is refused (another file system), the stage holds copies with the file's time."""
    root = write_tree(tmp_path / "a" / "relu", {"x.cu": "// x\n"})
    stage = tmp_path / "stages" / "copied"
    stage.mkdir(parents=True)
    (stage / "x.cu").write_text("// x\n")
    os.utime(stage / "x.cu", ns=(0, (root / "x.cu").stat().st_mtime_ns))
    assert source_stage.synchronise(stage, {"x.cu": root / "x.cu"}) == 0
    os.utime(stage / "x.cu", ns=(0, 1))
    assert source_stage.synchronise(stage, {"x.cu": root / "x.cu"}) == 1
    assert (stage / "x.cu").samefile(root / "x.cu")


def test_a_directory_others_may_write_to_is_refused(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "a" / "relu", TREE)
    prefix = tmp_path / "stages"
    prefix.mkdir(mode=0o777)
    prefix.chmod(0o777)
    with pytest.raises(source_stage.StageError, match="writable by other users"):
        with source_stage.for_variant(root, "relu", "v").held(print):
            pass
    if os.getuid() == 0:  # root can hand the directory to another user
        prefix.chmod(0o700)
        os.chown(prefix, 65534, 65534)
        with pytest.raises(source_stage.StageError, match="belongs to another user"):
            with source_stage.for_variant(root, "relu", "v").held(print):
                pass


def test_a_second_build_waits_for_the_stage(tmp_path: Path) -> None:
    first = write_tree(tmp_path / "a" / "relu", TREE)
    second = write_tree(tmp_path / "b" / "relu", {**TREE, "kernels/relu.cu": "// second\n"})
    messages: list[str] = []
    seen: list[str] = []

    def other() -> None:
        with source_stage.for_variant(second, "relu", "v").held(messages.append):
            seen.append((source_stage.stage_path("relu", "v") / "kernels" / "relu.cu").read_text())

    with source_stage.for_variant(first, "relu", "v").held(print):
        thread = threading.Thread(target=other)
        thread.start()
        deadline = time.monotonic() + 20
        while not messages and time.monotonic() < deadline:
            time.sleep(0.05)
        assert messages and "another build of this kernel and variant is using it" in messages[0]
        assert not seen  # it waits: the first build's files stay in place while it compiles
        assert (source_stage.stage_path("relu", "v") / "kernels" / "relu.cu").read_text() == "// relu\n"
    thread.join(timeout=20)
    assert seen == ["// second\n"]


def test_only_nvcc_through_sccache_gets_a_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "relu"
    args = {"cache_tool": "sccache", "paths": ["kernels/relu.cu", "kernels"]}
    assert source_stage.choose(root, "relu", "v", nvcc=True, **args) is not None  # type: ignore[arg-type]
    assert source_stage.choose(root, "relu", "v", nvcc=False, **args) is None  # type: ignore[arg-type]
    assert source_stage.choose(root, "relu", "v", nvcc=True, cache_tool="ccache", paths=["a.cu"]) is None
    assert source_stage.choose(root, "relu", "v", nvcc=True, cache_tool=None, paths=["a.cu"]) is None
    monkeypatch.setenv(source_stage.ENV, "off")
    assert source_stage.choose(root, "relu", "v", nvcc=True, **args) is None  # type: ignore[arg-type]
    monkeypatch.delenv(source_stage.ENV)
    # A source outside the kernel root would fall outside the stage: compiled in place.
    assert source_stage.choose(root, "relu", "v", nvcc=True, cache_tool="sccache", paths=["../x.cu"]) is None


def test_the_variant_remembers_its_stage(tmp_path: Path) -> None:
    state = tmp_path / "relu" / ".kernel-builder" / "v"
    stage = source_stage.for_variant(tmp_path / "relu", "relu", "v")
    source_stage.remember(state, stage)
    assert source_stage.remembered(state, tmp_path / "relu") == stage
    source_stage.remember(state, None)
    assert source_stage.remembered(state, tmp_path / "relu") is None


def test_compiler_output_names_staged_files_as_in_the_project(tmp_path: Path) -> None:
    root, stage = tmp_path / "relu", tmp_path / "stages" / "relu-v"
    cleaner = Cleaner(root / ".kernel-builder" / "v" / "cmake-build", root, aliases=(stage,))
    line = f'{stage}/kernels/relu.cu(3): error: identifier "x" is undefined'
    assert cleaner.line(line) == 'kernels/relu.cu(3): error: identifier "x" is undefined'
    assert cleaner.line(f"{root}/kernels/relu.cu:3:1: error: x") == "kernels/relu.cu:3:1: error: x"


def test_a_no_op_check_watches_the_checkout_behind_each_staged_file(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "a" / "relu", TREE)
    stage = source_stage.for_variant(root, "relu", "v")
    with stage.held(print):
        pass
    staged = str(stage.path.absolute() / "kernels" / "relu.cu")
    other = str(tmp_path / "cmake-build" / "build.ninja")
    watched = stage.with_originals([staged, other])
    assert watched == sorted({staged, other, str(root.absolute() / "kernels" / "relu.cu")})
    # An editor that saves by replacing the file leaves the stage's hard link on the old inode: the checkout's
    # own entry is what changes.
    replacement = root / "kernels" / "relu.cu.new"
    replacement.write_text("// edited\n")
    replacement.replace(root / "kernels" / "relu.cu")
    assert not (stage.path / "kernels" / "relu.cu").samefile(root / "kernels" / "relu.cu")
