"""``kernels-minver``: parsed from metadata.json, compared with the ``kernels`` API level the loader implements,
and a build that needs a newer loader refused before it is imported (docs/loading.md). The same scenarios run
through upstream's ``kernels`` in test_upstream_loader_compat.py."""

from __future__ import annotations

import importlib.metadata
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from loader_fixtures import reset_loader, write_variant

from kernel_builder.errors import KernelBuilderError
from kernel_builder.formats.metadata import read_metadata
from kernel_builder.loader import LoaderTooOldError, get_loaded_kernels, get_local_kernel
from kernel_builder.loader.minver import KERNELS_API_VERSION, KERNELS_REQUIREMENT, check_kernels_minver


@pytest.fixture(autouse=True)
def fresh_loader(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("KERNEL_BUILDER_VERIFY_DIGEST", "KERNEL_BUILDER_CHECK_GPU_ARCH", "LOCAL_KERNELS"):
        monkeypatch.delenv(name, raising=False)
    reset_loader()
    yield
    reset_loader()


def variant(tmp_path: Path, minver: object, tag: str = "x") -> Path:
    extra = {} if minver is None else {"kernels-minver": minver}
    return write_variant(tmp_path / tag / "build" / "torch-cpu", kernel_id=f"_relu_{tag}", extra=extra)


def test_the_api_level_is_the_kernels_release_the_differential_tests_run() -> None:
    """The loader implements kernels 0.19.1's API; the pinned test dependency is that release, and
    ``kernel-builder test`` installs it (one constant)."""
    installed = importlib.metadata.version("kernels")
    assert tuple(int(part) for part in installed.split(".")[:3]) == KERNELS_API_VERSION == (0, 19, 1)
    assert KERNELS_REQUIREMENT == "kernels==0.19.1"
    assert f'"{KERNELS_REQUIREMENT}"' in (Path(__file__).parents[1] / "pyproject.toml").read_text()


def test_a_build_that_asks_for_kernels_0_19_1_loads(tmp_path: Path) -> None:
    """Upstream's 0.19.1 loads it; so does this loader, which implements that level."""
    assert get_local_kernel(variant(tmp_path, "0.19.1", "new")).__name__ == "_relu_new"


@pytest.mark.parametrize(
    ("value", "parsed"),
    [(None, None), ("0.17.0", (0, 17, 0)), ("0.17.2", (0, 17, 2)), ("10.0.12", (10, 0, 12))],
)
def test_kernels_minver_is_parsed(
    tmp_path: Path, value: str | None, parsed: tuple[int, int, int] | None
) -> None:
    assert read_metadata(variant(tmp_path, value)).kernels_minver == parsed


@pytest.mark.parametrize(
    "value", ["0.17", "1", "0.17.2.1", "abc", "0.18.0rc1", "", "1.-2.3", "١.٢.٣", 18, [0, 18, 0]]
)
def test_kernels_minver_must_be_three_numbers(tmp_path: Path, value: object) -> None:
    """Upstream's parser refuses the same values (a version of exactly three numeric parts)."""
    directory = variant(tmp_path, "0.0.0")
    data = json.loads((directory / "metadata.json").read_text())
    data["kernels-minver"] = value
    (directory / "metadata.json").write_text(json.dumps(data))
    with pytest.raises(ValueError) as caught:
        read_metadata(directory)
    assert str(caught.value).startswith(
        f"{directory / 'metadata.json'}: invalid field 'kernels-minver': expected "
    )


def test_null_is_no_minimum(tmp_path: Path) -> None:
    directory = variant(tmp_path, "0.0.0")
    data = json.loads((directory / "metadata.json").read_text())
    data["kernels-minver"] = None
    (directory / "metadata.json").write_text(json.dumps(data))
    assert read_metadata(directory).kernels_minver is None


def test_older_or_equal_minimum_loads(tmp_path: Path) -> None:
    assert get_local_kernel(variant(tmp_path, "0.19.1", "equal")).__name__ == "_relu_equal"
    assert get_local_kernel(variant(tmp_path, "0.9.30", "older")).__name__ == "_relu_older"
    assert get_local_kernel(variant(tmp_path, None, "absent")).__name__ == "_relu_absent"


def test_newer_minimum_is_refused_before_import(tmp_path: Path) -> None:
    root = tmp_path / "newer"
    variant(tmp_path, "0.19.2", "newer")
    with pytest.raises(LoaderTooOldError) as caught:
        get_local_kernel(root)
    assert isinstance(caught.value, RuntimeError) and isinstance(caught.value, KernelBuilderError)
    assert str(caught.value) == (
        f"kernel relu, variant torch-cpu ({root / 'build' / 'torch-cpu'}) requires kernels>=0.19.2 (kernels-minver "
        "in its metadata.json), but this kernel-builder loader implements the kernels 0.19.1 API. Upgrade it "
        "(pip install --upgrade kernel-builder), or load an older version or revision of the kernel."
    )
    assert get_loaded_kernels() == []


def test_check_compares_numerically(tmp_path: Path) -> None:
    """0.19.10 is newer than 0.19.1 (not a string comparison), 0.100.0 newer than 0.19.1."""
    for value in ("0.19.10", "0.100.0", "1.0.0"):
        metadata = read_metadata(variant(tmp_path, value, f"v{value.replace('.', '_')}"))
        with pytest.raises(LoaderTooOldError, match=f"requires kernels>={value} "):
            check_kernels_minver(metadata, "torch-cpu", "here")
    check_kernels_minver(read_metadata(variant(tmp_path, "0.2.99", "old")), "torch-cpu", "here")
