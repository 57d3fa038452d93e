"""Sigstore signatures (kernel_builder.loader.signatures), offline, with real bundles.

The bundles in tests/fixtures/sigstore are public ones (see its README): a PyPI publish attestation signed by a
GitHub Actions workflow on Sigstore's production instance (a DSSE envelope), and a sigstore-python test input
signed on the staging instance (a message signature, the form upstream's signed kernels use). They are verified
against the trust roots the ``sigstore`` package ships, with no TUF refresh and no network.

No bundle here signs a real kernel ``metadata.json`` (signing needs an OIDC identity and Sigstore's online
services): the variant-level checks use the real artifact as ``metadata.json``, so a verified signature shows up
as ``invalid-metadata`` (the signature passed, the bytes are not kernel metadata), which also shows that the
signature is checked before the bytes are parsed.
"""

from __future__ import annotations

import importlib.resources
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sigstore.verify import Verifier, policy

from kernel_builder.loader import signatures
from kernel_builder.loader.signatures import (
    BUNDLE_FILE,
    DEFAULT_SIGNERS,
    SIGNERS,
    TRUSTED_ROOT,
    Rejected,
    SignatureConfigError,
    Signer,
    SigstoreMissingError,
    make_verifier,
    parse_signer,
    signer_policy,
    signers_from_env,
    verify_blob,
    verify_variant,
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sigstore"
SDIST = FIXTURES / "pypi_attestation_models-0.0.4a2.tar.gz"
SDIST_BUNDLE = FIXTURES / "pypi_attestation_models-0.0.4a2.tar.gz.sigstore"
SDIST_WORKFLOW = (
    "https://github.com/trailofbits/pypi-attestation-models/.github/workflows/release.yml@refs/tags/v0.0.4a2"
)
TEXT = FIXTURES / "bundle_v3.txt"
TEXT_BUNDLE = FIXTURES / "bundle_v3.txt.sigstore"
TEXT_SIGNER = policy.Identity(identity="william@yossarian.net", issuer="https://github.com/login/oauth")


@pytest.fixture(autouse=True)
def offline_sigstore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """sigstore's TUF cache in the test's directory, so its offline mode starts from the bundled trust root."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    for name in (TRUSTED_ROOT, SIGNERS, signatures.REQUIRE_SIGNATURE):
        monkeypatch.delenv(name, raising=False)
    signatures._cached_verifier.cache_clear()
    yield
    signatures._cached_verifier.cache_clear()


def production() -> Verifier:
    """Sigstore's production trust root, as shipped in the sigstore package (``offline``: no TUF refresh)."""
    return make_verifier(offline=True)


def sdist_signer() -> Signer:
    return parse_signer(SDIST_WORKFLOW)


# --- signers ------------------------------------------------------------------------------------------------


def test_a_workflow_uri_names_its_repository() -> None:
    signer = parse_signer(f"  {SDIST_WORKFLOW}\n")
    assert signer == Signer(SDIST_WORKFLOW, "https://github.com/trailofbits/pypi-attestation-models")


@pytest.mark.parametrize(
    "uri",
    [
        "trailofbits/pypi-attestation-models",
        "https://github.com/trailofbits/pypi-attestation-models/.github/workflows/release.yml",  # no ref
        "https://gitlab.com/o/r/.github/workflows/release.yml@refs/heads/main",
        "https://github.com/o/r/workflows/release.yml@refs/heads/main",
        "william@yossarian.net",
    ],
)
def test_anything_else_is_refused_with_the_expected_form(uri: str) -> None:
    with pytest.raises(
        SignatureConfigError, match=r"not a GitHub Actions workflow URI; expected https://github"
    ):
        parse_signer(uri, origin="--identity")


def test_default_signers_are_upstreams_and_the_variable_replaces_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert [s.workflow for s in signers_from_env()] == list(DEFAULT_SIGNERS)
    assert {s.repository for s in signers_from_env()} == {
        "https://github.com/huggingface/kernels-community",
        "https://github.com/huggingface/kernels-community-rs",  # kernels 0.19
    }
    # upstream's policy, read from the installed kernels (0.19: kernels._internals.verify)
    upstream = pytest.importorskip("kernels._internals.verify").DEFAULT_POLICY
    theirs = {(f"https://github.com/{p.repo_id}", uri) for p in upstream._children for uri in p.signer_uris}
    assert {(s.repository, s.workflow) for s in signers_from_env()} == theirs
    other = SDIST_WORKFLOW.replace("release.yml", "build.yml")
    monkeypatch.setenv(SIGNERS, f"{SDIST_WORKFLOW}, {other}")
    assert [s.workflow for s in signers_from_env()] == [SDIST_WORKFLOW, other]
    monkeypatch.setenv(SIGNERS, "not-a-uri")
    with pytest.raises(SignatureConfigError, match=SIGNERS):
        signers_from_env()


# --- one artifact: a DSSE bundle (production, GitHub Actions) ----------------------------------------------


def test_the_real_attestation_verifies_for_its_workflow() -> None:
    signer = verify_blob(
        SDIST.read_bytes(), SDIST_BUNDLE.read_bytes(), signer_policy([sdist_signer()]), verifier=production()
    )
    assert signer == SDIST_WORKFLOW


def test_a_tampered_artifact_fails(tmp_path: Path) -> None:
    data = bytearray(SDIST.read_bytes())
    data[100] ^= 1
    with pytest.raises(Rejected, match=r"do not include this file's sha256") as caught:
        verify_blob(
            bytes(data), SDIST_BUNDLE.read_bytes(), signer_policy([sdist_signer()]), verifier=production()
        )
    assert caught.value.kind == "bad-signature"


@pytest.mark.parametrize(
    "workflow",
    [
        DEFAULT_SIGNERS[0],  # another repository: what a kernel is checked against by default
        SDIST_WORKFLOW.replace(
            "@refs/tags/v0.0.4a2", "@refs/heads/main"
        ),  # the right workflow at another ref
        SDIST_WORKFLOW.replace("release.yml", "ci.yml"),  # another workflow of the right repository
    ],
)
def test_a_wrong_identity_fails(workflow: str) -> None:
    with pytest.raises(Rejected) as caught:
        verify_blob(
            SDIST.read_bytes(),
            SDIST_BUNDLE.read_bytes(),
            signer_policy([parse_signer(workflow)]),
            verifier=production(),
        )
    assert caught.value.kind == "bad-signature"


def test_any_accepted_signer_is_enough() -> None:
    accepted = [parse_signer(DEFAULT_SIGNERS[0]), sdist_signer()]
    assert (
        verify_blob(
            SDIST.read_bytes(), SDIST_BUNDLE.read_bytes(), signer_policy(accepted), verifier=production()
        )
        == SDIST_WORKFLOW
    )


def test_a_damaged_bundle_is_an_invalid_bundle() -> None:
    text = SDIST_BUNDLE.read_text(encoding="utf-8")
    for damaged in (
        text[: len(text) // 2],
        '{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json"}',
        text.replace('"rawBytes": "MII', '"rawBytes": "MIJ'),
    ):
        with pytest.raises(Rejected) as caught:
            verify_blob(
                SDIST.read_bytes(), damaged.encode(), signer_policy([sdist_signer()]), verifier=production()
            )
        assert caught.value.kind == "invalid-bundle", damaged[:80]


# --- one artifact: a message signature (staging), the form of upstream's kernel bundles ---------------------


def test_the_real_message_signature_verifies() -> None:
    staging = Verifier.staging(offline=True)
    assert (
        verify_blob(TEXT.read_bytes(), TEXT_BUNDLE.read_bytes(), TEXT_SIGNER, verifier=staging)
        == "william@yossarian.net"
    )


def test_a_tampered_message_fails() -> None:
    staging = Verifier.staging(offline=True)
    with pytest.raises(Rejected, match="digest mismatch") as caught:
        verify_blob(TEXT.read_bytes() + b"\n", TEXT_BUNDLE.read_bytes(), TEXT_SIGNER, verifier=staging)
    assert caught.value.kind == "bad-signature"


def test_a_message_signed_by_a_person_is_not_a_github_workflow_signature() -> None:
    staging = Verifier.staging(offline=True)
    with pytest.raises(Rejected) as caught:
        verify_blob(
            TEXT.read_bytes(), TEXT_BUNDLE.read_bytes(), signer_policy([sdist_signer()]), verifier=staging
        )
    assert caught.value.kind == "bad-signature"


def test_a_staging_signature_does_not_verify_against_production() -> None:
    with pytest.raises(Rejected) as caught:
        verify_blob(TEXT.read_bytes(), TEXT_BUNDLE.read_bytes(), TEXT_SIGNER, verifier=production())
    assert caught.value.kind == "bad-signature"


# --- the trust root setting ---------------------------------------------------------------------------------


def test_an_explicit_trusted_root_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shipped = (
        importlib.resources.files("sigstore")
        / "_store"
        / "https%3A%2F%2Ftuf-repo-cdn.sigstore.dev"
        / "trusted_root.json"
    )
    root = tmp_path / "trusted_root.json"
    root.write_bytes(shipped.read_bytes())
    monkeypatch.setenv(TRUSTED_ROOT, str(root))
    verifier = make_verifier(offline=False)  # no TUF refresh: the file is the root
    assert (
        verify_blob(
            SDIST.read_bytes(), SDIST_BUNDLE.read_bytes(), signer_policy([sdist_signer()]), verifier=verifier
        )
        == SDIST_WORKFLOW
    )
    monkeypatch.setenv(TRUSTED_ROOT, str(tmp_path / "missing.json"))
    with pytest.raises(
        SignatureConfigError, match=rf"{TRUSTED_ROOT}=.*missing.json: not a readable Sigstore trusted root"
    ):
        make_verifier()


def test_without_sigstore_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sigstore.verify", None)  # what an environment without sigstore imports
    with pytest.raises(SigstoreMissingError, match=r"pip install 'kernel-builder\[signatures\]'"):
        make_verifier()


# --- a variant directory ------------------------------------------------------------------------------------


def variant(tmp_path: Path, metadata: bytes, bundle: bytes | None) -> Path:
    directory = tmp_path / "torch-universal"
    directory.mkdir()
    (directory / "metadata.json").write_bytes(metadata)
    if bundle is not None:
        (directory / BUNDLE_FILE).write_bytes(bundle)
    return directory


def test_a_variant_without_a_bundle_is_unsigned(tmp_path: Path) -> None:
    check = verify_variant(variant(tmp_path, b"{}", None), [sdist_signer()], verifier=production())
    assert (check.status, check.ok) == ("unsigned", False)
    assert check.describe() == "not signed (no metadata.json.sigstore)"


def test_a_bundle_without_metadata(tmp_path: Path) -> None:
    directory = variant(tmp_path, b"{}", SDIST_BUNDLE.read_bytes())
    (directory / "metadata.json").unlink()
    assert verify_variant(directory, [sdist_signer()], verifier=production()).status == "no-metadata"


def test_the_signature_is_checked_before_the_metadata_is_parsed(tmp_path: Path) -> None:
    # The signed bytes are a real artifact, not kernel metadata: the signature passes, then parsing fails.
    directory = variant(tmp_path, SDIST.read_bytes(), SDIST_BUNDLE.read_bytes())
    check = verify_variant(directory, [sdist_signer()], verifier=production())
    assert check.status == "invalid-metadata"
    assert "not valid UTF-8" in check.detail


def test_metadata_signed_for_other_bytes_or_by_someone_else_fails(tmp_path: Path) -> None:
    directory = variant(tmp_path, b'{"name": "relu"}\n', SDIST_BUNDLE.read_bytes())
    check = verify_variant(directory, [sdist_signer()], verifier=production())
    assert check.status == "bad-signature"
    assert check.describe().startswith("the signature of metadata.json does not verify: ")
    shutil.copy(SDIST, directory / "metadata.json")
    assert (
        verify_variant(directory, [parse_signer(DEFAULT_SIGNERS[0])], verifier=production()).status
        == "bad-signature"
    )
