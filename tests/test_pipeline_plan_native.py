"""``--arch native``: the GPU probe is cached per GPU set, driver and visible devices (``kernel_builder.pipeline.plan.native``).

The driver's files are laid out in a temporary directory as the NVIDIA driver writes them under
``/proc/driver/nvidia``; the probe that would import Torch is a counting stand-in.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from stage_fixtures import fake_interpreter

from kernel_builder.errors import BuildError
from kernel_builder.pipeline.plan.native import gpu_key, native_targets

VERSION = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Wed Feb 26 00:00:00 UTC 2025\n"
H100 = (
    "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ: \t\t 42\nGPU UUID: \t GPU-11111111-2222-3333-4444-555555555555\n"
)
A100 = (
    "Model: \t\t NVIDIA A100-SXM4-80GB\nIRQ: \t\t 43\nGPU UUID: \t GPU-66666666-7777-8888-9999-000000000000\n"
)


def driver(root: Path, version: str = VERSION, gpus: dict[str, str] | None = None) -> Path:
    (root / "driver").mkdir(parents=True, exist_ok=True)
    (root / "driver" / "version").write_text(version)
    for bus, info in (gpus if gpus is not None else {"0000:18:00.0": H100}).items():
        (root / "driver" / "gpus" / bus).mkdir(parents=True, exist_ok=True)
        (root / "driver" / "gpus" / bus / "information").write_text(info)
    (root / "dev").mkdir(exist_ok=True)
    (root / "dev" / "nvidia0").touch()
    (root / "dev" / "nvidiactl").touch()
    return root


class Probe:
    def __init__(self, answer: tuple[str, ...] = ("9.0",)) -> None:
        self.answer = answer
        self.calls = 0

    def __call__(self, interpreter: object) -> tuple[str, ...]:
        self.calls += 1
        return self.answer


def targets(root: Path, probe: Probe, smi: bytes | None = None) -> tuple[str, ...]:
    return native_targets(
        fake_interpreter(),
        probe=probe,
        key=lambda: gpu_key(root / "driver", root / "dev", smi=lambda: smi),
        cache=root / "cache" / "native-archs.json",
    )


def test_second_probe_comes_from_the_cache(tmp_path: Path) -> None:
    root, probe = driver(tmp_path), Probe()
    assert targets(root, probe) == ("9.0",)
    assert targets(root, probe) == ("9.0",)
    assert probe.calls == 1


@pytest.mark.parametrize(
    "change",
    ["driver update", "another GPU", "GPU added", "device node added", "CUDA_VISIBLE_DEVICES"],
)
def test_a_changed_machine_probes_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    root, probe = driver(tmp_path), Probe()
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    targets(root, probe)
    if change == "driver update":
        driver(root, VERSION.replace("570.124.06", "575.51.03"))
    elif change == "another GPU":
        driver(root, gpus={"0000:18:00.0": A100})
    elif change == "GPU added":
        driver(root, gpus={"0000:2a:00.0": A100})
    elif change == "device node added":
        (root / "dev" / "nvidia1").touch()
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    probe.answer = ("8.0", "9.0")
    assert targets(root, probe) == ("8.0", "9.0")
    assert probe.calls == 2


def test_without_a_driver_nothing_is_cached(tmp_path: Path) -> None:
    probe = Probe()
    assert targets(tmp_path, probe) == ("9.0",)
    assert targets(tmp_path, probe) == ("9.0",)
    assert probe.calls == 2
    assert not (tmp_path / "cache").exists()


def test_no_gpu_is_an_error_and_is_not_cached(tmp_path: Path) -> None:
    root, probe = driver(tmp_path), Probe(())
    for _ in range(2):
        with pytest.raises(BuildError, match="--arch native needs a visible CUDA GPU, and none was found"):
            targets(root, probe)
    assert probe.calls == 2


def test_unreadable_cache_is_probed_again(tmp_path: Path) -> None:
    root, probe = driver(tmp_path), Probe()
    (root / "cache").mkdir()
    (root / "cache" / "native-archs.json").write_text("{not json")
    assert targets(root, probe) == ("9.0",)
    assert targets(root, probe) == ("9.0",)
    assert probe.calls == 1


def test_nvidia_smi_stands_in_for_the_driver_files(tmp_path: Path) -> None:
    """A container without /proc/driver/nvidia: nvidia-smi's GPU list keys the cache instead."""
    probe = Probe()
    listed = (
        b"570.124.06, GPU-11111111-2222-3333-4444-555555555555, 00000000:18:00.0, NVIDIA H100 80GB HBM3\n"
    )
    assert targets(tmp_path, probe, smi=listed) == ("9.0",)
    assert targets(tmp_path, probe, smi=listed) == ("9.0",)
    assert probe.calls == 1
    probe.answer = ("8.0",)
    assert targets(tmp_path, probe, smi=listed.replace(b"H100 80GB HBM3", b"A100-SXM4-80GB")) == ("8.0",)
    assert probe.calls == 2
