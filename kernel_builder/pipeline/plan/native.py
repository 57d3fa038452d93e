"""``--arch native``: the compute capabilities of the visible GPUs, probed once per GPU set and driver.

Asking Torch takes seconds (it imports Torch and initialises CUDA), which would dwarf a no-op rebuild. The
answer only changes when the GPUs, the driver or the devices visible to the process change, and the NVIDIA
driver describes all of them in files: ``/proc/driver/nvidia/version`` and one ``information`` file per GPU
(model, UUID, bus location), plus the ``/dev/nvidia<N>`` nodes and ``CUDA_VISIBLE_DEVICES``. Their contents key a
small cache in the user cache directory. Where the driver's files are not visible, ``nvidia-smi``'s GPU list stands
in for them; without either (no NVIDIA driver) nothing is cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from kernel_builder.common import processes
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment.env_facts import cache_root
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter

DRIVER_DIR = Path("/proc/driver/nvidia")
DEVICE_DIR = Path("/dev")
#: Entries kept in the cache (a shared home directory may see many machines).
_KEEP = 32
_DEVICE = re.compile(r"nvidia\d+")
#: Environment variables that change which GPUs a process sees, or in which order.
_VISIBILITY = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "NVIDIA_VISIBLE_DEVICES")

_PROBE = (
    "import torch\n"
    "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
    "print(' '.join('%d.%d' % torch.cuda.get_device_capability(i) for i in range(n)))\n"
)


def gpu_key(
    driver_dir: Path = DRIVER_DIR,
    device_dir: Path = DEVICE_DIR,
    smi: Callable[[], bytes | None] | None = None,
) -> str | None:
    """A digest of what decides the visible GPUs' capabilities; ``None`` without an NVIDIA driver.

    Without the driver's files (a container that does not mount them), ``nvidia-smi``'s list of GPUs and driver
    version stands in for them (a fraction of a second, still far less than importing Torch).
    """
    try:
        version = (driver_dir / "version").read_bytes()
    except OSError:
        listed = (smi or _nvidia_smi)()
        if not listed:
            return None
        version = b"nvidia-smi\0" + listed
    digest = hashlib.sha256(b"driver\0" + version)
    gpus = driver_dir / "gpus"
    for info in sorted(gpus.glob("*/information")) if gpus.is_dir() else []:
        try:
            digest.update(b"gpu\0" + info.parent.name.encode() + b"\0" + info.read_bytes())
        except OSError:
            return None
    try:
        devices = sorted(e.name for e in os.scandir(device_dir) if _DEVICE.fullmatch(e.name))
    except OSError:
        devices = []
    digest.update(b"devices\0" + "\0".join(devices).encode())
    for name in _VISIBILITY:
        digest.update(f"\0{name}={os.environ.get(name, '<unset>')}".encode())
    return digest.hexdigest()


def _nvidia_smi() -> bytes | None:
    """Driver version, UUID and bus id of every GPU, as ``nvidia-smi`` lists them; ``None`` without it."""
    tool = shutil.which("nvidia-smi")
    if tool is None:
        return None
    query = "--query-gpu=driver_version,uuid,pci.bus_id,name"
    try:
        result = subprocess.run(
            [tool, query, "--format=csv,noheader"], capture_output=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 and result.stdout.strip() else None


def cache_file() -> Path:
    return cache_root() / "native-archs.json"


def _read_cache(path: Path) -> dict[str, list[str]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, list) and all(isinstance(c, str) for c in v)}


def _write_cache(path: Path, data: dict[str, list[str]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except OSError:  # a read-only cache only costs the next build another probe
        pass


def probe_with_torch(interpreter: BuildInterpreter) -> tuple[str, ...]:
    """Ask the build interpreter's Torch (a subprocess: seconds)."""
    result = processes.run([interpreter.python, "-c", _PROBE], capture=True)
    caps = result.stdout.strip().split() if result.returncode == 0 else []
    return tuple(sorted(set(caps), key=lambda c: tuple(int(p) for p in c.split("."))))


def native_targets(
    interpreter: BuildInterpreter,
    *,
    probe: Callable[[BuildInterpreter], tuple[str, ...]] = probe_with_torch,
    key: Callable[[], str | None] = gpu_key,
    cache: Path | None = None,
) -> tuple[str, ...]:
    """Compute capabilities of the visible GPUs (``--arch native``), from the cache when the GPUs, driver and
    visible devices are those of an earlier probe; no GPU is an error."""
    cache = cache or cache_file()
    this = key()
    known = _read_cache(cache) if this is not None else {}
    if this is not None and known.get(this):
        return tuple(known[this])
    caps = probe(interpreter)
    if not caps:
        raise BuildError("--arch native needs a visible CUDA GPU, and none was found")
    if this is not None:
        known.pop(this, None)
        kept = dict(list(known.items())[-(_KEEP - 1) :])  # the most recent machines' entries
        _write_cache(cache, {**kept, this: list(caps)})
    return caps
