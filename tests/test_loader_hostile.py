"""Hostile Hub repositories and planted cache files, loaded through the real client and the Hub double.

Every hostile kernel here writes a marker file when its code runs. After each case: the call fails with an
error naming the repository and the reason, no marker exists, nothing was written outside the cache, and
``sys.modules`` gained no name that shadows an importable module (docs/security.md).
"""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubServer
from loader_fixtures import ENV, FILES, commit_variants, reset_loader, variant_backend, write_variant

from kernel_builder.formats import runtime
from kernel_builder.loader import (
    KernelIntegrityError,
    UntrustedKernelError,
    get_kernel,
    get_loaded_kernels,
    get_local_kernel,
    has_kernel,
    install_kernel,
    trust,
)
from kernel_builder.loader import resolve as resolve_module

REPO = "org/relu"
CU130 = "torch212-cxx11-cu130-x86_64-linux"
CPU = "torch212-cxx11-cpu-x86_64-linux"


@pytest.fixture(autouse=True)
def machine(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(runtime, "detect_environment", lambda: ENV)
    monkeypatch.setattr(resolve_module, "probe_gpus", lambda backend: [])
    for name in (
        "KERNEL_BUILDER_VERIFY_DIGEST",
        "KERNEL_BUILDER_CHECK_GPU_ARCH",
        "KERNEL_BUILDER_ALLOW_NO_DIGEST",
        "KERNEL_BUILDER_REQUIRE_DIGEST",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(trust, "_verdicts", {})
    reset_loader()
    yield
    reset_loader()


class Witness:
    """The markers hostile code would write, and the state the loader must leave untouched."""

    def __init__(self, tmp_path: Path) -> None:
        self.markers = tmp_path / "markers"
        self.markers.mkdir()
        self.cache = Path(os.environ["KERNELS_CACHE"])
        self.root = tmp_path
        self.modules = dict(sys.modules)

    def files(self, name: str) -> dict[str, str]:
        """A variant's files whose ``__init__`` writes the marker ``name`` when it runs."""
        marker = self.markers / name
        init = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n" + FILES["__init__.py"]
        return {**FILES, "__init__.py": init}

    def escape(self, relpath: str) -> Path:
        """Where a ref named ``relpath`` would land: ``<cache>/kernels--org--relu/refs/<relpath>``."""
        return Path(os.path.normpath(self.cache / "kernels--org--relu" / "refs" / relpath))

    def assert_contained(self, *escapes: Path) -> None:
        assert sorted(p.name for p in self.markers.iterdir()) == [], "hostile code ran"
        for path in escapes:
            assert not path.is_relative_to(self.cache)
            tops = [p for p in (path, *path.parents) if p.name.startswith("kb-escape")]
            assert tops and not any(p.exists() for p in tops), f"{path} was written outside the cache"
        replaced = sorted(
            name for name, module in self.modules.items() if sys.modules.get(name) is not module
        )
        assert replaced == [], f"modules replaced in sys.modules: {replaced}"
        foreign = sorted(
            name
            for name, module in sys.modules.items()
            if name not in self.modules and self._hostile(module) and not name.startswith("_relu_")
        )
        assert foreign == [], f"modules from hostile files under names that are not kernel ids: {foreign}"
        assert get_loaded_kernels() == []

    def _hostile(self, module: object) -> bool:
        file = getattr(module, "__file__", None)
        return file is not None and (
            Path(file).is_relative_to(self.cache) or Path(file).is_relative_to(self.root)
        )


@pytest.fixture
def witness(hub: HubServer, tmp_path: Path) -> Witness:
    return Witness(tmp_path)


def publish(
    hub: HubServer,
    tmp_path: Path,
    variants: Mapping[str, Mapping[str, Any]],
    *,
    repo_id: str = REPO,
    branch: str = "main",
    extra: Mapping[str, bytes | str] | None = None,
) -> str:
    return commit_variants(
        hub,
        tmp_path / f"publish-{len(list(tmp_path.glob('publish-*')))}",
        variants,
        kernel_id=lambda name: f"_relu_{variant_backend(name)}_{name.replace('-', '_')}",
        repo_id=repo_id,
        branch=branch,
        extra=extra,
    )


def new_repo(hub: HubServer, repo_id: str = REPO, *, trusted: bool = True) -> None:
    hub.add_organization(repo_id.split("/")[0], trusted=trusted)
    hub.create_repo(repo_id)


def snapshot_variant(sha: str, variant: str, repo_id: str = REPO) -> Path:
    folder = Path(os.environ["KERNELS_CACHE"]) / f"kernels--{repo_id.replace('/', '--')}"
    return folder / "snapshots" / sha / "build" / variant


# --- refs and revisions ----------------------------------------------------------------------------------


def test_redirect_revision_that_climbs_out_of_the_cache_is_refused(
    hub: HubServer, tmp_path: Path, witness: Witness
) -> None:
    climb = "../../../kb-escape-redirect/x"
    new_repo(hub, "old/relu")
    new_repo(hub, "new/relu")
    publish(hub, tmp_path, {"torch-cuda": {"files": witness.files("redirect")}}, repo_id="new/relu")
    hub.create_branch("new/relu", climb)  # the double stores any name; a hostile Hub serves it
    sha = hub.commit(
        "old/relu",
        {"kernel-status.toml": f'kind = "redirect"\ndestination = "new/relu"\nrevision = "{climb}"\n'},
    )
    with pytest.raises(ValueError) as caught:  # refused before the redirect is followed
        get_kernel("old/relu", revision="main")
    assert str(caught.value) == (
        f"old/relu at {sha}: kernel-status.toml: 'revision' {climb!r} is not a branch, tag or commit id "
        "(it contains '..' or '@{', or is '@')"
    )
    escaped = Path(os.path.normpath(witness.cache / "kernels--new--relu" / "refs" / climb))
    witness.assert_contained(escaped)


def test_branch_whose_target_is_not_a_commit_id_is_refused(
    hub: HubServer, tmp_path: Path, witness: Witness
) -> None:
    climb = "../../../kb-escape-branch/y"
    new_repo(hub)
    publish(hub, tmp_path, {"torch-cuda": {"files": witness.files("branch")}})
    hub.create_branch(REPO, climb)
    hub.set_branch_target(REPO, "v1", climb)  # a hostile Hub: v1 "points at" a path
    with pytest.raises(ValueError) as caught:
        get_kernel(REPO, version=1)
    assert str(caught.value) == (
        f"org/relu: the Hub gave branch 'v1' the target {climb!r}, which is not a 40-hex commit id; refusing it"
    )
    with pytest.raises(ValueError, match="not a 40-hex commit id"):
        has_kernel(REPO, version=1)
    witness.assert_contained(witness.escape(climb))


@pytest.mark.parametrize(
    "revision", ["../../../kb-escape-caller", "main/../../x", "a b", "@", "x\n", "refs//pr"]
)
def test_caller_revision_must_be_a_ref_name_or_commit(
    hub: HubServer, witness: Witness, revision: str
) -> None:
    new_repo(hub)
    with pytest.raises(
        ValueError, match=rf"^revision {_quoted(revision)} is not a branch, tag or commit id \("
    ):
        install_kernel(REPO, revision=revision)
    assert hub.requests == []
    escape = witness.escape(revision)
    witness.assert_contained(*([] if escape.is_relative_to(witness.cache) else [escape]))


def _quoted(text: str) -> str:
    import re

    return re.escape(repr(text))


@pytest.mark.parametrize(
    "repo_id", ["../relu", "org/..", "org/re--lu", "org/relu/x", "-org/relu", "org/relu\n"]
)
def test_repo_ids_are_validated_before_any_request(hub: HubServer, repo_id: str) -> None:
    with pytest.raises(ValueError, match=r"^invalid kernel repo id "):
        get_kernel(repo_id, version=1)
    assert hub.requests == []


def test_planted_ref_file_pointing_outside_is_refused_offline(
    hub: HubServer, tmp_path: Path, witness: Witness, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_repo(hub)
    hub.create_branch(REPO, "v1")
    publish(hub, tmp_path, {"torch-cuda": {}}, branch="v1")
    get_kernel(REPO, version=1)
    reset_loader()
    outside = tmp_path / "outside-snapshot" / "build" / "torch-cuda"
    write_variant(outside, kernel_id="_relu_cuda_planted", backend="cuda", files=witness.files("ref"))
    ref = witness.cache / "kernels--org--relu" / "refs" / "v1"
    ref.write_text(os.path.relpath(outside.parents[1], ref.parent.parent / "snapshots"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ValueError) as caught:
        get_kernel(REPO, version=1)
    assert str(caught.value).startswith(
        f"org/relu: the cached ref v1 ({ref}) does not hold a 40-hex commit id"
    )
    witness.assert_contained()


# --- what gets imported ----------------------------------------------------------------------------------


def test_metadata_id_naming_an_installed_module_is_refused(
    hub: HubServer, tmp_path: Path, witness: Witness
) -> None:
    new_repo(hub)
    sha = publish(hub, tmp_path, {"torch-cuda": {"kernel_id": "pytest", "files": witness.files("pytest")}})
    pytest_module = sys.modules["pytest"]
    with pytest.raises(ImportError) as caught:
        get_kernel(REPO, revision="main")
    assert str(caught.value) == (
        f"org/relu at {sha}, build/torch-cuda: metadata.json id 'pytest' is not this kernel's module name "
        "(expected '_relu_' followed by letters, digits and '_'); refusing to import it"
    )
    assert sys.modules["pytest"] is pytest_module
    witness.assert_contained()


def test_metadata_id_of_an_importable_module_is_refused(
    hub: HubServer, tmp_path: Path, witness: Witness, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "_relu_cuda_taken").mkdir(parents=True)
    (site / "_relu_cuda_taken" / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(site))
    new_repo(hub)
    sha = publish(
        hub, tmp_path, {"torch-cuda": {"kernel_id": "_relu_cuda_taken", "files": witness.files("taken")}}
    )
    with pytest.raises(ImportError) as caught:
        get_kernel(REPO, revision="main")
    assert str(caught.value) == (
        f"org/relu at {sha}, build/torch-cuda: metadata.json id '_relu_cuda_taken' is the name of an importable "
        f"module ({site / '_relu_cuda_taken' / '__init__.py'}); importing the kernel under it would shadow that "
        "module, so it is refused"
    )
    assert "_relu_cuda_taken" not in sys.modules
    witness.assert_contained()


def _plant_bytecode(package: Path, module: str, source: str) -> None:
    """An unchecked-hash .pyc for ``package/<module>.py`` that runs ``source`` (Python never re-checks it)."""
    fake = package / f".{module}-evil.py"
    fake.write_text(source)
    target = Path(importlib.util.cache_from_source(str(package / f"{module}.py")))
    target.parent.mkdir(exist_ok=True)
    py_compile.compile(
        str(fake),
        cfile=str(target),
        doraise=True,
        invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
    )
    fake.unlink()


def test_bytecode_planted_in_the_cache_never_runs(hub: HubServer, tmp_path: Path, witness: Witness) -> None:
    new_repo(hub)
    sha = publish(hub, tmp_path, {"torch-cuda": {}})
    assert get_kernel(REPO, revision="main").ops == "ops of _relu_cuda_torch_cuda._ops"
    reset_loader()
    for name in [n for n in sys.modules if n.startswith("_relu_")]:
        del sys.modules[name]
    variant = snapshot_variant(sha, "torch-cuda")
    marker = witness.markers / "bytecode"
    evil = f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\nops = 'evil'\n"
    _plant_bytecode(variant, "_ops", evil)
    _plant_bytecode(variant, "__init__", evil)
    _plant_bytecode(variant / "layers", "__init__", evil)
    module = get_kernel(REPO, revision="main")
    assert module.ops == "ops of _relu_cuda_torch_cuda._ops"
    assert module.layers.LAYER == "layer"
    assert not marker.exists()
    # Nor do the loader's imports leave bytecode of their own in the cache.
    reset_loader()
    local = get_local_kernel(variant, backend="cuda")
    assert local.ops == "ops of _relu_cuda_torch_cuda._ops" and not marker.exists()


def test_bytecode_is_not_written_into_a_local_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # this test's environment may have it set
    variant = write_variant(tmp_path / "torch-cpu")
    get_local_kernel(variant)
    assert sorted(p.relative_to(variant).as_posix() for p in variant.rglob("__pycache__")) == []


def test_cpu_named_variant_whose_metadata_says_cuda_is_refused(
    hub: HubServer, tmp_path: Path, witness: Witness
) -> None:
    new_repo(hub)
    sha = publish(
        hub,
        tmp_path,
        {
            CPU: {
                "backend": "cuda",
                "archs": ["9.0"],
                "kernel_id": "_relu_cuda_x",
                "files": witness.files("cpu"),
            }
        },
    )
    with pytest.raises(ValueError) as caught:
        get_kernel(REPO, revision="main", backend="cpu")
    assert str(caught.value) == (
        f"org/relu at {sha}, build/{CPU}: the directory name says backend cpu, but its metadata.json says "
        "backend 'cuda'; refusing a variant whose metadata disagrees with its name"
    )
    with pytest.raises(ValueError, match="disagrees with its name"):
        install_kernel(REPO, revision="main", backend="cpu")
    witness.assert_contained()


def test_archs_on_a_variant_without_gpu_architectures_are_refused(
    hub: HubServer, tmp_path: Path, witness: Witness
) -> None:
    new_repo(hub)
    sha = publish(hub, tmp_path, {CPU: {"archs": ["9.0"], "files": witness.files("archs")}})
    with pytest.raises(ValueError) as caught:
        get_kernel(REPO, revision="main", backend="cpu")
    assert str(caught.value) == (
        f"org/relu at {sha}, build/{CPU}: its metadata.json lists backend.archs ['9.0'], but a cpu variant "
        "has no GPU architectures; refusing a variant whose metadata disagrees with its name"
    )
    witness.assert_contained()


def test_missing_digest_warns_and_loads_unless_required(
    hub: HubServer, tmp_path: Path, witness: Witness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As upstream kernels 0.19: a Hub variant without a digest (built before digests existed) loads, with a
    warning; ``KERNEL_BUILDER_REQUIRE_DIGEST=1`` refuses it before anything of it is imported."""
    new_repo(hub)
    sha = publish(hub, tmp_path, {"torch-cuda": {"digest": False, "files": witness.files("nodigest")}})
    monkeypatch.setenv("KERNEL_BUILDER_REQUIRE_DIGEST", "1")
    with pytest.raises(KernelIntegrityError) as caught:
        get_kernel(REPO, revision="main")
    assert str(caught.value) == (
        f"org/relu at {sha}, build/torch-cuda: metadata.json has no digest, so its files cannot be verified; "
        "refusing to load it because KERNEL_BUILDER_REQUIRE_DIGEST is set. Unset it to load such a variant "
        "with a warning (builds made before digests existed have none)."
    )
    with pytest.raises(KernelIntegrityError, match="has no digest"):
        install_kernel(REPO, revision="main")
    witness.assert_contained()

    monkeypatch.delenv("KERNEL_BUILDER_REQUIRE_DIGEST")
    with pytest.warns(UserWarning) as caught_warnings:
        module = get_kernel(REPO, revision="main")
    assert [str(w.message) for w in caught_warnings] == [
        (
            f"org/relu at {sha}, build/torch-cuda: metadata.json has no digest, so its files cannot be verified; "
            "loading it unverified (set KERNEL_BUILDER_REQUIRE_DIGEST=1 to refuse such variants)"
        )
    ]
    assert module.NAME == "_relu_cuda_torch_cuda"
    assert (witness.markers / "nodigest").exists()  # it really loads


def test_directory_symlink_in_a_snapshot_is_refused_without_entering_it(
    hub: HubServer, tmp_path: Path, witness: Witness
) -> None:
    new_repo(hub)
    sha = publish(hub, tmp_path, {"torch-cuda": {"files": witness.files("link")}})
    install_kernel(REPO, revision="main")
    reset_loader()  # a new process: nothing verified yet
    variant = snapshot_variant(sha, "torch-cuda")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deep").mkdir(parents=True)
    (elsewhere / "deep" / "secret.py").write_text("x = 1\n")
    os.mkfifo(elsewhere / "deep" / "pipe.py")  # opening it would block: the walk must not even get there
    (variant / "layers" / "more").symlink_to(elsewhere, target_is_directory=True)
    (variant / "root").symlink_to("/", target_is_directory=True)
    started = time.monotonic()
    with pytest.raises(KernelIntegrityError) as caught:
        get_kernel(REPO, revision="main")
    assert time.monotonic() - started < 5
    lines = str(caught.value).splitlines()
    assert lines[0] == f"the files of {variant} do not match the digest in its metadata.json:"
    assert lines[1:3] == [
        "  layers/more: a symlink to a directory (not followed)",
        "  root: a symlink to a directory (not followed)",
    ]
    assert lines[3].startswith("To fix it, delete ")
    witness.assert_contained()


def test_special_files_in_a_variant_are_refused_unopened(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "torch-cpu")
    os.mkfifo(variant / "pipe.py")
    (variant / "zero.py").symlink_to("/dev/zero")
    with pytest.raises(KernelIntegrityError) as caught:
        get_local_kernel(variant)
    assert str(caught.value).splitlines()[1:3] == ["  pipe.py: a FIFO", "  zero.py: a character device"]


# --- trust offline ---------------------------------------------------------------------------------------


def test_offline_keeps_the_trust_decision(
    hub: HubServer, tmp_path: Path, witness: Witness, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_repo(hub)  # trusted
    publish(hub, tmp_path, {"torch-cuda": {}})
    new_repo(hub, "stranger/relu", trusted=False)
    publish(
        hub,
        tmp_path,
        {"torch-cuda": {"kernel_id": "_relu_cuda_stranger", "files": witness.files("stranger")}},
        repo_id="stranger/relu",
    )
    get_kernel(REPO, revision="main")
    # Cached on the caller's word: the publisher is never recorded as trusted.
    install_kernel("stranger/relu", revision="main", trust_remote_code=["stranger/relu"])
    reset_loader()
    trust._verdicts.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    with pytest.raises(UntrustedKernelError) as caught:
        get_kernel("stranger/relu", revision="main")
    assert str(caught.value) == (
        "cannot load stranger/relu offline: no online load recorded that organization 'stranger' is a trusted "
        f"kernel publisher on {hub.url}, and kernels run arbitrary code. If you trust stranger, pass "
        "trust_remote_code=True."
    )
    witness.assert_contained()
    assert get_kernel(REPO, revision="main").NAME == "_relu_cuda_torch_cuda"  # recorded online: trusted
    assert get_kernel("stranger/relu", revision="main", trust_remote_code=True).NAME == "_relu_cuda_stranger"


def test_offline_untrusted_record_is_refused(
    hub: HubServer, tmp_path: Path, witness: Witness, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_repo(hub, "stranger/relu", trusted=False)
    publish(hub, tmp_path, {"torch-cuda": {"files": witness.files("untrusted")}}, repo_id="stranger/relu")
    with pytest.raises(UntrustedKernelError):
        get_kernel("stranger/relu", revision="main")
    install_kernel("stranger/relu", revision="main", trust_remote_code=True)
    record = json.loads((witness.cache / ".kernel-builder" / "trusted-publishers.json").read_text())
    assert record == {hub.url: {"stranger": False}}
    trust._verdicts.clear()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(
        UntrustedKernelError, match="^cannot load stranger/relu offline: organization 'stranger' was"
    ):
        get_kernel("stranger/relu", revision="main")
    witness.assert_contained()


def test_trust_record_is_ignored_when_it_is_not_a_regular_small_file(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_repo(hub)
    publish(hub, tmp_path, {"torch-cuda": {}})
    install_kernel(REPO, revision="main", trust_remote_code=True)  # the gate skipped: nothing recorded
    record = Path(os.environ["KERNELS_CACHE"]) / ".kernel-builder" / "trusted-publishers.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(record)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UntrustedKernelError, match="offline: no online load recorded"):
        get_kernel(REPO, revision="main")


def test_local_variant_whose_metadata_disagrees_with_its_name_is_refused(tmp_path: Path) -> None:
    variant = write_variant(tmp_path / "build" / "torch-cpu", backend="cuda", kernel_id="_relu_cuda_x")
    with pytest.raises(ValueError) as caught:
        get_local_kernel(tmp_path, backend="cpu")
    assert str(caught.value) == (
        f"{variant}: the directory name says backend cpu, but its metadata.json says backend 'cuda'; refusing a "
        "variant whose metadata disagrees with its name"
    )
    assert get_loaded_kernels() == []
    # A directory whose name is no variant name (a copy somewhere) is loaded as it is: nothing to compare.
    other = write_variant(tmp_path / "my-copy", backend="cuda", kernel_id="_relu_cuda_x")
    assert get_local_kernel(other).__name__ == "_relu_cuda_x"


def test_offline_a_linked_variant_directory_is_not_a_variant(
    hub: HubServer, tmp_path: Path, witness: Witness, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_repo(hub)
    sha = publish(hub, tmp_path, {"torch-cpu": {}})
    get_kernel(REPO, revision="main", backend="cpu")
    reset_loader()
    outside = write_variant(
        tmp_path / "outside" / CU130,
        kernel_id="_relu_cuda_planted",
        backend="cuda",
        files=witness.files("linked"),
    )
    build = snapshot_variant(sha, "torch-cpu").parent
    (build / CU130).symlink_to(outside, target_is_directory=True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(FileNotFoundError, match="no compatible kernel variant"):
        get_kernel(REPO, revision=sha)  # only torch-cpu is a variant of this snapshot, and it is not for cuda
    witness.assert_contained()
