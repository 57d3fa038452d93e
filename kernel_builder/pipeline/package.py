"""Package stage: assemble ``build/<variant>/`` (docs/layout.md).

The variant is assembled in a temporary directory under ``.kernel-builder/tmp/`` and swapped into ``build/``
only when complete, so a failed or interrupted build never leaves a half-written or hidden entry in ``build/``.
What it ships from the Python package, and the lint of those files (which the builder runs before compiling),
come from the plan's source scan (:mod:`kernel_builder.pipeline.plan.scan`), not from the files as they are now.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernel_builder import __version__, backends
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, ConfigError
from kernel_builder.pipeline.generate.ops import aot_ops_py, noarch_ops_py
from kernel_builder.pipeline.plan.planner import VariantPlan
from kernel_builder.pipeline.plan.scan import SourceScan
from kernel_builder.pipeline.plan.sources import is_shipped, package_dir
from kernel_builder.pipeline.state import exchange, make_staging, staging_for, write_atomic

if TYPE_CHECKING:
    # metadata.json's model is imported where a variant is assembled: a no-op build only syncs the card.
    from kernel_builder.formats.metadata import Metadata, ProvenanceEntry

_REGISTERING_DECORATORS = (
    "custom_op", "triton_op", "register_kernel", "register_fake", "register_vmap", "register_torch_dispatch",
)  # fmt: skip


def variant_provenance(
    project: KernelProject, given: ProvenanceEntry | None, sources: SourceScan
) -> ProvenanceEntry | None:
    """What the variants record as the kernel's origin (``provenance.kernel``): ``given``
    (``--provenance-commit``, e.g. a flake's revision), else the kernel's git state (:func:`git_provenance`) for
    the id inputs of the plan's scan ``sources``."""
    return given if given is not None else git_provenance(project, sources.input_paths)


def git_provenance(project: KernelProject, inputs: list[str]) -> ProvenanceEntry | None:
    """HEAD of the git work tree holding the kernel, and whether any id input differs from it.

    ``inputs`` are the id inputs (docs/layout.md), relative to the kernel root. Dirty: one of them is modified, staged,
    untracked or ignored (HEAD does not hold it), or a file HEAD has in the package that would be shipped is
    deleted (the id was computed without it).
    """

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        argv = ["git", "--literal-pathspecs", "-C", str(project.root), *args]  # input names are not globs
        return subprocess.run(argv, capture_output=True, text=True, check=False)

    try:
        head = git("rev-parse", "--verify", "HEAD")
    except OSError:
        return None
    if head.returncode != 0:
        return None
    prefix = git("rev-parse", "--show-prefix").stdout.strip()  # the kernel root within the work tree
    package = package_dir(project).relative_to(project.root).as_posix()
    status = git(
        "status", "--porcelain=v1", "-z", "--untracked-files=all", "--ignored", "--", *inputs, package
    )
    wanted = set(inputs)
    pyext = project.config.framework.pyext
    entries = iter(status.stdout.split("\0"))
    dirty = False
    for entry in entries:
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            next(entries, None)  # the rename's source path
        rel = path.removeprefix(prefix)
        deleted_shipped = (
            "D" in code and rel.startswith(package + "/") and is_shipped(rel[len(package) + 1 :], pyext)
        )
        dirty = dirty or rel in wanted or deleted_shipped
    from kernel_builder.formats.metadata import ProvenanceEntry

    return ProvenanceEntry(commit=head.stdout.strip(), dirty=dirty)


def variant_metadata(
    project: KernelProject,
    plan: VariantPlan,
    digest: dict[str, str],
    kernel: ProvenanceEntry | None,
    torch: str | None = None,
) -> Metadata:
    """The ``metadata.json`` record of one variant (docs/layout.md): ``digest`` is the files' sha256 digest
    (:func:`~kernel_builder.formats.metadata.digest_files`), ``kernel`` the sources' provenance, if known;
    ``torch`` the version of the Torch a compiled variant was built against (``2.13.0+cu130``: its build too)."""
    from kernel_builder.formats.metadata import (
        Digest,
        Metadata,
        Provenance,
        ProvenanceEntry,
        required_kernels_version,
    )

    general = project.config.general
    has_archs = backends.get(plan.backend).gpu is not None and bool(plan.archs)
    return Metadata(
        name=general.name,
        id=plan.ops_name,
        version=general.version,
        license=general.license,
        upstream=general.upstream or None,
        source=general.source or None,
        python_depends=general.python_depends_for(plan.backend),
        kernel_depends=general.kernel_depends_for(plan.backend),
        backend_type=plan.backend,
        backend_archs=tuple(plan.archs) if has_archs else None,
        arch_selection=plan.arch_selection or None,
        digest=Digest("sha256", digest),
        provenance=Provenance(
            kernel=kernel,
            kernel_builder=ProvenanceEntry(version=__version__),
            torch=ProvenanceEntry(version=torch) if torch is not None else None,
        ),
        kernels_minver=required_kernels_version(general.kernel_depends_for(plan.backend), plan.variant),
    )


def lint_op_namespaces(sources: SourceScan) -> None:
    """Fail when a shipped file registers an op in a literal namespace (:func:`check_op_namespaces`). It needs
    only the sources, so the builder runs it once, before compiling anything."""
    problems = check_op_namespaces(sources.contents)
    if problems:
        raise BuildError(
            "op registrations must use the unique namespace:\n"
            + "\n".join(f"  {sources.package}/{p}" for p in problems)
            + '\n  hint: use add_op_namespace_prefix("name") from ._ops (a literal namespace breaks '
            "side-by-side loading)"
        )


def check_op_namespaces(files: Mapping[str, bytes]) -> list[str]:
    """``file:line`` of every op registration that does not use ``add_op_namespace_prefix(...)``, in the Python
    files of ``files`` (their bytes by path, relative to the package directory)."""
    problems = []
    for rel, content in files.items():
        if not rel.endswith(".py"):
            continue
        try:
            tree = ast.parse(content, filename=rel)
        except SyntaxError as exc:
            problems.append(f"{rel}:{exc.lineno}: syntax error: {exc.msg}")
            continue
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            for deco in node.decorator_list:
                if not isinstance(deco, ast.Call) or not _callee_name(deco.func).endswith(
                    _REGISTERING_DECORATORS
                ):
                    continue
                first = deco.args[0] if deco.args else None
                if not (
                    isinstance(first, ast.Call) and _callee_name(first.func) == "add_op_namespace_prefix"
                ):
                    problems.append(
                        f"{rel}:{deco.lineno}: `{_callee_name(deco.func)}` registers an op without "
                        "add_op_namespace_prefix(...)"
                    )
    return problems


def _callee_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def assemble(
    project: KernelProject,
    plan: VariantPlan,
    unique_id: str,
    build_root: Path,
    extension: Path | None,
    provenance: ProvenanceEntry | None,
    import_check: Callable[[Path], Mapping[str, Any] | None] | None,
    *,
    sources: SourceScan,
    torch: str | None = None,
) -> Path:
    """Write ``build_root/<variant>/`` atomically and return it: the shipped files of ``sources`` (the plan's
    scan, whose lint :func:`lint_op_namespaces` the caller ran), the ``_ops.py``, the extension, ``metadata.json``;
    and ``symbols.json``, the kernel's public API as ``import_check`` read it when it imported the kernel (then
    ``metadata.json`` is written again, so that its digest covers it).

    The variant is assembled under ``.kernel-builder/tmp/`` and swapped into ``build/`` only when complete and
    loadable; a failure (a full disk, a permission error, a failed import check, an interrupt) leaves the
    previous variant as it was.
    """
    final = build_root / plan.name
    try:
        tmp = make_staging(project.root, build_root, plan.name)
    except OSError as exc:
        raise _write_error(exc, final) from None
    try:
        try:
            _fill(project, plan, unique_id, sources, tmp, extension, provenance, torch)
        except OSError as exc:
            raise _write_error(exc, final) from None
        if import_check is not None:
            symbols = import_check(tmp)
            if symbols is not None:
                try:
                    _write_symbols(project, plan, tmp, symbols, provenance, torch)
                except OSError as exc:
                    raise _write_error(exc, final) from None
        try:
            _replace_dir(tmp, final)
        except OSError as exc:
            raise _write_error(exc, final) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the staging directory, or the replaced variant after a swap
    return final


def _write_error(exc: OSError, final: Path) -> BuildError:
    """A file-system error while writing a variant, as an error naming the path and what to do."""
    path = exc.filename2 if exc.filename2 is not None else exc.filename
    kept = f"{final} is unchanged" if final.exists() else f"{final} was not written"
    return BuildError(
        f"cannot write {path or final}: {exc.strerror or exc}; {kept}. Free some space or fix the "
        "permissions, then build again"
    )


def _fill(
    project: KernelProject,
    plan: VariantPlan,
    unique_id: str,
    sources: SourceScan,
    tmp: Path,
    extension: Path | None,
    provenance: ProvenanceEntry | None,
    torch: str | None = None,
) -> None:
    for rel in sources.shipped:  # the bytes the unique id hashed, not the files as they are now
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        _write_file(target, sources.contents[rel])
    ops = aot_ops_py(plan.ops_name) if extension is not None else noarch_ops_py(project.py_name, unique_id)
    (tmp / "_ops.py").write_text(ops, encoding="utf-8")
    if extension is not None:
        shutil.copyfile(extension, tmp / f"{plan.ops_name}.abi3.so")
        os.chmod(tmp / f"{plan.ops_name}.abi3.so", 0o755)
    _write_metadata(project, plan, tmp, provenance, torch)
    os.chmod(tmp, 0o755)


def _write_metadata(
    project: KernelProject,
    plan: VariantPlan,
    tmp: Path,
    provenance: ProvenanceEntry | None,
    torch: str | None,
) -> None:
    """``metadata.json`` for the files now in ``tmp``, with their digest."""
    from kernel_builder.formats.metadata import digest_files

    metadata = variant_metadata(project, plan, digest_files(tmp), provenance, torch)
    (tmp / "metadata.json").write_text(metadata.to_json(), encoding="utf-8")


def _write_symbols(
    project: KernelProject,
    plan: VariantPlan,
    tmp: Path,
    symbols: Mapping[str, Any],
    provenance: ProvenanceEntry | None,
    torch: str | None,
) -> None:
    """``symbols.json`` into the checked variant, and ``metadata.json`` again with a digest that covers it.

    The digest is taken again over every file, not patched with the one new file: the import check ran the
    variant's code in this directory, and the digest must be of what ships (hashing costs well under a second
    even for a large extension)."""
    from kernel_builder.formats.symbols import SYMBOLS_FILE, symbols_json

    _write_file(tmp / SYMBOLS_FILE, symbols_json(dict(symbols)).encode())
    _write_metadata(project, plan, tmp, provenance, torch)


def _write_file(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target``; an error names ``target`` (a failed write, a full disk, names no file)."""
    try:
        target.write_bytes(data)
    except OSError as exc:
        if exc.filename is None:
            exc.filename = str(target)
        raise


def _replace_dir(new: Path, final: Path) -> None:
    """Move ``new`` to ``final``. An existing ``final`` is swapped with ``new`` in one step where the system
    can (``new`` then holds the old variant, removed by the caller); otherwise it is moved aside first and put
    back if the second rename fails."""
    if final.exists() and exchange(new, final):
        return
    old = None
    if final.exists():
        old = new.with_name(new.name + ".old")
        os.rename(final, old)
    try:
        os.rename(new, final)
    except BaseException:
        if old is not None:
            os.rename(old, final)  # put the previous variant back
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def sync_card(
    project: KernelProject,
    build_root: Path,
    package_files: Mapping[str, bytes] | None = None,
    warn: Callable[[str], None] | None = None,
) -> None:
    """``build/CARD.md`` is ``<root>/CARD.md`` filled in (a Jinja template, :mod:`kernel_builder.pipeline.card`); a
    stale copy is removed. ``package_files``: the package's files as the plan's source scan read them, which the
    card's variables are taken from (a build reads each source once).

    A card that cannot be filled is a documentation problem, not a failed build: with ``warn``, it is reported
    there (naming the card and the reason) and ``build/CARD.md`` is removed rather than left stale; ``fill-card``
    and ``upload`` refuse it. Without ``warn`` the error is raised.

    The card is written fresh under ``.kernel-builder/tmp/`` and renamed into place: it is never half-written, a
    link planted at ``build/CARD.md`` is replaced, and the file it points to is never written.
    """
    from kernel_builder.pipeline.card import fill_project_card
    from kernel_builder.pipeline.state import state_dir

    card = project.root / "CARD.md"
    target = build_root / "CARD.md"
    filled = None
    if card.is_file():
        try:
            filled = fill_project_card(
                project, cache=state_dir(project.root) / "card.json", package_files=package_files
            )
        except ConfigError as exc:
            if warn is None:
                raise
            warn(
                f"{exc}; build/CARD.md is not written (`kernel-builder upload` refuses the card until it fills)"
            )
    if filled is not None:
        data = filled.encode("utf-8")
        try:
            if target.is_symlink() or not target.is_file() or target.read_bytes() != data:
                build_root.mkdir(parents=True, exist_ok=True)
                write_atomic(target, data, staging_for(project.root, build_root))
        except OSError as exc:
            raise _write_error(exc, target) from None
    elif target.is_symlink() or target.exists():
        try:
            target.unlink()
        except OSError as exc:
            raise _write_error(exc, target) from None
