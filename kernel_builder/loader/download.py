"""``kernel-builder download``: fetch the locked kernels into the cache and verify them (docs/loading.md).

Per lock entry: one recursive tree listing at the locked SHA, then the variant this machine would load (or
every locked variant), each checked against the lock hash, downloaded by SHA, compared file by file with the
tree and verified against its digest. A failing repo is reported and the others continue.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from kernel_builder import __version__
from kernel_builder.errors import ConfigError, HubError
from kernel_builder.formats.lockfile import LOCK_FILE, LockEntry, group_variant_files, read_lock
from kernel_builder.hub import REQUEST_ERRORS, RemoteRepo, describe_error
from kernel_builder.loader.errors import NoCompatibleVariantError
from kernel_builder.loader.locked import cache_fix, choose_variant, fetch_locked_variant
from kernel_builder.loader.remote import Target, start_operation, variant_metadata

__all__ = ["DownloadOutcome", "download_locked"]

Log = Callable[[str], None]
# What fails one entry (no variant here, verification, failed request) without stopping the others.
_FAILURES: tuple[type[Exception], ...] = (NoCompatibleVariantError, ValueError, ImportError, *REQUEST_ERRORS)


@dataclass(frozen=True)
class DownloadOutcome:
    """One lock entry's result: the variants downloaded (and where), or the error."""

    repo_id: str
    sha: str
    variants: tuple[str, ...] = ()
    paths: tuple[Path, ...] = ()
    error: str | None = None


def _read(project_dir: Path) -> tuple[Path, list[LockEntry]]:
    path = project_dir / LOCK_FILE
    try:
        return path, read_lock(path)
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: not found; create it with `kernel-builder lock {project_dir}` first"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ConfigError(str(error)) from None


def download_locked(
    project_dir: str | os.PathLike[str], *, all_variants: bool = False, log: Log = lambda line: None
) -> list[DownloadOutcome]:
    """Download and verify what ``<project_dir>/kernels.lock`` pins; one outcome per entry, in lock order.

    Raises :class:`ConfigError` (exit 2) when the lock is missing or invalid and :class:`HubError`
    when offline.
    """
    directory = Path(project_dir)
    lock_path, entries = _read(directory)
    operation = start_operation(None, f"kernel-builder-cli/{__version__}")
    hub = operation.hub
    if hub.offline:
        raise HubError("download needs the network, but offline mode is on (HF_HUB_OFFLINE); unset it")
    outcomes: list[DownloadOutcome] = []
    for entry in entries:
        repo = RemoteRepo(entry.repo_id)
        try:
            trees = group_variant_files((file.path, file) for file in hub.tree_files(repo, entry.sha))
            if all_variants:
                chosen = sorted(entry.variants)
            else:
                target = Target(repo, entry.sha, None)
                chosen = [
                    choose_variant(
                        trees,
                        operation,
                        f"{entry.repo_id} at {entry.sha} (locked in {lock_path})",
                        partial(variant_metadata, hub, target),
                    )
                ]
            fix = cache_fix(hub, repo, directory)
            paths = []
            for variant in chosen:
                variant_dir, _ = fetch_locked_variant(
                    hub, repo, entry, variant, trees.get(variant, {}), lock=str(lock_path), fix=fix
                )
                paths.append(variant_dir)
                log(f"downloaded {entry.repo_id} {variant} at {entry.sha}")
        except _FAILURES as error:
            outcomes.append(DownloadOutcome(entry.repo_id, entry.sha, error=describe_error(error)))
            continue
        outcomes.append(DownloadOutcome(entry.repo_id, entry.sha, tuple(chosen), tuple(paths)))
    return outcomes
