"""The import check after assembly (``kernel_builder.pipeline.check.import_check``): the kernel's own errors fail the variant, a
third-party module missing from the build interpreter is a note naming it (``--strict-import``: an error).

The quick project builds a cpu variant with CPU-only Torch (which brings no Triton) and a pure-Python torch-cuda
variant; its ``__init__.py`` is changed per test.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from build_outputs import complete_variants
from build_runs import run_cli
from cpu_projects import quick_project
from matrix_data import CPU_VARIANT
from stage_fixtures import CPU_213, load

from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.check import import_check
from kernel_builder.pipeline.check.import_check import (
    ImportOutcome,
    MissingModule,
    import_checker,
    provided_by,
)
from kernel_builder.pipeline.plan.planner import VariantPlan, plan_build

INIT = "torch-ext/kb_quick/__init__.py"


@pytest.fixture
def quick(tmp_path: Path) -> Path:
    if importlib.util.find_spec("triton") is not None:
        pytest.skip("this interpreter has triton; the tests need an environment without it")
    return quick_project(tmp_path / "kb-quick")


@pytest.mark.slow
def test_missing_third_party_module_is_a_note(quick: Path) -> None:
    """The issue's case: a kernel that imports Triton unconditionally, built with a CPU-only Torch."""
    (quick / INIT).write_text("import triton\n\nfrom ._ops import ops\n", encoding="utf-8")
    run = run_cli(["build", quick]).check()
    assert complete_variants(quick / "build") == sorted(["CARD.md", CPU_VARIANT, "torch-cuda"])
    notes = sorted(
        line.split(": warning: ", 1)[1] for line in run.stderr.splitlines() if "import check" in line
    )
    assert notes == [
        (
            f"torch-cuda: import check incomplete: the kernel imports `triton` (__init__.py:1), which the build "
            f"interpreter {sys.executable} does not have; Torch's cuda builds install it. Install it there to check "
            "the whole variant, or pass --strict-import to make this an error"
        ),
        (
            f"{CPU_VARIANT}: import check incomplete: the kernel imports `triton` (__init__.py:1), which the build "
            f"interpreter {sys.executable} does not have; it must be installed wherever the kernel runs. Install it "
            "there to check the whole variant, or pass --strict-import to make this an error"
        ),
    ], run.stderr


@pytest.mark.slow
def test_strict_import_fails_on_a_missing_module(quick: Path) -> None:
    (quick / INIT).write_text("from ._ops import ops\nimport kb_no_such_dependency.sub\n", encoding="utf-8")
    run = run_cli(["build", quick, "--strict-import"])
    assert run.returncode == 1, run.output
    assert "Traceback" not in run.stderr.split("error:")[0]
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 2, run.stderr
    for error in errors:
        assert "import check incomplete: the kernel imports `kb_no_such_dependency` (__init__.py:2)" in error
        assert error.endswith("(--strict-import)")
    assert complete_variants(quick / "build") == ["CARD.md"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("code", "shown"),
    [
        ("from . import helpers_that_do_not_exist\n", "cannot import name 'helpers_that_do_not_exist'"),
        (
            "import kb_quick_helpers\n",
            "No module named 'kb_quick_helpers'",
        ),  # a file of its own, imported absolutely
        ("raise RuntimeError('kernel bug')\n", "RuntimeError: kernel bug"),
    ],
    ids=["relative-import", "absolute-import-of-own-file", "exception"],
)
def test_the_kernels_own_errors_fail(quick: Path, code: str, shown: str) -> None:
    (quick / "torch-ext/kb_quick/kb_quick_helpers.py").write_text("X = 1\n", encoding="utf-8")
    (quick / INIT).write_text("from ._ops import ops\n" + code, encoding="utf-8")
    run = run_cli(["build", quick])
    assert run.returncode == 1, run.output
    assert "import check failed: the assembled variant does not load" in run.stderr
    assert shown in run.stderr
    assert "import check incomplete" not in run.stderr
    assert complete_variants(quick / "build") == ["CARD.md"]


def planned(root: Path) -> tuple[KernelProject, dict[str, VariantPlan]]:
    project = load(root)
    return project, {v.name: v for v in plan_build(project, CPU_213, "0123456789").variants}


def test_who_provides_a_missing_module(tmp_path: Path) -> None:
    """A ``python-depends`` entry names its pip package; Triton comes with Torch's CUDA builds only."""
    root = quick_project(tmp_path / "kb-quick")
    toml = root / "build.toml"
    toml.write_text(toml.read_text().replace("[torch]", 'python-depends = ["einops"]\n\n[torch]', 1))
    project, variants = planned(root)
    cpu, cuda = variants[CPU_VARIANT], variants["torch-cuda"]
    assert provided_by(project, "einops.layers", cpu) == (
        "the kernel declares it (python-depends: einops), so users install einops"
    )
    assert provided_by(project, "triton.language", cuda) == "Torch's cuda builds install it"
    assert provided_by(project, "triton", cpu) is None
    assert provided_by(project, "numpy", cuda) is None


def test_a_missing_module_warns_unless_strict(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, variants = planned(quick_project(tmp_path / "kb-quick"))
    missing = MissingModule("triton", "__init__.py:1", "kernel_builder")
    symbols = {"schema_version": 1, "functions": [], "layers": []}
    monkeypatch.setattr(
        import_check,
        "run_import_check",
        lambda interpreter, variant_dir, root=None, **_: ImportOutcome(missing, symbols),
    )
    warnings: list[str] = []
    check = import_checker(project, CPU_213, variants["torch-cuda"], strict=False, warn=warnings.append)
    assert check(tmp_path) == symbols  # what the kernel_builder leg read before the other leg missed triton
    assert len(warnings) == 1 and warnings[0].startswith(
        "torch-cuda: import check incomplete: the kernel imports"
    )
    assert "Torch's cuda builds install it" in warnings[0]
    strict = import_checker(project, CPU_213, variants["torch-cuda"], strict=True, warn=warnings.append)
    with pytest.raises(BuildError, match=r"imports `triton` \(__init__.py:1\).*\(--strict-import\)$"):
        strict(tmp_path)
    monkeypatch.setattr(
        import_check,
        "run_import_check",
        lambda interpreter, variant_dir, root=None, **_: ImportOutcome(None, symbols),
    )
    assert check(tmp_path) == symbols  # the variant loads: nothing said
    assert len(warnings) == 1
