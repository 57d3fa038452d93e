"""The emulated aarch64 CPython (docs/cross.md): Debian's arm64 python3.11 fetched with apt-get download, unpacked
with dpkg -x into the user cache and run under qemu-user; what is missing is named, never worked around."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kernel_builder.pipeline.environment import emulation
from kernel_builder.pipeline.environment.emulation import EmulatedPython, EmulationUnavailable


def test_without_qemu_the_package_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EmulationUnavailable) as info:
        emulation.qemu("aarch64-linux")
    assert str(info.value) == (
        "running aarch64-linux code here needs qemu-aarch64-static on PATH (Debian/Ubuntu: apt-get install "
        "qemu-user-static)"
    )


def test_only_aarch64_has_an_emulated_python() -> None:
    with pytest.raises(EmulationUnavailable, match="no emulated Python for riscv64-linux"):
        emulation.ensure_python("riscv64-linux")


def test_the_environment_imports_only_its_own_packages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", "/host/site-packages")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/host/lib")
    python = EmulatedPython(
        "aarch64-linux", tmp_path / "root", tmp_path / "site", Path("/usr/bin/qemu-aarch64-static")
    )
    env = python.environment([tmp_path / "checkout"], {"LOCAL_KERNELS": "a/b=/x"})
    assert env["PYTHONPATH"] == os.pathsep.join([str(tmp_path / "checkout"), str(tmp_path / "site")])
    assert "LD_LIBRARY_PATH" not in env and env["LOCAL_KERNELS"] == "a/b=/x"
    assert python.argv("-c", "pass") == [
        "/usr/bin/qemu-aarch64-static", "-L", str(tmp_path / "root"), str(tmp_path / "root/usr/bin/python3.11"),
        "-c", "pass",
    ]  # fmt: skip


def _arm64_apt() -> bool:
    if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
        return False
    foreign = subprocess.run(
        ["dpkg", "--print-foreign-architectures"], capture_output=True, text=True, check=False
    )
    return "arm64" in foreign.stdout.split()


@pytest.mark.slow
def test_debians_arm64_python_runs_under_qemu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Made once in the user cache (``KB_TEST_KERNEL_BUILDER_CACHE`` if set), reused by later sessions."""
    if shutil.which("qemu-aarch64-static") is None or not _arm64_apt():
        pytest.skip("needs qemu-aarch64-static and arm64 as a dpkg foreign architecture (make cross-tools)")
    if os.environ.get("KB_TEST_KERNEL_BUILDER_CACHE"):
        monkeypatch.setenv("KERNEL_BUILDER_CACHE", os.environ["KB_TEST_KERNEL_BUILDER_CACHE"])
    root = emulation.ensure_python("aarch64-linux")
    assert (root / emulation.MARKER).is_file()
    site = root.parent / "site-test"
    site.mkdir(exist_ok=True)
    python = EmulatedPython("aarch64-linux", root, site, emulation.qemu("aarch64-linux"))
    run = python.run(
        "-c", "import platform, ctypes, json; print(json.dumps(platform.machine()))", timeout=120
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == '"aarch64"'
    assert emulation.ensure_python("aarch64-linux") == root  # reused, not fetched again


@pytest.mark.slow
def test_the_emulated_program_sees_an_arm_cpu_not_the_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    """qemu-user would show the host's x86 /proc/cpuinfo and CPU sysfs, on which Torch's CPU detection crashes."""
    if shutil.which("qemu-aarch64-static") is None or not _arm64_apt():
        pytest.skip("needs qemu-aarch64-static and arm64 as a dpkg foreign architecture (make cross-tools)")
    if os.environ.get("KB_TEST_KERNEL_BUILDER_CACHE"):
        monkeypatch.setenv("KERNEL_BUILDER_CACHE", os.environ["KB_TEST_KERNEL_BUILDER_CACHE"])
    root = emulation.ensure_python("aarch64-linux")
    site = root.parent / "site-test"
    site.mkdir(exist_ok=True)
    python = EmulatedPython("aarch64-linux", root, site, emulation.qemu("aarch64-linux"))
    read = (
        "print(open('/proc/cpuinfo').read().count('CPU part\\t: 0xd0c'), "
        "open('/sys/devices/system/cpu/possible').read().strip())"
    )
    run = python.run("-c", read, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1", "0"]


def test_a_package_installed_without_its_dependencies_gets_no_deps(tmp_path: Path) -> None:
    argv = emulation._pip_install_argv("aarch64-linux", tmp_path, ["torch==2.13.0"], deps=False)
    assert argv[-2:] == ["torch==2.13.0", "--no-deps"]
    assert "manylinux2014_aarch64" in argv and "manylinux_2_17_aarch64" in argv
    assert argv[argv.index("--python-version") + 1] == "3.11"
    with_deps = emulation._pip_install_argv("aarch64-linux", tmp_path, ["jinja2"], deps=True)
    assert "--no-deps" not in with_deps and with_deps[with_deps.index("--target") + 1] == str(tmp_path)
