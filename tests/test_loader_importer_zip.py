"""``build-layout: "zip"`` (kernels 0.19): the variant's package is ``<id>.zip`` in its directory, imported through
``zipimport`` with its files as the package's resources (docs/layout.md, docs/loading.md). Both loaders load the
same build alike: tests/test_upstream_loader_compat.py."""

from __future__ import annotations

import importlib.resources
import sys
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from loader_fixtures import make_env, reset_loader, write_variant

from kernel_builder.formats import runtime
from kernel_builder.loader import KernelIntegrityError, get_local_kernel
from kernel_builder.loader.importer import load_variant

ID = "_relu_zip_0123456789"
PACKAGE = {
    "__init__.py": "from . import layers\nfrom ._ops import ops\nNAME = __name__\n",
    "_ops.py": "ops = 'ops of ' + __name__\n",
    "layers/__init__.py": "from .._ops import ops\nLAYER = 'layer'\n",
    "data/table.json": '{"answer": 42}',
}


@pytest.fixture(autouse=True)
def _fresh_loader(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(runtime, "detect_environment", lambda: make_env(backend="cpu", backend_version=None))
    reset_loader()
    yield
    reset_loader()


def zip_variant(directory: Path, files: Mapping[str, str] = PACKAGE, kernel_id: str = ID) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(directory / f"{kernel_id}.zip", "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return write_variant(directory, kernel_id=kernel_id, files={}, extra={"build-layout": "zip"})


def test_the_package_its_submodules_and_resources_come_from_the_archive(tmp_path: Path) -> None:
    variant = zip_variant(tmp_path / "build" / "torch-cpu")
    module = get_local_kernel(tmp_path)
    archive = variant / f"{ID}.zip"
    assert module.__name__ == ID and module.NAME == ID
    assert module.__file__ == f"{archive}/__init__.py"
    assert module.ops == f"ops of {ID}._ops"
    assert module.layers.__name__ == f"{ID}.layers" and module.layers.ops is module.ops
    assert module.__path__ == [str(variant), str(archive)]
    table = importlib.resources.files(module).joinpath("data/table.json").read_text()
    assert table == '{"answer": 42}'
    assert sys.modules[ID] is module


def test_a_file_beside_the_archive_is_a_submodule_too(tmp_path: Path) -> None:
    """As upstream: the variant directory comes first on the package's path (a compiled extension ships beside
    the archive), then the archive."""
    variant = tmp_path / "torch-cpu"
    variant.mkdir()
    (variant / "beside.py").write_text("WHERE = 'beside'\n")
    zip_variant(variant, {**PACKAGE, "__init__.py": "from .beside import WHERE\n"})
    assert load_variant(variant).WHERE == "beside"


def test_the_archive_is_covered_by_the_digest(tmp_path: Path) -> None:
    variant = zip_variant(tmp_path / "torch-cpu")
    with zipfile.ZipFile(variant / f"{ID}.zip", "a") as archive:
        archive.writestr("evil.py", "raise SystemExit('ran')\n")
    with pytest.raises(KernelIntegrityError, match=rf"{ID}\.zip: mismatch"):
        get_local_kernel(variant)


def test_a_missing_or_damaged_archive_is_refused(tmp_path: Path) -> None:
    missing = write_variant(tmp_path / "missing", kernel_id=ID, files={}, extra={"build-layout": "zip"})
    with pytest.raises(
        FileNotFoundError, match=rf"no package archive {ID}\.zip for a build-layout \"zip\" build"
    ):
        load_variant(missing)
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / f"{ID}.zip").write_bytes(b"not a zip")
    write_variant(damaged, kernel_id=ID, files={}, extra={"build-layout": "zip"})
    with pytest.raises(ImportError, match="not a zip archive Python can import from"):
        load_variant(damaged)
    assert ID not in sys.modules


def test_a_zip_build_needs_an_id(tmp_path: Path) -> None:
    variant = zip_variant(tmp_path / "torch-cpu")
    no_id = write_variant(tmp_path / "no-id", kernel_id=None, files={}, extra={"build-layout": "zip"})
    assert variant.is_dir()
    with pytest.raises(ValueError, match="a build-layout \"zip\" build needs an 'id'"):
        load_variant(no_id)
