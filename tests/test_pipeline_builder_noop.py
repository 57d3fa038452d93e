"""A no-op rebuild — ``kernel-builder build`` with nothing changed — starts no process (no build interpreter, no
compiler, no CMake, no Ninja) and imports neither Torch nor the stages it skips; a change to any file Ninja reads
brings Ninja back, and a real change still runs the import check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from build_outputs import complete_variants, snapshot
from build_runs import NO_IMPORT_CHECK, build, run_cli
from cpu_projects import quick_project
from matrix_data import CPU_VARIANT

from kernel_builder.pipeline.state import STATE_DIR

pytestmark = pytest.mark.slow  # the module fixture builds the quick project: a compile

#: Run in the CLI's process before it starts: every process it starts, and what it imported, go to stderr.
AUDIT = r"""
import atexit, json, sys
spawned = []
def _hook(event, args):
    if event in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.forkpty", "os.system"):
        spawned.append(f"{event} {str(args)[:200]}")
sys.addaudithook(_hook)
started = sorted(sys.modules)  # the interpreter's own start-up (site hooks included), before the CLI
atexit.register(lambda: print("KB-AUDIT " + json.dumps({"spawned": spawned, "modules": sorted(sys.modules),
                                                        "started": started}), file=sys.stderr))
"""
#: What a no-op rebuild must not import: Torch, the ELF reader, and the stages it skips.
NOT_IMPORTED = (
    "torch",
    "elftools",
    "kernel_builder.pipeline.check.import_check",
    "kernel_builder.pipeline.compile.configure_cache",
    "kernel_builder.pipeline.generate.project",
)
#: Nor what only a real build needs, so that a no-op is Python's start-up and little more (docs/performance.md):
#: CMake and Ninja's stage, the source stage, --arch native's GPU probe, the compiler-output reader, metadata.json's model (written by
#: assembly), importlib.metadata with its email parser (CMake's version is read from its dist-info), the ninja
#: package and sysconfig (its answer is kept per environment), importlib.resources' readers (package data is
#: read beside its module), logging (the loader's) and difflib (for did-you-mean messages only).
SLOW_PATHS = (
    "kernel_builder.pipeline.compile.ninja_build",
    "kernel_builder.pipeline.compile.source_stage",
    "kernel_builder.pipeline.plan.native",
    "kernel_builder.pipeline.compile.compiler_output",
    "kernel_builder.formats.metadata",
    "kernel_builder.loader",
    "importlib.metadata",
    "email",
    "ninja",
    "sysconfig",
    "difflib",
    "importlib.resources",
    "importlib.readers",
    "zipfile",
    "logging",
)


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = quick_project(tmp_path_factory.mktemp("noop") / "kb-quick")
    build(root, NO_IMPORT_CHECK)  # the import check's own test below runs it on a real change
    return root


def _audited(root: Path, *extra: str) -> tuple[str, dict[str, list[str]]]:
    run = run_cli(["build", root, *extra], prelude=AUDIT).check()
    line = next(x for x in run.stderr.splitlines() if x.startswith("KB-AUDIT "))
    return run.output, json.loads(line[len("KB-AUDIT ") :])


def test_noop_starts_no_process_and_imports_no_torch(quick: Path) -> None:
    before = snapshot(quick / "build")
    output, audit = _audited(quick)
    assert audit["spawned"] == [], output
    imported = [m for m in audit["modules"] if m.split(".")[0] == "torch" or m.startswith(NOT_IMPORTED)]
    assert imported == [], imported
    assert f"{CPU_VARIANT}  up to date" in output and "torch-cuda" in output
    assert snapshot(quick / "build") == before


def test_noop_imports_nothing_only_a_real_build_needs(quick: Path) -> None:
    """Counted from the CLI's start: whatever the interpreter's site hooks import first does not count. The ELF
    check's module is needed only to judge recorded findings, so it is absent where the record holds none."""
    output, audit = _audited(quick)
    assert "up to date" in output
    record = json.loads((quick / STATE_DIR / CPU_VARIANT / "record.json").read_text(encoding="utf-8"))
    absent = SLOW_PATHS + (() if record["abi"] else ("kernel_builder.pipeline.check.abi",))
    imported = set(audit["modules"]) - set(audit["started"])
    slow = sorted(m for m in imported if m in absent or m.startswith(tuple(f"{p}." for p in absent)))
    assert slow == [], slow


def test_werror_still_judges_the_recorded_findings_without_a_process(quick: Path) -> None:
    output, audit = _audited(quick, "--werror")
    assert audit["spawned"] == [], output
    assert "up to date" in output


def test_a_changed_file_that_ninja_reads_brings_ninja_back(quick: Path) -> None:
    """An object file deleted behind the build's back (Ninja would rebuild it) is noticed: Ninja runs, the
    object is back, and the next no-op is process-free again."""
    cmake_build = quick / STATE_DIR / CPU_VARIANT / "cmake-build"
    (obj,) = [p for p in cmake_build.rglob("quick.cpp.o")]
    obj.unlink()
    output, audit = _audited(quick, "--verbose")
    assert any("--build" in s for s in audit["spawned"]), audit["spawned"]
    assert obj.is_file(), output
    assert f"{CPU_VARIANT}  up to date" in output
    output, audit = _audited(quick)
    assert audit["spawned"] == [], output


def test_a_real_change_still_runs_the_import_check(quick: Path) -> None:
    """A kernel error after an edit fails the import check (started early, beside the ABI check), and the
    variant in build/ stays the last good one."""
    init = quick / "torch-ext" / "kb_quick" / "__init__.py"
    original = init.read_text(encoding="utf-8")
    before = snapshot(quick / "build" / CPU_VARIANT)
    try:
        init.write_text("raise RuntimeError('kernel bug after an edit')\n", encoding="utf-8")
        run = run_cli(["build", quick, "--backend", "cpu"])
        assert run.returncode == 1, run.output
        assert "import check failed" in run.stderr and "kernel bug after an edit" in run.stderr, run.stderr
        assert snapshot(quick / "build" / CPU_VARIANT) == before
        assert complete_variants(quick / "build") == sorted(["CARD.md", CPU_VARIANT, "torch-cuda"])
    finally:
        init.write_text(original, encoding="utf-8")
    build(quick, NO_IMPORT_CHECK)


def test_a_copied_project_does_not_trust_the_copied_record(quick: Path, tmp_path: Path) -> None:
    """The record of a copied project names the files at the old place: the copy's build re-creates its CMake
    tree as before, and only then is its own no-op process-free."""
    import shutil

    copy = tmp_path / "kb-quick-copy"
    shutil.copytree(quick, copy, symlinks=True)
    output, audit = _audited(copy, NO_IMPORT_CHECK)  # the record and the CMake tree are the subject
    assert "re-creating the CMake build tree" in output, output
    assert audit["spawned"] != []
    output, audit = _audited(copy)
    assert audit["spawned"] == [], output
