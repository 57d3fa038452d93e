"""What an upload sends, decided from local files alone (docs/cli.md).

:func:`collect_content` finds the variants directory (``result/``, ``build/`` or the kernel directory itself),
checks every variant (its name, ``metadata.json``, package and digest; ``--arch native`` builds are refused)
and lists exactly the files to send: each variant's files (docs/layout.md: bytecode and hidden paths are not
part of a variant, and hidden ones are warned about), ``benchmarks/benchmark*.py`` and the card. Nothing else is
listed, and a symbolic link that leaves the variants directory (or the Nix
store it lives in) refuses the whole upload, so nothing else (sources, virtualenvs, credentials) is read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from kernel_builder.common.safe_fs import scan_tree
from kernel_builder.errors import HubError
from kernel_builder.formats.files import GIT_BLOB, file_hashes, is_bytecode, is_hidden
from kernel_builder.formats.metadata import METADATA_FILE, Metadata, digest_problems
from kernel_builder.formats.variants import parse_variant
from kernel_builder.loader.importer import read_variant_metadata

__all__ = ["Content", "LocalFile", "VariantDir", "collect_content", "is_benchmark"]

CARD = "CARD.md"
README = "README.md"
BENCHMARKS = "benchmarks"
_BENCHMARK_RE = re.compile(r"benchmarks/benchmark[^/]*\.py")
_NIX_HASH_RE = re.compile(r"[0-9a-z]{32}-.+")
_UNDIGESTED = frozenset({METADATA_FILE, METADATA_FILE + ".sigstore"})


@dataclass(frozen=True)
class LocalFile:
    """A file to send: its path in the repository, where it is read from, its size and content ids."""

    path: str
    source: Path
    size: int
    blob_id: str  # git blob SHA-1
    sha256: str

    @classmethod
    def read(cls, path: str, source: Path) -> LocalFile:
        hashes = file_hashes(source, GIT_BLOB, "sha256")
        return cls(path, source, source.stat().st_size, hashes[GIT_BLOB], hashes["sha256"])


@dataclass(frozen=True)
class VariantDir:
    name: str
    directory: Path
    metadata: Metadata


@dataclass(frozen=True)
class Content:
    """Everything an upload sends: ``files`` go to the version branch, ``card`` to ``main`` as README.md."""

    variants_dir: Path
    variants: tuple[VariantDir, ...]
    files: tuple[LocalFile, ...]
    card: LocalFile | None
    warnings: tuple[str, ...] = field(default=())

    @property
    def versions(self) -> list[int]:
        return sorted({v.metadata.version for v in self.variants if v.metadata.version is not None})


def is_benchmark(path: str) -> bool:
    """``benchmarks/benchmark*.py`` directly in ``benchmarks/``."""
    return _BENCHMARK_RE.fullmatch(path) is not None


def _variant_dirs(directory: Path) -> list[Path]:
    try:
        entries = sorted(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [entry for entry in entries if entry.is_dir() and (entry / METADATA_FILE).is_file()]


def _find_variants(kernel_dir: Path) -> tuple[Path, list[Path]]:
    candidates = [kernel_dir / "result", kernel_dir / "build", kernel_dir]
    for candidate in candidates:
        found = _variant_dirs(candidate)
        if found:
            return candidate, found
    looked = ", ".join(str(c) for c in candidates)
    raise HubError(
        f"no variants to upload: none of {looked} has subdirectories with {METADATA_FILE}. "
        f"Build the kernel first (kernel-builder build {kernel_dir})."
    )


def _nix_store(real: Path) -> Path | None:
    """The Nix store (``/nix/store``) a path lies in, if any: the parent of its ``<hash>-<name>`` part."""
    for part in (real, *real.parents):
        if part.parent.name == "store" and _NIX_HASH_RE.fullmatch(part.name):
            return part.parent
    return None


class _Walker:
    """Lists regular files under a root, checking every symbolic link against the allowed roots."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = roots
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def allowed(self, link: Path, what: str) -> bool:
        """Whether ``link`` (a symlink) resolves inside an allowed root; records a problem if not."""
        target = Path(os.path.realpath(link))
        if not target.exists():
            self.problems.append(f"{what}: symbolic link {link} -> {os.readlink(link)} is dangling")
            return False
        problem = self._outside(link, target, what)
        if problem is not None:
            self.problems.append(problem)
        return problem is None

    def _outside(self, link: Path, target: Path, what: str) -> str | None:
        """The problem with a link whose target is outside the allowed roots, or ``None``."""
        if any(target == root or root in target.parents for root in self.roots):
            return None
        roots = " or ".join(str(root) for root in self.roots)
        return f"{what}: symbolic link {link} points to {target}, outside {roots}; refusing to read it"

    def walk(self, directory: Path, repo_prefix: str, label: str) -> list[LocalFile]:
        """The files of one variant directory to send; hidden paths are warned about, bytecode is left out.

        The walk is :func:`~kernel_builder.common.safe_fs.scan_tree`'s: a link is followed only into the
        allowed roots, and a link back up the tree is a problem, never walked again.
        """
        warnings: list[str] = []
        problems: list[str] = []

        def skip(relpath: str, is_directory: bool) -> bool:
            if is_bytecode(relpath):
                return True
            if is_hidden(relpath.rsplit("/", 1)[-1]):
                warnings.append(f"{label}/{relpath}: hidden path, not uploaded")
                return True
            return False

        def follow(relpath: str, target: Path) -> bool:
            problem = self._outside(directory / relpath, target, f"{label}/{relpath}")
            if problem is not None:
                problems.append(problem)
            return problem is None

        scan = scan_tree(directory, skip=skip, follow=follow)
        for relpath, real in scan.loops.items():
            problems.append(f"{label}/{relpath}: symbolic link loop (back to {real})")
        for relpath, what in scan.special.items():
            link = directory / relpath
            if link.is_symlink() and what == "a dangling symlink":
                problems.append(f"{label}/{relpath}: symbolic link {link} -> {os.readlink(link)} is dangling")
            else:
                problems.append(f"{label}/{relpath}: not a regular file or directory ({what})")
        for relpath, why in scan.unreadable.items():
            problems.append(f"{label}/{relpath}: unreadable directory ({why})")
        self.warnings += sorted(warnings)
        self.problems += sorted(problems)
        return [LocalFile.read(repo_prefix + relpath, path) for relpath, path in sorted(scan.files.items())]


def _digest_problems(variant: VariantDir, files: list[LocalFile]) -> list[str]:
    """The files about to be sent against the variant's digest: what a loader will check after download."""
    digest = variant.metadata.digest
    if digest is None:
        return []
    prefix = f"build/{variant.name}/"
    sent = {f.path[len(prefix) :]: f.source for f in files}
    for name in _UNDIGESTED:
        sent.pop(name, None)
    return digest_problems(digest, sent, where="uploaded")


def _check_variant(directory: Path, walker: _Walker, allow_explicit_archs: bool) -> VariantDir | None:
    name = directory.name
    try:
        parse_variant(name)
    except ValueError as error:
        walker.problems.append(f"{name}: not a variant name ({error})")
        return None
    try:
        metadata = read_variant_metadata(directory)
    except (OSError, ValueError) as error:
        walker.problems.append(f"{name}: invalid {METADATA_FILE}: {error}")
        return None
    flat, nested = directory / "__init__.py", directory / metadata.python_name / "__init__.py"
    if not flat.is_file() and not nested.is_file():
        walker.problems.append(f"{name}: no package __init__.py (tried {flat} and {nested})")
    if metadata.arch_selection == "native":
        walker.problems.append(
            f'{name}: built with --arch native ("arch-selection": "native"), so it runs only on GPUs like '
            f"the build machine's; rebuild it without --arch native to publish it"
        )
    elif metadata.arch_selection == "explicit" and not allow_explicit_archs:
        archs = ", ".join(metadata.backend_archs or ()) or "none"
        walker.problems.append(
            f'{name}: built with an explicit --arch list ("arch-selection": "explicit"; capabilities: {archs}), '
            "not the full list; rebuild it without --arch, or pass --allow-explicit-archs to publish it as it is"
        )
    dirty = metadata.provenance.dirty_parts if metadata.provenance is not None else ()
    if dirty:
        keys = " and ".join(f"provenance.{part}.dirty" for part in dirty)
        walker.warnings.append(f"{name}: built from uncommitted changes ({keys})")
    return VariantDir(name, directory, metadata)


def collect_content(kernel_dir: str | os.PathLike[str], *, allow_explicit_archs: bool = False) -> Content:
    """Find and check the variants of ``kernel_dir`` and list every file an upload sends; a variant built for an
    explicit ``--arch`` list is refused unless ``allow_explicit_archs`` (one built with ``--arch native`` always).

    Raises :class:`HubError` listing every refused variant and every link that leaves the allowed roots.
    Hidden paths and dirty builds come back as warnings.
    """
    root = Path(os.path.abspath(kernel_dir))
    variants_dir, directories = _find_variants(root)
    real = Path(os.path.realpath(variants_dir))
    roots = [real]
    store = _nix_store(real)
    if store is not None:
        roots.append(store)
    walker = _Walker(roots)
    variants: list[VariantDir] = []
    files: list[LocalFile] = []
    for directory in directories:
        if directory.name.startswith("."):
            walker.warnings.append(f"{directory.name}: hidden directory (a build's temporary?), not uploaded")
            continue
        if directory.is_symlink() and not walker.allowed(directory, directory.name):
            continue
        variant = _check_variant(directory, walker, allow_explicit_archs)
        if variant is None:
            continue
        variants.append(variant)
        known = len(walker.problems)
        variant_files = walker.walk(directory, f"build/{variant.name}/", variant.name)
        files += variant_files
        if len(walker.problems) == known:  # links that leave the tree are not followed, not even to hash them
            problems = _digest_problems(variant, variant_files)
            if problems:
                listed = "; ".join(problems)
                walker.problems.append(
                    f"{variant.name}: files do not match the digest in {METADATA_FILE}: {listed}"
                )

    card = None
    card_path = variants_dir / CARD
    if card_path.is_file() and (not card_path.is_symlink() or walker.allowed(card_path, CARD)):
        card = LocalFile.read(README, card_path)

    benchmarks = root / BENCHMARKS
    if benchmarks.is_dir():
        walker.roots = [*roots, Path(os.path.realpath(benchmarks))]
        for path in sorted(benchmarks.glob("benchmark*.py")):
            label = f"{BENCHMARKS}/{path.name}"
            if path.is_symlink() and not walker.allowed(path, label):
                continue
            if path.is_file():
                files.append(LocalFile.read(label, path))

    if walker.problems:
        raise HubError(
            "\n".join(
                [
                    f"refusing to upload from {variants_dir}:",
                    *(f"  {problem}" for problem in walker.problems),
                ]
            )
        )
    return Content(
        variants_dir,
        tuple(variants),
        tuple(sorted(files, key=lambda f: f.path)),
        card,
        tuple(walker.warnings),
    )
