"""kernel_builder.errors: one exception hierarchy, and one place that maps it to exit statuses."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import kernel_builder
from kernel_builder.errors import (
    BuildError,
    ConfigError,
    HubError,
    KernelBuilderError,
    UsageError,
    exit_status,
)

#: Exceptions that never leave their module (caught where they are raised).
PRIVATE = {
    "kernel_builder.pipeline.check.abi.UnreadableElf",
    # a signal between two modules of pipeline/environment: the listing cannot answer, so pip is asked instead
    "kernel_builder.pipeline.environment.wheel_index.ListingUnsupported",
    # the source stage cannot be used: the builder logs why and compiles in place
    "kernel_builder.pipeline.compile.source_stage.StageError",
    # the request hook's signal that an operation's deadline passed: the Hub's retry loop turns it into a HubError
    "kernel_builder.hub.errors.DeadlinePassed",
    # no branch v<N>: the loader turns it into the error a missing version gets
    "kernel_builder.loader.hub_steps.VersionNotFound",
    # which side of a bench case raised: bench reports it as that case's failure
    "kernel_builder.authoring.timing.SideFailed",
}


def package_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class defined in the package, by qualified name (``__main__`` would run the CLI)."""
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(kernel_builder.__path__, "kernel_builder."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == info.name:
                found[f"{info.name}.{value.__qualname__}"] = value
    return found


def test_every_public_exception_of_the_package_joins_the_hierarchy() -> None:
    """Warning categories (``StaleBuildWarning``) are not errors: they stay plain ``UserWarning`` subclasses."""
    found = {name: cls for name, cls in package_exceptions().items() if not issubclass(cls, Warning)}
    assert "kernel_builder.loader.errors.NoCompatibleVariantError" in found  # the walk saw the package
    outside = sorted(
        name
        for name, cls in found.items()
        if not issubclass(cls, KernelBuilderError)
        and name not in PRIVATE
        and not cls.__name__.startswith("_")
    )
    assert outside == []


def test_only_the_two_roots_set_an_exit_code() -> None:
    setters = sorted(name for name, cls in package_exceptions().items() if "exit_code" in vars(cls))
    assert setters == ["kernel_builder.errors.KernelBuilderError", "kernel_builder.errors.UsageError"]


def test_usage_and_configuration_errors_exit_2_failed_operations_1() -> None:
    from kernel_builder.layers.errors import KernelizeError
    from kernel_builder.loader.errors import NoCompatibleVariantError

    assert exit_status(UsageError("bad flag")) == 2
    assert exit_status(ConfigError("pyproject.toml: no [tool.kernels.dependencies]")) == 2
    for error in (BuildError("x"), HubError("x"), NoCompatibleVariantError("x"), KernelizeError("x")):
        assert exit_status(error) == 1 == error.exit_code
    assert exit_status(PermissionError(13, "denied")) == 1  # any other error reaching the CLI


def test_one_configuration_error_type() -> None:
    assert issubclass(ConfigError, UsageError)
    error = ConfigError("kernels.lock: not found")
    assert str(error) == "kernels.lock: not found" and error.diagnostics == []


def test_config_error_from_diagnostics_renders_them_in_order() -> None:
    from kernel_builder.common.diagnostics import Diagnostic, Severity

    diagnostics = [
        Diagnostic(Severity.ERROR, "first", "build.toml", line=3),
        Diagnostic(Severity.WARNING, "second", "build.toml", line=5),
    ]
    error = ConfigError(diagnostics)
    assert error.diagnostics == diagnostics
    assert str(error) == "\n".join(d.render() for d in diagnostics)


@pytest.mark.parametrize(
    ("module", "name", "builtin"),
    [
        ("kernel_builder.loader.errors", "NoCompatibleVariantError", FileNotFoundError),
        ("kernel_builder.loader.errors", "KernelIntegrityError", ValueError),
        ("kernel_builder.loader.errors", "UntrustedKernelError", ValueError),
        ("kernel_builder.loader.errors", "KernelNotLockedError", ValueError),
        ("kernel_builder.layers.errors", "KernelizeError", ValueError),
        ("kernel_builder.layers.errors", "IncompatibleLayerError", TypeError),
        ("kernel_builder.layers.errors", "KernelLoadError", FileNotFoundError),
        ("kernel_builder.common.safe_fs", "UnsafeFileError", ValueError),
        ("kernel_builder.formats.variants", "UnsupportedEnvironmentError", ValueError),
    ],
)
def test_upstream_compatible_errors_keep_their_builtin_first(module: str, name: str, builtin: type) -> None:
    """``except ValueError`` written for upstream's ``kernels`` catches them; so does ``except KernelBuilderError``."""
    cls = getattr(importlib.import_module(module), name)
    assert cls.__mro__[1] is builtin and issubclass(cls, KernelBuilderError)
    with pytest.raises(builtin):
        raise cls("message")
    assert str(cls("message")) == "message"
