"""What a Hub kernel repository holds, read without running any of it: ``kernel-builder info``, ``versions`` and
``verify-signature`` (docs/cli.md).

Each works like a load up to the download: the revision is resolved (and redirects followed) and the variants
are judged for this machine exactly as :func:`~kernel_builder.loader.get_kernel` judges them, through the same
functions of :mod:`~kernel_builder.loader.remote`. ``info`` and ``versions`` then read ``metadata.json`` files
and the tree listing only; ``verify-signature`` downloads whole variants (never importing them) to check their
files against the signed digest. None applies the trust gate: nothing is imported or run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import kernel_builder.loader.resolve as resolve
from kernel_builder.errors import HubError, KernelBuilderError, UsageError
from kernel_builder.formats import runtime
from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.files import variant_directories
from kernel_builder.formats.identifiers import is_commit_id, repo_id_problem
from kernel_builder.formats.metadata import METADATA_FILE, Metadata
from kernel_builder.formats.variants import parse_variant
from kernel_builder.hub import REQUEST_ERRORS, Hub, RemoteRepo, describe_error
from kernel_builder.loader.choose import decide as decide_variants
from kernel_builder.loader.choose import no_compatible

# The resolution steps of a load, shared with get_kernel so that these commands answer what a load would do.
from kernel_builder.loader.hub_steps import (
    Operation,
    Target,
    decide,
    default_name,
    resolve_target,
    start_operation,
    variant_metadata,
)
from kernel_builder.loader.importer import read_variant_metadata
from kernel_builder.loader.signatures import BUNDLE_FILE, SignatureCheck, Signer, verify_variant

__all__ = [
    "FAILURES",
    "KernelInfo",
    "VariantInfo",
    "VariantVerification",
    "VersionBranch",
    "as_command_error",
    "checked_operation",
    "describe_kernel",
    "describe_local",
    "kernel_versions",
    "verify_signatures",
    "version_refs",
]

_VERSION_RE = re.compile(r"v(0|[1-9][0-9]*)")
#: What a lookup can fail with: a failed request, an invalid answer (ValueError), a missing file or variant.
FAILURES: tuple[type[Exception], ...] = (ValueError, *REQUEST_ERRORS)
SignatureState = Literal["absent", "present", "verified", "invalid"]


def _check_repo_id(repo_id: str) -> None:
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise UsageError(f"{repo_id!r} is not a Hub repository id: {problem}")


def as_command_error(error: Exception) -> KernelBuilderError:
    """A failed request or an invalid answer, as the one error type the command line reports (exit 1)."""
    if isinstance(error, KernelBuilderError):
        return error
    return HubError(describe_error(error))


# --- versions -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VersionBranch:
    """One ``v<N>`` branch: its commit, whether it is the newest, and the variant this machine would load
    there (``None`` when none suits it)."""

    version: int
    sha: str
    latest: bool
    variant: str | None


def version_refs(hub: Hub, repo_id: str) -> tuple[RemoteRepo, dict[int, str]]:
    """Version → commit of the ``v<N>`` branches; offline, of the ``refs/v<N>`` an earlier load cached."""
    if not hub.offline:
        repo = RemoteRepo(repo_id)
        branches = hub.branches(repo)
        found = {int(m.group(1)): sha for name, sha in branches.items() if (m := _VERSION_RE.fullmatch(name))}
    else:
        cached = hub.find_cached(repo_id, lambda candidate: (hub.repo_folder(candidate) / "refs").is_dir())
        if cached is None:
            return RemoteRepo(repo_id), {}
        repo = cached
        names = sorted(os.listdir(hub.repo_folder(repo) / "refs"))
        found = {}
        for name in names:
            match = _VERSION_RE.fullmatch(name)
            sha = hub.read_ref(repo, name) if match else None
            if match and sha is not None:
                found[int(match.group(1))] = sha
    for version, sha in found.items():
        if not is_commit_id(sha):
            raise HubError(f"{repo_id}: branch v{version} points at {sha!r}, which is not a 40-hex commit id")
    return repo, found


def _preferred(operation: Operation, target: Target) -> str | None:
    decisions, _ = decide(operation.hub, target, operation.env, operation.backend, first_only=True)
    if decisions and isinstance(decisions[0], resolve.Accepted):
        return decisions[0].variant.variant_str
    return None


def kernel_versions(repo_id: str, *, backend: str | None = None) -> list[VersionBranch]:
    """The repository's ``v<N>`` branches, oldest first, each with the variant this machine would load.

    Offline (``HF_HUB_OFFLINE``) the versions are those an earlier online load cached. Raises
    :class:`~kernel_builder.errors.HubError` when the Hub cannot be asked or answers something invalid.
    """
    operation = checked_operation(repo_id, backend)
    try:
        repo, refs = version_refs(operation.hub, repo_id)
        newest = max(refs, default=None)
        return [
            VersionBranch(
                version,
                sha,
                version == newest,
                _preferred(operation, Target(repo, sha, f"v{version}", version)),
            )
            for version, sha in sorted(refs.items())
        ]
    except FAILURES as error:
        raise as_command_error(error) from None


# --- info ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VariantInfo:
    """One variant of a revision, as ``info`` shows it."""

    name: str
    verdict: Literal["preferred", "compatible", "rejected"]
    reason: str | None  # why this machine would not load it (rejected only)
    builder_version: str | None  # provenance.kernel-builder.version of its metadata.json
    kernel_depends: tuple[KernelDependency, ...]
    digest: bool | None  # None when its metadata.json is missing or invalid
    signature: SignatureState
    signature_detail: str  # the signer (verified) or what is wrong (invalid)
    metadata_problem: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "loads_here": self.verdict == "preferred",
            "compatible": self.verdict != "rejected",
            "reason": self.reason,
            "builder_version": self.builder_version,
            "kernel_depends": [
                {"repo_id": d.repo_id, "version": d.version, "revision": d.revision}
                for d in self.kernel_depends
            ],
            "digest": self.digest,
            "signature": self.signature,
            "signature_detail": self.signature_detail or None,
            "metadata_problem": self.metadata_problem,
        }


@dataclass(frozen=True)
class KernelInfo:
    """A repository at one commit (or a local build directory): what it is, and every variant with this
    machine's verdict."""

    repo_id: str | None  # after redirects; None for a local directory
    sha: str | None
    ref: str | None
    version: int | None
    environment: str
    metadata: Metadata | None  # the preferred variant's, else the first readable one
    variants: tuple[VariantInfo, ...]
    path: str | None = None  # the local build directory described
    #: The kernel dependencies of the variant that loads here, resolved as a load resolves them (``--dep-tree``):
    #: repository id → its own dependencies, recursively; ``None`` when not asked for.
    dependency_tree: dict[str, Any] | None = None

    @property
    def loads(self) -> str | None:
        """The variant a load would choose here, or ``None``."""
        return next((v.name for v in self.variants if v.verdict == "preferred"), None)

    def to_json(self) -> dict[str, Any]:
        meta = self.metadata
        where: dict[str, Any] = (
            {"path": self.path}
            if self.path is not None
            else {"repo_id": self.repo_id, "revision": self.sha, "ref": self.ref, "version": self.version}
        )
        return {
            **where,
            "environment": self.environment,
            "loads": self.loads,
            "name": None if meta is None else meta.name,
            "kernel_version": None if meta is None else meta.version,
            "license": None if meta is None else meta.license,
            "upstream": None if meta is None else meta.upstream,
            "source": None if meta is None else meta.source,
            "python_depends": None if meta is None else list(meta.python_depends),
            "variants": [variant.to_json() for variant in self.variants],
            **({} if self.dependency_tree is None else {"dependency_tree": self.dependency_tree}),
        }


def _default_revision(
    hub: Hub, repo_id: str, version: int | None, revision: str | None
) -> tuple[int | None, str | None]:
    """Neither given: the newest version branch, as upstream's ``kernels info`` does, else ``main``."""
    if version is not None or revision is not None:
        return version, revision
    _, refs = version_refs(hub, repo_id)
    return (max(refs), None) if refs else (None, "main")


def checked_operation(repo_id: str, backend: str | None) -> Operation:
    """The repository id checked (a usage error otherwise), and an operation for it: what every command over a
    Hub repository starts with."""
    _check_repo_id(repo_id)
    return start_operation(backend, None)


def _start(repo_id: str, version: int | None, revision: str | None, backend: str | None) -> Operation:
    """The argument checks and the operation that ``info`` and ``verify-signature`` share."""
    if version is not None and revision is not None:
        _check_repo_id(repo_id)
        raise UsageError("give at most one of version and revision")
    return checked_operation(repo_id, backend)


def _target(operation: Operation, repo_id: str, version: int | None, revision: str | None) -> Target:
    """The commit to describe: the given version or revision, else the default one (:func:`_default_revision`)."""
    version, revision = _default_revision(operation.hub, repo_id, version, revision)
    return resolve_target(operation.hub, repo_id, version, revision)


def _signed_paths(hub: Hub, target: Target) -> set[str]:
    """The ``build/<variant>/metadata.json.sigstore`` paths at the target's commit (offline: in the cache)."""
    if hub.offline:
        build = hub.snapshot(target.repo, target.sha) / "build"
        if not build.is_dir():
            return set()
        return {
            f"build/{entry.name}/{BUNDLE_FILE}"
            for entry in build.iterdir()
            if (entry / BUNDLE_FILE).is_file()
        }
    return {
        file.path
        for file in hub.tree_files(target.repo, target.sha, "build")
        if file.path.endswith(BUNDLE_FILE)
    }


def _signature_state(
    hub: Hub, target: Target, name: str, signed: bool, signers: Sequence[Signer] | None
) -> tuple[SignatureState, str]:
    if not signed:
        return "absent", ""
    if signers is None:
        return "present", ""
    hub.download_file(target.repo, target.sha, f"build/{name}/{BUNDLE_FILE}")
    directory = hub.snapshot(target.repo, target.sha) / "build" / name
    check = verify_variant(
        directory, signers, check_files=False, default_name=default_name(target.repo.repo_id)
    )
    return ("verified", check.detail) if check.ok else ("invalid", check.describe())


def _hub_variant_info(
    hub: Hub,
    target: Target,
    decision: resolve.Verdict,
    preferred: bool,
    signed: set[str],
    signers: Sequence[Signer] | None,
) -> tuple[VariantInfo, Metadata | None]:
    name = decision.variant.variant_str
    metadata: Metadata | None = None
    problem: str | None = None
    try:
        metadata = variant_metadata(hub, target, name)
    except ValueError as error:
        problem = str(error)
    if metadata is None and problem is None:
        problem = f"build/{name}/{METADATA_FILE} is missing"
    state, detail = _signature_state(hub, target, name, f"build/{name}/{BUNDLE_FILE}" in signed, signers)
    return _variant_info(decision, preferred, metadata, problem, state, detail), metadata


def _variant_info(
    decision: resolve.Verdict,
    preferred: bool,
    metadata: Metadata | None,
    problem: str | None,
    state: SignatureState,
    detail: str,
) -> VariantInfo:
    name = decision.variant.variant_str
    if isinstance(decision, resolve.Rejected):
        verdict: Literal["preferred", "compatible", "rejected"] = "rejected"
        reason: str | None = decision.reason
    else:
        verdict, reason = ("preferred" if preferred else "compatible"), None
    builder = metadata.provenance.kernel_builder if metadata is not None and metadata.provenance else None
    return VariantInfo(
        name=name,
        verdict=verdict,
        reason=reason,
        builder_version=None if builder is None else builder.version,
        kernel_depends=() if metadata is None else metadata.kernel_depends,
        digest=None if metadata is None else metadata.digest is not None,
        signature=state,
        signature_detail=detail,
        metadata_problem=problem,
    )


def describe_kernel(
    repo_id: str,
    *,
    version: int | None = None,
    revision: str | None = None,
    backend: str | None = None,
    signers: Sequence[Signer] | None = None,
) -> KernelInfo:
    """Describe ``repo_id`` at a version or revision (neither: the newest version, else ``main``).

    Reads the tree listing and each variant's ``metadata.json``; with ``signers``, also downloads each
    ``metadata.json.sigstore`` and verifies the signature of ``metadata.json`` (the other files are not
    downloaded, so not checked: ``verify-signature`` does that). Nothing is imported.
    """
    operation = _start(repo_id, version, revision, backend)
    hub = operation.hub
    try:
        target = _target(operation, repo_id, version, revision)
        decisions, probe = decide(hub, target, operation.env, operation.backend, first_only=False)
        signed = _signed_paths(hub, target)
        variants: list[VariantInfo] = []
        shown: Metadata | None = None
        for index, decision in enumerate(decisions):
            preferred = index == 0 and isinstance(decision, resolve.Accepted)
            info, metadata = _hub_variant_info(hub, target, decision, preferred, signed, signers)
            variants.append(info)
            if shown is None or preferred:
                shown = metadata or shown
    except FAILURES as error:
        raise as_command_error(error) from None
    return KernelInfo(
        repo_id=target.repo.repo_id,
        sha=target.sha,
        ref=target.ref,
        version=target.version,
        environment=resolve.environment_line(operation.env, operation.backend, probe.probed),
        metadata=shown,
        variants=tuple(variants),
    )


def _local_base(root: Path) -> Path:
    """The directory holding the variants: ``root`` itself or ``root/build`` (as a local load finds them). A
    directory counts when it holds a built variant, named as one and with its ``metadata.json``: a project root's
    ``torch-ext/`` is named like a noarch variant but holds none."""
    for base in (root, root / "build"):
        for name in variant_directories(base):
            try:
                parse_variant(name)
            except ValueError:
                continue
            if (base / name / "metadata.json").is_file():
                return base
    raise UsageError(f"{root} holds no build variants: expected <variant>/ or build/<variant>/ directories")


def describe_local(
    path: str | os.PathLike[str], *, backend: str | None = None, signers: Sequence[Signer] | None = None
) -> KernelInfo:
    """:func:`describe_kernel` for a local build (a kernel directory or its ``build/``), as upstream's
    ``kernels info PATH``. With ``signers`` a signed variant is verified in full: its files are all here."""
    base = _local_base(Path(path))
    env = runtime.detect_environment()
    selected = resolve.select_backend(env, backend)
    found: dict[str, Metadata | None] = {}
    problems: dict[str, str] = {}

    def lookup(name: str) -> Metadata | None:
        if name not in found:
            try:
                found[name] = read_variant_metadata(base / name)
            except (ValueError, OSError) as error:
                found[name], problems[name] = None, str(error)
        return found[name]

    decisions, probe = decide_variants(variant_directories(base), env, selected, lookup, first_only=False)
    variants: list[VariantInfo] = []
    shown: Metadata | None = None
    for index, decision in enumerate(decisions):
        name = decision.variant.variant_str
        preferred = index == 0 and isinstance(decision, resolve.Accepted)
        metadata = lookup(name)
        state: SignatureState = "present" if (base / name / BUNDLE_FILE).is_file() else "absent"
        detail = ""
        if state == "present" and signers is not None:
            check = verify_variant(
                base / name, signers, default_name=None if metadata is None else metadata.name
            )
            state, detail = ("verified", check.detail) if check.ok else ("invalid", check.describe())
        variants.append(_variant_info(decision, preferred, metadata, problems.get(name), state, detail))
        if shown is None or preferred:
            shown = metadata or shown
    return KernelInfo(
        repo_id=None,
        sha=None,
        ref=None,
        version=None,
        environment=resolve.environment_line(env, selected, probe.probed),
        metadata=shown,
        variants=tuple(variants),
        path=str(base),
    )


# --- verify-signature ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VariantVerification:
    """One downloaded variant and the outcome of checking its signature and files."""

    variant: str
    path: Path
    check: SignatureCheck


def verify_signatures(
    repo_id: str,
    signers: Sequence[Signer],
    *,
    version: int | None = None,
    revision: str | None = None,
    all_variants: bool = False,
    backend: str | None = None,
) -> tuple[str, list[VariantVerification]]:
    """Download the variant this machine would load (``all_variants``: every variant) and verify each.

    Returns the target's label (repo, commit, version) and one outcome per variant. Nothing is imported and
    there is no trust gate. Raises :class:`~kernel_builder.errors.HubError` when the Hub cannot be asked,
    :class:`~kernel_builder.loader.NoCompatibleVariantError` when no variant suits this machine.
    """
    operation = _start(repo_id, version, revision, backend)
    hub = operation.hub
    try:
        target = _target(operation, repo_id, version, revision)
        decisions, probe = decide(hub, target, operation.env, operation.backend, first_only=not all_variants)
        if all_variants:
            names = sorted(decision.variant.variant_str for decision in decisions)
        elif decisions and isinstance(decisions[0], resolve.Accepted):
            names = [decisions[0].variant.variant_str]
        else:
            line = resolve.environment_line(operation.env, operation.backend, probe.probed)
            raise no_compatible(target.label, line, decisions)
        outcomes = []
        for name in names:
            directory = hub.download_folder(target.repo, target.sha, f"build/{name}")
            check = verify_variant(directory, signers, default_name=default_name(target.repo.repo_id))
            outcomes.append(VariantVerification(name, directory, check))
    except FAILURES as error:
        raise as_command_error(error) from None
    return target.label, outcomes
