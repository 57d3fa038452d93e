"""A two-kernel dependency tree built by our builder, uploaded by our ``upload`` to the Hub double, loaded by our
``get_kernel`` and by upstream ``kernels.get_kernel`` (differential); and the Hub source's own behaviour.

``org/b`` is a pure-Python (``[torch-noarch]``) kernel with ``triple``; ``org/a`` lists it in ``kernel-depends``
and takes it at import time. One build of ``org/a`` serves both loaders: it asks ``kernel_builder.get_kernel_dep``
first and falls back to ``kernels.get_kernel_dep`` when that is not the loader importing it (a ``RuntimeError``
outside our loads), which is how a kernel written for both loaders reads. Under our loader it also records
whether upstream's ``kernels.get_kernel_dep`` returns the same module, since kernels written for upstream only
call that one. Each loader runs in its own interpreter with its own cache: upstream reads ``HF_ENDPOINT`` and
its cache location at import.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import warm_python
from build_runs import NO_IMPORT_CHECK, REPO, build
from cpu_projects import GENERAL, write_tree
from hub_server import HubServer, files_from_directory
from loader_fixtures import write_variant
from publish_fixtures import cpu_machine, run_cli  # noqa: F401 (fixture)
from upstream_kernels import loader_child_env

from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.loader import KernelDependencyError, get_loaded_kernels
from kernel_builder.loader.hub_dependencies import HubSource

B_INIT = """
    import torch

    from ._ops import ops


    def triple(x: torch.Tensor) -> torch.Tensor:
        return x * 3
"""

A_INIT = """
    import importlib.util

    import torch

    from ._ops import ops


    def _dependency(repo_id):
        try:
            from kernel_builder import get_kernel_dep
        except ImportError:
            pass
        else:
            try:
                return get_kernel_dep(repo_id), "kernel_builder"
            except RuntimeError:  # imported by another loader
                pass
        from kernels import get_kernel_dep as upstream_get_kernel_dep

        return upstream_get_kernel_dep(repo_id), "kernels"


    b, PROVIDER = _dependency("org/b")
    UPSTREAM_SEES_B = None
    if importlib.util.find_spec("kernels") is not None:
        from kernels import get_kernel_dep as _upstream_get_kernel_dep

        UPSTREAM_SEES_B = _upstream_get_kernel_dep("org/b") is b


    def six_times(x: torch.Tensor) -> torch.Tensor:
        return b.triple(x) * 2
"""


def project(root: Path, name: str, init: str, depends: str = "") -> Path:
    general = GENERAL.format(name=name, backends='["cpu"]') + depends
    package = name.replace("-", "_")
    return write_tree(
        root,
        {
            "build.toml": general + "\n[torch-noarch]\n",
            f"torch-ext/{package}/__init__.py": init,
            "CARD.md": f"# {name}\n\nA kernel of the dependency tests.\n",
        },
    )


@pytest.fixture(scope="module")
def built_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """``kb-dep-b`` and ``kb-dep-a`` (needing ``org/b`` version 1) built by the CLI; A's build finds B through
    ``LOCAL_KERNELS``, as an author's would, for its import check (with both loaders). B's own import check is not
    the subject: the tests load B themselves, through A."""
    work = tmp_path_factory.mktemp("dependency-tree")
    b = project(work / "b", "kb-dep-b", B_INIT)
    a = project(work / "a", "kb-dep-a", A_INIT, 'kernel-depends = [{ repo-id = "org/b", version = 1 }]\n')
    build(b, NO_IMPORT_CHECK)
    build(a, env={"LOCAL_KERNELS": f"org/b={b}"})
    return a, b


def only_variant(root: Path) -> Path:
    (variant,) = [path for path in (root / "build").iterdir() if path.is_dir()]
    return variant


LOAD = """
    import json, sys
    import torch

    loader, repo_id = sys.argv[1:]
    if loader == "kernels":
        import kernels as api
    else:
        import kernel_builder as api
    try:
        a = api.get_kernel(repo_id, version=1)
    except Exception as error:
        print(json.dumps({"error": type(error).__name__, "message": str(error)}))
        raise SystemExit(0)
    print(json.dumps({
        "module": a.__name__,
        "dependency": a.b.__name__,
        "result": a.six_times(torch.tensor([1.0, -2.0])).tolist(),
        "provider": a.PROVIDER,
        "upstream_sees_b": a.UPSTREAM_SEES_B,
    }))
"""


def load_with(loader: str, work: Path, repo_id: str = "org/a") -> dict[str, Any]:
    """``get_kernel(repo_id, version=1)`` by ``loader`` in a fresh interpreter against the double (environment
    from the ``hub`` fixture), with a cache of its own; what it saw, or the error."""
    work.mkdir(parents=True, exist_ok=True)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    env = loader_child_env(work / "cache", drop=("LOCAL_KERNELS",), PYTHONPATH=path)
    result = warm_python.run(
        [sys.executable, "-c", textwrap.dedent(LOAD), loader, repo_id],
        capture_output=True, text=True, env=env, cwd=work, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, f"{loader}:\n{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    seen: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return seen


def upload(capsys: pytest.CaptureFixture[str], root: Path, repo_id: str) -> None:
    run = run_cli(capsys, "upload", str(root), "--repo-id", repo_id)
    assert run.code == 0, run.err


@pytest.mark.slow
def test_built_and_uploaded_tree_loads_with_both_loaders(
    hub: HubServer, built_tree: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("kernels")
    a, b = built_tree
    upload(capsys, b, "org/b")
    upload(capsys, a, "org/a")
    hub.add_organization("org")
    a_meta = json.loads((only_variant(a) / "metadata.json").read_text(encoding="utf-8"))
    b_meta = json.loads((only_variant(b) / "metadata.json").read_text(encoding="utf-8"))
    assert a_meta["kernel-depends"] == [{"repo-id": "org/b", "version": 1}]

    ours = load_with("kernel_builder", tmp_path / "ours")
    theirs = load_with("kernels", tmp_path / "theirs")
    expected = {
        "module": a_meta["id"],
        "dependency": b_meta["id"],
        "result": [6.0, -12.0],
        "upstream_sees_b": True,
    }
    assert ours == {**expected, "provider": "kernel_builder"}
    assert theirs == {**expected, "provider": "kernels"}


@pytest.mark.slow
def test_an_untrusted_dependency_fails_with_both_loaders(
    hub: HubServer, built_tree: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The trust gate applies to the dependency's organization in both loaders: the kernel (published by a
    trusted organization) loads only if its dependency's publisher is trusted too."""
    pytest.importorskip("kernels")
    a, b = built_tree
    upload(capsys, b, "org/b")
    upload(capsys, a, "good/a")
    hub.add_organization("good")
    hub.add_organization("org", trusted=False)
    ours = load_with("kernel_builder", tmp_path / "ours", "good/a")
    theirs = load_with("kernels", tmp_path / "theirs", "good/a")
    assert ours == {
        "error": "UntrustedKernelError",
        "message": f"kernel dependency good/a -> org/b: cannot load org/b: organization 'org' is not a trusted "
        f"kernel publisher on {hub.url}, and kernels run arbitrary code. If you trust org, pass "
        f"trust_remote_code=True.",
    }
    assert theirs["error"] == "ValueError" and "'org/b'" in theirs["message"]


# --- the Hub source alone ----------------------------------------------------------------------------------------


def publish_variant(hub: HubServer, tmp_path: Path, repo_id: str, value: str, branch: str) -> str:
    directory = tmp_path / repo_id.replace("/", "-") / branch
    write_variant(
        directory / "build" / "torch-cpu",
        name="kb-hub",
        kernel_id=f"_kb_hub_{branch}",
        files={"__init__.py": f"VALUE = {value!r}\n"},
    )
    if branch not in hub.branches(repo_id):
        hub.create_branch(repo_id, branch)
    return hub.commit(repo_id, files_from_directory(directory / "build", "build"), branch=branch)


@pytest.mark.usefixtures("cpu_machine")
def test_revision_for_pins_each_dependency_to_the_given_commit(hub: HubServer, tmp_path: Path) -> None:
    """For locked loads: the callback's commit wins over the dependency's own version."""
    hub.create_repo("org/hub")
    hub.add_organization("org")
    old = publish_variant(hub, tmp_path, "org/hub", "old", "v1")
    publish_variant(hub, tmp_path, "org/hub", "new", "v2")
    asked: list[KernelDependency] = []

    def revision_for(dependency: KernelDependency) -> str:
        asked.append(dependency)
        return old

    source = HubSource(
        "cpu",
        trust_remote_code=False,
        user_agent=None,
        verify_digest=None,
        offline=None,
        revision_for=revision_for,
    )
    dependency = KernelDependency("org/hub", version=2)
    located = source.locate(dependency)
    assert asked == [dependency]
    assert located.repo_info is not None and located.repo_info.revision == old
    directory, metadata = located.fetch()
    assert (directory / "__init__.py").read_text(encoding="utf-8") == "VALUE = 'old'\n"
    assert metadata.name == "kb-hub" and get_loaded_kernels() == []


@pytest.mark.usefixtures("cpu_machine")
def test_a_missing_repository_is_a_lookup_error(hub: HubServer) -> None:
    source = HubSource(
        "cpu", trust_remote_code=True, user_agent=None, verify_digest=None, offline=None, revision_for=None
    )
    with pytest.raises(LookupError, match=f"repository org/none does not exist on {hub.url}"):
        source.locate(KernelDependency("org/none", version=1))


@pytest.mark.usefixtures("cpu_machine")
def test_the_chain_error_wraps_it(hub: HubServer) -> None:
    from kernel_builder.loader.dependencies import resolve_dependencies

    source = HubSource(
        "cpu", trust_remote_code=True, user_agent=None, verify_digest=None, offline=None, revision_for=None
    )
    with pytest.raises(
        KernelDependencyError, match=r"^kernel dependency root -> org/none: cannot resolve org/none"
    ):
        resolve_dependencies("root", (KernelDependency("org/none", revision="main"),), [source])
