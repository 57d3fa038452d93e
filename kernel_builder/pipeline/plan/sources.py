"""The files of a kernel project that matter: what is shipped from the Python package, and what the id hashes.

Both the unique id (docs/layout.md) and the assembled variant (docs/layout.md) use these lists, so what is hashed is
exactly what is shipped. A build lists and reads them once, into the plan's source scan
(:mod:`kernel_builder.pipeline.plan.scan`); the functions here are its parts.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from kernel_builder.common.safe_fs import scan_tree
from kernel_builder.config.model import KernelProject, TvmFfi
from kernel_builder.formats.files import is_bytecode, is_variant_file, skipped_directory
from kernel_builder.formats.source_snapshot import SourceFile, read_source


def package_dir(project: KernelProject) -> Path:
    ext = "tvm-ffi-ext" if isinstance(project.config.framework, TvmFfi) else "torch-ext"
    return project.root / ext / project.py_name


def _selected(rel: str, pyext: tuple[str, ...]) -> bool:
    """Whether the package's extension filter picks ``rel``: ``.py`` or a ``pyext`` suffix, not the top-level
    ``_ops.py`` (generated)."""
    suffix = Path(rel).suffix
    if rel == "_ops.py" or not suffix:
        return False
    return suffix[1:] in pyext or suffix == ".py"


def is_shipped(rel: str, pyext: tuple[str, ...]) -> bool:
    """Whether a file at ``rel`` (``/``-separated, relative to the package dir) is one a variant ships (docs/layout.md):
    picked by the extension filter, and a variant file (:func:`~kernel_builder.formats.files.is_variant_file`)."""
    return is_variant_file(rel) and _selected(rel, pyext)


def package_files(project: KernelProject) -> tuple[list[str], list[str]]:
    """The files of the package the extension filter picks: the variant files, and the hidden files left out
    (one listing of the package directory).

    Bytecode and hidden directories are not entered. Symlinks are followed, to files and directories (a link
    back to a directory above it is not walked again).
    """
    pyext = project.config.framework.pyext
    # The author's own tree: every link is followed (:func:`~kernel_builder.common.safe_fs.scan_tree` cuts
    # the loops); dangling links and special files are not files to ship.
    scan = scan_tree(
        package_dir(project),
        skip=lambda rel, is_dir: is_dir and skipped_directory(rel.rsplit("/", 1)[-1]),
        follow=lambda rel, target: True,
    )
    shipped, hidden = [], []
    for rel in sorted(scan.files):
        if not _selected(rel, pyext):
            continue
        if is_variant_file(rel):
            shipped.append(rel)
        elif not is_bytecode(rel):
            hidden.append(rel)
    return shipped, hidden


def shipped_python_files(project: KernelProject) -> list[str]:
    """Paths (``/``-separated, relative to the package dir) of the files copied into every variant.

    Every ``.py`` file and every file whose extension is in ``pyext``, recursively, that is a variant file
    (docs/layout.md): no bytecode (``__pycache__``, ``*.pyc``, ``*.pyo``) and no hidden path. The top-level
    generated ``_ops.py`` is skipped.
    """
    return package_files(project)[0]


def hidden_python_files(project: KernelProject) -> list[str]:
    """Hidden files the extension filter would pick (``.private.py``): not shipped, and the build says so."""
    return package_files(project)[1]


def user_ops_file(project: KernelProject) -> Path | None:
    """A user's own ``_ops.py``, which the generated one replaces (with a warning)."""
    candidate = package_dir(project) / "_ops.py"
    return candidate if candidate.is_file() else None


def id_input_files(project: KernelProject, shipped: Sequence[str] | None = None) -> list[str]:
    """Every file the unique id hashes, relative to the kernel root, sorted by ``/``-path bytes; ``shipped`` is
    :func:`shipped_python_files` when the caller has listed the package already."""
    config = project.config
    files = {"build.toml"} if project.file.name == "build.toml" else {project.file.name}
    framework = config.framework
    files.update(getattr(framework, "src", ()))
    for kernel in config.kernels:
        files.update(kernel.src)
    pkg_rel = package_dir(project).relative_to(project.root).as_posix()
    shipped = shipped_python_files(project) if shipped is None else shipped
    files.update(f"{pkg_rel}/{f}" for f in shipped)
    return sorted(files, key=lambda p: p.encode())


def read_inputs(project: KernelProject, files: Iterable[str]) -> Iterator[tuple[SourceFile, bytes]]:
    """Each of ``files`` (relative to the kernel root) read once: its digest, size and time, and its bytes."""
    for rel in files:
        yield read_source(project.root, rel)
