"""The pytest plugin that loads the kernel under test and exposes its package name.

``kernel-builder test`` runs pytest with ``-p kernel_builder.authoring.pytest_plugin`` (a kernel's own test run,
:mod:`kernel_builder.authoring.kernel_tests`, names it in ``PYTEST_PLUGINS``) and
``KERNEL_BUILDER_TEST_KERNEL=<package>=<build or variant directory>``; before collection, the variant for this
environment (or the one named) is loaded (digest verified, as every load) and made importable as ``<package>``
(:func:`kernel_builder.loader.alias.load_as`).

pytest is imported only when pytest loads the plugin: ``kernel-builder bench``, which shares the environment
variable's name, runs without it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

ENV = "KERNEL_BUILDER_TEST_KERNEL"


def pytest_configure(config: pytest.Config) -> None:
    import pytest

    value = os.environ.get(ENV)
    if not value:
        return
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise pytest.UsageError(f"{ENV}={value!r}: expected <package>=<build directory>")
    from kernel_builder.loader.alias import load_as

    try:
        load_as(path, name)
    except (OSError, ValueError, ImportError) as exc:
        raise pytest.UsageError(f"cannot load the kernel under test from {path}: {exc}") from exc
