"""Loading kernels from local directories: ``get_local_kernel`` and ``LOCAL_KERNELS`` (docs/loading.md).

A local load detects the environment, validates ``backend``, finds the variant directory among the
three accepted shapes, then checks Python dependencies, verifies the digest and imports (docs/loading.md)
with no ``RepoInfo``. Nothing here touches the network, except for a kernel dependency (``kernel-depends``)
that ``LOCAL_KERNELS`` does not map: :func:`dependency_sources` then falls back to the Hub, through
:mod:`~kernel_builder.loader.hub_dependencies` (imported on first use).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import kernel_builder.loader.resolve as resolve
import kernel_builder.loader.stale as stale
from kernel_builder.formats import runtime
from kernel_builder.formats.dependencies import KernelDependency
from kernel_builder.formats.files import variant_directories
from kernel_builder.formats.identifiers import is_repo_id
from kernel_builder.formats.metadata import METADATA_FILE, Metadata
from kernel_builder.formats.variants import parse_variant
from kernel_builder.loader.arguments import check_trust_argument
from kernel_builder.loader.choose import decide, no_compatible
from kernel_builder.loader.importer import check_digest, read_variant_metadata
from kernel_builder.loader.sequence import Located, load_located, locate

if TYPE_CHECKING:
    # Kernel dependencies (``loader.dependencies``) are imported where a load resolves them: a warm
    # ``get_kernel`` with none never does (docs/performance.md).
    from kernel_builder.loader.dependencies import Source, Sources

__all__ = [
    "LOCAL_KERNELS",
    "LocalKernelsSource",
    "dependency_sources",
    "get_local_kernel",
    "load_local_override",
    "local_kernel_path",
    "local_variant_dir",
    "parse_local_kernels",
]

logger = logging.getLogger("kernel_builder")

LOCAL_KERNELS = "LOCAL_KERNELS"
_SHAPES = (
    "a kernel repo root containing build/, a build/ directory with variant directories, "
    f"or one variant directory containing {METADATA_FILE}"
)


def get_local_kernel(
    repo_path: str | os.PathLike[str],
    backend: str | None = None,
    *,
    trust_remote_code: bool | list[str] = False,
    user_agent: str | dict[str, object] | None = None,
    verify_digest: bool | None = None,
    check_arch: bool = True,
) -> ModuleType:
    """Import a kernel from a local repo root, its ``build/`` directory or one variant directory.

    Among variant directories the best compatible one is chosen (docs/loading.md); a single variant directory is loaded
    without compatibility filtering. ``backend`` is ``None`` (the detected backend), ``"cpu"`` or the detected
    backend's name. ``verify_digest=None`` follows ``KERNEL_BUILDER_VERIFY_DIGEST`` (on by default);
    ``check_arch=False`` skips the GPU-architecture check. ``trust_remote_code`` and ``user_agent`` are
    upstream's: they apply to the Hub kernels this kernel depends on (the local kernel itself needs no trust);
    ``trust_remote_code`` is validated here.

    Raises ``ValueError`` for an invalid backend, :class:`NoCompatibleVariantError` when variant directories
    exist but none suits this environment, ``FileNotFoundError`` when ``repo_path`` is none of the accepted
    shapes, and the errors of the dependency check, digest verification and import.

    Its ``kernel-depends`` are loaded first (``LOCAL_KERNELS``, else the Hub, behind the trust gate that
    ``trust_remote_code`` controls as for ``get_kernel``; ``user_agent`` goes with those Hub requests).
    """
    check_trust_argument(trust_remote_code)
    return _load_local(
        repo_path, backend, verify_digest, trust_remote_code, user_agent, check_arch, root=None
    )


def _load_local(
    repo_path: str | os.PathLike[str],
    backend: str | None,
    verify_digest: bool | None,
    trust_remote_code: bool | list[str],
    user_agent: str | dict[str, object] | None,
    check_arch: bool,
    *,
    root: str | None,
) -> ModuleType:
    """``get_local_kernel``; ``root`` names the kernel in dependency chains (its repo id for ``LOCAL_KERNELS``)."""
    variant_dir, selected = _resolve(repo_path, backend, check_arch)
    located = _located(variant_dir, selected, verify_digest, str(variant_dir))
    sources = dependency_sources(
        selected,
        trust_remote_code=trust_remote_code,
        user_agent=user_agent,
        verify_digest=verify_digest,
        check_arch=check_arch,
    )
    return load_located(root or str(variant_dir), located, sources)


def _located(variant_dir: Path, backend: str, verify_digest: bool | None, label: str) -> Located:
    """A local variant as the load sequence takes it: its metadata read and checked as every load checks it
    (against its directory name, when it is named like a variant; the loader's version; this environment's Python
    packages); fetching it is verifying its digest."""
    metadata = read_variant_metadata(variant_dir)

    def fetch() -> tuple[Path, Metadata]:
        check_digest(variant_dir, metadata, verify_digest)
        return variant_dir, metadata

    return locate(label, variant_dir.name, metadata, fetch, backend=backend)


def local_variant_dir(
    repo_path: str | os.PathLike[str], backend: str | None = None, *, check_arch: bool = True
) -> Path:
    """The variant directory :func:`get_local_kernel` would import from ``repo_path`` in this environment
    (same shapes and errors), without importing it."""
    return _resolve(repo_path, backend, check_arch)[0]


def _resolve(
    repo_path: str | os.PathLike[str], backend: str | None, check_arch: bool = True
) -> tuple[Path, str]:
    root = Path(os.path.abspath(repo_path))
    env = runtime.detect_environment()
    selected = resolve.select_backend(env, backend)
    return _locate(root, env, selected, check_arch), selected


def _variant_names(names: list[str]) -> list[str]:
    """The names among ``names`` that parse as variant names (a project root's ``csrc``, ``tests``, ``build``
    are not, and are passed over without a word)."""
    parsed = []
    for name in names:
        try:
            parse_variant(name)
        except ValueError:
            continue
        parsed.append(name)
    return parsed


def _locate(root: Path, env: runtime.Environment, backend: str, check_arch: bool) -> Path:
    """As upstream's ``kernels`` 0.19 looks: the preferred compatible variant among ``root``'s directories, else
    among ``root/build``'s, else ``root`` itself when it holds a ``metadata.json``. A project root's source
    directories (``torch-ext`` parses as a noarch variant) never stop the search."""
    refused: list[tuple[Path, list[resolve.Verdict], resolve.GpuProbe]] = []
    for base in (root, root / "build"):
        names = variant_directories(base)
        if not _variant_names(names):
            continue
        if base == root:  # build/ is all variants, where a bad name is worth a warning; the root is a project
            names = _variant_names(names)

        def lookup(name: str, base: Path = base) -> Metadata | None:
            if not (base / name / METADATA_FILE).is_file():
                return None
            return read_variant_metadata(base / name)

        verdicts, probe = decide(names, env, backend, lookup, check_arch=check_arch)
        if verdicts and isinstance(verdicts[0], resolve.Accepted):
            return base / verdicts[0].variant.variant_str
        refused.append((base, verdicts, probe))
    if (root / METADATA_FILE).is_file():
        return root
    if refused:
        subject = " or ".join(str(base) for base, _, _ in refused)
        probed = next((probe.probed for _, _, probe in refused if probe.probed is not None), None)
        verdicts = [verdict for _, judged, _ in refused for verdict in judged]
        raise no_compatible(subject, resolve.environment_line(env, backend, probed), verdicts)
    state = "does not exist" if not root.exists() else "holds no kernel"
    raise FileNotFoundError(f"{root} {state}: expected {_SHAPES}")


# --- LOCAL_KERNELS (docs/loading.md) -----------------------------------------------------------------------------------


def _format() -> str:
    return f"<org>/<name>=<path>, several separated by {os.pathsep!r}"


_PATH_MAX = 4096  # Linux's PATH_MAX; longer paths fail in every file call
_NAME_MAX = 255
_QUOTE_MAX = 120


def _quoted(text: str) -> str:
    """``repr`` of ``text``, cut in the middle when long: a message quotes a huge value, not all of it."""
    if len(text) <= _QUOTE_MAX:
        return repr(text)
    half = _QUOTE_MAX // 2
    return f"{text[:half]!r}…({len(text)} characters)…{text[-half:]!r}"


def _path_problem(path: str) -> str | None:
    encoded = os.fsencode(path)
    if len(encoded) > _PATH_MAX:
        return f"the path is {len(encoded)} bytes long, more than the file system allows ({_PATH_MAX})"
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > _NAME_MAX:
        return (
            f"a name in the path is {len(longest)} bytes long, more than the file system allows ({_NAME_MAX})"
        )
    return None


def parse_local_kernels(value: str) -> dict[str, Path]:
    """Parse a ``LOCAL_KERNELS`` value: repo id → absolute, ``~``-expanded path (existence is not checked).

    Segments are separated by ``os.pathsep``, stripped, and empty ones ignored; each splits at its first
    ``=``. Raises ``ValueError`` quoting the segment and the expected format for a missing ``=``, an empty or
    malformed repo id, an empty path or a repo id given twice.
    """
    mapping: dict[str, Path] = {}
    for raw in value.split(os.pathsep):
        segment = raw.strip()
        if not segment:
            continue

        def invalid(problem: str, segment: str = segment) -> ValueError:
            return ValueError(
                f"invalid {LOCAL_KERNELS} segment {_quoted(segment)}: {problem}; expected {_format()}"
            )

        repo_id, equals, path = segment.partition("=")
        repo_id, path = repo_id.strip(), path.strip()
        if not equals:
            raise invalid("no '=' between repo id and path")
        if not repo_id:
            raise invalid("empty repo id")
        if not is_repo_id(repo_id):
            raise invalid(f"repo id {repo_id!r} is not of the form <org>/<name>")
        if not path:
            raise invalid("empty path")
        problem = _path_problem(os.path.expanduser(path))
        if problem is not None:
            raise invalid(problem)
        if repo_id in mapping:
            raise invalid(f"repo id {repo_id!r} is given more than once")
        mapping[repo_id] = Path(os.path.abspath(os.path.expanduser(path)))
    return mapping


def local_kernel_path(repo_id: str) -> Path | None:
    """The path ``LOCAL_KERNELS`` maps ``repo_id`` to (read now), or ``None``.

    Raises ``ValueError`` when the variable is malformed and ``FileNotFoundError`` when the mapped path does
    not exist.
    """
    path = parse_local_kernels(os.environ.get(LOCAL_KERNELS, "")).get(repo_id)
    if path is None:
        return None
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise FileNotFoundError(f"{LOCAL_KERNELS} maps {repo_id} to {path}, which does not exist") from None
    except OSError as error:
        raise ValueError(
            f"{LOCAL_KERNELS} maps {repo_id} to {path}, which cannot be used: {error.strerror or error}; fix "
            f"that entry of {LOCAL_KERNELS}"
        ) from None
    return path


def load_local_override(
    repo_id: str,
    backend: str | None = None,
    *,
    verify_digest: bool | None = None,
    trust_remote_code: bool | list[str] = False,
    user_agent: str | dict[str, object] | None = None,
    check_arch: bool = True,
) -> ModuleType | None:
    """``get_kernel``'s first step: the kernel ``LOCAL_KERNELS`` maps ``repo_id`` to, else ``None``.

    ``trust_remote_code`` and ``user_agent`` apply to its dependencies that are not mapped too (Hub loads).
    """
    path = local_kernel_path(repo_id)
    if path is None:
        return None
    logger.debug("%s: loading %s from %s (%s)", repo_id, repo_id, path, LOCAL_KERNELS)
    stale.warn_if_stale(repo_id, path)
    return _load_local(path, backend, verify_digest, trust_remote_code, user_agent, check_arch, root=repo_id)


# --- kernel dependencies (docs/loading.md) ---------------------------------------------------------------------------


class LocalKernelsSource:
    """Kernel dependencies that ``LOCAL_KERNELS`` maps to a local path (no trust check, as for ``get_kernel``)."""

    def __init__(self, backend: str | None, verify_digest: bool | None, check_arch: bool = True) -> None:
        self.backend = backend
        self.verify_digest = verify_digest
        self.check_arch = check_arch

    def locate(self, dependency: KernelDependency) -> Located | None:
        path = local_kernel_path(dependency.repo_id)
        if path is None:
            return None
        variant_dir, selected = _resolve(path, self.backend, self.check_arch)
        logger.debug("%s: dependency from %s (%s)", dependency.repo_id, variant_dir, LOCAL_KERNELS)
        label = f"{dependency.repo_id} ({LOCAL_KERNELS}: {variant_dir})"
        return _located(variant_dir, selected, self.verify_digest, label)


def dependency_sources(
    backend: str | None,
    *,
    trust_remote_code: bool | list[str] = False,
    user_agent: str | dict[str, object] | None = None,
    verify_digest: bool | None = None,
    offline: bool | None = None,
    revision_for: Callable[[KernelDependency], str] | None = None,
    local_kernels: bool = True,
    check_arch: bool = True,
) -> Sources:
    """Where kernel dependencies are found, in order: ``LOCAL_KERNELS`` (unless ``local_kernels`` is false, as
    for ``install_kernel``, which downloads), then the Hub (made on first use).

    The Hub source applies the trust gate per dependency (``trust_remote_code`` as for ``get_kernel``) and
    verifies each digest (``verify_digest``). ``offline=None`` follows ``HF_HUB_OFFLINE``. ``revision_for``,
    for locked loads, gives the commit to use for each dependency instead of its version or revision.
    ``check_arch`` is the kernel's: upstream checks the whole tree's architectures, or none of them.
    """

    def hub() -> Source:
        from kernel_builder.loader.hub_dependencies import HubSource

        return HubSource(
            backend,
            trust_remote_code=trust_remote_code,
            user_agent=user_agent,
            verify_digest=verify_digest,
            offline=offline,
            revision_for=revision_for,
            check_arch=check_arch,
        )

    from kernel_builder.loader.dependencies import LazySource, Sources

    sources = Sources([LocalKernelsSource(backend, verify_digest, check_arch)] if local_kernels else [])
    sources.append(LazySource(hub))
    return sources
