"""``kernel-builder lock``: pin a project's kernel dependencies to commits and variant hashes (docs/loading.md).

The dependencies are ``[tool.kernels.dependencies]`` of the project's ``pyproject.toml`` (repo id → major
version). Per repo, in order: the trust gate, redirects from ``main``, ``v<N>`` → commit SHA, one recursive
tree listing at that SHA, and the ``git_lfs_concat`` hash of every variant in it. The lock is written only
when every repo succeeded; unchanged inputs give identical bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kernel_builder import __version__
from kernel_builder.common import toml
from kernel_builder.errors import ConfigError, HubError
from kernel_builder.formats.identifiers import is_repo_id
from kernel_builder.formats.lockfile import (
    LOCK_FILE,
    LockedVariant,
    LockEntry,
    group_variant_files,
    variant_hash,
    write_lock,
)
from kernel_builder.hub import REQUEST_ERRORS, Hub, describe_error
from kernel_builder.loader.errors import UntrustedKernelError
from kernel_builder.loader.remote import follow_redirects_from_main, resolve_version
from kernel_builder.loader.trust import require_trusted

__all__ = ["Dependency", "LockReport", "lock_project", "read_dependencies"]

PYPROJECT = "pyproject.toml"
TABLE = "[tool.kernels.dependencies]"

Log = Callable[[str], None]
# What fails one repo (untrusted, no such version, bad redirect, failed request) without stopping the others.
_FAILURES: tuple[type[Exception], ...] = (ValueError, *REQUEST_ERRORS)


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


def _lock_one(hub: Hub, dependency: Dependency, trust_remote_code: bool) -> LockEntry:
    def gate(repo_id: str) -> None:
        if not trust_remote_code:
            require_trusted(hub, repo_id)

    gate(dependency.repo_id)
    repo = follow_redirects_from_main(hub, dependency.repo_id, gate=gate)
    sha = resolve_version(hub, repo, dependency.version)
    files = hub.tree_files(repo, sha)
    grouped = group_variant_files((file.path, file.content_id) for file in files)
    if not grouped:
        raise ValueError(f"{repo.repo_id} has no build variants at v{dependency.version} ({sha})")
    variants = {name: LockedVariant(variant_hash(pairs.items())) for name, pairs in grouped.items()}
    redirected = dependency.repo_id if repo.repo_id != dependency.repo_id else None
    return LockEntry(repo.repo_id, sha, variants, redirected)


def lock_project(
    project_dir: str | os.PathLike[str], *, trust_remote_code: bool = False, log: Log = lambda line: None
) -> LockReport:
    """Lock every dependency of the project and write ``<project_dir>/kernels.lock`` if all succeeded.

    Per-repo failures (untrusted publisher, missing version, failed request, …) are collected in the report;
    the lock is then left as it was.
    """
    dependencies = read_dependencies(project_dir)
    path = Path(project_dir) / LOCK_FILE
    hub = Hub(agent=f"kernel-builder-cli/{__version__}")
    if hub.offline:
        raise HubError("lock needs the network, but offline mode is on (HF_HUB_OFFLINE); unset it")
    entries: list[LockEntry] = []
    failures: list[tuple[str, str]] = []
    for dependency in dependencies:
        try:
            entry = _lock_one(hub, dependency, trust_remote_code)
        except _FAILURES as error:
            message = describe_error(error)
            if isinstance(error, UntrustedKernelError):
                message = message.rstrip(".") + " (kernel-builder lock --trust-remote-code)."
            failures.append((dependency.repo_id, message))
            continue
        entries.append(entry)
        log(
            f"locked {dependency.repo_id} v{dependency.version} at {entry.sha} ({len(entry.variants)} variant(s))"
        )
    if not failures:
        write_lock(path, entries)
    return LockReport(path, tuple(entries), tuple(failures))
