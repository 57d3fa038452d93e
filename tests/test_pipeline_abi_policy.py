"""The manylinux policy every Linux variant targets (``kernel_builder.pipeline.abi_policy``): auditwheel's own data."""

from __future__ import annotations

from kernel_builder.pipeline.abi_policy import MANYLINUX_POLICY, manylinux_policy, version_allowed


def test_symbol_versions_follow_auditwheels_manylinux_2_28_policy() -> None:
    policy = manylinux_policy("x86_64")
    assert policy is not None and policy.name == f"{MANYLINUX_POLICY}_x86_64" == "manylinux_2_28_x86_64"
    assert version_allowed(policy, "GLIBC_2.28") and not version_allowed(policy, "GLIBC_2.29")
    assert version_allowed(policy, "GLIBCXX_3.4.24") and not version_allowed(policy, "GLIBCXX_3.4.25")
    assert version_allowed(policy, "CXXABI_1.3.11") and not version_allowed(policy, "CXXABI_1.3.12")
    assert version_allowed(policy, "libcudart.so.12")  # a family the policy does not govern
    aarch64 = manylinux_policy("aarch64")
    assert aarch64 is not None and aarch64.name == "manylinux_2_28_aarch64"
    assert "libstdc++.so.6" in policy.whitelist and "libpython3.11.so.1.0" not in policy.whitelist
    assert manylinux_policy("sparc") is None
