"""The decisions users get (kernel_builder/loader/decisions.py): upstream ``kernels`` 0.19.1's ``VariantAccepted``
and ``VariantRejected``, built from the loader's own verdicts only where they reach a user.

What each variant's structure is, against upstream's, is test_formats_variant_model.py's and
test_loader_resolve_upstream.py's; here: the conversion keeps order and reasons, the classes behave as upstream's
(type hints, mutability, hashing), and a load imports none of it.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from loader_fixtures import make_env
from packaging.version import Version

import kernel_builder
from kernel_builder.formats.variant_model import CUDA, ArchVariant, NoarchVariant
from kernel_builder.loader import decisions, resolve
from kernel_builder.loader.choose import no_compatible
from kernel_builder.loader.decisions import VariantAccepted, VariantRejected, public_decisions

upstream_variants: Any = pytest.importorskip(
    "kernels._internals.variants", reason="upstream kernels 0.19 (the test extra) is the reference"
)

PROJECT = Path(__file__).resolve().parents[1]
CU128 = "torch212-cxx11-cu128-x86_64-linux"
CU130 = "torch212-cxx11-cu130-x86_64-linux"


def test_public_decisions_keep_the_verdicts_order_and_reasons() -> None:
    env = make_env(backend="cuda", backend_version=(12, 8))
    verdicts = resolve.resolve_variants([CU130, "torch-cuda", CU128, "torch-cpu"], env, "cuda")
    public = public_decisions(verdicts)
    assert [(type(d).__name__, d.variant.variant_str) for d in public] == [
        ("VariantAccepted", CU128),
        ("VariantAccepted", "torch-cuda"),
        ("VariantRejected", "torch-cpu"),
        ("VariantRejected", CU130),
    ]
    assert [getattr(d, "reason", None) for d in public] == [getattr(v, "reason", None) for v in verdicts]
    first = public[0].variant
    assert isinstance(first, ArchVariant) and first.backend == CUDA(Version("12.8"))
    assert isinstance(public[1].variant, NoarchVariant)
    # a failed load's error: its message traces the verdicts, its decisions are their public form
    error = no_compatible("here", "env", verdicts)
    assert str(error).splitlines()[3:] == [f"  {line}" for line in resolve.trace(verdicts)]
    assert list(error.decisions) == public


def test_the_exports_are_these_classes() -> None:
    assert kernel_builder.VariantAccepted is kernel_builder.loader.VariantAccepted is VariantAccepted
    assert kernel_builder.VariantRejected is kernel_builder.loader.VariantRejected is VariantRejected


def _hint_names(cls: type) -> dict[str, list[str]]:
    """Each field's type hint, as the names of the classes it admits."""
    hints = typing.get_type_hints(cls)
    return {
        field: sorted(arg.__name__ for arg in typing.get_args(hint) or (hint,))
        for field, hint in hints.items()
    }


@pytest.mark.parametrize("name", ["VariantAccepted", "VariantRejected"])
def test_the_classes_behave_as_upstreams(name: str) -> None:
    ours, theirs = getattr(decisions, name), getattr(upstream_variants, name)
    # type hints resolve at run time, to the same class names
    assert _hint_names(ours) == _hint_names(theirs)
    assert _hint_names(ours)["variant"] == ["ArchVariant", "NoarchVariant", "SdkVariant"]
    # mutable and hashable alike
    params = ("eq", "frozen", "unsafe_hash")
    assert [getattr(ours.__dataclass_params__, p) for p in params] == [
        getattr(theirs.__dataclass_params__, p) for p in params
    ]
    assert [f.name for f in dataclasses.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]


def test_equal_decisions_hash_alike() -> None:
    env = make_env(backend="cuda", backend_version=(12, 8))
    once, again = (
        public_decisions(resolve.resolve_variants([CU128, "torch-cpu"], env, "cuda")) for _ in range(2)
    )
    assert once == again and once[0] is not again[0]
    assert {*once, *again} == set(once) and len(set(once)) == 2


def test_a_load_imports_neither_the_decisions_nor_their_classes() -> None:
    """Choosing a variant (and importing the loader) builds only the loader's own verdicts."""
    probe = (
        "import sys\n"
        "from kernel_builder import get_kernel, get_local_kernel\n"
        "from kernel_builder.formats.runtime import Environment\n"
        "from kernel_builder.loader import choose\n"
        "env = Environment(cpu='x86_64', os='linux', torch_version=(2, 13), cxx11_abi=True, backend='cpu', backend_version=None)\n"
        "assert choose.choose_variant(['torch-cpu', 'torch-cuda'], env, 'cpu', None, subject='x') == 'torch-cpu'\n"
        "print(sorted(m for m in sys.modules if m.endswith(('.decisions', '.variant_model'))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=PROJECT
    )
    assert result.stdout.strip() == "[]"
