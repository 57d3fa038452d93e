"""The publishing errors under the names callers catch; the classes themselves live in ``kernel_builder.errors``.

``PublishError`` is :class:`kernel_builder.errors.HubError` (exit 1); ``ProjectConfigError`` is
:class:`kernel_builder.errors.ConfigError` (exit 2), kept so that ``except ProjectConfigError`` still works.
"""

from __future__ import annotations

from kernel_builder.errors import ConfigError, HubError

__all__ = ["ProjectConfigError", "PublishError"]

PublishError = HubError
ProjectConfigError = ConfigError
