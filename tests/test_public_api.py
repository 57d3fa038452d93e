"""The package's public names: the loader's and the layer API's ``__all__``, listed once, each one importable."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kernel_builder
import kernel_builder.layers
import kernel_builder.loader


def test_top_level_names_are_the_union_of_the_packages_lists() -> None:
    expected = (
        set(kernel_builder.loader.__all__) | set(kernel_builder.layers.__all__) | {"load", "__version__"}
    )
    assert sorted(kernel_builder.__all__) == sorted(expected)
    assert set(kernel_builder.__all__) <= set(dir(kernel_builder))


@pytest.mark.parametrize(
    "name", sorted(set(kernel_builder.loader.__all__) | set(kernel_builder.layers.__all__))
)
def test_every_public_name_is_the_packages_own_object(name: str) -> None:
    source = kernel_builder.loader if name in kernel_builder.loader.__all__ else kernel_builder.layers
    assert getattr(kernel_builder, name) is getattr(source, name)


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
