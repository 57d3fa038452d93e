"""Import mechanics: ids, layouts, dedup, cleanup, the registry (docs/loading.md)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from loader_fixtures import FILES, reset_loader, write_variant

import kernel_builder
from kernel_builder.formats.identifiers import Oid
from kernel_builder.formats.metadata import read_metadata
from kernel_builder.loader import LoadedKernel, RepoInfo, get_loaded_kernels
from kernel_builder.loader.importer import load_variant

ID = "_relu_cpu_0123456789"


@pytest.fixture(autouse=True)
def _fresh_loader() -> Iterator[None]:
    reset_loader()
    yield
    reset_loader()


def test_flat_layout_loads_under_its_id_with_relative_imports(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu")
    module = load_variant(variant)
    assert module.__name__ == ID
    assert module.__file__ == str(variant / "__init__.py")
    assert module.ops == f"ops of {ID}._ops"
    assert module.layers.__name__ == f"{ID}.layers"
    assert module.layers.ops is module.ops
    assert sys.modules[ID] is module
    assert "relu" not in sys.modules
    assert get_loaded_kernels() == [LoadedKernel(read_metadata(variant), module, None)]


def test_same_path_twice_gives_one_module_and_one_entry(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu")
    link = tmp_path / "link"
    link.symlink_to(variant, target_is_directory=True)
    first = load_variant(variant)
    assert load_variant(variant) is first
    assert load_variant(link) is first
    loaded = get_loaded_kernels()
    assert [kernel.module for kernel in loaded] == [first]
    loaded.clear()  # a copy: the registry is untouched
    assert get_loaded_kernels() is not get_loaded_kernels()
    assert [kernel.module for kernel in get_loaded_kernels()] == [first]


def test_repo_info_is_recorded(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu")
    info = RepoInfo("org/relu", "a" * 40)
    module = load_variant(variant, repo_info=info)
    assert get_loaded_kernels() == [LoadedKernel(read_metadata(variant), module, info)]
    # The revision is an Oid, as upstream types it since 0.18 (and still a str).
    (loaded,) = get_loaded_kernels()
    assert loaded.repo_info is not None
    assert (type(loaded.repo_info.revision), repr(loaded.repo_info.revision)) == (Oid, f'Oid("{"a" * 40}")')
    assert RepoInfo("org/relu", "A" * 40) == info
    with pytest.raises(ValueError, match="40 or 64 hexadecimal digits"):
        RepoInfo("org/relu", "main")


def test_legacy_nested_layout(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu", name="fused-relu", kernel_id="_fused_relu_1", nested=True)
    module = load_variant(variant)
    assert module.__file__ == str(variant / "fused_relu" / "__init__.py")
    assert module.layers.ops == "ops of _fused_relu_1._ops"
    assert "fused_relu" not in sys.modules


def test_flat_layout_wins_over_nested(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu")
    write_variant(
        tmp_path / "torch-cpu", files={"__init__.py": "raise AssertionError('nested')\n"}, nested=True
    )
    assert load_variant(variant).__file__ == str(variant / "__init__.py")


def test_legacy_build_without_id_or_name(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu", name=None, kernel_id=None, nested=True)
    real = os.path.realpath(variant)
    expected_id = f"_relu_{hashlib.sha256(real.encode()).hexdigest()[:10]}"
    with pytest.warns(UserWarning) as caught:
        module = load_variant(variant)
    assert [str(w.message) for w in caught] == [
        (
            f"{variant / 'metadata.json'} has no 'id' (a build by an older tool); loading kernel relu as "
            f"module {expected_id!r}. Rebuild it to get a stable id."
        )
    ]
    assert caught[0].filename == __file__  # attributed to the caller, not to kernel_builder
    assert module.__name__ == expected_id
    [kernel] = get_loaded_kernels()
    assert (kernel.metadata.name, kernel.metadata.id) == ("relu", expected_id)


def test_missing_package_names_both_locations(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu", files={"_ops.py": "ops = 1\n"})
    with pytest.raises(FileNotFoundError) as caught:
        load_variant(variant)
    assert str(caught.value) == (
        f"{variant}: no package __init__.py for kernel relu; tried {variant / '__init__.py'} (flat layout) "
        f"and {variant / 'relu' / '__init__.py'} (legacy nested layout)"
    )


def test_failing_init_leaves_no_module_behind(tmp_path: Path) -> None:
    files = {**FILES, "__init__.py": "from . import layers\nraise RuntimeError('boom')\n"}
    variant = write_variant(tmp_path / "torch-cpu", files=files)
    with pytest.raises(RuntimeError) as caught:
        load_variant(variant)
    assert str(caught.value) == "boom"
    assert getattr(caught.value, "__notes__", None) == [
        f"while importing kernel relu from {variant} as module {ID!r}"
    ]
    assert [name for name in sys.modules if name.startswith(ID)] == []
    assert get_loaded_kernels() == []
    # Nothing was registered, so a fixed build loads afterwards.
    (variant / "__init__.py").write_text(FILES["__init__.py"], encoding="utf-8")
    assert load_variant(variant).layers.LAYER == "layer"


def test_one_id_two_different_builds(tmp_path: Path) -> None:
    first = write_variant(tmp_path / "a" / "torch-cpu")
    second = write_variant(tmp_path / "b" / "torch-cpu", files={**FILES, "_ops.py": "ops = 'other'\n"})
    module = load_variant(first)
    with pytest.raises(ImportError) as caught:
        load_variant(second)
    assert str(caught.value) == (
        f"cannot import {second} as module {ID!r}: {first} is already loaded under that id and is not the "
        "same build (their digests differ). Two builds cannot share one op namespace; restart the process "
        "to switch builds."
    )
    assert sys.modules[ID] is module
    assert len(get_loaded_kernels()) == 1


def test_one_id_without_digests_is_not_the_same_build(tmp_path: Path) -> None:
    first = write_variant(tmp_path / "a" / "torch-cpu", digest=False)
    second = write_variant(tmp_path / "b" / "torch-cpu", digest=False)
    load_variant(first)
    with pytest.raises(ImportError, match="is not the same build"):
        load_variant(second)


def test_one_id_equal_digests_reuses_the_module(tmp_path: Path) -> None:
    first = write_variant(tmp_path / "a" / "torch-cpu")
    second = write_variant(tmp_path / "b" / "torch-cpu")
    module = load_variant(first)
    assert load_variant(second) is module
    assert load_variant(second) is module  # recorded as an alias
    assert [kernel.module for kernel in get_loaded_kernels()] == [module]


def test_id_taken_by_an_unrelated_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, ID, sys.modules["os"])
    variant = write_variant(tmp_path / "torch-cpu")
    with pytest.raises(ImportError) as caught:
        load_variant(variant)
    assert str(caught.value).startswith(
        f"cannot import {variant} as module {ID!r}: {os.__file__} is already loaded under that id"
    )


def test_dirty_provenance_warns(tmp_path: Path) -> None:
    provenance = {"kernel": {"commit": "a" * 40, "dirty": True}, "kernel-builder": {"version": "0.1.0"}}
    variant = write_variant(tmp_path / "torch-cpu", extra={"provenance": provenance})
    with pytest.warns(UserWarning) as caught:
        load_variant(variant)
    assert [str(w.message) for w in caught] == [
        (
            f"kernel relu at {variant} was built from uncommitted changes (provenance.kernel.dirty); "
            f"its id does not identify its sources"
        )
    ]
    load_variant(variant)  # already loaded: no second warning (pytest turns warnings into errors)


def test_concurrent_loads_import_once(tmp_path: Path) -> None:
    counter = tmp_path / "imports.txt"
    init = f"import time\ntime.sleep(0.05)\nwith open({str(counter)!r}, 'a') as f:\n    f.write('x')\n"
    variant = write_variant(tmp_path / "torch-cpu", files={"__init__.py": init})
    results: list[object] = []
    threads = [threading.Thread(target=lambda: results.append(load_variant(variant))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counter.read_text() == "x"
    assert len(results) == 8 and all(module is results[0] for module in results)


def test_import_kernel_builder_stays_cheap_and_exports_lazily() -> None:
    code = (
        "import sys, kernel_builder\n"
        "heavy = {'kernel_builder.loader', 'torch', 'huggingface_hub'}\n"
        "assert not heavy & set(sys.modules), sorted(sys.modules)\n"
        "from kernel_builder import get_local_kernel\n"
        "import kernel_builder.loader.local as local\n"
        "assert get_local_kernel is local.get_local_kernel\n"
        "assert 'torch' not in sys.modules and 'huggingface_hub' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    assert kernel_builder.NoCompatibleVariantError.__mro__[1] is FileNotFoundError
    assert kernel_builder.KernelIntegrityError.__mro__[1] is ValueError
    assert kernel_builder.UntrustedKernelError.__mro__[1] is ValueError
    assert kernel_builder.KernelNotLockedError.__mro__[1] is ValueError
    assert {"get_local_kernel", "LoadedKernel", "VariantRejected", "Metadata"} <= set(dir(kernel_builder))
    assert kernel_builder.__version__ == "0.1.0"
    with pytest.raises(AttributeError, match="has no attribute 'get_kernal'"):
        _ = kernel_builder.get_kernal


def test_module_imported_by_another_loader_is_reused_when_the_build_is_the_same(tmp_path: Path) -> None:
    """The `kernels` package may have imported the variant first, under the same id (spec step 4)."""
    import importlib.util

    variant = write_variant(tmp_path / "torch-cpu")
    spec = importlib.util.spec_from_file_location(
        ID, variant / "__init__.py", submodule_search_locations=[str(variant)]
    )
    assert spec is not None and spec.loader is not None
    foreign = importlib.util.module_from_spec(spec)
    sys.modules[ID] = foreign
    spec.loader.exec_module(foreign)

    assert load_variant(variant) is foreign
    assert [k.module for k in get_loaded_kernels()] == [foreign]

    other = write_variant(tmp_path / "other" / "torch-cpu", files={**FILES, "extra.py": "X = 1\n"})
    with pytest.raises(ImportError, match="is not the same build"):
        load_variant(other)
