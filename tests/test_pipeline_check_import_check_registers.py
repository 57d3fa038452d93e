"""The import check of a kernel that registers ops, fakes and autograd formulas when it is imported (deep-gemm's
pattern, :mod:`registering_projects`): each loader imports the variant in a process of its own, so the build
passes, and a failure or a crash of either loader's import still fails it, with that loader's output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from build_outputs import complete_variants
from build_runs import cpu_python, run_cli, run_json
from matrix_data import CPU_VARIANT
from registering_projects import registering_project

from kernel_builder.errors import BuildError
from kernel_builder.formats.metadata import digest_files
from kernel_builder.pipeline.check import import_check
from kernel_builder.pipeline.check.import_check import check_import
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, quick_probe

pytest.importorskip("kernels", reason="the check's second loader, the kernels package (the test extra)")
pytestmark = pytest.mark.slow

RECORD_ENV = "KB_TEST_IMPORT_RECORD"

# Appended to the kernel's __init__.py: which loader imported it, in which process (when the test asks).
RECORD = """
import os as _os
import traceback as _traceback

if _os.environ.get("KB_TEST_IMPORT_RECORD"):
    _who = "kernels" if any("/kernels/" in f.filename for f in _traceback.extract_stack()) else "kernel_builder"
    with open(_os.environ["KB_TEST_IMPORT_RECORD"], "a", encoding="utf-8") as _file:
        _file.write(f"{_os.getpid()} {_who}\\n")
"""


def _records(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text(encoding="utf-8").split()
    return sorted((int(pid), who) for pid, who in zip(lines[::2], lines[1::2]))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    """The project built with the import check on; the build's output and its record of the imports."""
    base = tmp_path_factory.mktemp("registers")
    root = registering_project(base / "kb-registers", init_extra=RECORD)
    record = base / "record.txt"
    run = run_cli(["build", root], env={RECORD_ENV: str(record)})
    assert run.returncode == 0, run.output
    return root, run.stderr, record


@pytest.fixture(scope="module")
def python() -> BuildInterpreter:
    return quick_probe()


def test_a_kernel_that_registers_at_import_passes_both_loaders_checks(built: tuple[Path, str, Path]) -> None:
    root, stderr, record = built
    assert complete_variants(root / "build") == [CPU_VARIANT]
    assert "import check" not in stderr, stderr
    imports = _records(record)
    assert sorted(who for _, who in imports) == ["kernel_builder", "kernels"], imports
    assert imports[0][0] != imports[1][0], f"both loaders imported the variant in one process: {imports}"


@pytest.mark.parametrize("loader", ["kernel_builder", "kernels"])
def test_its_ops_work_through_each_loader(built: tuple[Path, str, Path], loader: str) -> None:
    """The fixture is a working kernel: forward, backward and the fake (``opcheck``) of the compiled op, and the
    two Python ops, through either loader."""
    root, _, _ = built
    code = f"""
        import json, pathlib, sys
        import torch
        import {loader}
        kernel = {loader}.get_local_kernel(pathlib.Path(sys.argv[1]))
        x = torch.arange(4.0, requires_grad=True)
        y = kernel.scale(x, 3.0)
        y.sum().backward()
        torch.library.opcheck(kernel.ops.scale, (torch.randn(5), 2.0))
        print(json.dumps({{
            "scale": y.tolist(), "grad": x.grad.tolist(),
            "shift": kernel.shift(torch.ones(2), 0.5).tolist(), "twice": kernel.twice(torch.ones(2)).tolist(),
            "fake": list(kernel.ops.scale(torch.empty(3, device="meta"), 2.0).shape),
        }}))
    """
    result = run_json(cpu_python(), code, root / "build" / CPU_VARIANT)
    assert result == {
        "scale": [0.0, 3.0, 6.0, 9.0],
        "grad": [3.0, 3.0, 3.0, 3.0],
        "shift": [1.5, 1.5],
        "twice": [2.0, 2.0],
        "fake": [3],
    }


def _with_init(variant: Path, dest: Path, extra: str) -> Path:
    """A copy of ``variant`` whose ``__init__.py`` ends with ``extra``, its digest updated (only the change counts)."""
    copy = dest / variant.name
    shutil.copytree(variant, copy)
    init = copy / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8") + extra, encoding="utf-8")
    metadata = json.loads((copy / "metadata.json").read_text(encoding="utf-8"))
    metadata["digest"]["files"] = {k: v for k, v in digest_files(copy).items() if k != "metadata.json"}
    (copy / "metadata.json").write_text(json.dumps(metadata, indent=2) + "\n", encoding="utf-8")
    return copy


def test_each_loader_gets_a_new_interpreter_where_the_check_does_not_fork(
    built: tuple[Path, str, Path], python: BuildInterpreter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The form used off Linux: ``python -c LEG PATH LOADER`` per loader, with the same verdict."""
    root, _, _ = built
    record = tmp_path / "record.txt"
    monkeypatch.setattr(import_check, "FORK", False)
    monkeypatch.setenv(RECORD_ENV, str(record))
    assert check_import(python, root / "build" / CPU_VARIANT) is None
    imports = _records(record)
    assert sorted(who for _, who in imports) == ["kernel_builder", "kernels"]
    assert imports[0][0] != imports[1][0]
    broken = _with_init(
        root / "build" / CPU_VARIANT, tmp_path / "broken", "raise RuntimeError('kernel bug')\n"
    )
    with pytest.raises(BuildError, match="RuntimeError: kernel bug"):
        check_import(python, broken)


def test_a_failure_of_the_kernels_leg_alone_fails_with_its_output(
    built: tuple[Path, str, Path], python: BuildInterpreter, tmp_path: Path
) -> None:
    root, _, _ = built
    extra = (
        "import traceback as _tb\n"
        "if any('/kernels/' in f.filename for f in _tb.extract_stack()):\n"
        "    raise RuntimeError('only under the kernels package')\n"
    )
    variant = _with_init(root / "build" / CPU_VARIANT, tmp_path, extra)
    with pytest.raises(BuildError, match="RuntimeError: only under the kernels package"):
        check_import(python, variant)
    # Started before the variant exists (the build's way), the verdict is the same.
    worker = import_check.ImportCheckWorker(python)
    with pytest.raises(BuildError, match="RuntimeError: only under the kernels package"):
        check_import(python, variant, worker=worker)


def test_a_load_that_crashes_the_process_names_the_signal(
    built: tuple[Path, str, Path], python: BuildInterpreter, tmp_path: Path
) -> None:
    """A segfault in a kernel's import is the kernel's error: the check says which loader's process died, of
    what, and where (faulthandler's stack), rather than ending without a word."""
    root, _, _ = built
    extra = "import os as _os2, signal as _signal\n_os2.kill(_os2.getpid(), _signal.SIGSEGV)\n"
    variant = _with_init(root / "build" / CPU_VARIANT, tmp_path, extra)
    with pytest.raises(BuildError) as failed:
        check_import(python, variant)
    message = str(failed.value)
    assert "loading the variant with kernel_builder crashed: its process ended with signal SIGSEGV" in message
    assert "Fatal Python error: Segmentation fault" in message
    assert "__init__.py" in message
