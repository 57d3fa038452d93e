"""``kernel-builder download``: fetch every kernel a lock pins into the cache, verified (docs/loading.md).

Per lock entry: one recursive tree listing at the locked commit, then the variant this machine would load (or
every variant, ``--all-variants``), downloaded by commit and checked file by file against that listing (an
older-format lock's variant hash is checked against the listing first), then against the variant's digest.
The lock holds the project's whole kernel-dependency tree, so every entry is fetched; the kernel dependencies
of each downloaded variant must be pinned by the lock. An entry with no variant for this machine is skipped
when nothing downloaded here needs it (a dependency of another backend's variant). A failing entry is reported
and the others continue.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from kernel_builder import __version__
from kernel_builder.errors import ConfigError, HubError
from kernel_builder.formats.lockfile import (
    LOCK_FILE,
    LockEntry,
    find_dependency,
    group_variant_files,
    read_lock,
)
from kernel_builder.formats.metadata import Metadata
from kernel_builder.hub import REQUEST_ERRORS, RemoteRepo, describe_error
from kernel_builder.loader.choose import choose_variant
from kernel_builder.loader.errors import NoCompatibleVariantError
from kernel_builder.loader.hub_steps import Target, start_operation, variant_metadata
from kernel_builder.loader.lock import read_dependencies
from kernel_builder.loader.locked import cache_fix, fetch_locked_variant

__all__ = ["DownloadOutcome", "download_locked"]

Log = Callable[[str], None]
# What fails one entry (no variant here, verification, failed request) without stopping the others.
_FAILURES: tuple[type[Exception], ...] = (NoCompatibleVariantError, ValueError, ImportError, *REQUEST_ERRORS)


@dataclass(frozen=True)
class DownloadOutcome:
    """One lock entry's result: the variants downloaded (and where), the error, or why it was skipped."""

    repo_id: str
    sha: str
    variants: tuple[str, ...] = ()
    paths: tuple[Path, ...] = ()
    error: str | None = None
    skipped: str | None = None


def _read(project_dir: Path) -> tuple[Path, list[LockEntry]]:
    path = project_dir / LOCK_FILE
    try:
        return path, read_lock(path)
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: not found; create it with `kernel-builder lock {project_dir}` first"
        ) from None


def _project_kernels(project_dir: Path) -> set[str] | None:
    """The repo ids the project itself asks for, or ``None`` (every entry counts as asked for) when its
    ``pyproject.toml`` does not say."""
    try:
        return {dependency.repo_id for dependency in read_dependencies(project_dir)}
    except ConfigError:
        return None


def _missing_dependencies(entries: list[LockEntry], metadata: Metadata, where: str) -> list[str]:
    return [
        f"{where} depends on {d.repo_id} {f'v{d.version}' if d.version is not None else repr(d.revision)}, which "
        f"the lock does not pin"
        for d in metadata.kernel_depends
        if find_dependency(entries, d.repo_id, d.version, d.revision) is None
    ]


def download_locked(
    project_dir: str | os.PathLike[str], *, all_variants: bool = False, log: Log = lambda line: None
) -> list[DownloadOutcome]:
    """Download and verify what ``<project_dir>/kernels.lock`` pins; one outcome per entry, in lock order.

    Raises :class:`ConfigError` (exit 2) when the lock is missing, unreadable or invalid and :class:`HubError`
    when offline.
    """
    directory = Path(project_dir)
    lock_path, entries = _read(directory)
    operation = start_operation(None, f"kernel-builder-cli/{__version__}")
    hub = operation.hub
    if hub.offline:
        raise HubError("download needs the network, but offline mode is on (HF_HUB_OFFLINE); unset it")
    outcomes: list[DownloadOutcome] = []
    needed: set[LockEntry] = set()  # entries a downloaded variant depends on
    for entry in entries:
        repo = RemoteRepo(entry.repo_id)
        subject = f"{entry.label} at {entry.sha} (locked in {lock_path})"
        try:
            trees = group_variant_files((file.path, file) for file in hub.tree_files(repo, entry.sha))
            if all_variants:
                chosen = sorted(entry.variants) if entry.legacy else sorted(trees)
            else:
                target = Target(repo, entry.sha, None)
                lookup = partial(variant_metadata, hub, target)
                chosen = [choose_variant(trees, operation.env, operation.backend, lookup, subject=subject)]
            fix = cache_fix(hub, repo, directory)
            paths = []
            problems: list[str] = []
            for variant in chosen:
                variant_dir, metadata = fetch_locked_variant(
                    hub, repo, entry, variant, trees.get(variant, {}), lock=str(lock_path), fix=fix
                )
                paths.append(variant_dir)
                log(f"downloaded {entry.repo_id} {variant} at {entry.sha}")
                problems += _missing_dependencies(entries, metadata, f"build/{variant}")
                needed.update(
                    found
                    for d in metadata.kernel_depends
                    if (found := find_dependency(entries, d.repo_id, d.version, d.revision)) is not None
                )
            if problems:
                raise ValueError(
                    "; ".join(problems) + f". Re-create the lock with `kernel-builder lock {directory}`"
                )
        except NoCompatibleVariantError as error:
            outcomes.append(
                DownloadOutcome(entry.repo_id, entry.sha, error=describe_error(error), skipped="")
            )
            continue
        except _FAILURES as error:
            outcomes.append(DownloadOutcome(entry.repo_id, entry.sha, error=describe_error(error)))
            continue
        outcomes.append(DownloadOutcome(entry.repo_id, entry.sha, tuple(chosen), tuple(paths)))
    # An entry without a variant for this machine fails only if the project or a downloaded variant needs it.
    asked = _project_kernels(directory)
    for index, (entry, outcome) in enumerate(zip(entries, outcomes)):
        if outcome.skipped is None:
            continue
        if entry in needed or asked is None or entry.repo_id in asked:
            outcomes[index] = replace(outcome, skipped=None)
        else:
            outcomes[index] = replace(
                outcome,
                error=None,
                skipped="no variant for this machine, and no kernel downloaded here depends on it",
            )
    return outcomes
