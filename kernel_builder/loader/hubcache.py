"""The record of Hub resolutions the cache path trusts, and the checks a variant from the Hub passes whether it
was downloaded now or earlier (docs/loading.md, "When the cache is trusted").

Shared by :mod:`~kernel_builder.loader.remote` (which writes a record after each load that asked the Hub) and
:mod:`~kernel_builder.loader.warm` (which reads it); nothing here imports the Hub client. A record is one small
JSON file per endpoint, repository and request under :data:`RESOLVED` in the cache, replaced atomically; every
field is checked when it is read, and a record that fails any check is ignored (the Hub answers instead).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.common.env import env_flag
from kernel_builder.common.safe_fs import UnsafeFileError, read_bounded, write_inside
from kernel_builder.errors import UsageError
from kernel_builder.formats.identifiers import is_commit_id, ref_name_problem
from kernel_builder.formats.metadata import METADATA_FILE, Metadata
from kernel_builder.formats.variants import parse_variant
from kernel_builder.loader.errors import KernelIntegrityError
from kernel_builder.loader.importer import check_digest, warn

__all__ = [
    "ALLOW_NO_DIGEST",
    "CACHE_TTL",
    "DEFAULT_TTL",
    "REQUIRE_DIGEST",
    "RESOLVED",
    "Resolution",
    "label",
    "recalled",
    "remember",
    "request_key",
    "ttl",
    "verify_download",
]

logger = logging.getLogger("kernel_builder")

#: Seconds a version or branch resolved online is trusted without asking the Hub again; 0: always ask.
CACHE_TTL = "KERNEL_BUILDER_CACHE_TTL"
DEFAULT_TTL = 600
#: Set to 1 to refuse Hub variants whose metadata.json has no digest (by default they load with a warning, as in
#: upstream's kernels 0.19).
REQUIRE_DIGEST = "KERNEL_BUILDER_REQUIRE_DIGEST"
#: Before kernels 0.19's policy this loader refused them unless this was set; it is the default now, and the
#: variable changes nothing.
ALLOW_NO_DIGEST = "KERNEL_BUILDER_ALLOW_NO_DIGEST"
#: The record of online resolutions, relative to the cache directory: one small JSON file per request.
RESOLVED = ".kernel-builder/resolved"
_FORMAT = 1
_RECORD_LIMIT = 64 << 10
_TYPES = ("kernel", "model")
_MAX_VARIANTS = 4096


def ttl() -> float:
    """:data:`CACHE_TTL` in seconds (default :data:`DEFAULT_TTL`); ``UsageError`` for a value that is not one."""
    text = os.environ.get(CACHE_TTL, "").strip()
    if not text:
        return float(DEFAULT_TTL)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise UsageError(
            f"{CACHE_TTL}={text!r} is not a number of seconds (0 or more); set it to e.g. {DEFAULT_TTL}, or 0 to "
            f"ask the Hub at every load"
        )
    return value


def request_key(version: int | None, revision: str | None) -> str:
    """What the caller asked for, as the record names it: ``version:1`` or ``revision:main``."""
    return f"version:{version}" if version is not None else f"revision:{revision}"


def label(repo_id: str, sha: str, version: int | None) -> str:
    """``org/name at <sha> (v1)``: how messages name a kernel at a commit."""
    return f"{repo_id} at {sha}" + (f" (v{version})" if version is not None else "")


# --- checks shared with the Hub path (remote.py) ----------------------------------------------------------


def verify_download(
    where: str, variant_dir: Path, metadata: Metadata, verify: bool | None, *, folder: Path, repo_id: str
) -> None:
    """The digest check of a variant from the Hub (downloaded now or earlier). A variant without a digest (built
    before digests existed) loads with a warning, as upstream's loader loads it; :data:`REQUIRE_DIGEST` refuses
    it. ``folder`` is the repository's cache folder, named in the remedy."""
    enabled = env_flag("KERNEL_BUILDER_VERIFY_DIGEST", default=True) if verify is None else verify
    if enabled and metadata.digest is None:
        place = f"{where}, build/{variant_dir.name}"
        if env_flag(REQUIRE_DIGEST):
            raise KernelIntegrityError(
                f"{place}: {METADATA_FILE} has no digest, so its files cannot be verified; refusing to load it "
                f"because {REQUIRE_DIGEST} is set. Unset it to load such a variant with a warning (builds "
                f"made before digests existed have none)."
            )
        warn(
            f"{place}: {METADATA_FILE} has no digest, so its files cannot be verified; loading it unverified "
            f"(set {REQUIRE_DIGEST}=1 to refuse such variants)"
        )
        return
    remedy = f"delete {folder} (the cached download of {repo_id}) and download it again"
    check_digest(variant_dir, metadata, verify, remedy=remedy)


# --- the record of online resolutions -----------------------------------------------------------------------


@dataclass(frozen=True)
class Resolution:
    """One online resolution: ``request`` of ``repo_id`` on ``endpoint`` gave commit ``sha`` of the repository
    of type ``repo_type`` at time ``checked``; the variants at that commit; whether the publisher check passed
    online then (rather than ``trust_remote_code``); the newest version branch seen (version requests)."""

    endpoint: str
    repo_id: str
    request: str
    repo_type: str
    sha: str
    checked: float
    publisher_trusted: bool
    variants: tuple[str, ...]
    newest: int | None = None


def _record_path(cache_dir: Path, endpoint_url: str, repo_id: str, request: str) -> str:
    digest = hashlib.sha256(f"{endpoint_url}\n{repo_id}\n{request}".encode()).hexdigest()[:32]
    return f"{RESOLVED}/{digest}.json"


def remember(cache_dir: Path, resolution: Resolution) -> None:
    """Record a resolution the Hub just gave (after a successful load); a cache that cannot be written only
    means the next load asks the Hub again."""
    data = {
        "format": _FORMAT,
        "endpoint": resolution.endpoint,
        "repo_id": resolution.repo_id,
        "request": resolution.request,
        "repo_type": resolution.repo_type,
        "sha": resolution.sha,
        "checked": resolution.checked,
        "publisher_trusted": resolution.publisher_trusted,
        "variants": list(resolution.variants),
        "newest": resolution.newest,
    }
    relpath = _record_path(cache_dir, resolution.endpoint, resolution.repo_id, resolution.request)
    try:
        write_inside(cache_dir, relpath, (json.dumps(data, sort_keys=True) + "\n").encode("utf-8"))
    except (OSError, ValueError) as error:
        logger.debug("could not record the resolution of %s in %s: %s", resolution.repo_id, cache_dir, error)


def _valid_variant_name(name: object) -> bool:
    if not isinstance(name, str) or ref_name_problem(name) is not None or "/" in name:
        return False
    try:
        parse_variant(name)
    except ValueError:
        return False
    return True


def recalled(cache_dir: Path, endpoint_url: str, repo_id: str, request: str) -> Resolution | None:
    """The recorded resolution, or ``None`` when there is none or it is not one we wrote (any field off)."""
    path = cache_dir / _record_path(cache_dir, endpoint_url, repo_id, request)
    try:
        data = json.loads(read_bounded(path, _RECORD_LIMIT))
    except FileNotFoundError:
        return None
    except (OSError, UnsafeFileError, ValueError, RecursionError) as error:
        logger.debug("ignoring the resolution record %s: %s", path, error)
        return None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    checked, variants, newest = data.get("checked"), data.get("variants"), data.get("newest")
    valid = (
        data.get("endpoint") == endpoint_url
        and data.get("repo_id") == repo_id
        and data.get("request") == request
        and data.get("repo_type") in _TYPES
        and is_commit_id(data.get("sha"))
        and isinstance(checked, (int, float))
        and not isinstance(checked, bool)
        and math.isfinite(checked)
        and isinstance(data.get("publisher_trusted"), bool)
        and isinstance(variants, list)
        and len(variants) <= _MAX_VARIANTS
        and all(_valid_variant_name(name) for name in variants)
        and (newest is None or (isinstance(newest, int) and not isinstance(newest, bool) and newest >= 0))
    )
    if not valid or not isinstance(checked, (int, float)) or not isinstance(variants, list):
        logger.debug("ignoring the resolution record %s: not a record this loader wrote", path)
        return None
    return Resolution(
        endpoint_url,
        repo_id,
        request,
        str(data["repo_type"]),
        str(data["sha"]),
        float(checked),
        bool(data["publisher_trusted"]),
        tuple(variants),
        newest,
    )
