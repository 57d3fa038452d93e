"""Another system's CPython under qemu-user, with that system's Torch: where a cross-built variant is loaded on
this host (docs/cross.md).

An aarch64-linux variant built on x86_64-linux cannot be imported by this host's interpreter. qemu-user
(Debian's ``qemu-user-static``) runs an aarch64 CPython instead: Debian 12's arm64 ``python3.11-minimal`` and the
libraries it needs, fetched with ``apt-get download`` (the host needs ``dpkg --add-architecture arm64`` and an
``apt-get update`` once) and unpacked with ``dpkg -x`` into ``<cache>/emulation/<system>/python/``. Packages for
it — the target's Torch and what ``import torch`` needs, and the loader's own dependencies — are installed with
``pip install --target --platform`` into ``<cache>/emulation/<system>/site-<key>/``. Both are made once and
reused, each complete before its marker is written.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.common.file_lock import exclusive
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment.env_facts import cache_root
from kernel_builder.pipeline.environment.target_env import PLATFORMS, platform_argv

#: The Python of the emulated root: Debian 12's (its arm64 packages carry CPython 3.11).
PYTHON_VERSION = (3, 11)
#: Debian's packages of an emulated CPython that imports Torch: the interpreter, its standard library, and the
#: C and C++ runtime Torch's libraries link.
DEBIAN_PACKAGES = (
    "python3.11-minimal", "libpython3.11-minimal", "libpython3.11-stdlib", "libc6", "libexpat1", "zlib1g",
    "libffi8", "libstdc++6", "libgcc-s1", "libgomp1",
)  # fmt: skip
QEMU = {"aarch64-linux": "qemu-aarch64-static"}
DEBIAN_ARCHITECTURES = {"aarch64-linux": "arm64"}
MARKER = "kernel-builder-emulation.json"
#: What the emulated root says this machine's CPU is: one Arm Neoverse N1, as Linux's ``/proc/cpuinfo`` and
#: sysfs describe it. qemu-user shows a program the host's own files there (an x86 CPU list), and PyTorch's CPU
#: detection (cpuinfo, oneDNN's xbyak_aarch64), run when ``torch._C`` loads, dereferences a null pointer on
#: them; ``qemu -L <root>`` opens ``<root>/<path>`` in place of ``/<path>`` where it exists, so these are read.
CPU_FILES = {
    "proc/cpuinfo": (
        "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp "
        "asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
        "CPU variant\t: 0x3\nCPU part\t: 0xd0c\nCPU revision\t: 1\n\n"
    ),
    "sys/devices/system/cpu/possible": "0\n",
    "sys/devices/system/cpu/present": "0\n",
    "sys/devices/system/cpu/online": "0\n",
    "sys/devices/system/cpu/kernel_max": "0\n",
    "sys/devices/system/cpu/cpu0/regs/identification/midr_el1": "0x00000000413fd0c1\n",
}


class EmulationUnavailable(BuildError):
    """This host cannot run the emulated Python (no qemu, no apt-get, a package it cannot fetch); says why."""


def emulation_dir(system: str) -> Path:
    return cache_root() / "emulation" / system


def qemu(system: str) -> Path:
    """qemu-user for ``system`` on ``PATH``; :class:`EmulationUnavailable` naming the package otherwise."""
    name = QEMU.get(system)
    found = shutil.which(name) if name else None
    if found is None:
        raise EmulationUnavailable(
            f"running {system} code here needs {name or 'qemu-user'} on PATH (Debian/Ubuntu: apt-get install "
            "qemu-user-static)"
        )
    return Path(found)


#: How long one fetch (apt-get download, pip install of the target's packages) may take, in seconds.
FETCH_TIMEOUT = 1800


def _run(argv: Sequence[str | os.PathLike[str]], what: str, cwd: Path | None = None) -> None:
    try:
        result = subprocess.run(
            argv, capture_output=True, text=True, check=False, cwd=cwd, timeout=FETCH_TIMEOUT
        )
    except OSError as error:
        raise EmulationUnavailable(f"{what}: cannot run {argv[0]}: {error.strerror}") from None
    except subprocess.TimeoutExpired:
        raise EmulationUnavailable(f"{what} took more than {FETCH_TIMEOUT} s; stopped") from None
    if result.returncode != 0:
        errors = [line for line in result.stderr.splitlines() if line.startswith(("E:", "ERROR"))]
        detail = errors[-1] if errors else result.stderr.strip()[-400:]
        raise EmulationUnavailable(f"{what} failed: {detail}")


def ensure_python(system: str, log: Callable[[str], None] = lambda _: None) -> Path:
    """The root directory of ``system``'s CPython (``usr/bin/python3.11`` inside), fetched and unpacked once."""
    architecture = DEBIAN_ARCHITECTURES.get(system)
    if architecture is None:
        raise EmulationUnavailable(f"no emulated Python for {system}")
    root = emulation_dir(system) / "python"
    with exclusive(root.parent / ".python.lock"):
        if (root / MARKER).is_file():
            _describe_cpu(root)  # a root made before these files were written
            return root
        if shutil.which("apt-get") is None or shutil.which("dpkg") is None:
            raise EmulationUnavailable(
                "fetching the emulated Python needs apt-get and dpkg (Debian or Ubuntu)"
            )
        tmp = root.with_name(f".python.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)
        (tmp / "debs").mkdir(parents=True)
        log(f"fetching Debian's {architecture} CPython {PYTHON_VERSION[0]}.{PYTHON_VERSION[1]} into {root}")
        try:
            _run(
                ["apt-get", "download", *(f"{p}:{architecture}" for p in DEBIAN_PACKAGES)],
                f"apt-get download of the {architecture} Python (the host needs `dpkg --add-architecture "
                f"{architecture} && apt-get update` once)",
                cwd=tmp / "debs",
            )
            for deb in sorted((tmp / "debs").glob("*.deb")):
                _run(["dpkg", "-x", deb, tmp / "root"], f"dpkg -x {deb.name}")
            _describe_cpu(tmp / "root")
            os.rename(tmp / "root", root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        (root / MARKER).write_text(" ".join(DEBIAN_PACKAGES) + "\n", encoding="utf-8")
        return root


def _pip_install_argv(system: str, target: Path, requirements: Sequence[str], *, deps: bool) -> list[str]:
    argv = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--target", str(target),
        "--only-binary=:all:", *platform_argv(system), "--implementation", "cp",
        "--python-version", f"{PYTHON_VERSION[0]}.{PYTHON_VERSION[1]}", *requirements,
    ]  # fmt: skip
    return argv if deps else [*argv, "--no-deps"]


def _describe_cpu(root: Path) -> None:
    """Write :data:`CPU_FILES` under ``root`` where they are missing."""
    for relative, text in CPU_FILES.items():
        path = root / relative
        if not path.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")


def ensure_site(
    system: str,
    requirements: Sequence[str],
    log: Callable[[str], None] = lambda _: None,
    *,
    without_deps: Sequence[str] = (),
) -> Path:
    """A directory with ``requirements`` (and their dependencies) and ``without_deps`` (alone) installed for
    ``system``'s emulated Python.

    ``without_deps`` is for a package whose declared dependencies are more than loading it needs: the aarch64
    CUDA Torch declares every CUDA library wheel (several GB) and Triton, while ``import torch`` needs only those
    its libraries link; the caller names those in ``requirements``."""
    wanted = [*sorted(requirements), "--no-deps", *sorted(without_deps)]
    key = hashlib.sha256("\0".join(wanted).encode()).hexdigest()[:16]
    site = emulation_dir(system) / f"site-{key}"
    with exclusive(site.parent / f".site-{key}.lock"):
        if (site / MARKER).is_file():
            return site
        tmp = site.with_name(f".site-{key}.{os.getpid()}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(site, ignore_errors=True)
        log(f"installing {', '.join(requirements)} for {system} into {site}")
        try:
            for group, deps in ((without_deps, False), (requirements, True)):
                if group:
                    _run(
                        _pip_install_argv(system, tmp, group, deps=deps),
                        f"pip install of {', '.join(group)} for {PLATFORMS[system]}",
                    )
            os.rename(tmp, site)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        (site / MARKER).write_text("\n".join(wanted) + "\n", encoding="utf-8")
        return site


@dataclass(frozen=True)
class EmulatedPython:
    """``system``'s CPython under qemu-user, importing from ``paths`` (first) and ``site``."""

    system: str
    root: Path
    site: Path
    qemu: Path

    def argv(self, *args: str) -> list[str]:
        python = self.root / "usr" / "bin" / f"python{PYTHON_VERSION[0]}.{PYTHON_VERSION[1]}"
        return [str(self.qemu), "-L", str(self.root), str(python), *args]

    def environment(
        self, paths: Sequence[Path] = (), extra: Mapping[str, str] | None = None
    ) -> dict[str, str]:
        """This process's environment for the emulated Python: only its own packages and ``paths`` importable."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LD_"))}
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (*paths, self.site))
        env["PYTHONNOUSERSITE"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.update(extra or {})
        return env

    def run(
        self,
        *args: str,
        paths: Sequence[Path] = (),
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*args), env=self.environment(paths, env), capture_output=True, text=True,
            timeout=timeout, check=False,
        )  # fmt: skip


def emulated_python(
    system: str,
    requirements: Sequence[str],
    log: Callable[[str], None] = lambda _: None,
    *,
    without_deps: Sequence[str] = (),
) -> EmulatedPython:
    """``system``'s CPython with ``requirements`` (and ``without_deps``, alone) installed (fetched once, then
    reused from the cache)."""
    runner = qemu(system)
    root = ensure_python(system, log)
    site = ensure_site(system, requirements, log, without_deps=without_deps)
    return EmulatedPython(system, root, site, runner)
