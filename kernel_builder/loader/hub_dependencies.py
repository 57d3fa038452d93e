"""Kernel dependencies from the Hub: the source :func:`~kernel_builder.loader.local.dependency_sources` ends with.

A dependency is loaded like ``get_kernel(repo_id, version=N)`` (or ``revision=``) would load it, step for step
(docs/loading.md): the trust gate for its organization (and for each redirect), the version or revision resolved
to a commit (offline: from the cache's refs), the variant chosen from the listing and its ``metadata.json``
alone, its Python dependencies checked; then, when the whole tree is resolved, only that variant downloaded and
its digest verified. Imported on first use, since it needs the Hub client.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.loader.arguments import check_trust_argument
from kernel_builder.loader.hub_steps import (  # get_kernel's sequence: a dependency loads exactly like a kernel
    choose_on_hub,
    start_operation,
    trust_gate,
)
from kernel_builder.loader.sequence import Located

__all__ = ["HubSource"]


class HubSource:
    """Dependencies on the Hub (or, offline, in its cache), for one load: one endpoint, cache and user agent."""

    def __init__(
        self,
        backend: str | None,
        *,
        trust_remote_code: bool | list[str],
        user_agent: str | Mapping[str, object] | None,
        verify_digest: bool | None,
        offline: bool | None,
        revision_for: Callable[[KernelDependency], str] | None,
        check_arch: bool = True,
    ) -> None:
        self.operation = start_operation(backend, user_agent, offline)
        self.trust_remote_code = trust_remote_code
        self.verify_digest = verify_digest
        self.revision_for = revision_for
        self.check_arch = check_arch

    def locate(self, dependency: KernelDependency) -> Located:
        operation = self.operation
        hub = operation.hub
        gate = trust_gate(hub, check_trust_argument(self.trust_remote_code))
        gate(dependency.repo_id)
        version, revision = dependency.version, dependency.revision
        if self.revision_for is not None:
            version, revision = None, self.revision_for(dependency)
        try:
            chosen = choose_on_hub(
                operation, dependency.repo_id, version, revision, gate=gate, check_arch=self.check_arch
            )
        except RepositoryNotFoundError as error:
            raise LookupError(
                f"repository {dependency.repo_id} does not exist on {hub.endpoint}, or is not visible with "
                f"this token"
            ) from error
        except RevisionNotFoundError as error:
            raise LookupError(
                f"{dependency.repo_id} has no revision {revision!r} on {hub.endpoint}"
            ) from error
        return chosen.located(self.verify_digest)
