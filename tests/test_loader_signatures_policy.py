"""The opt-in signature policy (KERNEL_BUILDER_REQUIRE_SIGNATURE) on real loads from the Hub double.

With the policy on, the loader refuses to import a Hub variant that is unsigned or whose bundle does not verify;
with it off (the default) both load, with a logged warning that says what failed (as upstream's kernels 0.18+
does when sigstore is installed). The bundle used is a real one (tests/fixtures/sigstore) over
another artifact, verified against the production trust root the sigstore package ships (no network). A load
that passes the policy needs a bundle signed over a real kernel metadata.json by an accepted workflow, which
cannot be made here (signing needs an OIDC identity and Sigstore's online services): that path is covered up to
the signature itself by tests/test_loader_signatures.py.
"""

from __future__ import annotations

import importlib.resources
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_server import HubServer
from loader_fixtures import ENV, commit_variants, reset_loader

from kernel_builder.formats import runtime
from kernel_builder.loader import (
    KernelIntegrityError,
    get_kernel,
    get_loaded_kernels,
    importer,
    signatures,
    trust,
)
from kernel_builder.loader import resolve as resolve_module
from kernel_builder.loader.signatures import REQUIRE_SIGNATURE, SIGNERS, SignatureConfigError, SignatureError

REPO = "org/relu"
VARIANT = "torch-universal"
MODULE = "_relu_universal_0123"
BUNDLE = (
    Path(__file__).resolve().parent
    / "fixtures"
    / "sigstore"
    / "pypi_attestation_models-0.0.4a2.tar.gz.sigstore"
)


@pytest.fixture(autouse=True)
def machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setattr(runtime, "detect_environment", lambda: ENV)
    monkeypatch.setattr(resolve_module, "probe_gpus", lambda backend: [])
    monkeypatch.setattr(trust, "_verdicts", {})
    for name in (REQUIRE_SIGNATURE, SIGNERS, "KERNEL_BUILDER_VERIFY_DIGEST"):
        monkeypatch.delenv(name, raising=False)
    shipped = (
        importlib.resources.files("sigstore")
        / "_store"
        / "https%3A%2F%2Ftuf-repo-cdn.sigstore.dev"
        / "trusted_root.json"
    )
    root = tmp_path / "trusted_root.json"
    root.write_bytes(shipped.read_bytes())
    monkeypatch.setenv(signatures.TRUSTED_ROOT, str(root))
    reset_loader()
    yield
    reset_loader()


def publish(hub: HubServer, tmp_path: Path, *, bundle: bytes | None) -> None:
    hub.add_organization("org")
    hub.create_repo(REPO)
    hub.create_branch(REPO, "v1")
    extra = {} if bundle is None else {f"build/{VARIANT}/metadata.json.sigstore": bundle}
    commit_variants(
        hub,
        tmp_path / "v1",
        {VARIANT: {}},
        kernel_id=lambda name: MODULE,
        repo_id=REPO,
        branch="v1",
        extra=extra,
    )


def test_off_by_default_unsigned_and_badly_signed_variants_load(hub: HubServer, tmp_path: Path) -> None:
    publish(hub, tmp_path, bundle=BUNDLE.read_bytes())
    assert get_kernel(REPO, version=1).__name__ == MODULE


def test_an_unsigned_variant_is_refused_before_import(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(hub, tmp_path, bundle=None)
    monkeypatch.setenv(REQUIRE_SIGNATURE, "1")
    with pytest.raises(SignatureError) as caught:
        get_kernel(REPO, version=1)
    message = str(caught.value)
    assert message.startswith(f"{REPO} at ")
    assert (
        f"build/{VARIANT}: not signed (no metadata.json.sigstore); refusing to load it because {REQUIRE_SIGNATURE} is set"
        in message
    )
    assert signatures.DEFAULT_SIGNERS[0] in message and f"unset {REQUIRE_SIGNATURE}" in message
    assert isinstance(caught.value, KernelIntegrityError)  # and so a ValueError, exit 1 on the command line
    assert get_loaded_kernels() == [] and MODULE not in sys.modules
    monkeypatch.setenv(REQUIRE_SIGNATURE, "0")
    assert get_kernel(REPO, version=1).__name__ == MODULE


def test_a_bundle_that_does_not_sign_this_metadata_is_refused(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(hub, tmp_path, bundle=BUNDLE.read_bytes())
    monkeypatch.setenv(REQUIRE_SIGNATURE, "yes")
    with pytest.raises(SignatureError, match=r"the signature of metadata.json does not verify: "):
        get_kernel(REPO, version=1)
    assert get_loaded_kernels() == [] and MODULE not in sys.modules


def test_the_accepted_signers_come_from_the_variable(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(hub, tmp_path, bundle=None)
    monkeypatch.setenv(REQUIRE_SIGNATURE, "1")
    workflow = "https://github.com/org/relu/.github/workflows/build.yml@refs/heads/main"
    monkeypatch.setenv(SIGNERS, workflow)
    with pytest.raises(
        SignatureError, match=rf"Accepted signers: {workflow} \(set {SIGNERS} to change them\)"
    ):
        get_kernel(REPO, version=1)
    monkeypatch.setenv(SIGNERS, "org/relu")
    with pytest.raises(SignatureConfigError, match=SIGNERS):
        get_kernel(REPO, version=1)


def test_local_loads_are_not_subject_to_the_policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from loader_fixtures import write_variant

    from kernel_builder.loader import get_local_kernel

    write_variant(tmp_path / "build" / VARIANT, kernel_id=MODULE)
    monkeypatch.setenv(REQUIRE_SIGNATURE, "1")
    assert get_local_kernel(tmp_path / "build").__name__ == MODULE


def test_locked_loads_are_subject_to_the_policy(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kernel_builder.cli import main
    from kernel_builder.loader import get_locked_kernel, load_kernel

    publish(hub, tmp_path, bundle=None)
    app = tmp_path / "app"
    app.mkdir()
    (app / "pyproject.toml").write_text(
        f'[project]\nname = "app"\nversion = "0.1"\n\n[tool.kernels.dependencies]\n"{REPO}" = 1\n',
        encoding="utf-8",
    )
    assert main(["lock", str(app)]) == 0
    lock = app / "kernels.lock"
    monkeypatch.setenv(REQUIRE_SIGNATURE, "1")
    with pytest.raises(SignatureError, match=r"not signed \(no metadata.json.sigstore\)"):
        get_locked_kernel(REPO, lockfile=lock)
    with pytest.raises(SignatureError, match=r"not signed"):  # the cached download, without the network
        load_kernel(REPO, lockfile=lock)
    assert get_loaded_kernels() == [] and MODULE not in sys.modules
    monkeypatch.delenv(REQUIRE_SIGNATURE)
    assert load_kernel(REPO, lockfile=lock).__name__ == MODULE


# --- the default: every Hub load checked, a failure warns (upstream kernels 0.18+) --------------------------


def signature_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "sign" in r.getMessage()]


def test_by_default_an_unsigned_hub_variant_loads_with_a_warning(
    hub: HubServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    publish(hub, tmp_path, bundle=None)
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    assert get_kernel(REPO, version=1).__name__ == MODULE
    (warning,) = signature_warnings(caplog)
    assert warning.startswith(f"{REPO} at ") and warning.endswith(
        f"build/{VARIANT}: not signed (no metadata.json.sigstore), so its integrity cannot be verified"
    )


def test_by_default_a_bad_signature_loads_with_a_warning_naming_the_failure(
    hub: HubServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    publish(hub, tmp_path, bundle=BUNDLE.read_bytes())
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    assert get_kernel(REPO, version=1).__name__ == MODULE
    (warning,) = signature_warnings(caplog)
    assert f"build/{VARIANT}: the signature of metadata.json does not verify: " in warning


def test_without_sigstore_nothing_is_checked_nor_said(
    hub: HubServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importer, "_sigstore_installed", lambda: False)
    publish(hub, tmp_path, bundle=BUNDLE.read_bytes())
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    assert get_kernel(REPO, version=1).__name__ == MODULE
    assert signature_warnings(caplog) == []


def test_local_loads_are_not_checked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from loader_fixtures import write_variant

    from kernel_builder.loader import get_local_kernel

    write_variant(tmp_path / "build" / VARIANT, kernel_id=MODULE)
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    assert get_local_kernel(tmp_path / "build").__name__ == MODULE
    assert signature_warnings(caplog) == []


def test_a_verified_signature_is_remembered_for_that_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A pass leaves a receipt in the cache (for that repository, commit, variant, bundle, metadata and signers):
    a later load of the same download skips Sigstore; another commit, bundle or signer list is checked anew."""
    from loader_fixtures import write_variant

    from kernel_builder.formats.metadata import read_metadata

    monkeypatch.setenv("KERNELS_CACHE", str(tmp_path / "cache"))
    variant = write_variant(tmp_path / VARIANT, kernel_id=MODULE)
    (variant / signatures.BUNDLE_FILE).write_bytes(b"{}")
    metadata = read_metadata(variant)
    checked: list[str] = []

    def verified(directory: Path, signers: object, **kwargs: object) -> signatures.SignatureCheck:
        checked.append(str(directory))
        return signatures.SignatureCheck("verified", "a workflow", metadata)

    monkeypatch.setattr(signatures, "verify_variant", verified)
    assert signatures.check_signature(variant, metadata, "here", REPO, "a" * 40)
    assert signatures.check_signature(variant, metadata, "here", REPO, "a" * 40)
    assert len(checked) == 1
    assert signatures.check_signature(variant, metadata, "here", REPO, "b" * 40)
    (variant / signatures.BUNDLE_FILE).write_bytes(b"{ }")
    assert signatures.check_signature(variant, metadata, "here", REPO, "a" * 40)
    assert len(checked) == 3
    receipts = sorted((tmp_path / "cache" / signatures.RECEIPTS).iterdir())
    assert len(receipts) == 3 and all(r.read_bytes() == b"" for r in receipts)
    # a failure is only said, and never remembered
    monkeypatch.setattr(signatures, "verify_variant", lambda *a, **k: signatures.SignatureCheck("unsigned"))
    (variant / signatures.BUNDLE_FILE).write_bytes(b"{  }")
    caplog.set_level(logging.WARNING, logger="kernel_builder")
    assert not signatures.check_signature(variant, metadata, "here", REPO, "a" * 40)
    assert [r.getMessage() for r in caplog.records] == ["here: not signed (no metadata.json.sigstore)"]
    assert len(list((tmp_path / "cache" / signatures.RECEIPTS).iterdir())) == 3
