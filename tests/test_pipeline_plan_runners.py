"""The runner table: which CI runner builds each platform's variants, and why none builds the others. Every
platform of the variant matrix has a runner or a reason."""

from __future__ import annotations

from kernel_builder.formats.matrix import load_matrix
from kernel_builder.pipeline.plan.runners import NO_RUNNER, RUNNERS, no_runner_reason, runner_for


def test_linux_variants_build_natively_on_a_runner_of_their_cpu() -> None:
    assert runner_for("cpu", "x86_64-linux") == RUNNERS["x86_64-linux"]
    assert runner_for("cuda", "aarch64-linux") == RUNNERS["aarch64-linux"]
    assert (RUNNERS["x86_64-linux"].label, RUNNERS["aarch64-linux"].label) == (
        "ubuntu-24.04",
        "ubuntu-24.04-arm",
    )
    # CUDA 12 comes from NVIDIA's apt tree of the runner's CPU: sbsa is NVIDIA's name for aarch64 servers.
    assert RUNNERS["x86_64-linux"].cuda_repo.endswith("/ubuntu2404/x86_64")
    assert RUNNERS["aarch64-linux"].cuda_repo.endswith("/ubuntu2404/sbsa")


def test_pure_python_variants_build_on_the_x86_64_runner() -> None:
    assert runner_for("cuda", None) == RUNNERS["x86_64-linux"]
    assert runner_for("metal", None) == RUNNERS["x86_64-linux"]


def test_macos_and_other_backends_have_no_runner_and_say_why() -> None:
    assert runner_for("cpu", "aarch64-darwin") is None
    assert runner_for("metal", "aarch64-darwin") is None
    assert no_runner_reason("metal", "aarch64-darwin") == NO_RUNNER["darwin"]
    assert "Linux variants only" in NO_RUNNER["darwin"]
    assert runner_for("rocm", "x86_64-linux") is None
    assert (
        no_runner_reason("rocm", "x86_64-linux")
        == "kernel-builder does not build rocm variants (docs/backends.md)"
    )


def test_every_platform_of_the_matrix_has_a_runner_or_a_reason() -> None:
    for entry in load_matrix().entries:
        for system in entry.systems:
            if runner_for(entry.backend, system) is None:
                assert no_runner_reason(entry.backend, system).startswith("kernel-builder ")
            else:
                assert system in RUNNERS
