"""The same loading calls through upstream's ``kernels`` and through ``kernel_builder``, against the Hub double,
have the same outcome (``loader_compat.py`` runs them, one fresh interpreter per package, because upstream reads
the Hub endpoint and cache when it is imported). Upstream is the release the test extra pins (0.19.1, whose API
level this loader implements) and, for the scenarios older than it, 0.17.2 too (tests/upstream_kernels.py).

Covered: ``trust_remote_code`` as an allowlist of repo ids, ``check_arch`` (with a faked CUDA device) of the
loading functions and of the layer repositories,
``kernels-minver`` (newer than the ``kernels`` API refused, older or equal loaded), the version/revision check
before a ``LOCAL_KERNELS`` override, and the upstream parameters of ``install_kernel``, ``has_kernel`` and
``get_local_kernel``; against 0.19.1 also its variant names (the new format alone, both names of one build,
ROCm's minor versions, CANN's noarch name, a TPU found through ``torch.accelerator``), the ``zip`` build layout,
agnostic and unknown backends in ``metadata.json``, a variant without a digest and the signature warning.
Outcomes are compared exactly: loaded (by a tag the kernel defines), the boolean of ``has_kernel``, or the builtin
exception type, except for the few differences :data:`KNOWN_DIFFERENCES` lists (each documented in
docs/migrating.md), which are compared exactly as well.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import warm_python
from hub_server import HubServer, files_from_directory
from loader_fixtures import write_variant
from upstream_kernels import INSTALLED, KERNELS_0_17_2, child_env, loader_child_env

SCRIPT = Path(__file__).resolve().parent / "loader_compat.py"
PROJECT = Path(__file__).resolve().parents[1]

TRUSTED, UNTRUSTED = "trusted-org", "other-org"
TINY, OTHER = f"{TRUSTED}/tiny", f"{UNTRUSTED}/tiny"
MINVER, ARCHY = f"{TRUSTED}/minver", f"{TRUSTED}/archy"

#: Case → (ours, upstream's): the documented differences (docs/migrating.md), each compared exactly too.
KNOWN_DIFFERENCES = {
    # Both refuse a GPU-architecture mismatch. Our resolver rejects the variant and reports every variant's
    # verdict (NoCompatibleVariantError, a FileNotFoundError); upstream chooses the variant first and then
    # raises RuntimeError from its check.
    "arch-mismatch": ("error:FileNotFoundError", "error:RuntimeError"),
    "layer-arch-mismatch": ("error:FileNotFoundError", "error:RuntimeError"),
    "func-arch-mismatch": ("error:FileNotFoundError", "error:RuntimeError"),
    "local-layer-arch-mismatch": ("error:FileNotFoundError", "error:RuntimeError"),
    # has_kernel answers False for a version the repository does not have, as for a missing repository or
    # revision; upstream raises ValueError there.
    "has-missing-version": ("False", "error:ValueError"),
}
#: Per upstream release compared against, what differs from it on purpose besides :data:`KNOWN_DIFFERENCES`.
RELEASE_DIFFERENCES: dict[str, dict[str, tuple[str, str]]] = {
    INSTALLED: {},
    # This loader implements 0.19.1's level: a build that needs 0.19.1 loads here, not with 0.17.2.
    KERNELS_0_17_2: {"minver-0.19.1": ("loaded:minver-v4/torch-cpu", "error:RuntimeError")},
}
RELEASES = [INSTALLED, KERNELS_0_17_2]


#: The layers module of every test kernel: one layer class, ``Tagged``.
LAYERS = "import torch\n\n\nclass Tagged(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def tiny(tag: str) -> dict[str, str]:
    init = f"from . import layers\n\nTAG = {tag!r}\n\n\ndef tagged(x):\n    return x\n"
    return {"__init__.py": init, "layers/__init__.py": LAYERS}


def write_kernel(root: Path, tag: str, variants: Mapping[str, Mapping[str, Any]]) -> Path:
    """``root/build/<variant>`` for each variant (``write_variant`` options); every one defines ``TAG``."""
    for variant, options in variants.items():
        kernel_id = f"_tiny_{tag.replace('-', '_')}_{variant.replace('-', '_')}"
        write_variant(
            root / "build" / variant,
            name="tiny",
            kernel_id=kernel_id,
            backend=variant.removeprefix("torch-"),
            files=tiny(f"{tag}/{variant}"),
            **options,
        )
    return root


def publish(
    hub: HubServer, tmp_path: Path, repo_id: str, version: int, variants: Mapping[str, Mapping[str, Any]]
) -> None:
    """Commit the variants on branch ``v<version>`` of ``repo_id`` (created with ``v1``)."""
    if version == 1:
        hub.create_repo(repo_id)
    hub.create_branch(repo_id, f"v{version}")
    tag = f"{repo_id.split('/')[1]}-v{version}"
    root = write_kernel(tmp_path / "publish" / tag, tag, variants)
    hub.commit(repo_id, files_from_directory(root / "build", "build"), branch=f"v{version}")


def run_script(
    package: str,
    config: dict[str, Any],
    work: Path,
    env_for: Callable[[dict[str, str]], dict[str, str]] = dict,
) -> dict[str, Any]:
    """Run ``loader_compat.py`` with ``package`` in a fresh interpreter with its own cache; its JSON result.
    ``env_for`` adjusts the child's environment (which release of ``kernels`` it imports)."""
    work.mkdir(parents=True, exist_ok=True)
    config_file = work / "config.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    env = loader_child_env(
        work / "cache",
        drop=("LOCAL_KERNELS", "KERNEL_BUILDER_CHECK_GPU_ARCH", "KERNEL_BUILDER_VERIFY_DIGEST"),
        PYTHONPATH=str(PROJECT),
    )
    result = warm_python.run(
        [sys.executable, str(SCRIPT), package, str(config_file)],
        capture_output=True,
        text=True,
        env=env_for(env),
        cwd=work,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{package}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    output: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return output


def compare(
    config: dict[str, Any],
    tmp_path: Path,
    factory: pytest.TempPathFactory | None = None,
    release: str = INSTALLED,
) -> dict[str, str]:
    """Run ``config`` through both packages (upstream's ``release``); assert the same outcomes; return ours."""
    pytest.importorskip("kernels")
    ours = run_script("kernel_builder", config, tmp_path / "kernel_builder")
    if release == INSTALLED:
        theirs = run_script("kernels", config, tmp_path / "kernels")
    else:
        assert factory is not None
        theirs = run_script(
            "kernels", config, tmp_path / f"kernels-{release}", lambda env: child_env(factory, release, env)
        )
    known_here = {**KNOWN_DIFFERENCES, **RELEASE_DIFFERENCES.get(release, {})}
    differences = []
    for name in sorted(set(ours["results"]) | set(theirs["results"])):
        pair = (ours["results"].get(name), theirs["results"].get(name))
        known = known_here.get(name)
        if (pair != known) if known is not None else (pair[0] != pair[1]):
            differences.append(
                f"{name}: kernel_builder {pair[0]!r} ({ours['messages'].get(name, '')}), "
                f"kernels {release} {pair[1]!r} ({theirs['messages'].get(name, '')})"
            )
    assert differences == []
    results: dict[str, str] = ours["results"]
    return results


def case(
    name: str,
    call: str,
    *args: Any,
    env: Mapping[str, str] | None = None,
    logs: bool = False,
    **kwargs: Any,
) -> dict[str, Any]:
    """One call of ``loader_compat.py``; a ``Path`` argument travels as ``{"path": ...}``; ``logs`` records a
    warning about the variant's signature."""
    encoded = [{"path": str(arg)} if isinstance(arg, Path) else arg for arg in args]
    return {
        "name": name,
        "call": call,
        "args": encoded,
        "kwargs": kwargs,
        "env": dict(env or {}),
        "logs": logs,
    }


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_trust_allowlist_minver_and_local_kernels_as_upstream(
    hub: HubServer, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, release: str
) -> None:
    hub.add_organization(TRUSTED, trusted=True)
    hub.add_organization(UNTRUSTED, trusted=False)
    publish(hub, tmp_path, TINY, 1, {"torch-cpu": {}})
    publish(hub, tmp_path, OTHER, 1, {"torch-cpu": {}})
    publish(hub, tmp_path, MINVER, 1, {"torch-cpu": {"extra": {"kernels-minver": "0.17.0"}}})
    publish(hub, tmp_path, MINVER, 2, {"torch-cpu": {"extra": {"kernels-minver": "0.17.2"}}})
    publish(hub, tmp_path, MINVER, 3, {"torch-cpu": {"extra": {"kernels-minver": "0.19.2"}}})
    publish(hub, tmp_path, MINVER, 4, {"torch-cpu": {"extra": {"kernels-minver": "0.19.1"}}})
    local = write_kernel(tmp_path / "local", "local", {"torch-cpu": {}})
    new_local = write_kernel(
        tmp_path / "local-new", "local-new", {"torch-cpu": {"extra": {"kernels-minver": "1.0.0"}}}
    )
    override = {"LOCAL_KERNELS": f"{TINY}={local}"}
    cases = [
        # trust_remote_code: a list of repo ids allowed in addition to trusted publishers
        case("trusted-publisher", "get_kernel", TINY, version=1),
        case("untrusted-refused", "get_kernel", OTHER, version=1),
        case("allowlisted", "get_kernel", OTHER, version=1, trust_remote_code=[OTHER]),
        case("not-on-the-list", "get_kernel", OTHER, version=1, trust_remote_code=[TINY, "other-org/else"]),
        case("trust-all", "get_kernel", OTHER, revision="v1", trust_remote_code=True),
        case("trusted-with-a-list", "get_kernel", TINY, version=1, trust_remote_code=[OTHER]),
        case("has-untrusted", "has_kernel", OTHER, version=1),
        case("has-allowlisted", "has_kernel", OTHER, version=1, trust_remote_code=[OTHER]),
        case("has-missing-version", "has_kernel", TINY, version=9),
        case("install-untrusted", "install_kernel", OTHER, version=1),
        case("install-by-version", "install_kernel", OTHER, version=1, trust_remote_code=[OTHER]),
        case("install-by-revision", "install_kernel", TINY, revision="v1", local_files_only=False),
        case("install-neither", "install_kernel", TINY),
        # kernels-minver against the kernels API level (0.19.1; 0.17.2 for that release)
        case("minver-older", "get_kernel", MINVER, version=1),
        case("minver-equal", "get_kernel", MINVER, version=2),
        case("minver-newer", "get_kernel", MINVER, version=3),
        case("minver-0.19.1", "get_kernel", MINVER, version=4),
        case("local-minver-newer", "get_local_kernel", new_local),
        case("local", "get_local_kernel", local, trust_remote_code=[OTHER], user_agent="compat-test"),
        # LOCAL_KERNELS: the version/revision arguments are checked before the override
        case("override-without-version", "get_kernel", TINY, env=override),
        case("override-with-both", "get_kernel", TINY, version=1, revision="v1", env=override),
        case("override-with-version", "get_kernel", TINY, version=1, env=override),
        case("override-has-kernel", "has_kernel", TINY, version=1, env=override),
        case("hub-without-version", "get_kernel", TINY),
    ]
    ours = compare({"gpu": None, "cases": cases}, tmp_path, tmp_path_factory, release)
    assert ours == {
        "trusted-publisher": "loaded:tiny-v1/torch-cpu",
        "untrusted-refused": "error:ValueError",
        "allowlisted": "loaded:tiny-v1/torch-cpu",
        "not-on-the-list": "error:ValueError",
        "trust-all": "loaded:tiny-v1/torch-cpu",
        "trusted-with-a-list": "loaded:tiny-v1/torch-cpu",
        "has-untrusted": "error:ValueError",
        "has-allowlisted": "True",
        "has-missing-version": "False",
        "install-untrusted": "error:ValueError",
        "install-by-version": "path:torch-cpu",
        "install-by-revision": "path:torch-cpu",
        "install-neither": "error:ValueError",
        "minver-older": "loaded:minver-v1/torch-cpu",
        "minver-equal": "loaded:minver-v2/torch-cpu",
        "minver-newer": "error:RuntimeError",
        "minver-0.19.1": "loaded:minver-v4/torch-cpu",
        "local-minver-newer": "error:RuntimeError",
        "local": "loaded:local/torch-cpu",
        "override-without-version": "error:ValueError",
        "override-with-both": "error:ValueError",
        "override-with-version": "loaded:local/torch-cpu",
        "override-has-kernel": "True",
        "hub-without-version": "error:ValueError",
    }


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_check_arch_as_upstream(
    hub: HubServer, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, release: str
) -> None:
    """With a (faked) compute capability 9.0 device: a build for 8.0 only is refused unless check_arch=False."""
    hub.add_organization(TRUSTED, trusted=True)
    publish(hub, tmp_path, ARCHY, 1, {"torch-cuda": {"archs": ["8.0"]}})
    publish(hub, tmp_path, ARCHY, 2, {"torch-cuda": {"archs": ["8.0", "9.0"]}})
    local = write_kernel(tmp_path / "local-archy", "local-archy", {"torch-cuda": {"archs": ["8.0"]}})
    cases = [
        case("arch-mismatch", "get_kernel", ARCHY, version=1),
        case("arch-unchecked", "get_kernel", ARCHY, version=1, check_arch=False),
        case("arch-match", "get_kernel", ARCHY, version=2),
        case("has-arch-mismatch", "has_kernel", ARCHY, version=1),
        case("has-arch-unchecked", "has_kernel", ARCHY, version=1, check_arch=False),
        case("has-arch-match", "has_kernel", ARCHY, version=2),
    ]
    # The layer repositories pass check_arch on to the load (since kernels 0.19, which checks local loads too).
    layer_cases = [
        case("layer-arch-mismatch", "LayerRepository.load", ARCHY, version=1, layer_name="Tagged"),
        case(
            "layer-arch-unchecked",
            "LayerRepository.load",
            ARCHY,
            version=1,
            check_arch=False,
            layer_name="Tagged",
        ),
        case("func-arch-mismatch", "FuncRepository.load", ARCHY, version=1, func_name="tagged"),
        case(
            "func-arch-unchecked",
            "FuncRepository.load",
            ARCHY,
            version=1,
            func_name="tagged",
            check_arch=False,
        ),
        case("local-layer-arch-mismatch", "LocalLayerRepository.load", local, layer_name="Tagged"),
        case(
            "local-layer-arch-unchecked",
            "LocalLayerRepository.load",
            local,
            check_arch=False,
            layer_name="Tagged",
        ),
    ]
    if release == INSTALLED:
        cases += layer_cases
    ours = compare({"gpu": [9, 0], "cases": cases}, tmp_path, tmp_path_factory, release)
    assert ours == {
        "arch-mismatch": "error:FileNotFoundError",
        "arch-unchecked": "loaded:archy-v1/torch-cuda",
        "arch-match": "loaded:archy-v2/torch-cuda",
        "has-arch-mismatch": "False",
        "has-arch-unchecked": "True",
        "has-arch-match": "True",
    } | (
        {
            "layer-arch-mismatch": "error:FileNotFoundError",
            "layer-arch-unchecked": "layer:archy-v1/torch-cuda",
            "func-arch-mismatch": "error:FileNotFoundError",
            "func-arch-unchecked": "layer:archy-v1/torch-cuda",
            "local-layer-arch-mismatch": "error:FileNotFoundError",
            "local-layer-arch-unchecked": "layer:local-archy/torch-cuda",
        }
        if release == INSTALLED
        else {}
    )


# --- kernels 0.19: variant names, environments, build layouts, digests and signatures --------------------------

NAMES, ZIPPED, DIGESTS = f"{TRUSTED}/names", f"{TRUSTED}/zipped", f"{TRUSTED}/digests"
CPU_LEGACY = "torch213-cxx11-cpu-x86_64-linux"
CPU_NEW = "torch-2.13-cxx11-cpu-cpython-3.9-abi3-x86_64-linux"


def commit_variants(
    hub: HubServer,
    tmp_path: Path,
    repo_id: str,
    version: int,
    variants: Mapping[str, Mapping[str, Any]],
) -> Path:
    """Commit ``build/<variant>`` for each variant (``write_variant`` options; ``tag`` names the kernel's ``TAG``,
    ``id`` its module id, both per variant by default) on branch ``v<version>``; returns the build directory."""
    if version == 1:
        hub.create_repo(repo_id)
    hub.create_branch(repo_id, f"v{version}")
    root = tmp_path / "publish" / f"{repo_id.replace('/', '-')}-v{version}"
    for variant, options in variants.items():
        options = dict(options)
        tag = options.pop("tag", f"{repo_id.split('/')[1]}-v{version}/{variant}")
        kernel_id = options.pop("id", f"_tiny_{tag.replace('-', '_').replace('/', '_').replace('.', '_')}")
        options.setdefault("files", tiny(tag))
        write_variant(root / "build" / variant, name="tiny", kernel_id=kernel_id, **options)
    hub.commit(repo_id, files_from_directory(root / "build", "build"), branch=f"v{version}")
    return root / "build"


@pytest.mark.slow
def test_variant_names_and_environments_as_upstream(hub: HubServer, tmp_path: Path) -> None:
    """The new variant-name format alone loads; a build published under both names loads (upstream takes either,
    by its string hashing: the build is the same); ROCm 7.2 takes a rocm71 variant; CANN's noarch variant is
    ``torch-cann``; a TPU is found through ``torch.accelerator``."""
    hub.add_organization(TRUSTED, trusted=True)
    commit_variants(hub, tmp_path, NAMES, 1, {CPU_NEW: {"backend": "cpu"}})
    same = {"backend": "cpu", "tag": "one-build", "id": "_tiny_one_build"}
    commit_variants(hub, tmp_path, NAMES, 2, {CPU_NEW: same, CPU_LEGACY: same})
    commit_variants(
        hub,
        tmp_path,
        NAMES,
        3,
        {
            "torch213-cxx11-rocm71-x86_64-linux": {"backend": "rocm"},
            "torch213-cxx11-rocm73-x86_64-linux": {"backend": "rocm"},
            "torch-cann": {"backend": "cann"},
            "torch-npu": {"backend": "cann"},
            "torch-tpu": {"backend": "tpu"},
            "torch-cpu": {"backend": "cpu"},
        },
    )
    local = tmp_path / "local-new"
    write_variant(
        local / "build" / CPU_NEW, name="tiny", kernel_id="_tiny_local_new", files=tiny("local-new")
    )
    cases = [
        case("new-format-only", "get_kernel", NAMES, version=1),
        case("both-names", "get_kernel", NAMES, version=2),
        case("local-new-format-only", "get_local_kernel", local),
        case("has-new-format", "has_kernel", NAMES, version=1),
        case("this-machine", "get_kernel", NAMES, version=3),
    ]
    ours = compare({"cases": cases}, tmp_path / "cpu")
    assert ours == {
        "new-format-only": f"loaded:names-v1/{CPU_NEW}",
        "both-names": "loaded:one-build",
        "local-new-format-only": "loaded:local-new",
        "has-new-format": "True",
        "this-machine": "loaded:names-v3/torch-cpu",
    }
    rocm = compare(
        {"rocm": "7.2", "cases": [case("rocm-7.2", "get_kernel", NAMES, version=3)]}, tmp_path / "r"
    )
    assert rocm == {"rocm-7.2": "loaded:names-v3/torch213-cxx11-rocm71-x86_64-linux"}
    cann = compare(
        {"cann": "8.2.RC1", "cases": [case("cann", "get_kernel", NAMES, version=3)]}, tmp_path / "c"
    )
    assert cann == {"cann": "loaded:names-v3/torch-cann"}
    tpu = compare({"tpu": True, "cases": [case("tpu", "get_kernel", NAMES, version=3)]}, tmp_path / "t")
    assert tpu == {"tpu": "loaded:names-v3/torch-tpu"}


#: A repository with build variants of every form, each with its backend: compiled ones in both name formats
#: (Torch, stable ABI, tvm-ffi; every backend class), pure-Python ones, SDKs.
EVERY_FORM = {
    "torch213-cxx11-cpu-x86_64-linux": "cpu",
    "torch-2.13-cpu-cpython-3.9-abi3-x86_64-linux": "cpu",
    "torch-stable-abi-2.11-cpu-cpython-3.12-abi3-x86_64-linux": "cpu",
    "torch-stable-abi214-cpu-x86_64-linux": "cpu",
    "tvm-ffi01-cpu-x86_64-linux": "cpu",
    "torch213-cxx11-cu128-x86_64-linux": "cuda",
    "torch-2.13-cxx98-rocm-7.1-cpython-3.15-abi3t-x86_64-linux": "rocm",
    "torch213-cxx11-rocm72-x86_64-linux": "rocm",
    "torch-2.13-xpu-2025.3-cpython-3.9-abi3-x86_64-linux": "xpu",
    "torch213-cann82-aarch64-linux": "cann",
    "torch213-metal-aarch64-darwin": "metal",
    "torch-2.13-neuron-cpython-3.9-abi3-x86_64-linux": "neuron",
    "torch213-tpu-x86_64-linux": "tpu",
    "torch-cpu": "cpu",
    "torch-rocm": "rocm",
    "torch-universal": "cpu",
    "mlx-metal": "metal",
    "sdk": "cpu",
    "sdk-cpu": "cpu",
    "sdk-cpython-3.9-abi3-x86_64-linux": "cpu",
    "sdk-cuda-12.8-cpython-3.9-abi3-x86_64-linux": "cuda",
}


@pytest.mark.slow
def test_get_kernel_variants_decisions_as_upstream(hub: HubServer, tmp_path: Path) -> None:
    """``get_kernel_variants`` on the Hub double: for each variant the same decision class, and a ``variant`` of
    the same structure (ArchVariant, NoarchVariant or SdkVariant; the class of its framework, backend, Python
    and system; versions, flags, ``variant_str``), on this CPU machine and on ROCm 7.2."""
    hub.add_organization(TRUSTED, trusted=True)
    every = f"{TRUSTED}/every-form"
    commit_variants(hub, tmp_path, every, 1, {name: {"backend": b} for name, b in EVERY_FORM.items()})
    cases = [case("variants", "get_kernel_variants", every, version=1)]
    verdicts = {}
    for label, machine in (("cpu", {}), ("rocm", {"rocm": "7.2"})):
        outcome = compare({**machine, "cases": cases}, tmp_path / label)["variants"]
        assert outcome.startswith("variants:")
        decisions = json.loads(outcome.removeprefix("variants:"))
        assert [form["variant_str"] for _, form in decisions] == sorted(EVERY_FORM)
        verdicts[label] = {form["variant_str"]: (kind, form) for kind, form in decisions}
    cpu, rocm = verdicts["cpu"], verdicts["rocm"]
    assert {cpu[name][1]["class"] for name in EVERY_FORM} == {"ArchVariant", "NoarchVariant", "SdkVariant"}
    assert {form["backend"]["class"] for _, form in cpu.values() if form["class"] == "ArchVariant"} == {
        "CPU", "CUDA", "ROCm", "XPU", "CANN", "Metal", "Neuron", "TPU",
    }  # fmt: skip
    assert cpu["torch-cpu"][0] == "VariantAccepted" and cpu["torch-rocm"][0] == "VariantRejected"
    assert rocm["torch213-cxx11-rocm72-x86_64-linux"][0] == "VariantAccepted"
    backend = rocm["torch213-cxx11-rocm72-x86_64-linux"][1]["backend"]
    assert backend == {
        "class": "ROCm",
        "variant_str": "rocm72",
        "name": "rocm",
        "version": "packaging.version.Version(7.2)",
        "legacy": True,
    }


ZIP_INIT = "import importlib.resources\nfrom .helper import PREFIX\nTAG = PREFIX + importlib.resources.files(__name__).joinpath('data.txt').read_text()\n"


def zip_variant(directory: Path, kernel_id: str, tag: str) -> Path:
    """A ``build-layout: "zip"`` variant: the package in ``<id>.zip`` (a submodule and a resource file in it)."""
    import zipfile

    directory.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(directory / f"{kernel_id}.zip", "w") as archive:
        archive.writestr("__init__.py", ZIP_INIT)
        archive.writestr("helper.py", f"PREFIX = {tag!r}\n")
        archive.writestr("data.txt", "+resource")
    return write_variant(directory, name="tiny", kernel_id=kernel_id, files={}, extra={"build-layout": "zip"})


@pytest.mark.slow
def test_zip_layout_backends_digests_and_signatures_as_upstream(hub: HubServer, tmp_path: Path) -> None:
    """A ``zip`` build loads (from the Hub and locally, its submodules and resources from the archive); a
    backend-agnostic or unknown ``backend.type`` is no error; a variant without a digest loads; an unsigned Hub
    variant loads with a warning about its signature (sigstore is installed)."""
    hub.add_organization(TRUSTED, trusted=True)
    hub.create_repo(ZIPPED)
    hub.create_branch(ZIPPED, "v1")
    build = tmp_path / "zip-build"
    zip_variant(build / "torch-cpu", "_tiny_zipped", "zipped")
    hub.commit(ZIPPED, files_from_directory(build, "build"), branch="v1")
    local = tmp_path / "zip-local"
    zip_variant(local / "build" / "torch-cpu", "_tiny_zipped_local", "zipped-local")
    commit_variants(hub, tmp_path, DIGESTS, 1, {"torch-cpu": {"backend": "cpu", "digest": False}})
    commit_variants(hub, tmp_path, DIGESTS, 2, {"torch-cpu": {"backend": "agnostic"}})
    commit_variants(hub, tmp_path, DIGESTS, 3, {"torch-cpu": {"backend": "a-future-backend"}})
    commit_variants(hub, tmp_path, DIGESTS, 4, {"torch-cpu": {"backend": "cpu"}})
    cases = [
        case("zip-hub", "get_kernel", ZIPPED, version=1),
        case("zip-local", "get_local_kernel", local),
        case("zip-install", "install_kernel", ZIPPED, version=1),
        case("no-digest", "get_kernel", DIGESTS, version=1),
        case("agnostic-backend", "get_kernel", DIGESTS, version=2),
        case("unknown-backend", "get_kernel", DIGESTS, version=3),
        case("unsigned", "get_kernel", DIGESTS, version=4, logs=True),
    ]
    ours = compare({"cases": cases}, tmp_path)
    assert ours == {
        "zip-hub": "loaded:zipped+resource",
        "zip-local": "loaded:zipped-local+resource",
        "zip-install": "path:torch-cpu",
        "no-digest": "loaded:digests-v1/torch-cpu",
        "agnostic-backend": "loaded:digests-v2/torch-cpu",
        "unknown-backend": "loaded:digests-v3/torch-cpu",
        "unsigned": "loaded:digests-v4/torch-cpu +signature-warning",
    }
