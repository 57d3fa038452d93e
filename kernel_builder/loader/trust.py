"""The trust gate: only kernels of trusted publishers load without ``trust_remote_code`` (docs/loading.md).

``trust_remote_code=True`` skips the gate for every repository; a list of repo ids skips it for exactly those
repositories (an allowlist, as in upstream's ``kernels``), and every other repository still needs a trusted
publisher. The list is matched against each repository the load reaches, redirect destinations included
(:func:`~kernel_builder.loader.arguments.trusted_by_caller`).

An organization is trusted when its Hub overview reports ``trustedKernelPublisher`` as ``true``. ``false``, an
absent key and a failed query all refuse the load (fail closed). Verdicts are cached per endpoint and
organization for the life of the process; failed queries are not cached.

Each verdict is also recorded in the cache (``.kernel-builder/trusted-publishers.json``, per endpoint and
organization), because offline the Hub cannot be asked: an offline load is allowed only for an organization an
earlier online load recorded as trusted, and refused for any other unless the caller passes
``trust_remote_code=True``.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded, write_inside
from kernel_builder.loader.errors import UntrustedKernelError

if TYPE_CHECKING:  # the Hub client is imported only where a request is made
    from kernel_builder.hub import Hub

__all__ = ["RECORD", "CacheSide", "recorded_verdict", "require_recorded", "require_trusted"]

logger = logging.getLogger("kernel_builder")

#: Where the verdicts are recorded, relative to the cache directory.
RECORD = ".kernel-builder/trusted-publishers.json"
_RECORD_LIMIT = 1 << 20

_lock = threading.Lock()
_verdicts: dict[tuple[str, str], bool] = {}


class CacheSide(Protocol):
    """What reading the record needs: the cache and the endpoint whose verdicts count (a ``Hub`` has both)."""

    @property
    def cache_dir(self) -> Path: ...

    @property
    def endpoint(self) -> str: ...


def _recorded(hub: CacheSide) -> dict[str, dict[str, bool]]:
    """The record, or an empty one when it is missing or damaged (which only makes offline loads stricter)."""
    try:
        data = json.loads(read_bounded(hub.cache_dir / RECORD, _RECORD_LIMIT))
    except FileNotFoundError:
        return {}
    except (OSError, UnsafeFileError, ValueError, RecursionError) as error:
        logger.debug("ignoring the trust record in %s: %s", hub.cache_dir, error)
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        endpoint: {org: verdict for org, verdict in orgs.items() if isinstance(verdict, bool)}
        for endpoint, orgs in data.items()
        if isinstance(orgs, dict)
    }


def _remember(hub: Hub, organization: str, verdict: bool) -> None:
    with _lock:
        record = _recorded(hub)
        if record.get(hub.endpoint, {}).get(organization) is verdict:
            return
        record.setdefault(hub.endpoint, {})[organization] = verdict
        text = json.dumps(record, indent=2, sort_keys=True) + "\n"
        try:
            write_inside(hub.cache_dir, RECORD, text.encode("utf-8"))
        except (OSError, ValueError) as error:  # a read-only cache still loads; offline loads stay refused
            logger.warning(
                "could not record the trust verdict for %s in %s: %s", organization, hub.cache_dir, error
            )


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def recorded_verdict(cache: CacheSide, organization: str) -> bool | None:
    """The verdict an online load recorded for ``organization`` on this endpoint, or ``None`` (none recorded)."""
    return _recorded(cache).get(cache.endpoint, {}).get(organization)


def require_recorded(cache: CacheSide, repo_id: str) -> None:
    """The offline gate: :class:`UntrustedKernelError` unless an online load recorded the organization of
    ``repo_id`` as a trusted publisher (the Hub cannot be asked)."""
    organization = repo_id.split("/", 1)[0]
    remedy = f"If you trust {organization}, pass trust_remote_code=True."
    recorded = recorded_verdict(cache, organization)
    if recorded is True:
        logger.debug("offline: %s recorded as a trusted kernel publisher on %s", organization, cache.endpoint)
        return
    if recorded is False:
        raise UntrustedKernelError(
            f"cannot load {repo_id} offline: organization '{organization}' was recorded as not a trusted "
            f"kernel publisher on {cache.endpoint}, and kernels run arbitrary code. {remedy}"
        )
    raise UntrustedKernelError(
        f"cannot load {repo_id} offline: no online load recorded that organization '{organization}' is a "
        f"trusted kernel publisher on {cache.endpoint}, and kernels run arbitrary code. {remedy}"
    )


def require_trusted(hub: Hub, repo_id: str) -> None:
    """Raise :class:`UntrustedKernelError` unless the organization of ``repo_id`` is a trusted publisher.

    Offline the Hub cannot be asked: the verdict an earlier online load recorded decides, and an organization
    with no recorded verdict is refused.
    """
    organization = repo_id.split("/", 1)[0]
    if hub.offline:
        require_recorded(hub, repo_id)
        return
    key = (hub.endpoint, organization)
    with _lock:
        verdict = _verdicts.get(key)
    if verdict is None:
        try:
            value = hub.trusted_publisher(organization)
        except Exception as error:  # any failure refuses the load
            raise UntrustedKernelError(
                f"cannot load {repo_id}: could not verify that organization '{organization}' is a trusted "
                f"kernel publisher ({_first_line(error)}); kernels run arbitrary code, so the load is refused. "
                f"If you trust {organization}, pass trust_remote_code=True."
            ) from error
        verdict = value is True
        with _lock:
            _verdicts[key] = verdict
        _remember(hub, organization, verdict)
    if not verdict:
        raise UntrustedKernelError(
            f"cannot load {repo_id}: organization '{organization}' is not a trusted kernel publisher on "
            f"{hub.endpoint}, and kernels run arbitrary code. If you trust {organization}, pass "
            f"trust_remote_code=True."
        )
