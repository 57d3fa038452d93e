"""The public form of a parsed variant (kernel_builder/formats/variant_model.py): upstream ``kernels`` 0.19.1's
classes, by name, field and meaning.

Differential over the generated names of test_loader_resolve_upstream.py: every name both packages parse has the
same structure (class of each part, versions, flags, ``variant_str``), the same ``repr``, and the same equality
and hashing (which names compare equal to which) in both. Then what upstream's classes also promise: ``legacy``
takes no part in comparisons, the combinations a name cannot spell raise, and every backend of our registry has
a class (upstream's, by name, for those it knows).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from packaging.version import Version
from test_loader_resolve_upstream import NAMES, upstream_reading
from variant_structure import structure

import kernel_builder.backends as backends
from kernel_builder.formats import variant_model as model
from kernel_builder.formats.variants import Variant, parse_variant

upstream_variants: Any = pytest.importorskip(
    "kernels._internals.variants", reason="upstream kernels 0.19 (the test extra) is the reference"
)

#: The names both packages parse: upstream reads each as itself (the others ours refuses, test_loader_resolve_upstream.py).
BOTH = [name for name in NAMES if upstream_reading(name) == name]


def test_both_parse_a_few_hundred_names_of_every_form() -> None:
    assert len(BOTH) >= 200
    kinds = {type(model.parse_variant(name)).__name__ for name in BOTH}
    assert kinds == {"ArchVariant", "NoarchVariant", "SdkVariant"}
    backend_classes = {
        type(variant.backend).__name__
        for variant in map(model.parse_variant, BOTH)
        if isinstance(variant, (model.ArchVariant, model.SdkVariant)) and variant.backend is not None
    }
    assert backend_classes == {"CPU", "CUDA", "ROCm", "XPU", "CANN", "Metal", "Neuron", "TPU", "Noarch"}


def test_every_name_has_upstreams_structure() -> None:
    mismatches = [
        (name, ours, theirs)
        for name in BOTH
        if (ours := structure(model.parse_variant(name)))
        != (theirs := structure(upstream_variants.parse_variant(name)))
    ]
    assert mismatches == []


def test_every_name_has_upstreams_repr() -> None:
    """The same class and field names give the same ``repr``, part for part."""
    mismatches = [
        name
        for name in BOTH
        if repr(model.parse_variant(name)) != repr(upstream_variants.parse_variant(name))
    ]
    assert mismatches == []


def _classes(parse: Callable[[str], Any]) -> set[frozenset[str]]:
    """The names grouped by which of them parse to equal variants (through ``==`` and ``hash`` together)."""
    groups: defaultdict[Any, set[str]] = defaultdict(set)
    for name in BOTH:
        groups[parse(name)].add(name)
    return {frozenset(group) for group in groups.values()}


def test_equal_variants_are_upstreams() -> None:
    """A build's legacy and new-format names compare equal where they name the same Python, as upstream's do."""
    ours, theirs = _classes(model.parse_variant), _classes(upstream_variants.parse_variant)
    assert ours == theirs
    assert (
        frozenset(
            {"torch213-cxx11-cu128-x86_64-linux", "torch-2.13-cxx11-cuda-12.8-cpython-3.9-abi3-x86_64-linux"}
        )
        in ours
    )


# --- what the classes promise ---------------------------------------------------------------------------------


def test_the_parts_of_a_compiled_variant() -> None:
    variant = model.parse_variant("torch-2.13-cxx98-rocm-7.14-cpython-3.15-abi3t-aarch64-linux")
    assert isinstance(variant, model.ArchVariant)
    assert variant.framework == model.Torch(Version("2.13"), cxx11_abi=False)
    assert isinstance(variant.backend, model.ROCm) and variant.backend.version == Version("7.14")
    assert (variant.backend.name, variant.backend.variant_str) == ("rocm", "rocm-7.14")
    assert variant.python == model.Python(Version("3.15"), "abi3t", legacy=False)
    assert variant.system == model.System("aarch64", "linux")
    assert isinstance(variant.backend, model.Backend)
    legacy = model.parse_variant("torch213-cxx98-rocm714-aarch64-linux")
    assert isinstance(legacy, model.ArchVariant) and legacy.backend == variant.backend
    assert legacy.backend.variant_str == "rocm714" and legacy.python == model.Python()


def test_legacy_takes_no_part_in_comparisons() -> None:
    assert model.CUDA(Version("12.8"), legacy=True) == model.CUDA(Version("12.8"), legacy=False)
    assert hash(model.TvmFfi(Version("0.1"))) == hash(model.TvmFfi(Version("0.1"), legacy=False))
    rocm: object = model.ROCm(Version("12.8"))  # another class, the same fields: not equal
    metal: object = model.Metal()
    assert model.CUDA(Version("12.8")) != rocm
    assert model.CPU() == model.CPU() and model.CPU() != metal


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: model.Python(Version("3.12")), "legacy-format name is for CPython 3.9 abi3 only"),
        (lambda: model.Python(Version("3.14"), "abi3t", legacy=False), "abi3t starts with CPython 3.15"),
        (lambda: model.SdkVariant(None, model.Python(), None), "together, or neither"),
        (
            lambda: model.SdkVariant(model.Noarch("cuda"), model.Python(), model.System("x86_64", "linux")),
            "not a Noarch one",
        ),
        (lambda: model.SdkVariant(model.CUDA(Version("12.8")), None, None), "also names its Python"),
    ],
)
def test_what_a_name_cannot_spell_raises(build: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_every_builtin_backend_has_upstreams_class() -> None:
    """Each backend of the registry converts to the class upstream names it by (``CUDA`` for ``cuda``, ...)."""
    for name in backends.names():
        spec = backends.find(name)
        assert spec is not None
        version = (12, 8) if spec.versioned else None
        parsed = Variant(
            "torch", (2, 13), version, None, name, "x86_64", "linux", (3, 9), "abi3", legacy=False
        )
        ours = model.from_parsed(parsed)
        theirs = upstream_variants.parse_variant(parsed.name)
        assert isinstance(ours, model.ArchVariant)
        assert type(ours.backend).__name__ == type(theirs.backend).__name__ != "RegisteredBackend"


@pytest.fixture
def toy() -> Iterator[backends.Backend]:
    registered = backends.register(backends.Backend(name="toyaccel", compute_prefix="toy"))
    try:
        yield registered
    finally:
        backends.unregister(registered.name)


def test_a_backend_upstream_does_not_know(toy: backends.Backend) -> None:
    """A backend registered at run time: its own name and version, spelled as the registry spells it."""
    for name in (
        "torch213-cxx11-toy12-x86_64-linux",
        "torch-2.13-toyaccel-1.2-cpython-3.9-abi3-x86_64-linux",
    ):
        variant = model.parse_variant(name)
        assert isinstance(variant, model.ArchVariant)
        assert variant.backend == model.RegisteredBackend("toyaccel", Version("1.2"))
        assert (variant.backend.name, variant.variant_str) == ("toyaccel", name)
    assert model.from_parsed(parse_variant("torch-toyaccel")) == model.NoarchVariant(
        model.TorchNoarch(), model.Noarch("toyaccel")
    )
