"""Kernels from the Hub: ``get_kernel``'s Hub path (:func:`load_from_hub`), ``has_kernel``, ``get_kernel_variants``, ``install_kernel`` (docs/loading.md).

Each runs the Hub's load sequence of :mod:`~kernel_builder.loader.hub_steps` (resolve → trust → fetch → verify)
with the dependencies in between and the import at the end.

Each call works on one :class:`~kernel_builder.hub.Hub` (endpoint, cache and offline mode read once) and one
:class:`Target`: the repository actually used (after the ``kernel``→``model`` fallback and redirects) and the
commit SHA every later request pins. Online, a version is the branch ``v<N>`` and a named revision is
resolved once with ``repo_info``; offline, both come from the ``refs/`` files we write after each download.
Only the chosen variant is downloaded; resolution reads single ``metadata.json`` files when the GPU check or
the dependency check needs them.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from types import ModuleType

from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

import kernel_builder.loader.resolve as resolve
from kernel_builder.formats.metadata import METADATA_FILE
from kernel_builder.hub import KERNEL, Hub
from kernel_builder.loader.arguments import check_repo_id as _check_repo_id
from kernel_builder.loader.arguments import check_revision_arguments, check_trust_argument, trusted_by_caller
from kernel_builder.loader.decisions import Decision, public_decisions
from kernel_builder.loader.hub_steps import (
    MAX_REDIRECTS,
    Chosen,
    Operation,
    Target,
    VersionNotFound,
    choose_on_hub,
    decide,
    follow_redirects_from_main,
    resolve_target,
    resolve_version,
    start_operation,
    trust_gate,
    variant_metadata,
)
from kernel_builder.loader.hubcache import (
    ALLOW_NO_DIGEST,
    REQUIRE_DIGEST,
    Resolution,
    remember,
    request_key,
)
from kernel_builder.loader.local import (
    dependency_sources,
    local_kernel_path,
    local_variant_dir,
)
from kernel_builder.loader.sequence import install_located, load_located

__all__ = [
    "ALLOW_NO_DIGEST",
    "MAX_REDIRECTS",
    "REQUIRE_DIGEST",
    "Chosen",
    "Operation",
    "Target",
    "check_revision_arguments",
    "follow_redirects_from_main",
    "get_kernel_variants",
    "has_kernel",
    "install_kernel",
    "load_from_hub",
    "resolve_version",
    "start_operation",
    "variant_metadata",
]

logger = logging.getLogger("kernel_builder")


def load_from_hub(
    repo_id: str,
    *,
    version: int | None,
    revision: str | None,
    backend: str | None,
    user_agent: str | dict[str, object] | None,
    trust: bool | frozenset[str],
    trust_remote_code: bool | list[str],
    check_arch: bool,
    verify_digest: bool | None,
) -> ModuleType:
    """:func:`~kernel_builder.loader.warm.get_kernel` once its arguments are checked and the cache could not
    answer alone: the Hub resolves, the variant is chosen from its listing, downloaded if needed, verified and
    imported; then the resolution is recorded for the next load (docs/loading.md)."""
    operation = start_operation(backend, user_agent)
    hub = operation.hub
    gate = trust_gate(hub, trust)
    gate(repo_id)
    chosen = choose_on_hub(
        operation, repo_id, version, revision, gate=gate, check_arch=check_arch, warn_outdated=True
    )
    located = chosen.located(verify_digest)
    sources = dependency_sources(
        operation.backend,
        trust_remote_code=trust_remote_code,
        user_agent=user_agent,
        verify_digest=verify_digest,
        offline=hub.offline,
        check_arch=check_arch,
    )
    module = load_located(repo_id, located, sources)  # docs/loading.md
    _remember(
        hub,
        repo_id,
        version,
        revision,
        chosen.target,
        publisher_trusted=not trusted_by_caller(trust, repo_id),
    )
    return module


def _remember(
    hub: Hub,
    repo_id: str,
    version: int | None,
    revision: str | None,
    target: Target,
    *,
    publisher_trusted: bool,
) -> None:
    """Record what the Hub answered, for loads within ``KERNEL_BUILDER_CACHE_TTL`` (docs/loading.md): the
    request and, as it never moves, the commit itself. Not after a redirect (the cache path does not follow
    redirects), nor offline, nor without the variant listing of the commit, nor for a model-type repository."""
    if (
        hub.offline
        or target.repo.repo_id != repo_id
        or target.variants is None
        or target.repo.repo_type != KERNEL
    ):
        return  # a legacy model-type repository keeps its warning at every load: the Hub path gives it
    checked = time.time()
    requests = {request_key(version, revision), request_key(None, target.sha)}
    for request in sorted(requests):
        resolution = Resolution(
            hub.endpoint,
            repo_id,
            request,
            KERNEL,
            target.sha,
            checked,
            publisher_trusted,
            target.variants,
            target.newest if request.startswith("version:") else None,
        )
        remember(hub.cache_dir, resolution)


def has_kernel(
    repo_id: str,
    *,
    revision: str | None = None,
    version: int | None = None,
    backend: str | None = None,
    trust_remote_code: bool | list[str] = False,
    check_arch: bool = True,
) -> bool:
    """Whether a variant for this environment exists at that version or revision; downloads no code.

    A ``LOCAL_KERNELS`` override answers for its repository. ``False`` when the repository, revision or version
    does not exist (offline: is not cached) or no variant suits (``check_arch=False`` skips the
    GPU-architecture check); the trust gate applies as for :func:`get_kernel` (an untrusted repository raises
    :class:`UntrustedKernelError`); network and authentication errors propagate.
    """
    check_revision_arguments(version, revision)
    trust = check_trust_argument(trust_remote_code)
    local = local_kernel_path(repo_id)
    if local is not None:
        try:
            local_variant_dir(local, backend, check_arch=check_arch)
        except FileNotFoundError as error:  # NoCompatibleVariantError included
            logger.debug("has_kernel(%s): %s", repo_id, error)
            return False
        return True
    _check_repo_id(repo_id)
    operation = start_operation(backend, None)
    hub = operation.hub
    gate = trust_gate(hub, trust)
    gate(repo_id)
    try:
        target = resolve_target(hub, repo_id, version, revision, gate=gate)
    except (RepositoryNotFoundError, RevisionNotFoundError, VersionNotFound) as error:
        logger.debug("has_kernel(%s): %s", repo_id, error)
        return False
    except FileNotFoundError as error:
        if not hub.offline:  # online, a FileNotFoundError is a failed download: it propagates
            raise
        logger.debug("has_kernel(%s): %s", repo_id, error)  # offline: not in the cache
        return False
    decisions, _ = decide(
        hub, target, operation.env, operation.backend, first_only=True, check_arch=check_arch
    )
    if not decisions or not isinstance(decisions[0], resolve.Accepted):
        return False
    path = f"build/{decisions[0].variant.variant_str}/{METADATA_FILE}"
    if hub.offline:
        return (hub.snapshot(target.repo, target.sha) / path).is_file()
    return hub.file_exists(target.repo, target.sha, path)


def get_kernel_variants(
    repo_id: str, *, revision: str | None = None, version: int | None = None, backend: str | None = None
) -> list[Decision]:
    """Every variant at that version or revision with its verdict: accepted ones first (the preferred one at
    index 0), then rejected ones by name, each variant in its structured form (upstream's classes,
    :mod:`kernel_builder.formats.variant_model`). Works offline from the cache; no trust gate."""
    check_revision_arguments(version, revision)
    _check_repo_id(repo_id)
    operation = start_operation(backend, None)
    target = resolve_target(operation.hub, repo_id, version, revision)
    verdicts, _ = decide(operation.hub, target, operation.env, operation.backend, first_only=False)
    return public_decisions(verdicts)


def install_kernel(
    repo_id: str,
    *,
    revision: str | None = None,
    version: int | None = None,
    backend: str | None = None,
    local_files_only: bool = False,
    user_agent: str | dict[str, object] | None = None,
    trust_remote_code: bool | list[str] = False,
    validate_dependencies: bool = False,
    verify_digest: bool | None = None,
) -> Path:
    """Download the variant for this environment at a ``version`` or ``revision`` and return its path.

    Returns the absolute ``<snapshot>/build/<variant>`` directory, digest-verified; nothing is imported. The
    trust gate applies as for :func:`get_kernel`. ``local_files_only=True`` uses the cache only; ``False``
    follows offline mode (``HF_HUB_OFFLINE``).
    """
    check_revision_arguments(version, revision)
    _check_repo_id(repo_id)
    trust = check_trust_argument(trust_remote_code)
    operation = start_operation(backend, user_agent, offline=True if local_files_only else None)
    gate = trust_gate(operation.hub, trust)
    gate(repo_id)
    chosen = choose_on_hub(operation, repo_id, version, revision, gate=gate)
    # The one load sequence without the import: no loader-version check (what is installed may be for another
    # loader), the Python dependencies only when asked.
    located = chosen.located(verify_digest, python_dependencies=validate_dependencies, loader_version=False)
    # Its kernel dependencies are downloaded too, from the Hub (LOCAL_KERNELS does not apply), behind the same
    # trust gate as the kernel itself.
    sources = dependency_sources(
        operation.backend,
        trust_remote_code=trust_remote_code,
        user_agent=user_agent,
        verify_digest=verify_digest,
        offline=operation.hub.offline,
        local_kernels=False,
    )
    return install_located(repo_id, located, sources).absolute()
