"""GPU targets that do not exist: a ``cuda-capabilities`` entry that is no NVIDIA compute capability (``9.9``,
``11.8``, ``8.0a``) or a ``rocm-archs`` entry that is no AMD GPU target (``gfx9999``) is a warning at check time,
with its file and line and the nearest known value, and the build goes on without it: real kernels list such
values (the kernels-community megablocks lists ``11.8``), and Hugging Face's builder leaves out what it cannot
build. Only a list with nothing known left is an error. Real capabilities pass, whether or not a CUDA version
builds them."""

from __future__ import annotations

import pytest
from conftest import Diagnose, MakeProject
from test_config_load_errors import K  # [kernel.gelu] ends at line 14: a `cuda-capabilities` added is line 15

from kernel_builder.backends import gpu_archs
from kernel_builder.backends.gpu_archs import parse_capability, unknown_capability, unknown_rocm_arch
from kernel_builder.cli import main
from kernel_builder.config import load_project

KNOWN = (
    "known capabilities: 3.0, 3.2, 3.5, 3.7, 5.0, 5.2, 5.3, 6.0, 6.1, 6.2, 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.8, 8.9, "
    "9.0, 10.0, 10.1, 10.3, 11.0, 12.0, 12.1 (`a` from 9.0, `f` from 10.0, `+PTX` on any)"
)
BUILT_ROCM = "the archs this tool builds: gfx906, gfx908, gfx90a, gfx942, gfx950, gfx1030, gfx1100, gfx1101, gfx1200, gfx1201"


def _caps(*values: str) -> str:
    return K + "cuda-capabilities = [" + ", ".join(f'"{v}"' for v in values) + "]\n"


def test_an_unknown_capability_is_a_warning_and_left_out(
    make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    """``cuda-capabilities = ["8.0", "9.9"]``: check-config exits 0, names the file, line and nearest capability,
    and the kernel is built for 8.0 alone."""
    make_project(_caps("8.0", "9.9"))
    assert main(["check-config", "kernel"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "kernel/build.toml:15: warning: unknown CUDA capability `9.9` in [kernel.gelu] `cuda-capabilities`: no "
        "NVIDIA GPU has this compute capability; built without it\n"
        f"  hint: did you mean `9.0`? {KNOWN}\n"
    )
    assert "capabilities: 8.0\n" in captured.out
    assert load_project("kernel").project.config.kernels[0].cuda_capabilities == ("8.0",)


def test_a_list_with_nothing_known_is_an_error(diagnose: Diagnose) -> None:
    """Left empty, the list would mean the default capabilities, which the author did not ask for."""
    lines = diagnose(_caps("9.9", "11.8")).splitlines()
    assert [line.split(": ")[1] for line in lines if not line.startswith("  ")] == [
        "warning",
        "warning",
        "error",
    ]
    assert lines[-2] == (
        "kernel/build.toml:15: error: no CUDA capability in [kernel.gelu] `cuda-capabilities` is a real GPU target "
        "(the warnings above say which were left out)"
    )
    assert (
        lines[-1]
        == "  hint: list at least one known capability, or remove `cuda-capabilities` to build for the defaults"
    )


@pytest.mark.parametrize(
    ("value", "why", "hint"),
    [
        ("13.0", "no NVIDIA GPU has this compute capability", "did you mean `12.1`?"),
        ("8.5", "no NVIDIA GPU has this compute capability", "did you mean `8.6`?"),
        ("9.9a", "no NVIDIA GPU has this compute capability", "did you mean `9.0a`?"),
        ("7.7+PTX", "no NVIDIA GPU has this compute capability", "did you mean `7.5+PTX`?"),
        ("4.0", "no NVIDIA GPU has this compute capability", "did you mean `3.7`?"),
        ("8.0a", "arch-specific (`a`) capabilities start at 9.0", "write `8.0`;"),
        ("9.0f+PTX", "family (`f`) capabilities start at 10.0", "write `9.0+PTX`;"),
        ("99999.0", "no NVIDIA GPU has this compute capability", "did you mean `12.1`?"),
    ],
)
def test_unknown_capabilities(diagnose: Diagnose, value: str, why: str, hint: str) -> None:
    assert diagnose(_caps("8.0", value)) == (
        f"kernel/build.toml:15: warning: unknown CUDA capability `{value}` in [kernel.gelu] `cuda-capabilities`: {why}; "
        "built without it\n"
        f"  hint: {hint} {KNOWN}"
    )


def test_each_unknown_entry_of_a_multi_line_list_has_its_own_line(diagnose: Diagnose) -> None:
    text = K + 'cuda-capabilities = [\n  "8.0",\n  "9.9",\n  "12.0",\n  "12.5",\n]\n'
    lines = [line for line in diagnose(text).splitlines() if ": warning: " in line]
    assert [line.split(": warning: ")[0] for line in lines] == [
        "kernel/build.toml:17",
        "kernel/build.toml:19",
    ]
    assert "`9.9`" in lines[0] and "`12.5`" in lines[1]


def test_torch_noarch_capabilities_are_checked_too(diagnose: Diagnose) -> None:
    text = K.split("[torch]")[0] + '[torch-noarch]\ncuda-capabilities = ["9.0", "9.5"]\n'
    assert diagnose(text) == (
        "kernel/build.toml:9: warning: unknown CUDA capability `9.5` in [torch-noarch] `cuda-capabilities`: no "
        "NVIDIA GPU has this compute capability; built without it\n"
        f"  hint: did you mean `9.0`? {KNOWN}"
    )


@pytest.mark.parametrize("value", ["3.5", "8.8", "10.3", "10.3f", "10.1a", "11.0f+PTX", "12.1a", "9.0a+PTX"])
def test_real_capabilities_pass_whether_or_not_a_cuda_version_builds_them(
    diagnose: Diagnose, value: str
) -> None:
    """A real capability no CUDA version of the matrix builds (Kepler's 3.5) is E20's business, not this check's."""
    out = diagnose(_caps("8.0", value))
    assert "unknown CUDA capability" not in out, out


def test_unknown_rocm_archs(diagnose: Diagnose) -> None:
    text = (
        K.replace('backends = ["cuda"]', 'backends = ["rocm"]').replace(
            'backend = "cuda"', 'backend = "rocm"'
        )
        + 'rocm-archs = ["gfx90a", "gfx9999", "gfx1151", "gfx11-generic", "gfx1300"]\n'
    )
    assert diagnose(text) == (
        "kernel/build.toml:15: warning: unknown ROCm arch `gfx9999` in [kernel.gelu] `rocm-archs`: no AMD GPU target "
        "has this name; built without it\n"
        f"  hint: did you mean `gfx909` or `gfx950`? {BUILT_ROCM}\n"
        "kernel/build.toml:15: warning: unknown ROCm arch `gfx1300` in [kernel.gelu] `rocm-archs`: no AMD GPU target "
        "has this name; built without it\n"
        f"  hint: did you mean `gfx1200` or `gfx1100`? {BUILT_ROCM}"
    )


def test_the_known_lists_cover_every_list_the_builder_uses() -> None:
    """Every default capability of every CUDA version, and every ROCm arch the tool builds, is known."""
    for cuda in [(11, 8), (12, 6), (12, 8), (12, 9), (13, 0)]:
        for text in gpu_archs.default_capabilities(cuda):
            assert unknown_capability(parse_capability(text)) is None, (cuda, text)
    for arch in gpu_archs.ROCM_SUPPORTED_ARCHS:
        assert unknown_rocm_arch(arch) is None, arch
    assert list(gpu_archs.KNOWN_CAPABILITIES) == sorted(
        gpu_archs.KNOWN_CAPABILITIES, key=lambda c: parse_capability(c).version
    )
