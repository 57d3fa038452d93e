"""``kernels.lock`` both ways with upstream's ``kernels`` (0.19.1, the test extra's pin, and 0.17.2), the kernel-dependency tree, and hostile lock files.

Upstream runs as its own CLI and loader in subprocesses against the same Hub double (tests/hub_server.py), with
a cache of its own, so each side downloads and loads what it locked or was given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import warm_python
from hub_server import HubServer, files_from_directory
from loader_fixtures import write_variant
from publish_fixtures import CPU, CUDA, cpu_machine, run_cli  # noqa: F401 (fixture)
from upstream_kernels import INSTALLED, KERNELS_0_17_2, UPSTREAM_MAIN, child_env, loader_child_env

from kernel_builder.formats.lockfile import (
    LOCK_LIMIT,
    LockEntry,
    LockFileError,
    find_dependency,
    find_entry,
    parse_lock,
    render_lock,
)
from kernel_builder.loader import get_locked_kernel, load_kernel

pytestmark = pytest.mark.usefixtures("cpu_machine")

PROJECT_ROOT = Path(__file__).resolve().parents[1]
A, B = "org/alpha", "org/beta"
SHA = "0123456789abcdef0123456789abcdef01234567"


def kernel_id(repo_id: str) -> str:
    return "_" + repo_id.split("/")[1].replace("-", "_") + "_cpu_1"


def seed(
    hub: HubServer,
    tmp_path: Path,
    repo_id: str,
    depends: Sequence[Mapping[str, Any]] = (),
    *,
    variants: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> str:
    """Publish ``v1`` of ``repo_id`` (its org trusted) with a CPU variant whose metadata lists ``depends``.

    The v1 tree holds ``build/`` only: upstream's offline ``load_kernel`` wants the whole snapshot in the cache
    (huggingface_hub refuses an incomplete one), and upstream's ``download`` fetches just ``build/<variant>``.
    """
    org = repo_id.split("/")[0]
    hub.add_organization(org)
    hub.create_repo(repo_id)
    directory = tmp_path / f"seed-{repo_id.replace('/', '-')}"
    for name, deps in (variants or {CPU: depends}).items():
        backend = "cuda" if name == CUDA else "cpu"
        write_variant(
            directory / name,
            name=repo_id.split("/")[1],
            kernel_id=kernel_id(repo_id) if name == CPU else kernel_id(repo_id) + "_cuda",
            backend=backend,
            extra={"kernel-depends": list(deps)},
        )
    hub.create_branch(repo_id, "v1")
    return hub.commit(
        repo_id, files_from_directory(directory, "build"), branch="v1", delete=[".gitattributes"]
    )


def project(tmp_path: Path, dependencies: str, name: str = "app") -> Path:
    directory = tmp_path / name
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1"\n\n[tool.kernels.dependencies]\n{dependencies}',
        encoding="utf-8",
    )
    return directory


RELEASES = [INSTALLED, KERNELS_0_17_2]


def upstream_env(cache: Path, factory: pytest.TempPathFactory, release: str) -> dict[str, str]:
    """The environment of a child interpreter running upstream's ``kernels`` ``release``."""
    return child_env(factory, release, loader_child_env(cache, drop=("HF_HUB_OFFLINE",)))


def upstream(
    cache: Path, factory: pytest.TempPathFactory, release: str, *args: str
) -> subprocess.CompletedProcess[str]:
    """Upstream's ``kernels`` command line, of ``release``."""
    pytest.importorskip("kernels")
    code = f"import sys\n{UPSTREAM_MAIN}\nsys.argv[0] = 'kernels'\nmain()\n"
    return warm_python.run(
        [sys.executable, "-c", code, *args],
        env=upstream_env(cache, factory, release),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


#: Printed on both streams between upstream's download and its loads (:func:`upstream_download_and_load`).
LOADS_START = "--- kb-test: download done, exit status "

DOWNLOAD_AND_LOAD = f"""
import json, sys
from pathlib import Path
import kernels
{UPSTREAM_MAIN}

project, lock, calls = sys.argv[1:]
sys.argv = ["kernels", "download", project]
try:
    main()
    status = 0
except SystemExit as stop:
    status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
print("{LOADS_START}" + str(status), flush=True)
print("{LOADS_START}" + str(status), file=sys.stderr, flush=True)
if status == 0:
    for function, repo_id in json.loads(calls):
        module = getattr(kernels, function)(repo_id, lockfile=Path(lock))
        print(module.__name__, module.__file__)
"""


def upstream_download_and_load(
    cache: Path,
    factory: pytest.TempPathFactory,
    release: str,
    project_dir: Path,
    lock: Path,
    *calls: tuple[str, str],
) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """``kernels download PROJECT_DIR`` (upstream's command line), then upstream's ``load_kernel`` /
    ``get_locked_kernel`` for each ``(function, repo id)`` of ``calls``, in one interpreter (one import of torch and kernels for both; what joins them is the cache on disk). The download's
    result (its exit status and output, the loads' left out), and per load the module's name and file."""
    pytest.importorskip("kernels")
    result = warm_python.run(
        [sys.executable, "-c", DOWNLOAD_AND_LOAD, str(project_dir), str(lock), json.dumps(calls)],
        env=upstream_env(cache, factory, release),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out, marker, loads = result.stdout.partition(LOADS_START)
    err, _, _ = result.stderr.partition(LOADS_START)
    assert marker, f"upstream's download did not return:\n{result.stdout}\n{result.stderr}"
    status, _, loads = loads.partition("\n")
    download = subprocess.CompletedProcess(result.args, int(status), out, err)
    if download.returncode == 0:
        assert result.returncode == 0, result.stderr
    return download, [line.split() for line in loads.splitlines()]


def two_kernel_tree(hub: HubServer, tmp_path: Path) -> tuple[str, str]:
    """``org/alpha`` v1, whose CPU variant depends on ``org/beta`` v1; their commits."""
    sha_b = seed(hub, tmp_path, B)
    sha_a = seed(hub, tmp_path, A, [{"repo-id": B, "version": 1}])
    return sha_a, sha_b


def expected_lock(*entries: tuple[str, str]) -> list[dict[str, Any]]:
    return [{"dependency": {"repo-id": r, "version": 1}, "lock": {"commit": s}} for r, s in entries]


# --- differential: upstream's lock with our download and loads, ours with upstream's ------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_a_lock_by_kernels_downloads_and_loads_here(
    hub: HubServer,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    release: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sha_a, sha_b = two_kernel_tree(hub, tmp_path)
    theirs = project(tmp_path, f'"{A}" = 1\n', name="theirs")
    result = upstream(tmp_path / "upstream-cache", tmp_path_factory, release, "lock", str(theirs))
    assert result.returncode == 0, result.stderr
    lock = theirs / "kernels.lock"
    assert json.loads(lock.read_text()) == expected_lock((A, sha_a), (B, sha_b))  # the whole tree

    # Ours locks the same project to the same bytes.
    ours = project(tmp_path, f'"{A}" = 1\n', name="ours")
    run = run_cli(capsys, "lock", str(ours))
    assert (run.code, run.out) == (0, f"wrote {ours / 'kernels.lock'} (2 kernel(s))\n"), run.err
    assert (ours / "kernels.lock").read_bytes() == lock.read_bytes()

    run = run_cli(capsys, "download", str(theirs))
    cache = Path(os.environ["KERNELS_CACHE"])
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        f"{repo_id} {CPU}: {cache / ('kernels--' + repo_id.replace('/', '--'))}/snapshots/{sha}/build/{CPU}"
        for repo_id, sha in ((A, sha_a), (B, sha_b))
    ]
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub.clear_requests()
    ours_a = load_kernel(A, lockfile=lock)
    ours_b = load_kernel(B, lockfile=lock)
    assert hub.requests == []

    # Upstream, from its own download of its own lock, loads the same modules at the same commits.
    download, loaded = upstream_download_and_load(
        tmp_path / "upstream-cache",
        tmp_path_factory,
        release,
        theirs,
        lock,
        ("load_kernel", A),
        ("load_kernel", B),
    )
    assert download.returncode == 0
    for (name, file), repo_id, sha, module in zip(loaded, (A, B), (sha_a, sha_b), (ours_a, ours_b)):
        assert name == module.__name__ == kernel_id(repo_id)
        assert f"/snapshots/{sha}/build/{CPU}/" in file and f"/snapshots/{sha}/build/{CPU}/" in str(
            module.__file__
        )


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_a_lock_by_kernel_builder_downloads_and_loads_with_kernels(
    hub: HubServer,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    release: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sha_a, sha_b = two_kernel_tree(hub, tmp_path)
    app = project(tmp_path, f'"{A}" = 1\n')
    assert run_cli(capsys, "lock", str(app)).code == 0
    lock = app / "kernels.lock"
    assert json.loads(lock.read_text()) == expected_lock((A, sha_a), (B, sha_b))

    cache = tmp_path / "upstream-cache"
    result, loaded = upstream_download_and_load(
        cache,
        tmp_path_factory,
        release,
        app,
        lock,
        ("load_kernel", A),
        ("get_locked_kernel", A),
        ("load_kernel", B),
    )
    assert result.returncode == 0, result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("Downloading kernel")] == [
        f"Downloading kernel: {A} (revision: {sha_a})",
        f"Downloading kernel: {B} (revision: {sha_b})",
    ]
    assert [name for name, _ in loaded] == [kernel_id(A), kernel_id(A), kernel_id(B)]
    assert all(
        f"/snapshots/{sha}/build/{CPU}/" in file for (_, file), sha in zip(loaded, (sha_a, sha_a, sha_b))
    )

    # Ours, from the same lock: the same module at the same commit.
    module = get_locked_kernel(A, lockfile=lock)
    assert module.__name__ == kernel_id(A) and f"/snapshots/{sha_a}/build/{CPU}/" in str(module.__file__)


@pytest.mark.slow
@pytest.mark.parametrize("release", RELEASES)
def test_both_refuse_a_dependency_cycle(
    hub: HubServer,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    release: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seed(hub, tmp_path, A, [{"repo-id": B, "version": 1}])
    seed(hub, tmp_path, B, [{"repo-id": A, "version": 1}])
    app = project(tmp_path, f'"{A}" = 1\n')
    run = run_cli(capsys, "lock", str(app))
    assert run.code == 1
    assert run.err.splitlines()[-2:] == [
        f"error: {A}: kernel dependency cycle: {A} v1 -> {B} v1 -> {A} v1",
        f"error: {app / 'kernels.lock'} was not written (1 repo(s) failed)",
    ]
    assert not (app / "kernels.lock").exists()
    result = upstream(tmp_path / "upstream-cache", tmp_path_factory, release, "lock", str(app))
    assert result.returncode != 0 and f"Cyclic kernel dependency detected: {A}" in result.stderr
    assert not (app / "kernels.lock").exists()


def test_a_failing_dependency_names_the_chain(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(hub, tmp_path, A, [{"repo-id": B, "version": 2}])
    seed(hub, tmp_path, B)
    app = project(tmp_path, f'"{A}" = 1\n')
    run = run_cli(capsys, "lock", str(app))
    assert run.code == 1
    assert run.err.splitlines()[0] == (
        f"error: {A}: {A} v1 -> {B} v2 (kernel-depends of {A} build/{CPU}/metadata.json): {B} has no version 2 "
        f"(no branch v2); available versions: 1"
    )


# --- download: every entry, verified ----------------------------------------------------------------------------


def test_download_needs_every_dependency_pinned(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha_a, _ = two_kernel_tree(hub, tmp_path)
    app = project(tmp_path, f'"{A}" = 1\n')
    (app / "kernels.lock").write_text(json.dumps(expected_lock((A, sha_a))), encoding="utf-8")
    run = run_cli(capsys, "download", str(app))
    assert run.code == 1
    assert [line for line in run.err.splitlines() if line.startswith("error: ")] == [
        f"error: {A} at {sha_a}: build/{CPU} depends on {B} v1, which the lock does not pin. Re-create the lock "
        f"with `kernel-builder lock {app}`",
        "error: 1 of 1 kernel(s) failed",
    ]


def test_download_skips_a_dependency_no_variant_here_needs(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """org/alpha's CUDA variant depends on org/beta, which has CUDA only: this CPU machine needs neither."""
    sha_b = seed(hub, tmp_path, B, variants={CUDA: []})
    sha_a = seed(hub, tmp_path, A, variants={CPU: [], CUDA: [{"repo-id": B, "version": 1}]})
    app = project(tmp_path, f'"{A}" = 1\n')
    assert run_cli(capsys, "lock", str(app)).code == 0
    assert json.loads((app / "kernels.lock").read_text()) == expected_lock((A, sha_a), (B, sha_b))
    run = run_cli(capsys, "download", str(app))
    assert run.code == 0, run.err
    assert run.out.startswith(f"{A} {CPU}: ")
    assert [line for line in run.err.splitlines() if not line.startswith("downloaded ")] == [
        f"warning: {B} at {sha_b}: skipped: no variant for this machine, and no kernel downloaded here depends on it"
    ]
    run = run_cli(capsys, "download", str(app), "--all-variants")
    assert run.code == 0 and len(run.out.splitlines()) == 3  # a: cpu and cuda, b: cuda


def test_download_checks_the_served_bytes_against_the_tree_at_the_locked_commit(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = seed(hub, tmp_path, A)
    app = project(tmp_path, f'"{A}" = 1\n')
    assert run_cli(capsys, "lock", str(app)).code == 0
    # The Hub now serves other bytes, of the same size, for a file of the locked commit.
    stored = hub._repos[("kernel", A)].commits[sha].files[f"build/{CPU}/_ops.py"]
    blob = hub._storage / stored.key
    original = blob.read_bytes()
    blob.write_bytes(original.replace(b"ops", b"evl", 1))
    run = run_cli(capsys, "download", str(app))
    assert run.code == 1
    assert "do not match the repository's tree:" in run.err
    assert "  _ops.py: mismatch (git blob SHA-1 is " in run.err and f"the tree lists {stored.oid})" in run.err


# --- the format: what upstream reads, we read; what we write, upstream reads ---------------------------------------


def test_what_we_write_is_what_kernels_writes() -> None:
    rust = pytest.importorskip("kernels._rust")
    entries = [
        LockEntry("org/b", "b" * 40, revision="main"),
        LockEntry("org/a", "a" * 40, version=10),
        LockEntry("Org/z", "c" * 40, version=1),
        LockEntry("org/a", "d" * 40, version=2),
        LockEntry("org/a", "e" * 40, revision="abc"),
        LockEntry("org/a-b", "f" * 40, version=1),
    ]
    text = render_lock(entries)
    theirs = rust.KernelLocks.from_json(text)
    assert theirs.to_json() == text  # upstream reads it, and writes the same bytes back
    assert parse_lock(theirs.to_json()) == sorted(entries, key=LockEntry.sort_key)
    # The first entry of a repo, in upstream's order, is the one a locked load of it uses.
    found = find_entry(parse_lock(text), "org/a")
    assert found is not None and (found.version, found.sha) == (2, "d" * 40)
    assert find_dependency(parse_lock(text), "org/a", None, "abc") == entries[4]


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            [{"dependency": {"repo-id": A, "version": 1}, "lock": {"commit": SHA, "variants": {}}}],
            "entry 0.lock (org/alpha): unknown key \"variants\" (expected 'commit'; the kernels loader refuses any "
            "other)",
        ),
        (
            [{"dependency": {"repo-id": A, "version": 1}, "lock": {"commit": SHA}, "hash": "x"}],
            'entry 0: unknown key "hash"',
        ),
        (
            [{"dependency": {"repo-id": A, "version": 1, "revision": "main"}, "lock": {"commit": SHA}}],
            "entry 0.dependency (org/alpha): expected exactly one of 'version' and 'revision'",
        ),
        ([{"dependency": {"repo-id": A}, "lock": {"commit": SHA}}], "expected exactly one of"),
        (
            [{"dependency": {"repo-id": A, "version": -1}, "lock": {"commit": SHA}}],
            "expected a major version",
        ),
        (
            [{"dependency": {"repo-id": A, "version": "1"}, "lock": {"commit": SHA}}],
            "expected a major version",
        ),
        (
            [{"dependency": {"repo-id": A, "version": 1}, "lock": {"commit": "main"}}],
            "expected a 40-hex commit",
        ),
        ([{"dependency": {"repo-id": A, "version": 1}}], "entry 0: missing 'lock'"),
        ({}, "top level: expected a list of entries"),
        (
            [{"dependency": {"repo-id": A, "version": 1}, "lock": {"commit": SHA}}] * 2,
            "entry 1: org/alpha v1 is locked twice (also entry 0)",
        ),
    ],
    ids=[
        "key-in-lock",
        "key-in-entry",
        "version-and-revision",
        "neither",
        "negative",
        "string-version",
        "branch-commit",
        "no-lock",
        "object",
        "duplicate",
    ],
)
def test_both_refuse(document: object, message: str) -> None:
    """Each document upstream's parser refuses, ours refuses too, saying where and why."""
    rust = pytest.importorskip("kernels._rust")
    text = json.dumps(document)
    with pytest.raises(ValueError, match="Cannot parse KernelLocks"):
        rust.KernelLocks.from_json(text)
    with pytest.raises(LockFileError) as caught:
        parse_lock(text, "app/kernels.lock")
    assert str(caught.value).startswith("app/kernels.lock: invalid lock file: ")
    assert message in str(caught.value)
    assert str(caught.value).endswith("; re-create it with `kernel-builder lock`")


def test_stricter_than_kernels_where_a_value_would_name_a_path() -> None:
    """Upstream accepts these; they would name a cache folder or a request, so we refuse them."""
    rust = pytest.importorskip("kernels._rust")
    for repo_id in ("../x", "a/b/c", "nope"):
        text = json.dumps([{"dependency": {"repo-id": repo_id, "version": 1}, "lock": {"commit": SHA}}])
        rust.KernelLocks.from_json(text)
        with pytest.raises(LockFileError, match=r"entry 0\.dependency\.repo-id: expected '<org>/<name>'"):
            parse_lock(text)


def test_the_older_format_is_read_and_mixing_is_refused() -> None:
    legacy = {"repo_id": A, "sha": SHA.upper(), "variants": {CPU: {"hash": "sha256-" + "0" * 64}}, "note": 1}
    (entry,) = parse_lock(json.dumps([legacy]))
    assert (entry.legacy, entry.sha, list(entry.variants)) == (True, SHA, [CPU])
    assert find_dependency([entry], A, 3, None) is entry  # it records no version: any of its repo's matches
    current = {"dependency": {"repo-id": B, "version": 1}, "lock": {"commit": SHA}}
    with pytest.raises(LockFileError, match="entry 1: the file mixes the kernels format"):
        parse_lock(json.dumps([legacy, current]))
    with pytest.raises(LockFileError, match=r"entry 1: org/alpha is locked twice \(also entry 0\)"):
        parse_lock(json.dumps([legacy, legacy]))


# --- hostile lock files: bounded, one clear error, no traceback -----------------------------------------------


def _hostile(kind: str, lock: Path) -> str:
    """Make ``lock`` hostile; the message expected after the path."""
    if kind == "fifo":
        os.mkfifo(lock)
        return ": cannot be read as a lock file: it is a FIFO, not a regular file"
    if kind == "directory":
        lock.mkdir()
        return ": cannot be read as a lock file: it is a directory, not a regular file"
    if kind == "deep":
        lock.write_text("[" * 100000 + "]" * 100000, encoding="utf-8")
        return ": invalid lock file: not a lock: nested too deeply"
    if kind == "huge":
        with lock.open("wb") as handle:
            handle.truncate(LOCK_LIMIT + 1)
        return f": cannot be read as a lock file: it is larger than 2 MiB ({LOCK_LIMIT + 1} bytes)"
    if kind == "duplicate-entry":
        entry = {"dependency": {"repo-id": A, "version": 1}, "lock": {"commit": SHA}}
        lock.write_text(json.dumps([entry, entry]), encoding="utf-8")
        return ": invalid lock file: entry 1: org/alpha v1 is locked twice (also entry 0)"
    if kind == "duplicate-key":
        lock.write_text(f'[{{"dependency": {{"repo-id": "{A}", "version": 1}}, "lock": {{"commit": "{SHA}", '
                        f'"commit": "{"f" * 40}"}}}}]', encoding="utf-8")  # fmt: skip
        return ': invalid lock file: duplicate key: "commit" appears twice in one object'
    assert kind == "binary"
    lock.write_bytes(b"\xff\xfe[]")
    return ": invalid lock file: not UTF-8"


HOSTILE = ["fifo", "directory", "deep", "huge", "duplicate-entry", "duplicate-key", "binary"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_download_refuses_a_hostile_lock(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = project(tmp_path, f'"{A}" = 1\n')
    lock = app / "kernels.lock"
    expected = _hostile(kind, lock)
    run = run_cli(capsys, "download", str(app))
    assert (run.code, run.out) == (2, "")
    (line,) = run.err.splitlines()
    assert line.startswith(f"error: {lock}{expected}"), line


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_download_refuses_a_hanging_or_deep_lock_at_once(kind: str, tmp_path: Path) -> None:
    """In a subprocess, so that a hang would be cut off: no wait on the FIFO, no RecursionError traceback."""
    app = project(tmp_path, f'"{A}" = 1\n')
    lock = app / "kernels.lock"
    expected = _hostile(kind, lock)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "kernel_builder", "download", str(app)],
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "HF_ENDPOINT": "http://127.0.0.1:9"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert time.monotonic() - started < 30
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {lock}{expected}"), line


@pytest.mark.parametrize("kind", HOSTILE)
def test_locked_loads_refuse_a_hostile_lock(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = project(tmp_path, f'"{A}" = 1\n')
    lock = app / "kernels.lock"
    expected = _hostile(kind, lock)
    for load in (load_kernel, get_locked_kernel):
        with pytest.raises(LockFileError) as caught:
            load(A, lockfile=lock)
        assert str(caught.value).startswith(f"{lock}{expected}")
    # Found by caller detection too: a script of the project, its lock next to pyproject.toml.
    script = app / "main.py"
    script.write_text("import kernel_builder\nkernel_builder.load_kernel('org/alpha')\n", encoding="utf-8")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import runpy

    with pytest.raises(LockFileError, match=f"^{lock}"):
        runpy.run_path(str(script), run_name="__main__")


def test_a_revision_dependency_is_locked_at_its_commit(
    hub: HubServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sha_b = seed(hub, tmp_path, B)
    sha_a = seed(hub, tmp_path, A, [{"repo-id": B, "revision": "v1"}])
    app = project(tmp_path, f'"{A}" = 1\n')
    assert run_cli(capsys, "lock", str(app)).code == 0
    text = (app / "kernels.lock").read_text()
    assert json.loads(text) == [
        {"dependency": {"repo-id": A, "version": 1}, "lock": {"commit": sha_a}},
        {"dependency": {"repo-id": B, "revision": "v1"}, "lock": {"commit": sha_b}},
    ]
    rust = pytest.importorskip("kernels._rust")
    assert rust.KernelLocks.from_json(text).to_json() == text
    run = run_cli(capsys, "download", str(app))
    assert run.code == 0 and len(run.out.splitlines()) == 2, run.err
