"""The platform tags pip is given for a target system (docs/cross.md): pip matches ``--platform`` tags exactly, so
every manylinux tag a glibc 2.28 aarch64 system installs is passed, or NVIDIA's CUDA library wheels — tagged
``manylinux2014_aarch64.manylinux_2_17_aarch64`` or ``manylinux_2_27_aarch64`` — are refused."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

import pytest

from kernel_builder.pipeline.environment.target_env import pip_download_argv, platform_tags


def test_every_manylinux_tag_from_2_28_down_to_2014() -> None:
    tags = platform_tags("aarch64-linux")
    assert tags[0] == "manylinux_2_28_aarch64"
    assert "manylinux_2_27_aarch64" in tags and "manylinux_2_17_aarch64" in tags
    assert tags[-1] == "manylinux2014_aarch64"
    assert len(tags) == 13 and len(set(tags)) == 13
    assert all(tag.endswith("_aarch64") for tag in tags)


def _wheel(links: Path, name: str, tag: str) -> None:
    """A minimal pure-data wheel of ``name`` 1.0 tagged ``py3-none-<tag>``, as NVIDIA's library wheels are."""
    dist = f"{name.replace('-', '_')}-1.0"
    with zipfile.ZipFile(links / f"{dist}-py3-none-{tag}.whl", "w") as archive:
        archive.writestr(f"{dist}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        archive.writestr(
            f"{dist}.dist-info/WHEEL", f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-{tag}\n"
        )
        archive.writestr(f"{dist}.dist-info/RECORD", "")


@pytest.mark.parametrize(
    "tag",
    ["manylinux2014_aarch64.manylinux_2_17_aarch64", "manylinux_2_27_aarch64", "manylinux_2_28_aarch64"],
)
def test_pip_download_finds_wheels_of_older_manylinux_tags(tmp_path: Path, tag: str) -> None:
    links = tmp_path / "links"
    links.mkdir()
    _wheel(links, "nvidia-cuda-runtime", tag)
    argv = pip_download_argv("aarch64-linux", "nvidia-cuda-runtime==1.0", tmp_path / "dest")
    result = subprocess.run(
        [*argv, "--no-index", "--find-links", str(links)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert [p.name for p in (tmp_path / "dest").iterdir()] == [f"nvidia_cuda_runtime-1.0-py3-none-{tag}.whl"]


def test_a_glibc_2_29_wheel_is_not_taken_for_a_2_28_system(tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    _wheel(links, "nvidia-cuda-runtime", "manylinux_2_29_aarch64")
    argv = pip_download_argv("aarch64-linux", "nvidia-cuda-runtime==1.0", tmp_path / "dest")
    result = subprocess.run(
        [*argv, "--no-index", "--find-links", str(links)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "No matching distribution" in result.stderr
