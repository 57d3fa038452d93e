"""The Hub's steps of a load, written once (docs/loading.md): resolve the version or revision to a commit (and
follow redirects), choose the variant from the listing and its ``metadata.json`` alone, check it, then download
only that variant and verify its digest.

:func:`choose_on_hub` (trust for redirects, resolve, choose with the one chooser of
:mod:`~kernel_builder.loader.choose`) and :meth:`Chosen.located` (the checks of :mod:`~kernel_builder.loader.sequence`,
with :func:`fetch_variant`: fetch, verify) are the Hub's part of the one load sequence; ``get_kernel``'s Hub path,
``install_kernel``, ``has_kernel`` and a kernel dependency from the Hub
(:mod:`~kernel_builder.loader.hub_dependencies`) run it, and the commands over the loader (``describe``,
``download``, ``lock``) use its steps. Each call works on one
:class:`~kernel_builder.hub.Hub` (endpoint, cache and offline mode read once) and one :class:`Target`: the
repository actually used (after the ``kernel``→``model`` fallback and redirects) and the commit SHA every later
request pins.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

import kernel_builder.loader.choose as chooser
import kernel_builder.loader.resolve as resolve
from kernel_builder.common import toml
from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded
from kernel_builder.formats import runtime
from kernel_builder.formats.files import variant_directories
from kernel_builder.formats.identifiers import is_commit_id, is_kernel_name, repo_id_problem, revision_problem
from kernel_builder.formats.metadata import METADATA_FILE, Metadata, read_metadata
from kernel_builder.formats.variants import compute_name
from kernel_builder.hub import Hub, RemoteRepo, environment_details
from kernel_builder.hub import user_agent as build_user_agent
from kernel_builder.loader.arguments import trusted_by_caller
from kernel_builder.loader.hubcache import verify_download
from kernel_builder.loader.importer import RepoInfo, read_variant_metadata, warn
from kernel_builder.loader.sequence import Located, check_agreement, locate
from kernel_builder.loader.trust import require_trusted

__all__ = [
    "MAX_REDIRECTS",
    "Chosen",
    "Operation",
    "Target",
    "VersionNotFound",
    "check_variant_agreement",
    "choose",
    "choose_on_hub",
    "decide",
    "default_name",
    "download_variant",
    "fetch_variant",
    "follow_redirects_from_main",
    "resolve_target",
    "resolve_version",
    "start_operation",
    "trust_gate",
    "variant_metadata",
    "verify_download_of",
]

logger = logging.getLogger("kernel_builder")

MAX_REDIRECTS = 5
STATUS_FILE = "kernel-status.toml"
_STATUS_LIMIT = 64 << 10  # a status file holds three short keys
_VERSION_BRANCH_RE = re.compile(r"v(0|[1-9][0-9]*)")


class VersionNotFound(ValueError):
    """No branch ``v<N>`` (online), or no cached ref for it (offline)."""


@dataclass
class Target:
    """The repository and commit an operation works on, and the name to record in ``refs/``."""

    repo: RemoteRepo
    sha: str
    ref: str | None  # v<N>, a branch or a tag; None when the caller gave a SHA
    version: int | None = None
    metadata: dict[str, Metadata | None] = field(default_factory=dict)  # per variant, fetched once
    variants: tuple[str, ...] | None = None  # the variant folders at the commit, once listed online
    newest: int | None = None  # the newest version branch, when a version was resolved online

    @property
    def label(self) -> str:
        version = f" (v{self.version})" if self.version is not None else ""
        return f"{self.repo.repo_id} at {self.sha}{version}"


# --- commit ids the Hub answers with -----------------------------------------------------------------------


def _commit_id(repo: RemoteRepo, what: str, sha: object) -> str:
    """A commit id the Hub answered with, checked before it names a cache folder or a request."""
    if not is_commit_id(sha):
        raise ValueError(
            f"{repo.repo_id}: the Hub gave {what} the target {sha!r}, which is not a 40-hex commit id; refusing it"
        )
    assert isinstance(sha, str)
    return sha


# --- revisions (docs/loading.md) ---------------------------------------------------------------------------------------


def _available(versions: list[int]) -> str:
    if not versions:
        return "it has no version branches (v<N>) at all"
    return f"available versions: {', '.join(str(v) for v in versions)}"


def _resolve_online(
    hub: Hub, repo: RemoteRepo, version: int | None, revision: str | None, *, warn_outdated: bool
) -> Target:
    if version is not None:
        branches = hub.branches(repo)
        versions = sorted(int(m.group(1)) for name in branches if (m := _VERSION_BRANCH_RE.fullmatch(name)))
        found = branches.get(f"v{version}")
        if found is None:
            raise VersionNotFound(
                f"{repo.repo_id} has no version {version} (no branch v{version}); {_available(versions)}"
            )
        if warn_outdated and versions[-1] > version:
            logger.warning(
                "%s: loading version %d, but a newer major version %d exists (branch v%d)",
                repo.repo_id,
                version,
                versions[-1],
                versions[-1],
            )
        target = Target(repo, _commit_id(repo, f"branch 'v{version}'", found), f"v{version}", version)
        target.newest = versions[-1]
        return target
    assert revision is not None
    if is_commit_id(revision):
        return Target(repo, revision, None)
    try:
        sha = hub.commit_of(repo, revision)
    except RevisionNotFoundError as error:
        error.append_to_message(f"\n{repo.repo_id}: revision {revision!r} does not exist.")
        raise
    return Target(repo, _commit_id(repo, f"revision {revision!r}", sha), revision)


def _not_cached(repo_id: str, revision: str, hub: Hub) -> FileNotFoundError:
    return FileNotFoundError(
        f"{repo_id} at revision {revision!r} is not in the cache ({hub.cache_dir}), and offline mode "
        f"(HF_HUB_OFFLINE) makes no Hub requests: it needs an earlier online download of that revision"
    )


def _resolve_offline(hub: Hub, repo_id: str, version: int | None, revision: str | None) -> Target:
    """Version and revision from the cache alone: ``refs/<name>`` or a cached snapshot (docs/loading.md)."""
    if version is not None:
        name = f"v{version}"
        repo = hub.find_cached(repo_id, lambda candidate: hub.read_ref(candidate, name) is not None)
        if repo is None:
            raise VersionNotFound(
                f"cannot resolve version {version} of {repo_id} offline (HF_HUB_OFFLINE is set): the cache "
                f"({hub.cache_dir}) has no ref {name} for it. Load it once online "
                f"(get_kernel({repo_id!r}, version={version})), or pass revision=<sha> of a cached download."
            )
        sha = hub.read_ref(repo, name)
        requested = name
    else:
        assert revision is not None
        requested, name = revision, revision
        if is_commit_id(revision):
            repo = hub.find_cached(repo_id, lambda candidate: hub.snapshot(candidate, revision).is_dir())
            sha = revision
        else:
            repo = hub.find_cached(repo_id, lambda candidate: hub.read_ref(candidate, revision) is not None)
            sha = None if repo is None else hub.read_ref(repo, revision)
        if repo is None or sha is None:
            raise _not_cached(repo_id, revision, hub)
    assert sha is not None
    if not hub.snapshot(repo, sha).is_dir():
        raise _not_cached(repo_id, f"{requested} ({sha})", hub)
    return Target(repo, sha, None if name == sha else name, version)


# --- redirects (docs/loading.md) ---------------------------------------------------------------------------------------


def _status(hub: Hub, target: Target) -> Mapping[str, object] | None:
    try:
        path = hub.download_file(target.repo, target.sha, STATUS_FILE)
    except RevisionNotFoundError as error:  # a SHA given by the caller is checked here first
        error.append_to_message(f"\n{target.repo.repo_id}: revision {target.sha!r} does not exist.")
        raise
    except RepositoryNotFoundError:
        if target.repo.repo_type is None:
            raise
        return None
    if path is None:
        return None
    try:
        status: dict[str, object] = toml.loads(read_bounded(path, _STATUS_LIMIT).decode("utf-8"))
        return status
    except UnsafeFileError as error:
        raise ValueError(f"{target.label}: {STATUS_FILE} cannot be read: {error}") from None
    except (toml.TOMLDecodeError, UnicodeDecodeError, RecursionError) as error:
        raise ValueError(f"{target.label}: {STATUS_FILE} is not valid TOML: {error}") from None


def _redirect(status: Mapping[str, object], target: Target) -> tuple[str, str | None]:
    kind = status.get("kind")
    destination = status.get("destination")
    revision = status.get("revision")
    where = f"{target.label}: {STATUS_FILE}"
    if kind != "redirect":
        raise ValueError(f"{where} has kind {kind!r}; the only kind this loader follows is 'redirect'")
    if not isinstance(destination, str) or repo_id_problem(destination) is not None:
        raise ValueError(
            f"{where} redirects without a valid 'destination' (<org>/<name>), got {destination!r}"
        )
    if revision is not None:
        problem = revision_problem(revision)
        if problem is not None:
            raise ValueError(
                f"{where}: 'revision' {revision!r} is not a branch, tag or commit id ({problem})"
            )
        assert isinstance(revision, str)
    return destination, revision


def resolve_target(
    hub: Hub,
    repo_id: str,
    version: int | None,
    revision: str | None,
    *,
    warn_outdated: bool = False,
    gate: Callable[[str], None] | None = None,
) -> Target:
    """Resolve the caller's version or revision, then follow redirects (online only)."""
    if hub.offline:
        return _resolve_offline(hub, repo_id, version, revision)
    target = _resolve_online(hub, RemoteRepo(repo_id), version, revision, warn_outdated=warn_outdated)

    def hop(repo: RemoteRepo, destination_revision: str | None) -> Target:
        if destination_revision is not None:
            return _resolve_online(hub, repo, None, destination_revision, warn_outdated=False)
        if version is not None:
            return _resolve_online(hub, repo, version, None, warn_outdated=warn_outdated)
        return _resolve_online(hub, repo, None, "main", warn_outdated=False)

    return _follow_redirects(hub, target, hop, gate)


def _follow_redirects(
    hub: Hub,
    target: Target,
    hop: Callable[[RemoteRepo, str | None], Target],
    gate: Callable[[str], None] | None,
) -> Target:
    """Follow ``kernel-status.toml`` redirects from ``target``; ``hop`` resolves each destination (given the
    redirect's own ``revision``, if any). Loops and more than :data:`MAX_REDIRECTS` hops raise ``ValueError``."""
    chain = [target.repo.repo_id]
    while (status := _status(hub, target)) is not None:
        destination, destination_revision = _redirect(status, target)
        chain.append(destination)
        if destination in chain[:-1]:
            raise ValueError(f"redirect loop: {' -> '.join(chain)}")
        if len(chain) - 1 > MAX_REDIRECTS:
            raise ValueError(f"more than {MAX_REDIRECTS} redirects: {' -> '.join(chain)}")
        warn(f"'{target.repo.repo_id}' redirected to '{destination}'")
        if gate is not None:
            gate(destination)
        target = hop(RemoteRepo(destination), destination_revision)
    return target


def resolve_version(hub: Hub, repo: RemoteRepo, version: int) -> str:
    """The commit SHA of branch ``v<version>`` (online); ``ValueError`` listing the available versions."""
    return _resolve_online(hub, repo, version, None, warn_outdated=False).sha


def follow_redirects_from_main(
    hub: Hub, repo_id: str, *, gate: Callable[[str], None] | None = None
) -> RemoteRepo:
    """The repository ``repo_id`` ends at when its ``kernel-status.toml`` redirects are followed from ``main``.

    ``gate(destination)`` runs before each hop (the trust gate). Online only; loops and more than
    :data:`MAX_REDIRECTS` hops raise ``ValueError`` listing the chain.
    """
    target = _resolve_online(hub, RemoteRepo(repo_id), None, "main", warn_outdated=False)

    def hop(repo: RemoteRepo, _revision: str | None) -> Target:
        return _resolve_online(hub, repo, None, "main", warn_outdated=False)

    return _follow_redirects(hub, target, hop, gate).repo


# --- variants (docs/loading.md) ------------------------------------------------------------------------------------


def default_name(repo_id: str) -> str:
    """A stand-in kernel name for a legacy ``metadata.json`` without one, before its package is downloaded."""
    name = repo_id.rsplit("/", 1)[-1].lower().replace("_", "-")
    return name if is_kernel_name(name) else "kernel"


def variant_metadata(hub: Hub, target: Target, variant: str) -> Metadata | None:
    """``build/<variant>/metadata.json`` at the target's commit, fetched alone, once per operation."""
    if variant not in target.metadata:
        path = hub.download_file(target.repo, target.sha, f"build/{variant}/{METADATA_FILE}")
        target.metadata[variant] = (
            None if path is None else read_metadata(path, default_name=default_name(target.repo.repo_id))
        )
    return target.metadata[variant]


def _variant_names(hub: Hub, target: Target) -> list[str]:
    if hub.offline:
        return variant_directories(hub.snapshot(target.repo, target.sha) / "build")
    names = hub.folders(target.repo, target.sha, "build")
    target.variants = tuple(names)
    return names


def decide(
    hub: Hub,
    target: Target,
    env: runtime.Environment,
    backend: str,
    *,
    first_only: bool,
    check_arch: bool = True,
) -> tuple[list[resolve.Verdict], resolve.GpuProbe]:
    """Every variant at the target's commit with its verdict (:func:`kernel_builder.loader.choose.decide`)."""
    return chooser.decide(
        _variant_names(hub, target),
        env,
        backend,
        lambda variant: variant_metadata(hub, target, variant),
        check_arch=check_arch,
        first_only=first_only,
    )


def choose(
    hub: Hub, target: Target, env: runtime.Environment, backend: str, *, check_arch: bool = True
) -> str:
    """The preferred variant's directory name (the one chooser), or :class:`NoCompatibleVariantError` with the
    trace."""
    return chooser.choose_variant(
        _variant_names(hub, target),
        env,
        backend,
        lambda variant: variant_metadata(hub, target, variant),
        subject=target.label,
        check_arch=check_arch,
    )


# --- the operations -----------------------------------------------------------------------------------------


@dataclass
class Operation:
    env: runtime.Environment
    backend: str
    hub: Hub


def start_operation(
    backend: str | None, caller_agent: str | Mapping[str, object] | None, offline: bool | None = None
) -> Operation:
    env = runtime.detect_environment()
    selected = resolve.select_backend(env, backend)
    try:
        compute = compute_name(selected, env.backend_version if selected == env.backend else None)
    except ValueError:
        compute = selected
    agent = build_user_agent(caller_agent, environment_details(compute, env.cpu, env.os, env.torch_version))
    return Operation(env, selected, Hub(agent=agent, offline=offline, warn=warn))


def check_variant_agreement(target: Target, variant: str, metadata: Metadata | None) -> None:
    """Refuse a variant whose ``metadata.json`` contradicts its directory name (before and after download)."""
    if metadata is not None:
        check_agreement(f"{target.label}, build/{variant}", variant, metadata)


def download_variant(operation: Operation, target: Target, variant: str) -> tuple[Path, Metadata]:
    """Download the chosen variant, record the named revision, and read its metadata."""
    hub = operation.hub
    variant_dir = hub.download_folder(target.repo, target.sha, f"build/{variant}")
    if target.ref is not None and not hub.offline:
        hub.write_ref(target.repo, target.ref, target.sha)
    metadata = read_variant_metadata(variant_dir)
    check_variant_agreement(target, variant, metadata)
    return variant_dir, metadata


def verify_download_of(
    operation: Operation, target: Target, variant_dir: Path, metadata: Metadata, verify: bool | None
) -> None:
    """The digest check of a Hub download; a missing digest warns (refused with ``KERNEL_BUILDER_REQUIRE_DIGEST``)."""
    folder = operation.hub.repo_folder(target.repo)
    verify_download(target.label, variant_dir, metadata, verify, folder=folder, repo_id=target.repo.repo_id)


def trust_gate(hub: Hub, trust: bool | frozenset[str]) -> Callable[[str], None]:
    """The gate each repository a load reaches passes: skipped for what the caller trusts, else the publisher
    check."""

    def gate(repo_id: str) -> None:
        if not trusted_by_caller(trust, repo_id):
            require_trusted(hub, repo_id)

    return gate


@dataclass
class Chosen:
    """A variant chosen, not yet downloaded: what :func:`fetch_variant` needs."""

    operation: Operation
    target: Target
    variant: str
    metadata: Metadata

    @property
    def where(self) -> str:
        return f"{self.target.label}, build/{self.variant}"

    def located(
        self,
        verify_digest: bool | None,
        *,
        python_dependencies: bool = True,
        loader_version: bool = True,
    ) -> Located:
        """The variant checked as every load checks it (:func:`~kernel_builder.loader.sequence.locate`), as the
        load sequence takes it; fetching it downloads and verifies it."""
        return locate(
            self.where,
            self.variant,
            self.metadata,
            lambda: fetch_variant(self, verify_digest),
            backend=self.operation.backend,
            repo_info=RepoInfo(self.target.repo.repo_id, self.target.sha),
            python_dependencies=python_dependencies,
            loader_version=loader_version,
        )


def choose_on_hub(
    operation: Operation,
    repo_id: str,
    version: int | None,
    revision: str | None,
    *,
    gate: Callable[[str], None] | None,
    check_arch: bool = True,
    warn_outdated: bool = False,
) -> Chosen:
    """Resolve → choose: the commit (redirects followed through ``gate``), the preferred variant (the one
    chooser), its ``metadata.json``. Nothing of the variant is downloaded but its metadata; :meth:`Chosen.located`
    checks it."""
    hub = operation.hub
    target = resolve_target(hub, repo_id, version, revision, warn_outdated=warn_outdated, gate=gate)
    variant = choose(hub, target, operation.env, operation.backend, check_arch=check_arch)
    metadata = variant_metadata(hub, target, variant)
    if metadata is None:  # pragma: no cover - resolution rejects GPU candidates without metadata
        raise FileNotFoundError(f"{target.label}: build/{variant}/{METADATA_FILE} not found")
    return Chosen(operation, target, variant, metadata)


def fetch_variant(chosen: Chosen, verify_digest: bool | None) -> tuple[Path, Metadata]:
    """Fetch → verify: download the chosen variant (recording the named revision) and check its digest."""
    variant_dir, metadata = download_variant(chosen.operation, chosen.target, chosen.variant)
    verify_download_of(chosen.operation, chosen.target, variant_dir, metadata, verify_digest)
    return variant_dir, metadata
