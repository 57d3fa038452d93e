"""``get_kernel_dep`` and the context that provides a kernel's dependencies while it is imported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from build_runs import run_python
from loader_fixtures import reset_loader, write_variant
from upstream_kernels import RELEASES, release_env

from kernel_builder import get_kernel_dep
from kernel_builder.loader.dependency_context import providing
from kernel_builder.loader.importer import load_variant


def module(name: str) -> ModuleType:
    return ModuleType(name)


def test_outside_a_kernel_import_it_raises_like_upstream() -> None:
    with pytest.raises(
        RuntimeError, match=r"get_kernel_dep\('org/b'\) works only while a kernel is being imported"
    ):
        get_kernel_dep("org/b")


def test_inside_it_returns_the_declared_module_and_names_the_declared_ones_otherwise() -> None:
    b, c = module("b"), module("c")
    with providing("kb-a (somewhere)", {"org/c": c, "org/b": b}):
        assert get_kernel_dep("org/b") is b
        assert get_kernel_dep("org/c") is c
        with pytest.raises(RuntimeError) as caught:
            get_kernel_dep("org/x")
    assert str(caught.value) == (
        "kernel kb-a (somewhere) asked for dependency 'org/x', which it does not declare (declared: org/b, "
        "org/c); add { repo-id = 'org/x', version = <N> } to kernel-depends in its build.toml and rebuild"
    )
    with pytest.raises(RuntimeError, match="works only while"):
        get_kernel_dep("org/b")  # reset on exit


def test_a_kernel_without_dependencies_says_none_are_declared() -> None:
    with providing("kb-a", {}), pytest.raises(RuntimeError, match=r"\(declared: none\)"):
        get_kernel_dep("org/b")


def test_nested_imports_see_their_own_dependencies_and_restore_the_outer_ones() -> None:
    outer, inner = module("outer"), module("inner")
    with providing("kb-outer", {"org/outer": outer}):
        with providing("kb-inner", {"org/inner": inner}):
            assert get_kernel_dep("org/inner") is inner
            with pytest.raises(RuntimeError, match="does not declare"):
                get_kernel_dep("org/outer")
        assert get_kernel_dep("org/outer") is outer


def test_an_error_in_the_body_still_resets_the_context() -> None:
    with pytest.raises(ZeroDivisionError), providing("kb-a", {"org/b": module("b")}):
        1 / 0  # noqa: B018
    with pytest.raises(RuntimeError, match="works only while"):
        get_kernel_dep("org/b")


def test_upstream_get_kernel_dep_sees_the_same_dependencies() -> None:
    """Kernels written for upstream call kernels.get_kernel_dep: it must answer during our loads, and only then."""
    kernels = pytest.importorskip("kernels")
    b = module("b")
    with providing("kb-a", {"org/b": b}):
        assert kernels.get_kernel_dep("org/b") is b
    with pytest.raises(RuntimeError, match="only works during kernel loading"):
        kernels.get_kernel_dep("org/b")


def test_get_kernel_dep_is_cheap_to_import() -> None:
    """Neither the Hub client nor torch nor upstream's kernels comes with it."""
    code = (
        "import sys\n"
        "from kernel_builder import get_kernel_dep\n"
        "from kernel_builder.loader.dependency_context import providing\n"
        "with providing('kb-a', {}):\n"
        "    pass\n"
        "heavy = [m for m in ('huggingface_hub', 'torch', 'kernels') if m in sys.modules]\n"
        "assert heavy == [], heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_declared_dependency_the_caller_did_not_load_says_so() -> None:
    """A load path that imports a kernel without its dependencies (a bare load_variant) is named as the cause."""
    with providing("kb-a", {}, ["org/b"]), pytest.raises(RuntimeError) as caught:
        get_kernel_dep("org/b")
    assert str(caught.value) == (
        "kernel kb-a declares dependency 'org/b', but the code that imported it did not load its kernel "
        "dependencies; load it with get_kernel or get_local_kernel"
    )


def test_importing_a_kernel_without_its_dependencies_names_them(tmp_path: Path) -> None:
    directory = write_variant(
        tmp_path / "torch-cpu",
        name="kb-a",
        kernel_id="_kb_a_ctx",
        files={"__init__.py": "from kernel_builder import get_kernel_dep\n\nget_kernel_dep('org/b')\n"},
        extra={"kernel-depends": [{"repo-id": "org/b", "version": 1}]},
    )
    reset_loader()
    try:
        with pytest.raises(RuntimeError, match="declares dependency 'org/b', but the code that imported it"):
            load_variant(directory)
    finally:
        reset_loader()


@pytest.mark.slow  # a fresh interpreter per release of kernels
@pytest.mark.parametrize("release", RELEASES)
def test_every_kernels_release_line_sees_the_dependencies(
    release: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``kernels.get_kernel_dep`` of 0.17, 0.18 and 0.19 (whose setter moved) answers during our loads."""
    pytest.importorskip("kernels")
    code = """
import importlib.metadata, types, kernels
from kernel_builder.loader.dependency_context import providing
b = types.ModuleType("b")
with providing("kb-a", {"org/b": b}):
    assert kernels.get_kernel_dep("org/b") is b
try:
    kernels.get_kernel_dep("org/b")
except RuntimeError:
    print(importlib.metadata.version("kernels"))
"""
    assert (
        run_python(Path(sys.executable), code, env=release_env(release, tmp_path_factory)).strip() == release
    )
