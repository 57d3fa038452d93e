"""A warning when ``LOCAL_KERNELS`` points at a kernel project whose build is older than its sources.

Edit a source, forget ``kernel-builder build``, and ``get_kernel`` would load the old ``build/`` without a word.
When the mapped path is a project root (it has ``build.toml``), the record of the last build's sources
(``kernel_builder.formats.source_snapshot``) is compared with the files: a few ``stat`` calls, and a hash only
of a file whose size or time moved. Nothing is checked for a path that is a build directory, or a project
built by a version of kernel-builder that kept no record.
"""

from __future__ import annotations

import warnings
from pathlib import Path

from kernel_builder.formats import source_snapshot

__all__ = ["StaleBuildWarning", "warn_if_stale"]


class StaleBuildWarning(UserWarning):
    """The build ``LOCAL_KERNELS`` loads is older than the project's sources."""


def warn_if_stale(repo_id: str, path: Path) -> None:
    """Warn (:class:`StaleBuildWarning`) when ``path``, a project root, changed since its last build."""
    if not (path / "build.toml").is_file():
        return
    changed = source_snapshot.changed_files(path)
    if not changed:
        return
    more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
    warnings.warn(
        StaleBuildWarning(
            f"{repo_id}: LOCAL_KERNELS maps it to {path}, whose build/ is older than its sources: {changed[0]}"
            f"{more} changed since the last build. Loading the old build; run `kernel-builder build {path}` "
            "to load the edited code"
        ),
        stacklevel=4,
    )
