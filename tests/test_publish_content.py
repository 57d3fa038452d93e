"""What an upload would read, decided before any request (kernel_builder.publish.content.collect_content).

The walk of each variant is :func:`kernel_builder.common.safe_fs.scan_tree`'s, with links followed only into
the variants directory: these tests plant what a walk must not follow or read and check the refusal names it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from publish_fixtures import CPU, write_kernel

from kernel_builder.errors import HubError
from kernel_builder.publish.content import collect_content


def _refusal(kernel: Path) -> str:
    with pytest.raises(HubError) as caught:
        collect_content(kernel)
    return str(caught.value)


def test_a_clean_variant_lists_its_files_sorted(tmp_path: Path) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    content = collect_content(kernel)
    paths = [file.path for file in content.files]
    assert paths == sorted(paths) and f"build/{CPU}/metadata.json" in paths


def test_a_directory_link_back_up_is_a_loop_not_walked(tmp_path: Path) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    variant = kernel / "build" / CPU
    (variant / "layers" / "up").symlink_to(variant, target_is_directory=True)
    assert f"{CPU}/layers/up: symbolic link loop (back to {os.path.realpath(variant)})" in _refusal(kernel)


def test_a_dangling_link_is_named(tmp_path: Path) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    link = kernel / "build" / CPU / "gone.py"
    link.symlink_to(tmp_path / "nowhere.py")
    assert f"{CPU}/gone.py: symbolic link {link} -> {tmp_path / 'nowhere.py'} is dangling" in _refusal(kernel)


def test_a_directory_link_out_of_the_tree_is_not_entered(tmp_path: Path) -> None:
    outside = tmp_path / "home"
    outside.mkdir()
    (outside / "secret").write_text("hf_secret")
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    (kernel / "build" / CPU / "home").symlink_to(outside, target_is_directory=True)
    refusal = _refusal(kernel)
    assert f"{CPU}/home: symbolic link {kernel / 'build' / CPU / 'home'} points to {outside}" in refusal
    assert "secret" not in refusal


def test_a_fifo_is_refused_unopened(tmp_path: Path) -> None:
    kernel = write_kernel(tmp_path / "relu", {CPU: {}})
    os.mkfifo(kernel / "build" / CPU / "pipe")
    assert f"{CPU}/pipe: not a regular file or directory (a FIFO)" in _refusal(kernel)
