"""CUTLASS release archives: download one, check its SHA-256, unpack its headers into the user cache.

The archive of a pin is GitHub's source archive of the release tag, ``<base>/v<version>.tar.gz`` with ``base``
:data:`~kernel_builder.formats.dependencies.CUTLASS_ARCHIVE_BASE` or ``KERNEL_BUILDER_CUTLASS_MIRROR`` (any URL
urllib opens: ``https://``, ``http://``, ``file://``). Nothing reaches the cache unless the whole file arrived, its
SHA-256 is the expected one and its headers say the pinned version: the download goes to a temporary file and the
headers to a temporary directory renamed into place, so an interrupted or failed fetch leaves nothing behind.

Only ``include/`` and ``tools/util/include/`` are unpacked, through tarfile's ``data`` filter where Python has it
(no absolute names, no ``..``, no links leaving the tree, no device files) and the same rules checked here besides.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tarfile
import tempfile
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from kernel_builder import __version__
from kernel_builder.errors import BuildError
from kernel_builder.formats.dependencies import CUTLASS_ARCHIVE_BASE, CutlassPin

MIRROR_ENV = "KERNEL_BUILDER_CUTLASS_MIRROR"
TIMEOUT_ENV = "KERNEL_BUILDER_CUTLASS_TIMEOUT"
DEFAULT_TIMEOUT = 30.0  # seconds, for the connection and for each read
HEADER_DIRS = (PurePosixPath("include"), PurePosixPath("tools/util/include"))
_CHUNK = 1 << 16


def archive_url(pin: CutlassPin) -> str:
    base = os.environ.get(MIRROR_ENV, "").strip() or CUTLASS_ARCHIVE_BASE
    return f"{base.rstrip('/')}/{pin.tag}.tar.gz"


def sha256_env(pin: CutlassPin) -> str:
    return f"{pin.env_prefix}_SHA256"


def expected_sha256(pin: CutlassPin) -> str:
    """The SHA-256 the archive must have: ``KERNEL_BUILDER_<PIN>_SHA256`` if set, else the pin's known one."""
    name = sha256_env(pin)
    override = os.environ.get(name, "").strip().lower()
    if override:
        if len(override) != 64 or any(c not in "0123456789abcdef" for c in override):
            raise BuildError(f"{name}={override!r} is not a SHA-256: expected 64 hexadecimal digits")
        return override
    if pin.archive_sha256 is None:
        raise BuildError(
            f"{pin.value}: no SHA-256 of the CUTLASS {pin.version} archive ({pin.tag}.tar.gz) is known to this "
            f"version of kernel-builder, so it will not download it: set {name} to the archive's SHA-256 (sha256sum "
            f"of {CUTLASS_ARCHIVE_BASE}/{pin.tag}.tar.gz, fetched on a machine you trust), or "
            f"{pin.env_prefix}_DIR to a checkout of {pin.tag}"
        )
    return pin.archive_sha256


def timeout() -> float:
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise BuildError(f"{TIMEOUT_ENV}={text!r} is not a positive number of seconds")
    return value


def fetch_archive(
    pin: CutlassPin,
    cached: Path,
    version_of: Callable[[Path], str | None],
    log: Callable[[str], None],
) -> None:
    """Download the pin's archive, check it and unpack its headers as ``cached`` (complete, or absent)."""
    url = archive_url(pin)
    sha256 = expected_sha256(pin)
    seconds = timeout()
    log(f"fetching CUTLASS {pin.version} for {pin.value} from {url} (its headers are kept in {cached})")
    cached.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{cached.name}.fetch-", dir=cached.parent) as tmp:
        archive = Path(tmp) / f"{pin.tag}.tar.gz"
        _download(url, archive, pin, seconds)
        digest = _sha256(archive)
        if digest != sha256:
            raise BuildError(
                f"{pin.value}: {url} has SHA-256 {digest}, expected {sha256}: refusing it (a wrong or altered "
                f"file; if the expected value is wrong, set {sha256_env(pin)})"
            )
        staging = Path(tmp) / "headers"
        unpack_headers(archive, staging, url)
        found = version_of(staging)
        if found != pin.version:
            raise BuildError(f"{url} holds CUTLASS {found or 'of unknown version'}, not {pin.version}")
        publish(staging, cached, lambda: version_of(cached) == pin.version)


def publish(staging: Path, cached: Path, complete: Callable[[], bool]) -> None:
    """Rename ``staging`` to ``cached``; a complete copy another build put there first is kept."""
    try:
        os.rename(staging, cached)
    except OSError:
        if complete():
            return
        shutil.rmtree(cached, ignore_errors=True)
        os.rename(staging, cached)


def _download(url: str, into: Path, pin: CutlassPin, seconds: float) -> None:
    request = urllib.request.Request(url, headers={"User-Agent": f"kernel-builder/{__version__}"})
    where = f"{pin.value}: could not download {url}"
    hint = (
        f"without network, set {MIRROR_ENV} to a mirror holding {pin.tag}.tar.gz (a file:// directory works) or "
        f"{pin.env_prefix}_DIR to a checkout of {pin.tag}"
    )
    received = 0
    try:
        with urllib.request.urlopen(request, timeout=seconds) as response, into.open("wb") as out:
            length = response.headers.get("Content-Length")
            expected = int(length) if length is not None and length.isdigit() else None
            read = getattr(response, "read1", response.read)  # what has arrived, so the count stays exact
            while chunk := read(_CHUNK):
                out.write(chunk)
                received += len(chunk)
    except urllib.error.HTTPError as exc:
        raise BuildError(f"{where}: HTTP {exc.code} {exc.reason}; {hint}") from None
    except urllib.error.URLError as exc:  # before any byte of the response: resolving, connecting, TLS
        if isinstance(exc.reason, TimeoutError):
            raise BuildError(f"{where}: timed out connecting (after {seconds:g} s); {hint}") from None
        raise BuildError(f"{where}: {exc.reason}; {hint}") from None
    except TimeoutError:
        raise BuildError(
            f"{where}: timed out: no data for {seconds:g} s (after {received} bytes); on a slow link raise "
            f"{TIMEOUT_ENV} (seconds), or {hint}"
        ) from None
    except http.client.IncompleteRead:
        raise BuildError(
            f"{where}: the download was cut short after {received} bytes (truncated); try again, or {hint}"
        ) from None
    except (http.client.HTTPException, OSError) as exc:
        raise BuildError(f"{where}: {exc}; {hint}") from None
    if expected is not None and received != expected:
        raise BuildError(
            f"{where}: the download was cut short: {received} of {expected} bytes (truncated); try again, or {hint}"
        )


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as source:
        while chunk := source.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _within(name: PurePosixPath, directory: PurePosixPath) -> bool:
    return name.parts[: len(directory.parts)] == directory.parts


def unpack_headers(archive: Path, into: Path, label: str) -> None:
    """The header directories of a release archive (one top directory, ``cutlass-<version>/``) into ``into``."""
    try:
        with tarfile.open(archive, "r:gz") as tar:
            selected = _header_members(tar.getmembers(), label)
            into.mkdir(parents=True)
            try:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(into, members=selected, filter="data")
                else:  # pragma: no cover - Pythons without PEP 706 (before 3.10.12): the checks above only
                    tar.extractall(into, members=selected)
            except tarfile.FilterError as exc:
                raise BuildError(f"{label}: unsafe archive member ({exc})") from None
            except OSError as exc:
                raise BuildError(f"{label}: could not unpack the headers into {into}: {exc}") from None
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        raise BuildError(f"{label}: not a readable .tar.gz archive ({exc})") from None


def _header_members(members: list[tarfile.TarInfo], label: str) -> list[tarfile.TarInfo]:
    """The members under ``<top>/include/`` and ``<top>/tools/util/include/``, renamed without ``<top>/``.

    Every member name is checked (absolute, ``..``); within the header directories only directories, regular
    files and symbolic links that stay inside them are accepted.
    """
    tops = {PurePosixPath(m.name).parts[0] for m in members if PurePosixPath(m.name).parts}
    if len(tops) != 1:
        raise BuildError(f"{label}: not a CUTLASS release archive (expected one top directory)")
    selected: list[tarfile.TarInfo] = []
    for member in members:
        name = PurePosixPath(member.name)
        if name.is_absolute() or ".." in name.parts:
            raise BuildError(f"{label}: unsafe member name {member.name!r}")
        rel = PurePosixPath(*name.parts[1:]) if len(name.parts) > 1 else PurePosixPath()
        if not any(_within(rel, d) for d in HEADER_DIRS):
            continue
        if member.issym():
            _check_link(member, rel, label)
        elif not (member.isfile() or member.isdir()):
            raise BuildError(f"{label}: {member.name} is neither a file, a directory nor a symbolic link")
        member.name = rel.as_posix()
        selected.append(member)
    if not any(_within(PurePosixPath(m.name), PurePosixPath("include/cutlass")) for m in selected):
        raise BuildError(f"{label}: no include/cutlass/ in it: not a CUTLASS release archive")
    return selected


def _check_link(member: tarfile.TarInfo, rel: PurePosixPath, label: str) -> None:
    """A symbolic link must stay inside the header directories (the data filter checks it again on extraction)."""
    target = PurePosixPath(member.linkname)
    parts: list[str] = []
    for part in (rel.parent / target).parts:
        if part == "..":
            if not parts:
                break
            parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    else:
        if not target.is_absolute() and any(_within(PurePosixPath(*parts), d) for d in HEADER_DIRS):
            return
    raise BuildError(f"{label}: link {member.name} -> {member.linkname} leaves the header directories")
