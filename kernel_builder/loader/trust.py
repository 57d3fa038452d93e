"""The trust gate: only kernels of trusted publishers load without ``trust_remote_code`` (loader spec §4.6).

An organization is trusted when its Hub overview reports ``trustedKernelPublisher`` as ``true``. ``false``, an
absent key and a failed query all refuse the load (fail closed). Verdicts are cached per endpoint and
organization for the life of the process; failed queries are not cached.
"""

from __future__ import annotations

import threading

from kernel_builder.hub import Hub
from kernel_builder.loader.errors import UntrustedKernelError
from kernel_builder.loader.importer import warn

__all__ = ["check_trust_argument", "require_trusted"]

_lock = threading.Lock()
_verdicts: dict[tuple[str, str], bool] = {}


def check_trust_argument(repo_id: str, trust_remote_code: object) -> bool:
    """Validate ``trust_remote_code``; ``True`` when it skips the gate.

    A list of signing identities is accepted but not enforced yet: it warns and the gate applies as for
    ``False``.
    """
    if trust_remote_code is True:
        return True
    if isinstance(trust_remote_code, list):
        warn(
            f"trust_remote_code={trust_remote_code!r}: signing identities are not verified yet; loading "
            f"{repo_id} only if its publisher is trusted"
        )
        return False
    if trust_remote_code is not False:
        raise TypeError(
            f"trust_remote_code must be True, False or a list of signing identities, got {trust_remote_code!r}"
        )
    return False


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


def require_trusted(hub: Hub, repo_id: str) -> None:
    """Raise :class:`UntrustedKernelError` unless the organization of ``repo_id`` is a trusted publisher.

    Offline the gate cannot be checked: it is skipped with a warning.
    """
    organization = repo_id.split("/", 1)[0]
    if hub.offline:
        warn(
            f"offline mode: cannot check whether '{organization}' is a trusted kernel publisher; loading "
            f"{repo_id} from the cache without that check"
        )
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
    if not verdict:
        raise UntrustedKernelError(
            f"cannot load {repo_id}: organization '{organization}' is not a trusted kernel publisher on "
            f"{hub.endpoint}, and kernels run arbitrary code. If you trust {organization}, pass "
            f"trust_remote_code=True."
        )
