"""The package's public names: the loader's, the layer API's and ``Benchmark``'s ``__all__``, listed once, each one
importable."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kernel_builder
import kernel_builder.authoring.benchmark
import kernel_builder.layers
import kernel_builder.loader

SOURCES = (kernel_builder.authoring.benchmark, kernel_builder.loader, kernel_builder.layers)


def test_top_level_names_are_the_union_of_the_packages_lists() -> None:
    expected = set().union(*(source.__all__ for source in SOURCES)) | {"load", "__version__"}
    assert sorted(kernel_builder.__all__) == sorted(expected)
    assert set(kernel_builder.__all__) <= set(dir(kernel_builder))
    assert "Benchmark" in kernel_builder.__all__


@pytest.mark.parametrize("name", sorted(set().union(*(source.__all__ for source in SOURCES))))
def test_every_public_name_is_the_packages_own_object(name: str) -> None:
    source = next(source for source in SOURCES if name in source.__all__)
    assert getattr(kernel_builder, name) is getattr(source, name)


def test_benchmark_imports_neither_torch_nor_the_loader() -> None:
    code = (
        "import sys\n"
        "from kernel_builder import Benchmark\n"
        "assert Benchmark().kernel is None and Benchmark.seed is None and Benchmark.device == 'cpu'\n"
        "assert 'torch' not in sys.modules and 'kernel_builder.loader' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_dunder_probes_import_nothing_and_star_import_works() -> None:
    code = (
        "import sys, kernel_builder\n"
        "assert not hasattr(kernel_builder, '__wrapped__')\n"
        "assert 'kernel_builder.loader' not in sys.modules\n"
        "from kernel_builder import *\n"
        "assert callable(get_kernel) and callable(kernelize) and callable(load)\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_importing_a_submodule_imports_only_it() -> None:
    """`from kernel_builder import errors` (and any other submodule) asks the package for the attribute first; that
    miss must not import the loader, the layer API and their 40-odd modules to look for a public name."""
    code = (
        "import sys\n"
        "from kernel_builder import errors\n"
        "from kernel_builder import formats\n"
        "loaded = sorted(name for name in sys.modules if name.startswith('kernel_builder'))\n"
        "assert loaded == ['kernel_builder', 'kernel_builder.errors', 'kernel_builder.formats'], loaded\n"
        "assert errors.ConfigError.exit_code == 2\n"
        "import kernel_builder\n"
        "assert 'get_kernel' in dir(kernel_builder) and callable(kernel_builder.get_kernel)  # public names still load\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_no_public_name_is_also_a_submodule() -> None:
    """A name that were both would be shadowed by the submodule for `from kernel_builder import <name>`."""
    from importlib.machinery import PathFinder

    clashes = [name for name in kernel_builder.__all__ if PathFinder.find_spec(name, kernel_builder.__path__)]
    assert clashes == []
