"""The pytest plugin that loads the kernel under test and exposes its package name, and the import shim's entry.

``kernel-builder test`` runs pytest with ``-p kernel_builder.authoring.pytest_plugin`` (a kernel's own test run,
:mod:`kernel_builder.authoring.kernel_tests`, names it in ``PYTEST_PLUGINS``) and
``KERNEL_BUILDER_TEST_KERNEL=<package>=<build or variant directory>``. The variant for this environment (or the
one named) is loaded (digest verified, as every load) and made importable as ``<package>``
(:func:`kernel_builder.loader.alias.load_as`) in ``pytest_load_initial_conftests``: before pytest imports the
first ``conftest.py``, which may import the package (directly or through a helper module), or put the source
tree on ``sys.path`` where it would otherwise shadow the build.

Processes the tests start (``subprocess``, ``multiprocessing``) run no plugin: for them ``PYTHONPATH`` names a
directory with a one-file package ``<package>`` (written by :func:`kernel_builder.authoring.devtest.write_import_shim`)
whose import calls :func:`import_kernel_under_test`, which puts the same load in its place.

pytest is imported only when pytest calls the plugin: ``kernel-builder bench``, which shares the environment
variable's name, runs without it.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

ENV = "KERNEL_BUILDER_TEST_KERNEL"


def kernel_under_test() -> tuple[str, str] | None:
    """``(package, path)`` from ``KERNEL_BUILDER_TEST_KERNEL``, ``None`` when it is not set; ``ValueError`` when
    it is malformed."""
    value = os.environ.get(ENV)
    if not value:
        return None
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"{ENV}={value!r}: expected <package>=<build directory>")
    return name, path


def load_kernel_under_test() -> ModuleType | None:
    """Load the kernel ``KERNEL_BUILDER_TEST_KERNEL`` names and expose it under its package name (once)."""
    named = kernel_under_test()
    if named is None:
        return None
    from kernel_builder.loader.alias import load_as

    return load_as(named[1], named[0])


def import_kernel_under_test(name: str) -> None:
    """Called by the import shim ``<name>/__init__.py`` while Python imports ``name``: replace the shim in
    ``sys.modules`` with the kernel under test, which the import statement then returns."""
    del sys.modules[name]
    named = kernel_under_test()
    if named is None or named[0] != name:
        raise ModuleNotFoundError(
            f"No module named {name!r}: the kernel-builder test shim for it loads the kernel under test only where "
            f"{ENV}={name}=<build directory> is set (a `kernel-builder test` run and the processes it starts)",
            name=name,
        )
    load_kernel_under_test()


def _load_for_pytest() -> None:
    import pytest

    try:
        load_kernel_under_test()
    except (OSError, ValueError, ImportError) as exc:
        path = os.environ.get(ENV, "").partition("=")[2]
        raise pytest.UsageError(f"cannot load the kernel under test from {path}: {exc}") from exc


def pytest_load_initial_conftests() -> None:
    """Before the first ``conftest.py`` (called for plugins named by ``-p`` or ``PYTEST_PLUGINS``)."""
    _load_for_pytest()


def pytest_configure() -> None:
    """The plugin registered later (``pytest_plugins`` in a conftest): load now; a no-op after the hook above."""
    _load_for_pytest()
