"""The files of a kernel project that matter: what is shipped from the Python package, and what the id hashes.

Both the unique id (build-output §4.2) and the assembled variant (§8) use these lists, so what is hashed is
exactly what is shipped.
"""

from __future__ import annotations

from pathlib import Path

from .config.model import KernelProject, TvmFfi


def package_dir(project: KernelProject) -> Path:
    ext = "tvm-ffi-ext" if isinstance(project.config.framework, TvmFfi) else "torch-ext"
    return project.root / ext / project.py_name


def shipped_python_files(project: KernelProject) -> list[str]:
    """Paths (``/``-separated, relative to the package dir) of the files copied into every variant.

    Every ``.py`` file and every file whose extension is in ``pyext``, recursively; ``__pycache__``, ``*.pyc``
    and the top-level generated ``_ops.py`` are skipped.
    """
    root = package_dir(project)
    pyext = set(project.config.framework.pyext) | {"py"}
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if "__pycache__" in rel.parts or path.suffix == ".pyc" or not path.is_file():
            continue
        if rel.as_posix() == "_ops.py":
            continue
        if path.suffix.lstrip(".") in pyext:
            found.append(rel.as_posix())
    return sorted(found)


def user_ops_file(project: KernelProject) -> Path | None:
    """A user's own ``_ops.py``, which the generated one replaces (with a warning)."""
    candidate = package_dir(project) / "_ops.py"
    return candidate if candidate.is_file() else None


def id_input_files(project: KernelProject) -> list[str]:
    """Every file the unique id hashes, relative to the kernel root, sorted by ``/``-path bytes."""
    config = project.config
    files = {"build.toml"} if project.file.name == "build.toml" else {project.file.name}
    framework = config.framework
    files.update(getattr(framework, "src", ()))
    for kernel in config.kernels:
        files.update(kernel.src)
    pkg_rel = package_dir(project).relative_to(project.root).as_posix()
    files.update(f"{pkg_rel}/{f}" for f in shipped_python_files(project))
    return sorted(files, key=lambda p: p.encode())
