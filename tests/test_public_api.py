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
