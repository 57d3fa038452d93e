"""Pure-Python kernels with ``python-depends`` (CuTe DSL kernels need ``nvidia-cutlass-dsl`` and ``tvm-ffi`` at run
time): they build where those packages are missing, the import check names every missing package, and loading one
without them fails with one message naming the kernel, the packages and the ``pip install`` for them all.

The packages are missing from both test interpreters (the tests skip if one is there). On a CPU-only Torch the
loader checks the ``[general]`` entries (``tvm-ffi``, ``einops``); ``[general.cuda]``'s ``nvidia-cutlass-dsl`` is
checked where the backend is cuda.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from build_runs import run_cli, run_json
from cpu_projects import GENERAL, write_tree
from loader_fixtures import write_variant
from stage_fixtures import CPU_213

from kernel_builder import get_local_kernel
from kernel_builder.formats.dependencies import PYTHON_DEPENDENCIES
from kernel_builder.loader.errors import MissingPythonDependencyError
from kernel_builder.pipeline.check.import_check import MissingDependencies, describe_missing_dependencies

NAME = "cute-dsl-style"
#: The pip package of each entry, in the order the loader reports them.
MISSING_HERE = ("apache-tvm-ffi (python-depends: tvm-ffi)", "einops (python-depends: einops)")


@pytest.fixture
def missing_packages() -> None:
    for module in ("tvm_ffi", "einops", "cutlass"):
        if importlib.util.find_spec(module) is not None:
            pytest.skip(f"this interpreter has {module}; the tests need an environment without it")


def cute_dsl_project(root: Path) -> Path:
    """A CuTe DSL-style kernel: pure Python for cuda, its device code compiled at run time."""
    return write_tree(
        root,
        {
            "build.toml": GENERAL.format(name=NAME, backends='["cuda"]')
            + 'python-depends = ["tvm-ffi", "einops"]\n\n'
            + '[general.cuda]\npython-depends = ["nvidia-cutlass-dsl"]\n\n[torch-noarch]\n',
            "torch-ext/cute_dsl_style/__init__.py": '''
                """Kernels written with the CuTe DSL: compiled when first called, through tvm-ffi."""

                import cutlass
                import cutlass.cute as cute
                import einops
                import tvm_ffi

                __all__ = ["cute", "cutlass", "einops", "tvm_ffi"]
                ''',
        },
    )


def test_python_dependency_table_is_upstreams() -> None:
    """Every name, level, pip package and import name of ``kernels``' python_depends.json, and no other."""
    package = importlib.resources.files("kernels")
    table = package.joinpath("_internals").joinpath("python_depends.json")  # kernels 0.19; kernels/ before
    if not table.is_file():
        table = package.joinpath("python_depends.json")
    upstream = json.loads(table.read_text(encoding="utf-8"))
    levels = {"general": upstream["general"], **upstream["backends"]}
    theirs = {
        (name, level, package["pkg"], package.get("import"))
        for level, entries in levels.items()
        for name, info in entries.items()
        for package in info["python"]
    }
    ours = {(d.name, d.level, d.pip_name, d.import_name) for d in PYTHON_DEPENDENCIES.values()}
    assert ours == theirs


def test_loading_names_every_missing_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing_packages: None
) -> None:
    variant = write_variant(tmp_path / "torch-cpu", name=NAME, kernel_id="_cute_dsl_style_cpu_0123456789",
                            python_depends=["torch", "tvm-ffi", "einops"])  # fmt: skip
    with pytest.raises(MissingPythonDependencyError) as caught:
        get_local_kernel(variant)
    assert str(caught.value) == (
        f"kernel {NAME} ({variant}) needs the Python packages {MISSING_HERE[0]} and {MISSING_HERE[1]}, which are "
        "not installed; install them with: pip install apache-tvm-ffi einops"
    )
    assert isinstance(caught.value, ImportError) and caught.value.name == "tvm_ffi"
    assert [d.name for d in caught.value.dependencies] == ["tvm-ffi", "einops"]
    assert "_cute_dsl_style_cpu_0123456789" not in sys.modules


def test_import_check_messages() -> None:
    one = MissingDependencies((PYTHON_DEPENDENCIES["nvidia-cutlass-dsl"],), "kernel_builder")
    assert describe_missing_dependencies(one, CPU_213) == (
        f"import check incomplete: the build interpreter {CPU_213.python} does not have the Python package "
        "nvidia-cutlass-dsl (python-depends: nvidia-cutlass-dsl), so the kernel was not imported; users install it "
        "wherever the kernel runs. Install it there (pip install nvidia-cutlass-dsl) to check the whole variant, or "
        "pass --strict-import to make this an error"
    )
    two = MissingDependencies(
        (PYTHON_DEPENDENCIES["tvm-ffi"], PYTHON_DEPENDENCIES["einops"]), "kernel_builder"
    )
    assert describe_missing_dependencies(two, CPU_213, strict=True) == (
        f"import check incomplete: the build interpreter {CPU_213.python} does not have the Python packages "
        f"{MISSING_HERE[0]} and {MISSING_HERE[1]}, so the kernel was not imported; users install them wherever "
        "the kernel runs (--strict-import)"
    )


@pytest.mark.slow
def test_builds_warns_and_fails_to_load_with_the_packages_missing(
    tmp_path: Path, missing_packages: None
) -> None:
    root = cute_dsl_project(tmp_path / NAME)
    run = run_cli(["build", root]).check()
    variant = root / "build" / "torch-cuda"
    assert json.loads((variant / "metadata.json").read_text(encoding="utf-8"))["python-depends"] == [
        "tvm-ffi", "einops", "nvidia-cutlass-dsl",
    ]  # fmt: skip
    warnings = [line.split(": warning: ", 1)[1] for line in run.stderr.splitlines() if ": warning: " in line]
    assert warnings == [
        f"torch-cuda: import check incomplete: the build interpreter {sys.executable} does not have the Python "
        f"packages {MISSING_HERE[0]} and {MISSING_HERE[1]}, so the kernel was not imported; users install them "
        "wherever the kernel runs. Install them there (pip install apache-tvm-ffi einops) to check the whole "
        "variant, or pass --strict-import to make this an error"
    ], run.stderr

    failure = run_json(
        Path(sys.executable),
        """
        import json, sys
        import kernel_builder
        try:
            kernel_builder.get_local_kernel(sys.argv[1])
        except ImportError as error:
            print(json.dumps([type(error).__name__, str(error)]))
        """,
        variant,
    )
    assert failure == [
        "MissingPythonDependencyError",
        f"kernel {NAME} ({variant}) needs the Python packages {MISSING_HERE[0]} and {MISSING_HERE[1]}, which are "
        "not installed; install them with: pip install apache-tvm-ffi einops",
    ]

    (root / "build").rename(
        root / "build-warned"
    )  # rebuild: the up-to-date check would skip the import check
    strict = run_cli(["build", root, "--strict-import"])
    assert strict.returncode == 1, strict.output
    assert "Traceback" not in strict.stderr
    assert (
        "error: torch-cuda: import check incomplete: the build interpreter "
        f"{sys.executable} does not have the Python packages {MISSING_HERE[0]} and {MISSING_HERE[1]}, so the "
        "kernel was not imported; users install them wherever the kernel runs (--strict-import)"
    ) in strict.stderr, strict.stderr
    assert not (root / "build" / "torch-cuda").exists()
