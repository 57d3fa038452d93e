"""Sigstore signatures of kernel variants (docs/security.md).

A signed variant ships ``metadata.json.sigstore`` next to its ``metadata.json``: a Sigstore bundle whose
certificate names the GitHub Actions workflow that signed it. ``metadata.json`` lists the digest of every other
file of the variant, so a verified ``metadata.json`` plus the digest check covers the whole variant.

This module verifies such a variant (:func:`verify_variant`) and applies the load policies, which the importer
calls before it imports anything downloaded from the Hub: by default, as upstream's ``kernels`` since 0.18, every
Hub load with ``sigstore`` installed checks the signature and only warns when it fails (:func:`check_signature`,
remembering a pass in the cache so that later loads of that commit skip the check); with
``KERNEL_BUILDER_REQUIRE_SIGNATURE=1`` a failure refuses the load (:func:`require_signature`). The ``sigstore`` package is imported only when a signature is actually
checked: ``import kernel_builder`` and the command line stay fast, and machines that never verify need not
install it (``pip install 'kernel-builder[signatures]'``).

Accepted signers, as upstream's ``kernels`` accepts them: a certificate issued to a GitHub Actions workflow
(issuer ``https://token.actions.githubusercontent.com``, in both of Fulcio's issuer extensions) whose source
repository is the workflow's repository and whose build signer URI is one of the accepted workflow URIs. Without
configuration those are upstream's: the build workflows of ``huggingface/kernels-community`` and
``huggingface/kernels-community-rs``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from kernel_builder.common.env import env_flag, hf_flag
from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded
from kernel_builder.errors import KernelBuilderError, UsageError
from kernel_builder.formats.metadata import (
    METADATA_FILE,
    METADATA_LIMIT,
    Metadata,
    verify_digest,
)
from kernel_builder.loader.errors import KernelIntegrityError

if TYPE_CHECKING:
    from sigstore.verify import Verifier

__all__ = [
    "BUNDLE_FILE",
    "DEFAULT_SIGNERS",
    "REQUIRE_SIGNATURE",
    "SIGNERS",
    "TRUSTED_ROOT",
    "SignatureCheck",
    "SignatureConfigError",
    "SignatureError",
    "check_signature",
    "Rejected",
    "Signer",
    "SigstoreMissingError",
    "make_verifier",
    "parse_signer",
    "require_signature",
    "required",
    "signer_policy",
    "signers_from_env",
    "verify_blob",
    "verify_variant",
]

logger = logging.getLogger("kernel_builder")

#: The bundle's file name, next to ``metadata.json`` in every signed variant (upstream's name).
BUNDLE_FILE = METADATA_FILE + ".sigstore"
#: Set to 1 to refuse every Hub variant whose metadata.json is not signed by an accepted signer.
REQUIRE_SIGNATURE = "KERNEL_BUILDER_REQUIRE_SIGNATURE"
#: Accepted signer workflow URIs (comma- or space-separated); replaces :data:`DEFAULT_SIGNERS`.
SIGNERS = "KERNEL_BUILDER_SIGNERS"
#: A Sigstore ``trusted_root.json`` to verify against instead of the production one (air-gapped machines).
TRUSTED_ROOT = "KERNEL_BUILDER_SIGSTORE_TRUSTED_ROOT"
GITHUB_ACTIONS_ISSUER = "https://token.actions.githubusercontent.com"
_KERNELS_COMMUNITY = "https://github.com/huggingface/kernels-community/.github/workflows"
_KERNELS_COMMUNITY_RS = "https://github.com/huggingface/kernels-community-rs/.github/workflows"
#: Upstream's curated signers (kernels 0.19): the workflows that build (and signed older builds of)
#: kernels-community, and the one that builds kernels-community-rs.
DEFAULT_SIGNERS = (
    f"{_KERNELS_COMMUNITY}/build.yaml@refs/heads/main",
    f"{_KERNELS_COMMUNITY}/build-mac.yaml@refs/heads/main",
    f"{_KERNELS_COMMUNITY}/build-windows.yaml@refs/heads/main",
    f"{_KERNELS_COMMUNITY}/sign-old-builds.yaml@refs/heads/main",
    f"{_KERNELS_COMMUNITY_RS}/build.yaml@refs/heads/main",
)
#: Far above any real bundle (a certificate, a log entry and its proof: about 10 KiB).
BUNDLE_LIMIT = 1 << 20
_WORKFLOW_RE = re.compile(
    r"(https://github\.com/[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?/[A-Za-z0-9._-]+)"
    r"/\.github/workflows/[A-Za-z0-9._-]+\.ya?ml@[^\s@]+"
)
_IN_TOTO = "application/vnd.in-toto+json"
_INSTALL = "pip install 'kernel-builder[signatures]'"


class SignatureError(KernelIntegrityError):
    """A variant is unsigned, or its signature or files do not verify, while a signature is required."""


class SignatureConfigError(ValueError, UsageError):
    """An accepted-signer URI or the trusted-root setting is not valid (exit 2 on the command line)."""


class SigstoreMissingError(ImportError, KernelBuilderError):
    """Checking a signature needs the ``sigstore`` package, which is not installed."""


# --- signers ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Signer:
    """One accepted signer: a GitHub Actions workflow at a ref, and the repository it belongs to."""

    workflow: str  # https://github.com/<owner>/<repo>/.github/workflows/<file>.yml@<ref>
    repository: str  # https://github.com/<owner>/<repo>


def parse_signer(text: str, *, origin: str = "signer") -> Signer:
    """A workflow URI as the certificate's build signer URI spells it; :class:`SignatureConfigError` otherwise."""
    uri = text.strip()
    match = _WORKFLOW_RE.fullmatch(uri)
    if match is None:
        raise SignatureConfigError(
            f"{origin} {text!r} is not a GitHub Actions workflow URI; expected "
            f"https://github.com/<owner>/<repo>/.github/workflows/<file>.yml@<ref> "
            f"(for example {DEFAULT_SIGNERS[0]})"
        )
    return Signer(uri, match.group(1))


def signers_from_env() -> tuple[Signer, ...]:
    """The signers :data:`SIGNERS` lists, else :data:`DEFAULT_SIGNERS`."""
    value = os.environ.get(SIGNERS, "").strip()
    if not value:
        return tuple(parse_signer(uri) for uri in DEFAULT_SIGNERS)
    return tuple(parse_signer(uri, origin=SIGNERS) for uri in re.split(r"[\s,]+", value) if uri)


def signer_policy(signers: Sequence[Signer]) -> Any:
    """The ``sigstore`` verification policy accepting any of ``signers``: the GitHub Actions issuer (in both
    of Fulcio's issuer extensions), the signer's repository and its exact workflow URI."""
    _import_sigstore()
    from sigstore.verify import policy

    if not signers:
        raise SignatureConfigError("no accepted signer given")
    return policy.AnyOf(
        [
            policy.AllOf(
                [
                    policy.OIDCIssuer(GITHUB_ACTIONS_ISSUER),
                    policy.OIDCIssuerV2(GITHUB_ACTIONS_ISSUER),
                    policy.OIDCSourceRepositoryURI(signer.repository),
                    policy.OIDCBuildSignerURI(signer.workflow),
                ]
            )
            for signer in signers
        ]
    )


# --- the trust root -----------------------------------------------------------------------------------------


def _import_sigstore() -> None:
    try:
        import sigstore.verify  # noqa: F401
    except ImportError as error:
        raise SigstoreMissingError(
            f"checking kernel signatures needs the sigstore package ({error}); install it with: {_INSTALL}"
        ) from None


@functools.lru_cache(maxsize=4)
def _cached_verifier(trusted_root: str | None, offline: bool) -> Verifier:
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import TrustedRoot
    from sigstore.verify import Verifier

    if trusted_root is not None:
        try:
            return Verifier(trusted_root=TrustedRoot.from_file(trusted_root))
        except (OSError, ValueError, SigstoreError) as error:
            raise SignatureConfigError(
                f"{TRUSTED_ROOT}={trusted_root}: not a readable Sigstore trusted root ({error})"
            ) from None
    try:
        return Verifier.production(offline=offline)
    except SigstoreError as error:
        raise KernelIntegrityError(
            f"cannot get Sigstore's trust root ({error}); it is refreshed online from Sigstore's TUF "
            f"repository. Offline (HF_HUB_OFFLINE=1) the cached or bundled one is used; {TRUSTED_ROOT}=<path to "
            f"trusted_root.json> names one explicitly."
        ) from None


def make_verifier(*, offline: bool | None = None) -> Verifier:
    """A Sigstore verifier: against :data:`TRUSTED_ROOT` when set, else Sigstore's production trust root.

    The production root is refreshed through TUF unless ``offline`` (default: ``HF_HUB_OFFLINE``), which uses
    the cached root or the one the ``sigstore`` package ships. One verifier per setting and process.
    """
    _import_sigstore()
    path = os.environ.get(TRUSTED_ROOT, "").strip() or None
    if offline is None:
        offline = hf_flag("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    return _cached_verifier(path, offline)


# --- one artifact -------------------------------------------------------------------------------------------


class Rejected(ValueError, KernelBuilderError):
    """The bundle or its signature does not verify; ``kind`` says which."""

    def __init__(self, kind: Literal["invalid-bundle", "bad-signature"], reason: str) -> None:
        super().__init__(reason)
        self.kind: Literal["invalid-bundle", "bad-signature"] = kind


def _bundle_kind(bundle: bytes) -> str:
    """``messageSignature`` (a signed blob) or ``dsseEnvelope`` (a signed in-toto statement)."""
    try:
        data = json.loads(bundle)
    except (ValueError, RecursionError) as error:
        raise Rejected("invalid-bundle", f"not JSON: {error}") from None
    kinds = [key for key in ("messageSignature", "dsseEnvelope") if isinstance(data, dict) and key in data]
    if len(kinds) != 1:
        raise Rejected("invalid-bundle", "it holds neither a message signature nor a DSSE envelope")
    return kinds[0]


def _signer_of(certificate: Any) -> str:
    """The identity the certificate was issued to (its first subject alternative name)."""
    from cryptography import x509

    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return "an unnamed identity"
    for name in names:
        return str(name.value)
    return "an unnamed identity"


def _check_statement(payload_type: str, payload: bytes, data: bytes) -> None:
    """A DSSE bundle signs an in-toto statement: one of its subjects must carry ``data``'s SHA-256."""
    if payload_type != _IN_TOTO:
        raise Rejected(
            "bad-signature", f"the DSSE envelope carries {payload_type!r}, not an in-toto statement"
        )
    try:
        statement = json.loads(payload)
        subjects = statement["subject"]
        # Subjects may name other files or other algorithms: only SHA-256 values are compared.
        digests = {str(s["digest"]["sha256"]).lower() for s in subjects if "sha256" in s.get("digest", {})}
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:
        raise Rejected(
            "bad-signature", f"the signed in-toto statement has no valid subject ({error})"
        ) from None
    actual = hashlib.sha256(data).hexdigest()
    if actual not in digests:
        raise Rejected(
            "bad-signature",
            f"the signed statement's subjects ({', '.join(sorted(digests))}) do not include this file's "
            f"sha256 {actual}",
        )


def verify_blob(data: bytes, bundle: bytes, policy: Any, *, verifier: Verifier) -> str:
    """Verify ``bundle`` over ``data`` under a ``sigstore`` verification ``policy`` (:func:`signer_policy`);
    returns the identity that signed it.

    A bundle with a message signature (``sigstore sign``, ``cosign sign-blob``: what upstream's kernels carry)
    must sign ``data`` itself; one with a DSSE envelope (``sigstore attest``, GitHub's artifact attestations)
    must sign an in-toto statement with ``data``'s SHA-256 among its subjects. Either way the certificate chain,
    the transparency-log entry and the policy are checked by ``sigstore``. Raises :class:`Rejected`.
    """
    _import_sigstore()
    from sigstore.errors import Error as SigstoreError
    from sigstore.models import Bundle

    kind = _bundle_kind(bundle)
    try:
        parsed = Bundle.from_json(bundle)
    except (SigstoreError, ValueError) as error:
        raise Rejected("invalid-bundle", str(error) or type(error).__name__) from None
    try:
        if kind == "messageSignature":
            verifier.verify_artifact(data, parsed, policy)
        else:
            payload_type, payload = verifier.verify_dsse(parsed, policy)
            _check_statement(payload_type, payload, data)
    except SigstoreError as error:
        raise Rejected("bad-signature", str(error) or type(error).__name__) from None
    return _signer_of(parsed.signing_certificate)


# --- a variant ----------------------------------------------------------------------------------------------

Status = Literal[
    "verified",
    "unsigned",
    "no-metadata",
    "invalid-bundle",
    "bad-signature",
    "invalid-metadata",
    "no-digest",
    "digest-mismatch",
]

_DESCRIPTIONS: dict[str, str] = {
    "verified": "metadata.json is signed by {detail}",
    "unsigned": f"not signed (no {BUNDLE_FILE})",
    "no-metadata": f"{BUNDLE_FILE} but no {METADATA_FILE}",
    "invalid-bundle": f"{BUNDLE_FILE} is not a valid Sigstore bundle: {{detail}}",
    "bad-signature": f"the signature of {METADATA_FILE} does not verify: {{detail}}",
    "invalid-metadata": f"the signed {METADATA_FILE} is not valid: {{detail}}",
    "no-digest": f"the signed {METADATA_FILE} has no digest, so the signature covers none of the other files",
    "digest-mismatch": f"the files do not match the digest of the signed {METADATA_FILE}:\n{{detail}}",
}


@dataclass(frozen=True)
class SignatureCheck:
    """The outcome of :func:`verify_variant`: ``status``, its detail (the signer when verified) and, once the
    signature verified, the metadata parsed from the verified bytes."""

    status: Status
    detail: str = ""
    metadata: Metadata | None = None

    @property
    def ok(self) -> bool:
        return self.status == "verified"

    def describe(self) -> str:
        return _DESCRIPTIONS[self.status].format(detail=self.detail)


def _read(path: Path, limit: int) -> bytes | None:
    try:
        return read_bounded(path, limit)
    except FileNotFoundError:
        return None


def verify_variant(
    variant_dir: str | os.PathLike[str],
    signers: Sequence[Signer],
    *,
    verifier: Verifier | None = None,
    check_files: bool = True,
    default_name: str | None = None,
) -> SignatureCheck:
    """Check a variant directory's signature, then (``check_files``) its files against the signed digest.

    ``metadata.json`` is read once: those bytes are verified, then parsed (``default_name`` as in
    :func:`~kernel_builder.formats.metadata.read_metadata`). Without ``check_files`` only the signature of
    ``metadata.json`` is checked (for a directory holding nothing else yet). A file that is not a regular one
    raises ``UnsafeFileError``; a missing ``sigstore`` package raises :class:`SigstoreMissingError`.
    """
    directory = Path(variant_dir)
    bundle = _read(directory / BUNDLE_FILE, BUNDLE_LIMIT)
    if bundle is None:
        return SignatureCheck("unsigned")
    data = _read(directory / METADATA_FILE, METADATA_LIMIT)
    if data is None:
        return SignatureCheck("no-metadata")
    try:
        signer = verify_blob(data, bundle, signer_policy(signers), verifier=verifier or make_verifier())
    except Rejected as rejected:
        return SignatureCheck(rejected.kind, str(rejected))
    try:
        metadata = Metadata.from_json(data, directory / METADATA_FILE, default_name=default_name)
    except ValueError as error:
        return SignatureCheck("invalid-metadata", str(error))
    if not check_files:
        return SignatureCheck("verified", signer, metadata)
    if metadata.digest is None:
        return SignatureCheck("no-digest", metadata=metadata)
    problems = verify_digest(directory, metadata)
    if problems:
        return SignatureCheck("digest-mismatch", "\n".join(f"  {p}" for p in problems), metadata)
    return SignatureCheck("verified", signer, metadata)


# --- the load policies --------------------------------------------------------------------------------------

#: Passes of the default check, in the cache: one empty file per repository, commit, variant, bundle, metadata and
#: signers (what upstream calls a receipt), so that a later load of the same download skips Sigstore.
RECEIPTS = ".kernel-builder/signatures"


def _receipt(where_parts: tuple[str, ...]) -> Path | None:
    from kernel_builder.common.hub_env import cache_location

    key = hashlib.sha256("\n".join(where_parts).encode("utf-8", "surrogateescape")).hexdigest()[:40]
    try:
        return cache_location()[0] / RECEIPTS / key
    except RuntimeError:  # no home directory to find the cache in
        return None


def check_signature(
    variant_dir: str | os.PathLike[str], metadata: Metadata, where: str, repo_id: str, revision: str
) -> bool:
    """The default policy on a Hub load (upstream kernels 0.18+): verify the variant's signature and files with the
    accepted signers, and log a warning naming ``where`` and what failed when it does not verify (the load goes
    on). A pass is remembered in the cache (:data:`RECEIPTS`) for this repository, commit, variant, bundle,
    metadata and signers. Returns whether it verified."""
    directory = Path(variant_dir)
    try:
        signers = signers_from_env()
        parts = (repo_id, revision, directory.name, *_fingerprints(directory), *(s.workflow for s in signers))
        receipt = _receipt(parts)
        if receipt is not None and receipt.is_file():
            logger.debug("%s: signature verified before (%s)", where, receipt)
            return True
        check = _verify_as_read(directory, metadata, signers)
    except (
        KernelBuilderError,
        UnsafeFileError,
        OSError,
    ) as error:  # no trust root, a bad setting, a bad file
        logger.warning("%s: the signature could not be checked: %s", where, error)
        return False
    if not check.ok:
        logger.warning("%s: %s", where, check.describe())
        return False
    logger.debug("%s: metadata.json signed by %s", where, check.detail)
    if receipt is not None:
        try:
            receipt.parent.mkdir(parents=True, exist_ok=True)
            receipt.touch()
        except OSError as error:
            logger.debug("%s: cannot record the verified signature in %s: %s", where, receipt, error)
    return True


_passed: set[tuple[str, str, str, tuple[Signer, ...]]] = set()
_passed_lock = threading.Lock()


def required() -> bool:
    """Whether :data:`REQUIRE_SIGNATURE` is on (``1``, ``true``, ``yes``, ``on``)."""
    return env_flag(REQUIRE_SIGNATURE)


def _fingerprint(path: Path, limit: int) -> str:
    data = _read(path, limit)
    return "" if data is None else hashlib.sha256(data).hexdigest()


def _fingerprints(directory: Path) -> tuple[str, str]:
    """What a remembered pass is keyed on besides where and by whom: the bundle and the metadata, as they are."""
    return _fingerprint(directory / BUNDLE_FILE, BUNDLE_LIMIT), _fingerprint(
        directory / METADATA_FILE, METADATA_LIMIT
    )


def _verify_as_read(directory: Path, metadata: Metadata, signers: tuple[Signer, ...]) -> SignatureCheck:
    """:func:`verify_variant`, failed also when the signed ``metadata.json`` is not ``metadata``, the one the
    loader read and is about to use (it changed in between)."""
    check = verify_variant(directory, signers, default_name=metadata.name)
    if check.ok and check.metadata != metadata:
        return SignatureCheck("bad-signature", f"{METADATA_FILE} changed after it was read")
    return check


def require_signature(variant_dir: str | os.PathLike[str], metadata: Metadata, where: str) -> None:
    """The opt-in policy: with :data:`REQUIRE_SIGNATURE` on, refuse a variant that :func:`verify_variant`
    does not pass, or whose signed ``metadata.json`` is not the one the loader is about to use.

    A pass is remembered for the process per directory, bundle, metadata and signers. Raises
    :class:`SignatureError` naming ``where``, what failed and what to do.
    """
    if not required():
        return
    directory = Path(variant_dir)
    signers = signers_from_env()
    try:
        key = (os.path.realpath(directory), *_fingerprints(directory), signers)
        with _passed_lock:
            if key in _passed:
                return
        check = _verify_as_read(directory, metadata, signers)
    except UnsafeFileError as error:
        raise SignatureError(f"{where}: {BUNDLE_FILE} or {METADATA_FILE} cannot be read: {error}") from None
    if not check.ok:
        accepted = ", ".join(signer.workflow for signer in signers)
        raise SignatureError(
            f"{where}: {check.describe()}; refusing to load it because {REQUIRE_SIGNATURE} is set. "
            f"Accepted signers: {accepted} (set {SIGNERS} to change them). To load it anyway, unset "
            f"{REQUIRE_SIGNATURE}."
        )
    logger.debug("%s: metadata.json signed by %s", where, check.detail)
    with _passed_lock:
        _passed.add(key)
