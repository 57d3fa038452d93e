"""``kernel-builder lock``: pin a project's kernels, and every kernel they depend on, to commits (docs/loading.md).

The project's kernels are ``[tool.kernels.dependencies]`` of its ``pyproject.toml`` (repo id → major version).
Each is resolved to the commit of its ``v<N>`` branch (after the trust gate and the redirects from ``main``);
then the ``kernel-depends`` of every variant's ``metadata.json`` at that commit are locked the same way,
recursively, as the ``kernels`` loader does: the whole tree, for every variant, so that any machine finds its
variant's dependencies pinned. A cycle is refused with its chain. The lock, in the ``kernels`` format, is
written only when every kernel succeeded; unchanged inputs give identical bytes.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernel_builder import __version__
from kernel_builder.common import toml
from kernel_builder.errors import ConfigError, HubError
from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.identifiers import is_commit_id, is_repo_id
from kernel_builder.formats.lockfile import LOCK_FILE, LockEntry, group_variant_files, write_lock
from kernel_builder.hub import REQUEST_ERRORS, Hub, RemoteRepo, describe_error
from kernel_builder.loader.errors import UntrustedKernelError
from kernel_builder.loader.hub_steps import (
    Target,
    follow_redirects_from_main,
    resolve_version,
    variant_metadata,
)
from kernel_builder.loader.trust import require_trusted

__all__ = ["MAX_DEPTH", "MAX_KERNELS", "Dependency", "LockReport", "lock_project", "read_dependencies"]

PYPROJECT = "pyproject.toml"
TABLE = "[tool.kernels.dependencies]"
#: How deep a kernel-dependency chain may go, and how many kernels one lock may hold: far beyond any real
#: project, and a bound on what a hostile Hub can make the lock command fetch.
MAX_DEPTH = 32
MAX_KERNELS = 1000

Log = Callable[[str], None]
# What fails one repo (untrusted, no such version, bad redirect or metadata, failed request) without stopping
# the others.
_FAILURES: tuple[type[Exception], ...] = (ValueError, *REQUEST_ERRORS)
_Key = tuple[str, int | None, str | None]


@dataclass(frozen=True)
class Dependency:
    repo_id: str
    version: int


@dataclass(frozen=True)
class LockReport:
    path: Path
    entries: tuple[LockEntry, ...] = ()
    failures: tuple[tuple[str, str], ...] = field(default=())  # (repo id, message)

    @property
    def written(self) -> bool:
        return not self.failures


def read_dependencies(project_dir: str | os.PathLike[str]) -> list[Dependency]:
    """``[tool.kernels.dependencies]`` of ``<project_dir>/pyproject.toml``, sorted by repo id.

    Raises :class:`ConfigError` (exit 2) naming the file for a missing file or table, and naming the
    key for a value that is not an integer (``true`` is not one) or a key that is not ``<org>/<name>``.
    """
    file = Path(project_dir) / PYPROJECT
    try:
        data = toml.read_toml(file)
    except FileNotFoundError:
        raise ConfigError(
            f"{file}: not found; `kernel-builder lock` reads the kernels to lock from its {TABLE} table"
        ) from None
    except (OSError, UnicodeDecodeError, toml.TOMLDecodeError) as error:
        raise ConfigError(f"{file}: cannot read it: {error}") from None
    tool = data.get("tool")
    kernels = tool.get("kernels") if isinstance(tool, dict) else None
    table = kernels.get("dependencies") if isinstance(kernels, dict) else None
    if table is None:
        raise ConfigError(
            f"{file}: no {TABLE} table; add one that maps each kernel repo to its major version, e.g. "
            f'"kernels-community/relu" = 1'
        )
    if not isinstance(table, dict):
        raise ConfigError(f"{file}: {TABLE} must be a table of repo id = major version")
    dependencies = []
    for key, value in table.items():
        where = f'{file}: {TABLE} "{key}"'
        if not is_repo_id(key):
            raise ConfigError(f"{where}: not a kernel repo id of the form <org>/<name>")
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer major version (branch v<N>), got {value!r}")
        if value < 0:
            raise ConfigError(f"{where}: expected a major version of 0 or more, got {value}")
        dependencies.append(Dependency(key, value))
    return sorted(dependencies, key=lambda d: d.repo_id)


def _label(dependency: KernelDependency) -> str:
    if dependency.version is not None:
        return f"{dependency.repo_id} v{dependency.version}"
    return f"{dependency.repo_id}@{dependency.revision}"


def _message(error: BaseException) -> str:
    message = describe_error(error)
    if isinstance(error, UntrustedKernelError):
        message = message.rstrip(".") + " (kernel-builder lock --trust-remote-code)."
    return message


class _TreeError(ValueError):
    """A kernel below the top of the tree failed; the message already names the chain that led to it."""


@dataclass
class _Locker:
    """One lock run: the kernels locked so far (by the dependency that asked for them) and the chain being
    followed, for cycle detection."""

    hub: Hub
    scratch: Hub  # the same Hub with a temporary cache, for the metadata read while locking
    trust_remote_code: bool
    log: Log
    locked: dict[_Key, LockEntry] = field(default_factory=dict)
    chain: list[tuple[_Key, str]] = field(default_factory=list)

    def gate(self, repo_id: str) -> None:
        if not self.trust_remote_code:
            require_trusted(self.hub, repo_id)

    def commit(self, repo: RemoteRepo, dependency: KernelDependency) -> str:
        if dependency.version is not None:
            return resolve_version(self.hub, repo, dependency.version)
        assert dependency.revision is not None
        if is_commit_id(dependency.revision):
            return dependency.revision
        sha = self.hub.commit_of(repo, dependency.revision)
        if not is_commit_id(sha):
            raise ValueError(
                f"{repo.repo_id}: the Hub gave revision {dependency.revision!r} the target {sha!r}"
            )
        return sha

    def lock(self, dependency: KernelDependency, *, top: bool) -> None:
        """Lock ``dependency`` and, depth first, the kernel dependencies of each of its variants.

        Only a project's own dependency (``top``) follows ``kernel-status.toml`` redirects; a kernel's
        ``kernel-depends`` are pinned under the id its metadata names, which is the id loaders look up.
        """
        key: _Key = (dependency.repo_id, dependency.version, dependency.revision)
        if key in self.locked:
            return
        label = _label(dependency)
        names = [name for _, name in self.chain]
        if key in {k for k, _ in self.chain}:
            raise _TreeError(f"kernel dependency cycle: {' -> '.join([*names, label])}")
        if len(self.chain) >= MAX_DEPTH:
            raise _TreeError(
                f"kernel dependencies nest deeper than {MAX_DEPTH}: {' -> '.join([*names, label])}"
            )
        if len(self.locked) >= MAX_KERNELS:
            raise _TreeError(f"more than {MAX_KERNELS} kernels in the dependency tree (at {label})")
        self.chain.append((key, label))
        try:
            self.gate(dependency.repo_id)
            if top:
                repo = follow_redirects_from_main(self.hub, dependency.repo_id, gate=self.gate)
            else:
                repo = RemoteRepo(dependency.repo_id)
            sha = self.commit(repo, dependency)
            grouped = group_variant_files((file.path, None) for file in self.hub.tree_files(repo, sha))
            if not grouped:
                at = f"v{dependency.version}" if dependency.version is not None else repr(dependency.revision)
                raise ValueError(f"{repo.repo_id} has no build variants at {at} ({sha})")
            target = Target(repo, sha, None)
            for variant in grouped:
                metadata = variant_metadata(self.scratch, target, variant)
                for child in () if metadata is None else metadata.kernel_depends:
                    try:
                        self.lock(child, top=False)
                    except _TreeError:
                        raise
                    except _FAILURES as error:
                        chain = " -> ".join([*(name for _, name in self.chain), _label(child)])
                        raise _TreeError(
                            f"{chain} (kernel-depends of {repo.repo_id} build/{variant}/metadata.json): "
                            f"{_message(error)}"
                        ) from None
        finally:
            self.chain.pop()
        if repo.repo_id != dependency.repo_id:
            warnings.warn(
                f"{dependency.repo_id}: kernels.lock pins its redirect destination {repo.repo_id}; load it by that "
                f"id and name it in {TABLE}",
                UserWarning,
                stacklevel=2,
            )
        self.locked[key] = LockEntry(repo.repo_id, sha, dependency.version, dependency.revision)
        self.log(f"locked {label} at {sha} ({len(grouped)} variant(s))")


def lock_project(
    project_dir: str | os.PathLike[str], *, trust_remote_code: bool = False, log: Log = lambda line: None
) -> LockReport:
    """Lock the project's kernels and their kernel-dependency tree; write ``<project_dir>/kernels.lock`` if all
    succeeded.

    Per-repo failures (untrusted publisher, missing version, a dependency that fails or forms a cycle, failed
    request, …) are collected in the report, under the project's dependency they were found through; the lock
    is then left as it was.
    """
    dependencies = read_dependencies(project_dir)
    path = Path(project_dir) / LOCK_FILE
    hub = Hub(agent=f"kernel-builder-cli/{__version__}")
    if hub.offline:
        raise HubError("lock needs the network, but offline mode is on (HF_HUB_OFFLINE); unset it")
    failures: list[tuple[str, str]] = []
    # Each variant's metadata.json is read from a scratch cache: a lone metadata.json left in the real cache
    # would look like a partial download of that variant to the locked loads.
    with tempfile.TemporaryDirectory(prefix="kernel-builder-lock-") as scratch_dir:
        scratch = Hub(agent=hub.user_agent)
        scratch.cache_dir = Path(scratch_dir)
        locker = _Locker(hub, scratch, trust_remote_code, log)
        for dependency in dependencies:
            try:
                locker.lock(KernelDependency(dependency.repo_id, dependency.version), top=True)
            except _FAILURES as error:
                failures.append((dependency.repo_id, _message(error)))
    # Two project dependencies redirected to the same kernel give one entry.
    entries = {(e.repo_id, e.version, e.revision): e for e in locker.locked.values()}
    ordered = sorted(entries.values(), key=LockEntry.sort_key)
    if not failures:
        write_lock(path, ordered)
    return LockReport(path, tuple(ordered), tuple(failures))
