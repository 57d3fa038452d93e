"""The one package that talks to the Hugging Face Hub (docs/loading.md), by concern:

- :mod:`~kernel_builder.hub.network`: timeouts, retries and the deadline of an operation, applied to our own
  requests only;
- :mod:`~kernel_builder.hub.errors`: what a failed request means (worth a retry or not) and how it is named;
- :mod:`~kernel_builder.hub.cache`: the cache's layout and the checks before a download writes into it;
- :mod:`~kernel_builder.hub.environment`: offline mode, telemetry and the user agent, read at every call;
- :mod:`~kernel_builder.hub.repos`: the values the operations take and give;
- :mod:`~kernel_builder.hub.operations`: :class:`Hub`, every read and write request.

Every name other modules use is importable from ``kernel_builder.hub`` itself.
"""

from kernel_builder.common.hub_env import DEFAULT_ENDPOINT, endpoint, repo_folder_name
from kernel_builder.hub.cache import CacheError, CacheLinkError
from kernel_builder.hub.environment import (
    cache_dir,
    environment_details,
    is_offline,
    telemetry_disabled,
    user_agent,
)
from kernel_builder.hub.errors import HTTP_ERRORS, REQUEST_ERRORS, describe_error
from kernel_builder.hub.network import CONNECT_TIMEOUT, DEADLINE, READ_TIMEOUT, RETRIES, NetworkPolicy
from kernel_builder.hub.operations import LIBRARY_NAME, Hub, Warn
from kernel_builder.hub.repos import (
    KERNEL,
    MODEL,
    REPO_TYPES,
    AddFile,
    CommitResult,
    DeleteFile,
    RemoteFile,
    RemoteRepo,
)

__all__ = [
    "CONNECT_TIMEOUT",
    "DEADLINE",
    "DEFAULT_ENDPOINT",
    "HTTP_ERRORS",
    "KERNEL",
    "LIBRARY_NAME",
    "MODEL",
    "READ_TIMEOUT",
    "REPO_TYPES",
    "REQUEST_ERRORS",
    "RETRIES",
    "AddFile",
    "CacheError",
    "CacheLinkError",
    "CommitResult",
    "DeleteFile",
    "Hub",
    "NetworkPolicy",
    "RemoteFile",
    "RemoteRepo",
    "Warn",
    "cache_dir",
    "describe_error",
    "endpoint",
    "environment_details",
    "is_offline",
    "repo_folder_name",
    "telemetry_disabled",
    "user_agent",
]
