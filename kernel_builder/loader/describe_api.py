"""``kernel-builder describe-api``: a kernel's public functions and layers, read from the ``symbols.json`` its
build wrote (:mod:`kernel_builder.formats.symbols`), without importing the kernel (docs/cli.md).

The variant is the one a load would choose here: from a local build as ``get_local_kernel`` chooses it, from the
Hub as ``get_kernel`` does (the trust gate first, unless ``trust_remote_code``; the newest version when neither
version nor revision is given), and of that variant only ``symbols.json`` is read (downloaded). As in upstream's
``kernels describe-api``, the text output and the JSON (the file's content, with where it came from) are the
same, so either tool can describe a build of the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_builder.errors import KernelBuilderError, UsageError
from kernel_builder.formats.symbols import LAYER_ATTRIBUTES, SYMBOLS_FILE, read_symbols

__all__ = ["ApiDescription", "describe_api", "render_api"]


class MissingSymbolsError(FileNotFoundError, KernelBuilderError):
    """The variant has no ``symbols.json``: built before the file existed, or without the import check."""


@dataclass(frozen=True)
class ApiDescription:
    """The symbols of one variant and where they were read: ``source`` is ``{"path", "variant"}`` for a local
    build, ``{"repo_id", "revision", "variant"}`` for a Hub kernel."""

    symbols: dict[str, Any]
    source: dict[str, str]

    def to_json(self) -> dict[str, Any]:
        return {**self.symbols, **self.source}


def _missing(location: str, variant: str) -> MissingSymbolsError:
    return MissingSymbolsError(
        f"no {SYMBOLS_FILE} in {location} (variant {variant}): the kernel was built before builds wrote it, or "
        f"without the import check. Rebuild it with kernel-builder (its import check writes {SYMBOLS_FILE})"
    )


def _local(path: Path, backend: str | None) -> ApiDescription:
    from kernel_builder.loader.local import local_variant_dir

    variant = local_variant_dir(path, backend)
    symbols = variant / SYMBOLS_FILE
    if not symbols.is_file():
        raise _missing(str(path), variant.name)
    return ApiDescription(read_symbols(symbols), {"path": str(path), "variant": variant.name})


def _hub(
    repo_id: str, version: int | None, revision: str | None, trust_remote_code: bool, backend: str | None
) -> ApiDescription:
    from kernel_builder.loader.describe import FAILURES, as_command_error, checked_operation, version_refs
    from kernel_builder.loader.hub_steps import choose_on_hub, trust_gate

    operation = checked_operation(repo_id, backend)
    hub = operation.hub
    try:
        if version is None and revision is None:
            _, refs = version_refs(hub, repo_id)
            if not refs:
                raise UsageError(f"{repo_id} has no version branches (v<N>): give --revision")
            version = max(refs)
        gate = trust_gate(hub, bool(trust_remote_code))
        gate(repo_id)
        chosen = choose_on_hub(operation, repo_id, version, revision, gate=gate)
        found = hub.download_file(
            chosen.target.repo, chosen.target.sha, f"build/{chosen.variant}/{SYMBOLS_FILE}"
        )
    except FAILURES as error:
        raise as_command_error(error) from None
    shown = f"v{version}" if version is not None else str(revision)
    if found is None:
        raise _missing(f"{repo_id} (revision {shown})", chosen.variant)
    return ApiDescription(
        read_symbols(found), {"repo_id": repo_id, "revision": shown, "variant": chosen.variant}
    )


def describe_api(
    kernel: str,
    *,
    version: int | None = None,
    revision: str | None = None,
    trust_remote_code: bool = False,
    backend: str | None = None,
) -> ApiDescription:
    """The public API of ``kernel``: a local kernel directory (with ``build/``, a ``build/`` or one variant), or
    a Hub repository id at ``version`` or ``revision`` (neither: the newest version)."""
    if version is not None and revision is not None:
        raise UsageError("give at most one of --version and --revision")
    path = Path(kernel).expanduser()
    if path.is_dir():
        if version is not None or revision is not None:
            raise UsageError(f"{kernel} is a local directory: --version and --revision apply to Hub kernels")
        return _local(path, backend)
    if path.exists() or path.is_absolute() or kernel.startswith(("./", "../", "~")):
        raise UsageError(f"{kernel} is not a local kernel directory (nor a Hub repository id)")
    return _hub(kernel, version, revision, trust_remote_code, backend)


def render_api(description: ApiDescription) -> str:
    """The text ``describe-api`` prints: where, the variant, then the functions and the layers with their
    declared attributes (``unknown`` for one a layer does not declare), as upstream prints them."""
    info = description.to_json()
    if "repo_id" in info:
        lines = [f"Repository: {info['repo_id']}", f"Revision: {info['revision']}"]
    else:
        lines = [f"Path: {info['path']}"]
    lines += [f"Variant: {info['variant']}", "", "Functions:"]
    lines += [f"  {function['name']}" for function in info["functions"]] or ["  (none)"]
    lines += ["", "Layers:"]
    for layer in info["layers"]:
        attributes = layer["attributes"]
        flags = "  ".join(
            f"{name}={'unknown' if attributes.get(name) is None else attributes[name]}"
            for name in LAYER_ATTRIBUTES
        )
        lines.append(f"  {layer['name']}  {flags}")
    if not info["layers"]:
        lines.append("  (none)")
    return "\n".join(lines)
