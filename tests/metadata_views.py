"""The values of a metadata.json as our reader and as the ``kernels`` loader's reader see them, side by side.

Both views are plain dictionaries with the same keys, so a test asserts that the two readers agree on every value
of a file (ours written and read by ``kernels``, or written the way Hugging Face's builder writes it and read by
ours) with one comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel_builder.formats.metadata import Metadata, ProvenanceEntry


def _git(entry: ProvenanceEntry | None) -> dict[str, Any] | None:
    if entry is None or entry.commit is None:
        return None
    return {"commit": entry.commit.lower(), "dirty": entry.dirty}


def our_view(meta: Metadata) -> dict[str, Any]:
    """What our :class:`Metadata` holds, spelled as :func:`upstream_view` spells it."""
    provenance = None
    if meta.provenance is not None:
        builder = meta.provenance.kernel_builder
        provenance = {
            "kernel-builder": None if builder is None else {"version": builder.version, "git": _git(builder)},
            "kernel": _git(meta.provenance.kernel),
        }
    return {
        "name": meta.name,
        "id": meta.id,
        "version": meta.version,
        "license": meta.license,
        "upstream": meta.upstream,
        "source": meta.source,
        "python-depends": list(meta.python_depends),
        "kernel-depends": [(dep.repo_id, dep.version, dep.revision) for dep in meta.kernel_depends],
        "backend": (meta.backend_type, None if meta.backend_archs is None else list(meta.backend_archs)),
        "build-layout": meta.build_layout,
        "digest": None if meta.digest is None else (meta.digest.algorithm, dict(meta.digest.files)),
        "provenance": provenance,
        "kernels-minver": None if meta.kernels_minver is None else ".".join(map(str, meta.kernels_minver)),
    }


def _upstream_backend(backend: Any) -> str | None:
    """``backend.backend_type`` as a name: ``None`` for an agnostic build, the error's text for an unknown one."""
    try:
        value = backend.backend_type
    except ValueError as error:
        return f"unknown: {error}"
    return None if value is None else str(value)


def upstream_view(path: Path) -> dict[str, Any]:
    """``path`` (a metadata.json) as the ``kernels`` package's own reader parses it."""
    from kernels import Metadata as UpstreamMetadata  # type: ignore[import-untyped]  # the pinned kernels' reader

    meta = UpstreamMetadata.read_from_file(path)
    provenance = None
    if meta.provenance is not None:
        builder, kernel = meta.provenance.kernel_builder, meta.provenance.kernel
        provenance = {
            "kernel-builder": {
                "version": builder.version,
                "git": None
                if builder.git is None
                else {"commit": str(builder.git.commit), "dirty": builder.git.dirty},
            },
            # str(): a commit is an Oid since kernels 0.18, a str before
            "kernel": None if kernel is None else {"commit": str(kernel.commit), "dirty": kernel.dirty},
        }
    depends = [
        (dep.repo_id, getattr(dep.version, "version", None), getattr(dep.version, "revision", None))
        for dep in meta.kernel_depends
    ]
    digest = meta.digest
    return {
        "name": str(meta.name),
        "id": meta.id,
        "version": meta.version,
        "license": meta.license,
        "upstream": meta.upstream,
        "source": meta.source,
        "python-depends": list(meta.python_depends),
        "kernel-depends": depends,
        "backend": (_upstream_backend(meta.backend), meta.backend.archs),
        "build-layout": str(meta.build_layout).lower(),
        "digest": None if digest is None else (str(digest.algorithm), dict(digest.files)),
        "provenance": provenance,
        "kernels-minver": None if meta.kernels_minver is None else str(meta.kernels_minver),
    }
