"""The ABI every Linux variant targets: auditwheel's manylinux_2_28 policy (docs/layout.md).

Two stages read it: the generate stage pins the glibc symbol versions the compiled code may use to the policy's
(the manylinux header), and the check stage judges the built extensions against it. It lives below both so that
neither stage imports the other.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from auditwheel.policy import Policy

#: The manylinux policy every Linux variant must satisfy.
MANYLINUX_POLICY = "manylinux_2_28"

_VERSION_RE = re.compile(r"^([A-Z][A-Z_]*?)_(\d+(?:\.\d+)*)$")


@functools.cache
def manylinux_policy(machine: str) -> Policy | None:
    """auditwheel's manylinux_2_28 policy for ``machine`` (``None`` for an architecture it has none for)."""
    from auditwheel.architecture import Architecture
    from auditwheel.libc import Libc
    from auditwheel.policy import WheelPolicies

    try:
        policies = WheelPolicies(libc=Libc.GLIBC, arch=Architecture(machine))
        return policies.get_policy_by_name(f"{MANYLINUX_POLICY}_{machine}")
    except (ValueError, LookupError):
        return None


def version_allowed(policy: Policy, version: str) -> bool:
    """Whether a required symbol version (``GLIBC_2.32``) is in the policy; families it does not govern
    (a CUDA library's own version nodes, say) are not its business."""
    match = _VERSION_RE.match(version)
    if not match or match[1] not in policy.symbol_versions:
        return True
    return match[2] in policy.symbol_versions[match[1]]
