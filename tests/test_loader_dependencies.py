"""Kernel dependencies (``kernel-depends``): the tree resolved, verified and loaded before the kernel that needs it.

Tiny pure-Python variants (``loader_fixtures.write_variant``) whose ``__init__`` calls ``get_kernel_dep`` at
import time, found through ``LOCAL_KERNELS`` (the author's loop) and on the Hub double with the real
``huggingface_hub`` client. The builder-built, uploaded, differential case is in test_loader_hub_dependencies.py.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hub_server import HubError, HubServer, files_from_directory
from loader_fixtures import reset_loader, write_variant
from publish_fixtures import cpu_machine  # noqa: F401 (fixture)

from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.loader import (
    KernelDependencyError,
    KernelIntegrityError,
    UntrustedKernelError,
    get_kernel,
    get_loaded_kernels,
    get_local_kernel,
    install_kernel,
)
from kernel_builder.loader import dependencies as dependencies_module
from kernel_builder.loader.dependencies import Located, resolve_dependencies
from kernel_builder.loader.local import dependency_sources

pytestmark = pytest.mark.usefixtures("cpu_machine")

VARIANT = "torch-cpu"


def dependent_init(name: str, repo_ids: Sequence[str]) -> str:
    """An ``__init__`` that takes each dependency at import time: ``VALUE = "name(dep1,dep2)"``."""
    lines = ["from kernel_builder import get_kernel_dep", "", "DEPS = {}"]
    lines += [f"DEPS[{repo_id!r}] = get_kernel_dep({repo_id!r})" for repo_id in repo_ids]
    lines += [f"VALUE = {name!r} + '(' + ','.join(d.VALUE for d in DEPS.values()) + ')'", ""]
    return "\n".join(lines)


def kernel(
    root: Path,
    name: str,
    depends: Sequence[Mapping[str, Any]] = (),
    *,
    init: str | None = None,
    tag: str = "1",
) -> Path:
    """``root/build/torch-cpu``: kernel ``name`` listing ``depends`` (``{"repo-id": ..., "version": N}``)."""
    text = init if init is not None else dependent_init(name, [entry["repo-id"] for entry in depends])
    write_variant(
        root / "build" / VARIANT,
        name=name,
        kernel_id=f"_{name.replace('-', '_')}_{tag}",
        files={"__init__.py": text},
        extra={"kernel-depends": list(depends)},
    )
    return root


def v1(repo_id: str) -> dict[str, Any]:
    return {"repo-id": repo_id, "version": 1}


def set_local_kernels(monkeypatch: pytest.MonkeyPatch, mapping: Mapping[str, Path]) -> None:
    monkeypatch.setenv("LOCAL_KERNELS", os.pathsep.join(f"{repo}={path}" for repo, path in mapping.items()))


def loaded_names() -> list[str]:
    return [loaded.metadata.name for loaded in get_loaded_kernels()]


# --- LOCAL_KERNELS: the author's loop ----------------------------------------------------------------------------


def test_a_dependency_mapped_in_local_kernels_loads_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = kernel(tmp_path / "b", "kb-b")
    a = kernel(tmp_path / "a", "kb-a", [v1("org/b")])
    set_local_kernels(monkeypatch, {"org/b": b})
    module = get_local_kernel(a)
    assert module.VALUE == "kb-a(kb-b())"
    assert loaded_names() == ["kb-b", "kb-a"]  # the dependency was imported before its dependent
    loaded_b, loaded_a = get_loaded_kernels()
    assert module.DEPS["org/b"] is loaded_b.module and loaded_a.module is module


def test_get_kernel_with_every_kernel_mapped_needs_no_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An author's checkout of a whole tree: the kernel and its dependencies all in LOCAL_KERNELS, transitive."""
    c = kernel(tmp_path / "c", "kb-c")
    b = kernel(tmp_path / "b", "kb-b", [v1("org/c")])
    a = kernel(tmp_path / "a", "kb-a", [v1("org/b"), {"repo-id": "org/c", "revision": "main"}])
    set_local_kernels(monkeypatch, {"org/a": a, "org/b": b, "org/c": c})
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: a Hub request would fail
    module = get_kernel("org/a", version=1)
    assert module.VALUE == "kb-a(kb-b(kb-c()),kb-c())"
    assert loaded_names() == ["kb-c", "kb-b", "kb-a"]  # kb-c once, although two kernels need it


def test_a_cycle_is_one_error_naming_the_chain_and_nothing_is_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = kernel(tmp_path / "a", "kb-a", [v1("org/b")])
    b = kernel(tmp_path / "b", "kb-b", [v1("org/c")])
    c = kernel(tmp_path / "c", "kb-c", [v1("org/a")])
    set_local_kernels(monkeypatch, {"org/a": a, "org/b": b, "org/c": c})
    with pytest.raises(KernelDependencyError, match="cycle: org/a -> org/b -> org/c -> org/a;") as caught:
        get_kernel("org/a", version=1)
    assert caught.value.chain == ("org/a", "org/b", "org/c", "org/a")
    assert isinstance(caught.value, ValueError)  # what upstream raises for a cycle
    assert get_loaded_kernels() == []


def test_a_kernel_depending_on_itself_is_a_cycle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    a = kernel(tmp_path / "a", "kb-a", [v1("org/a")])
    set_local_kernels(monkeypatch, {"org/a": a})
    with pytest.raises(KernelDependencyError, match=r"cycle: org/a -> org/a;"):
        get_kernel("org/a", version=1)


def test_a_dependency_with_a_wrong_digest_is_refused_before_any_import(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = kernel(tmp_path / "b", "kb-b")
    (b / "build" / VARIANT / "__init__.py").write_text("VALUE = 'tampered'\n", encoding="utf-8")
    a = kernel(tmp_path / "a", "kb-a", [v1("org/b")])
    set_local_kernels(monkeypatch, {"org/b": b})
    with pytest.raises(
        KernelIntegrityError, match=r"kernel dependency .*build/torch-cpu -> org/b: "
    ) as caught:
        get_local_kernel(a)
    assert "__init__.py: mismatch" in str(caught.value)
    assert get_loaded_kernels() == []


def test_an_undeclared_dependency_names_the_declared_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    b = kernel(tmp_path / "b", "kb-b")
    init = "from kernel_builder import get_kernel_dep\n\nget_kernel_dep('org/other')\n"
    a = kernel(tmp_path / "a", "kb-a", [v1("org/b")], init=init)
    set_local_kernels(monkeypatch, {"org/b": b})
    with pytest.raises(RuntimeError, match=r"asked for dependency 'org/other', which it does not declare "
                       r"\(declared: org/b\)"):  # fmt: skip
        get_local_kernel(a)
    assert loaded_names() == ["kb-b"]  # the dependency loaded; the failing kernel was not registered


def test_the_depth_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dependencies_module, "MAX_DEPTH", 2)
    roots = {f"org/k{i}": kernel(tmp_path / f"k{i}", f"kb-k{i}", [v1(f"org/k{i + 1}")]) for i in range(4)}
    set_local_kernels(monkeypatch, roots)
    with pytest.raises(
        KernelDependencyError, match=r"nested more than 2 deep: org/k0 -> org/k1 -> org/k2 -> org/k3"
    ):
        get_kernel("org/k0", version=1)


def test_the_tree_api_resolves_without_fetching(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """resolve_dependencies reads metadata only; install() verifies; load() imports bottom-up."""
    b = kernel(tmp_path / "b", "kb-b")
    set_local_kernels(monkeypatch, {"org/b": b})
    fetched: list[str] = []

    class Recording:
        def locate(self, dependency: KernelDependency) -> Located | None:
            located = dependency_sources("cpu")[0].locate(dependency)
            assert located is not None

            def fetch() -> tuple[Path, Any]:
                fetched.append(dependency.repo_id)
                return located.fetch()

            return Located(located.label, located.metadata, fetch)

    tree = resolve_dependencies("me", (KernelDependency("org/b", 1),), [Recording()])
    assert tree.repo_ids == ("org/b",) and fetched == [] and get_loaded_kernels() == []
    tree.install()
    assert fetched == ["org/b"] and get_loaded_kernels() == []
    modules = tree.load()
    assert fetched == ["org/b"] and modules["org/b"].VALUE == "kb-b()"


# --- the Hub ----------------------------------------------------------------------------------------------------


def publish(hub: HubServer, tmp_path: Path, repo_id: str, root: Path, branch: str = "v1") -> str:
    """Commit ``root/build`` to ``repo_id`` on ``branch`` (created from main); returns the commit SHA."""
    with contextlib.suppress(HubError):  # 409: it exists already
        hub.create_repo(repo_id)
    if branch not in hub.branches(repo_id):
        hub.create_branch(repo_id, branch)
    return hub.commit(repo_id, files_from_directory(root / "build", "build"), branch=branch)


def test_get_kernel_loads_hub_dependencies_verified_and_recorded(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization("org")
    sha_c = publish(hub, tmp_path, "org/c", kernel(tmp_path / "c", "kb-c"))
    sha_b = publish(hub, tmp_path, "org/b", kernel(tmp_path / "b", "kb-b", [v1("org/c")]))
    publish(hub, tmp_path, "org/a", kernel(tmp_path / "a", "kb-a", [v1("org/b")]))
    module = get_kernel("org/a", version=1)
    assert module.VALUE == "kb-a(kb-b(kb-c()))"
    assert [(k.metadata.name, k.repo_info and k.repo_info.revision) for k in get_loaded_kernels()] == [
        ("kb-c", sha_c),
        ("kb-b", sha_b),
        ("kb-a", hub.resolve("org/a", "v1")),
    ]


def test_a_revision_dependency_pins_that_revision(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization("org")
    old = publish(hub, tmp_path, "org/b", kernel(tmp_path / "b1", "kb-b", init="VALUE = 'old'\n"))
    publish(hub, tmp_path, "org/b", kernel(tmp_path / "b2", "kb-b", init="VALUE = 'new'\n", tag="2"))
    publish(hub, tmp_path, "org/a", kernel(tmp_path / "a", "kb-a", [{"repo-id": "org/b", "revision": old}]))
    assert get_kernel("org/a", version=1).VALUE == "kb-a(old)"


def test_an_untrusted_dependency_is_refused_before_any_download(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization("org")
    hub.add_organization("other", trusted=False)
    publish(hub, tmp_path, "other/b", kernel(tmp_path / "b", "kb-b"))
    publish(hub, tmp_path, "org/a", kernel(tmp_path / "a", "kb-a", [v1("other/b")]))
    with pytest.raises(UntrustedKernelError, match=r"kernel dependency org/a -> other/b: cannot load other/b: "
                       r"organization 'other' is not a trusted kernel publisher"):  # fmt: skip
        get_kernel("org/a", version=1)
    downloads = [r.path for r in hub.requests if "/resolve/" in r.path and r.path.endswith("__init__.py")]
    assert downloads == []  # the tree is resolved (metadata only) before any variant is downloaded
    assert get_kernel("org/a", version=1, trust_remote_code=True).VALUE == "kb-a(kb-b())"


def test_a_missing_dependency_names_the_chain(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization("org")
    publish(hub, tmp_path, "org/b", kernel(tmp_path / "b", "kb-b", [v1("org/missing")]))
    publish(hub, tmp_path, "org/a", kernel(tmp_path / "a", "kb-a", [v1("org/b")]))
    with pytest.raises(
        KernelDependencyError,
        match=r"kernel dependency org/a -> org/b -> org/missing: cannot "
        r"resolve org/missing \(version 1\): repository org/missing does not exist",
    ) as caught:
        get_kernel("org/a", version=1)  # fmt: skip
    assert caught.value.chain == ("org/a", "org/b", "org/missing")
    assert get_loaded_kernels() == []


def test_a_missing_version_lists_the_available_ones(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization("org")
    publish(hub, tmp_path, "org/b", kernel(tmp_path / "b", "kb-b"))
    publish(hub, tmp_path, "org/a", kernel(tmp_path / "a", "kb-a", [{"repo-id": "org/b", "version": 3}]))
    with pytest.raises(KernelDependencyError, match=r"org/a -> org/b: cannot resolve org/b \(version 3\): org/b "
                       r"has no version 3 \(no branch v3\); available versions: 1"):  # fmt: skip
        get_kernel("org/a", version=1)


def test_a_hub_dependency_with_a_wrong_digest_is_refused(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization("org")
    b = kernel(tmp_path / "b", "kb-b")
    (b / "build" / VARIANT / "__init__.py").write_text("VALUE = 'tampered'\n", encoding="utf-8")
    publish(hub, tmp_path, "org/b", b)
    publish(hub, tmp_path, "org/a", kernel(tmp_path / "a", "kb-a", [v1("org/b")]))
    with pytest.raises(
        KernelIntegrityError, match=r"(?s)kernel dependency org/a -> org/b: .*__init__.py: mismatch"
    ):
        get_kernel("org/a", version=1)
    assert get_loaded_kernels() == []


def test_offline_the_tree_loads_from_the_cache(
    hub: HubServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub.add_organization("org")
    publish(hub, tmp_path, "org/b", kernel(tmp_path / "b", "kb-b"))
    publish(hub, tmp_path, "org/a", kernel(tmp_path / "a", "kb-a", [v1("org/b")]))
    get_kernel("org/a", version=1)
    reset_loader()
    hub.clear_requests()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert get_kernel("org/a", version=1).VALUE == "kb-a(kb-b())"
    assert hub.requests == []


def test_a_local_kernel_takes_unmapped_dependencies_from_the_hub(hub: HubServer, tmp_path: Path) -> None:
    """get_local_kernel, like upstream's, downloads what LOCAL_KERNELS does not map (behind the trust gate)."""
    hub.add_organization("org", trusted=False)
    publish(hub, tmp_path, "org/b", kernel(tmp_path / "b", "kb-b"))
    a = kernel(tmp_path / "a", "kb-a", [v1("org/b")])
    with pytest.raises(UntrustedKernelError, match=r"-> org/b: cannot load org/b"):
        get_local_kernel(a)
    assert get_local_kernel(a, trust_remote_code=True).VALUE == "kb-a(kb-b())"


def test_install_kernel_downloads_the_dependencies_too(hub: HubServer, tmp_path: Path) -> None:
    hub.add_organization("org")
    sha_b = publish(hub, tmp_path, "org/b", kernel(tmp_path / "b", "kb-b"))
    publish(hub, tmp_path, "org/a", kernel(tmp_path / "a", "kb-a", [v1("org/b")]))
    path = install_kernel("org/a", revision="v1")
    assert (path / "__init__.py").is_file()
    cache = Path(os.environ["KERNELS_CACHE"])
    assert (cache / "kernels--org--b" / "snapshots" / sha_b / "build" / VARIANT / "__init__.py").is_file()
    assert get_loaded_kernels() == []  # nothing imported


def test_a_local_kernels_entry_that_does_not_exist_names_the_chain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = kernel(tmp_path / "a", "kb-a", [v1("org/b")])
    set_local_kernels(monkeypatch, {"org/a": a, "org/b": tmp_path / "nowhere"})
    with pytest.raises(KernelDependencyError, match=r"^kernel dependency org/a -> org/b: cannot resolve org/b "
                       r"\(version 1\): LOCAL_KERNELS maps org/b to .*nowhere, which does not exist"):  # fmt: skip
        get_kernel("org/a", version=1)
