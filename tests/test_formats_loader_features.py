"""The loader features a build relies on, and the ``kernels-minver`` they give (kernel_builder/formats/
loader_features.py): the first ``kernels`` release of each, and the features of each kind of variant."""

from __future__ import annotations

import pytest

from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.loader_features import LoaderFeature, features_of, kernels_minver
from kernel_builder.formats.metadata import required_kernels_version
from kernel_builder.formats.variants import parse_variant
from kernel_builder.loader.minver import KERNELS_API_VERSION

DEPENDS = (KernelDependency("org/activation", version=1),)


@pytest.mark.parametrize(
    ("name", "depends", "features", "minver"),
    [
        ("torch215-cxx11-cu132-x86_64-linux", (), {LoaderFeature.LAYOUT}, (0, 14, 0)),
        ("torch214-cpu-aarch64-darwin", (), {LoaderFeature.LAYOUT}, (0, 14, 0)),
        ("torch-cuda", (), {LoaderFeature.LAYOUT}, (0, 14, 0)),
        (
            "torch-stable-abi214-cu130-x86_64-linux",
            (),
            {LoaderFeature.LAYOUT, LoaderFeature.STABLE_ABI_NAME},
            (0, 15, 1),
        ),
        (
            "torch-stable-abi214-cu130-x86_64-linux",
            DEPENDS,
            {LoaderFeature.LAYOUT, LoaderFeature.STABLE_ABI_NAME, LoaderFeature.KERNEL_DEPENDS},
            (0, 17, 0),
        ),
        ("torch-cpu", DEPENDS, {LoaderFeature.LAYOUT, LoaderFeature.KERNEL_DEPENDS}, (0, 17, 0)),
    ],
)
def test_the_features_of_a_build_and_its_minimum_loader(
    name: str,
    depends: tuple[KernelDependency, ...],
    features: set[LoaderFeature],
    minver: tuple[int, int, int],
) -> None:
    variant = parse_variant(name)
    assert features_of(variant, depends) == features
    assert kernels_minver(features_of(variant, depends)) == minver
    assert required_kernels_version(depends, variant) == minver  # what the build writes


def test_the_first_releases() -> None:
    assert {f: f.first_release for f in LoaderFeature} == {
        LoaderFeature.LAYOUT: (0, 14, 0),
        LoaderFeature.STABLE_ABI_NAME: (0, 15, 1),
        LoaderFeature.KERNEL_DEPENDS: (0, 17, 0),
    }
    assert kernels_minver([]) == (0, 14, 0)
    assert features_of(None) == {LoaderFeature.LAYOUT}
    # This loader implements every feature a build of this tool may use: it loads all of them.
    assert max(f.first_release for f in LoaderFeature) <= KERNELS_API_VERSION


def test_upstreams_loader_of_that_release_parses_the_stable_abi_name() -> None:
    """The installed ``kernels`` (newer than 0.15.1) reads the name the feature is about."""
    pytest.importorskip("kernels", reason="upstream's loader (the test extra)")
    import importlib

    try:  # kernels 0.19 moved its modules under _internals
        variants = importlib.import_module("kernels._internals.variants")
    except ImportError:
        variants = importlib.import_module("kernels.variants")
    parsed = variants.parse_variant("torch-stable-abi214-cu130-x86_64-linux")
    assert type(parsed.framework).__name__ == "TorchStableAbi"
