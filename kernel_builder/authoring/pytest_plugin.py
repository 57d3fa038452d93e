"""The pytest plugin of ``kernel-builder test``: loads the kernel under test and exposes its package name.

``kernel-builder test`` runs pytest with ``-p kernel_builder.authoring.pytest_plugin`` and
``KERNEL_BUILDER_TEST_KERNEL=<package>=<build dir>``; before collection, the variant for this environment is
loaded from the build directory (digest verified, as every load) and made importable as ``<package>``.
"""

from __future__ import annotations

import os
import warnings

import pytest

ENV = "KERNEL_BUILDER_TEST_KERNEL"


def pytest_configure(config: pytest.Config) -> None:
    value = os.environ.get(ENV)
    if not value:
        return
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise pytest.UsageError(f"{ENV}={value!r}: expected <package>=<build directory>")
    from kernel_builder.loader import get_local_kernel
    from kernel_builder.loader.alias import expose_as

    with warnings.catch_warnings():
        # A build from uncommitted changes warns on load; under development that is the normal case.
        warnings.simplefilter("ignore", UserWarning)
        try:
            module = get_local_kernel(path)
        except (OSError, ValueError, ImportError) as exc:
            raise pytest.UsageError(f"cannot load the kernel under test from {path}: {exc}") from exc
    expose_as(module, name)
