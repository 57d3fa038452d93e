"""``kernels-minver`` as builds write it: the oldest ``kernels`` loader with every feature a variant relies on
(0.14.0 for the current layout, 0.17.0 once it has kernel dependencies), per backend, read the same by
upstream's ``kernels`` 0.19.1 and accepted by both loaders' minimum-version checks."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
from stage_fixtures import load, write_files

from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.metadata import (
    KERNELS_VERSION_BASELINE,
    KERNELS_VERSION_KERNEL_DEPENDS,
    read_metadata,
    required_kernels_version,
)
from kernel_builder.loader.minver import KERNELS_API_VERSION, check_kernels_minver
from kernel_builder.pipeline.package import variant_metadata
from kernel_builder.pipeline.plan.planner import noarch_plans

kernels_rust = pytest.importorskip(
    "kernels._rust", reason="upstream's loader (the test extra) reads the field"
)


#: The pinned kernels (0.19) keeps its validators under ``_internals``.
MinverValidator = importlib.import_module("kernels._internals.validate").MinverValidator

# Kernel dependencies on CUDA only: the cuda variant needs the newer loader, the cpu one does not.
TOML = """\
[general]
name = "deps"
version = 1
edition = 5
license = "Apache-2.0"
backends = ["cpu", "cuda"]

[general.cuda]
kernel-depends = [{ repo-id = "org/activation", version = 1 }]

[torch-noarch]
"""


def test_the_versions_are_upstreams() -> None:
    assert KERNELS_VERSION_BASELINE == (0, 14, 0)
    assert KERNELS_VERSION_KERNEL_DEPENDS == (0, 17, 0)
    assert required_kernels_version(()) == (0, 14, 0)
    dependency = KernelDependency("org/activation", version=1)
    assert required_kernels_version((dependency,)) == (0, 17, 0)
    # Both are within what this loader implements: every build of this tool loads here.
    assert KERNELS_VERSION_KERNEL_DEPENDS <= KERNELS_API_VERSION


@pytest.fixture
def written(tmp_path: Path) -> dict[str, Path]:
    """Each backend's metadata.json, as the build writes it."""
    root = write_files(tmp_path / "deps", {"build.toml": TOML, "torch-ext/deps/__init__.py": ""})
    project = load(root)
    out = {}
    for plan in noarch_plans(project, "0123456789"):
        path = tmp_path / plan.name / "metadata.json"
        path.parent.mkdir()
        path.write_text(variant_metadata(project, plan, {}, None).to_json(), encoding="utf-8")
        out[plan.backend] = path
    return out


def test_per_backend_and_read_alike_by_upstream(written: dict[str, Path]) -> None:
    assert {b: json.loads(p.read_text())["kernels-minver"] for b, p in written.items()} == {
        "cpu": "0.14.0",
        "cuda": "0.17.0",
    }
    for backend, path in written.items():
        upstream = kernels_rust.Metadata.read_from_file(path)
        ours = read_metadata(path.parent)
        assert str(upstream.kernels_minver) == ".".join(map(str, ours.kernels_minver or ())), backend


def test_both_loaders_accept_what_this_tool_writes(written: dict[str, Path]) -> None:
    for path in written.values():
        MinverValidator().validate_metadata(
            metadata=kernels_rust.Metadata.read_from_file(path), variant=path.parent.name
        )
        check_kernels_minver(read_metadata(path.parent), path.parent.name, str(path))


def test_both_loaders_refuse_a_build_that_needs_a_newer_loader(written: dict[str, Path]) -> None:
    """The field is enforced, not decorative: one release past the loaders' level is refused by each."""
    from kernel_builder.loader import LoaderTooOldError

    path = written["cuda"]
    data = json.loads(path.read_text())
    major, minor, patch = KERNELS_API_VERSION
    level, newer = f"{major}.{minor}.{patch}", f"{major}.{minor}.{patch + 1}"
    data["kernels-minver"] = newer
    path.write_text(json.dumps(data))
    with pytest.raises(RuntimeError, match=rf"requires kernels>={newer}, but version {level} is installed"):
        MinverValidator().validate_metadata(
            metadata=kernels_rust.Metadata.read_from_file(path), variant="torch-cuda"
        )
    with pytest.raises(LoaderTooOldError, match=rf"requires kernels>={newer}"):
        check_kernels_minver(read_metadata(path.parent), "torch-cuda", str(path))
