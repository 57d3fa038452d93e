"""The one variant chooser (kernel_builder/loader/choose.py) and the one load sequence every load path goes
through (kernel_builder/loader/sequence.py; docs/loading.md).

The chooser's rules are resolve.py's (test_loader_resolve.py, and upstream's verdicts in
test_loader_resolve_upstream.py); here: what it returns and raises, ``check_arch``, and that every load path
chooses through it and checks a chosen variant through the sequence, in the source itself.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest
from loader_fixtures import make_env

from kernel_builder.formats.metadata import Metadata
from kernel_builder.formats.variant_model import Noarch, NoarchVariant, TorchNoarch
from kernel_builder.loader import NoCompatibleVariantError
from kernel_builder.loader import choose as choose_module
from kernel_builder.loader import resolve as resolve_module
from kernel_builder.loader.choose import choose_variant, decide
from kernel_builder.loader.decisions import VariantRejected
from kernel_builder.loader.resolve import Accepted, Device, Rejected

LOADER = Path(__file__).resolve().parents[1] / "kernel_builder" / "loader"
CU130 = "torch212-cxx11-cu130-x86_64-linux"
ENV = make_env(backend="cuda", backend_version=(13, 0))


def meta(archs: Sequence[str]) -> Metadata:
    return Metadata(
        name="relu", id="_relu_x", python_depends=(), backend_type="cuda", backend_archs=tuple(archs)
    )


def test_the_preferred_compatible_variant() -> None:
    names = ["torch-cuda", CU130, "torch-cpu", "torch-2.12-cxx11-cuda-13.0-cpython-3.9-abi3-x86_64-linux"]
    assert choose_variant(names, ENV, "cuda", None, subject="here") == names[3]
    assert choose_variant(["torch-cuda", "torch-cpu"], ENV, "cpu", None, subject="here") == "torch-cpu"


def test_none_compatible_lists_every_verdict() -> None:
    with pytest.raises(NoCompatibleVariantError) as caught:
        choose_variant(["torch-cpu", "torch-rocm", "notes"], ENV, "cuda", None, subject="org/relu at abc")
    assert isinstance(caught.value, FileNotFoundError)
    assert str(caught.value) == (
        "no compatible kernel variant in org/relu at abc\n"
        "environment: Torch 2.12 (cxx11 ABI), backend cuda 13.0, x86_64-linux\n"
        "variants:\n"
        "  torch-cpu: noarch variant for cpu; the selected backend is cuda\n"
        "  torch-rocm: noarch variant for rocm; the selected backend is cuda"
    )
    # the error hands its decisions out in the public form, as get_kernel_variants does (upstream's classes)
    decisions = caught.value.decisions
    assert all(isinstance(decision, VariantRejected) for decision in decisions)
    assert [decision.variant for decision in decisions] == [
        NoarchVariant(TorchNoarch(), Noarch("cpu")),
        NoarchVariant(TorchNoarch(), Noarch("rocm")),
    ]


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One visible GPU of compute capability 9.0; the probes made."""
    probes: list[str] = []

    def probe(backend: str) -> list[Device]:
        probes.append(backend)
        return [(9, 0)]

    monkeypatch.setattr(resolve_module, "probe_gpus", probe)
    monkeypatch.delenv(choose_module.CHECK_GPU_ARCH, raising=False)
    return probes


def test_check_arch_falls_back_or_is_skipped(gpu: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    lookup = {CU130: meta(["8.0"]), "torch-cuda": meta(["9.0"])}.get
    names = [CU130, "torch-cuda"]
    assert choose_variant(names, ENV, "cuda", lookup, subject="here") == "torch-cuda"
    assert gpu == ["cuda"]
    assert choose_variant(names, ENV, "cuda", lookup, subject="here", check_arch=False) == CU130
    assert gpu == ["cuda"]  # not probed again: check_arch=False skips the check altogether
    monkeypatch.setenv(choose_module.CHECK_GPU_ARCH, "0")
    assert choose_variant(names, ENV, "cuda", lookup, subject="here") == CU130


def test_decide_judges_every_variant(gpu: list[str]) -> None:
    lookup = {CU130: meta(["8.0"]), "torch-cuda": meta(["9.0"])}.get
    decisions, probe = decide([CU130, "torch-cuda"], ENV, "cuda", lookup, first_only=False)
    # the loader's own verdicts (our parsed names): a load converts nothing to the public form
    assert [(type(d).__name__, d.variant.variant_str) for d in decisions] == [
        ("Accepted", "torch-cuda"),
        ("Rejected", CU130),
    ]
    assert probe.probed == ((9, 0),)
    assert isinstance(decisions[0], Accepted) and isinstance(decisions[1], Rejected)


# --- every load path, in the source ----------------------------------------------------------------------------

#: The modules of the load paths: the Hub (get_kernel, install_kernel, has_kernel, dependencies), the cache alone,
#: local builds and LOCAL_KERNELS, locks (load_kernel, get_locked_kernel, `kernel-builder download`).
LOAD_PATHS = ("hub_steps", "remote", "warm", "local", "locked", "download", "hub_dependencies")


def _calls(module: str) -> set[str]:
    tree = ast.parse((LOADER / f"{module}.py").read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", ""))
    return names


def _imports(module: str) -> set[str]:
    tree = ast.parse((LOADER / f"{module}.py").read_text(encoding="utf-8"))
    return {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_variants_are_judged_by_the_one_chooser_only() -> None:
    """No load path judges variants itself (``resolve_variants``): each asks the chooser."""
    for module in LOAD_PATHS:
        assert "resolve_variants" not in _calls(module), module
    choosers = {
        module
        for module in LOAD_PATHS
        if {"choose_variant", "preferred", "decide", "choose_on_hub"} & _calls(module)
    }
    assert choosers == set(LOAD_PATHS)


def test_a_chosen_variant_is_checked_by_the_sequence_only() -> None:
    """The checks every load runs before it fetches a variant (its metadata against its name, the loader's
    version, the Python dependencies) are the sequence's: no load path runs them by hand, ``install_kernel`` and
    the load from the cache alone included."""
    by_hand = {"check_python_dependencies", "check_kernels_minver", "metadata_disagreement"}
    for module in LOAD_PATHS:
        assert not by_hand & (_calls(module) | _imports(module)), module
    assert {"locate", "install_located"} <= _calls("remote") | _calls("hub_steps")
    assert {"locate", "load_located"} <= _calls("warm")
    assert {"locate", "load_located"} <= _calls("local")
    assert {"locate", "load_located"} <= _calls("locked")
