"""What pip's configured sources offer for one project, read once per run: the file listing of each index and
find-links location, filtered to the wheels this interpreter can install.

Asking ``pip install --dry-run`` once per question costs a pip start-up, a fresh download and parse of the
project's page, and (without PEP 658 metadata, as for torch on PyPI) a slow lazy read of the chosen wheel:
10-35 s per question on a small machine, with several questions per project. The same facts come from one
listing per source (the simple repository API: PEP 691 JSON, or PEP 503 HTML; a local directory for
find-links), ``packaging``'s tags for the wheels this interpreter installs, and, where a wheel's flavour is
not in its version, its ``Requires-Dist`` — from PEP 658 metadata, a local file, or three HTTP range
requests on the wheel (its zip directory and ``METADATA``), kept on disk by the wheel's hash.

pip's settings are pip's own: ``pip config list`` gives the configuration files and ``PIP_*`` variables
(index-url, extra-index-url, find-links, no-index, constraint, cert) in pip's order of precedence.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import os
import re
import ssl
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from email.parser import HeaderParser
from html.parser import HTMLParser
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag, sys_tags
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import Version

PYPI = "https://pypi.org/simple"
TIMEOUT = 20  # seconds per request, no retries: an unreachable index fails its listing at once
_ACCEPT = "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.1"
_CHUNK = 64 * 1024  # the least a range request asks for: the zip end records and METADATA fit in one


class ListingUnsupported(Exception):
    """A source answered in a way this reader cannot use (no byte ranges, an unreadable wheel): pip itself must
    be asked instead."""


@dataclass(frozen=True)
class PipSources:
    """Where pip looks for packages, and the constraints it applies, as its configuration says."""

    indexes: tuple[str, ...]  # index-url, then each extra-index-url (none with no-index)
    find_links: tuple[str, ...]
    constraints: tuple[str, ...]  # constraint files
    cert: str | None
    #: The setting that names the constraint files, for messages: ``global.constraint`` (a configuration file's
    #: ``[global]`` section) or ``PIP_CONSTRAINT``; ``None`` without constraint files.
    constraint_setting: str | None = None


def _pip_config_items() -> list[tuple[str, str, str]]:
    """``(section, key, value)`` of every setting pip sees, from ``pip config list`` (files, then ``PIP_*``)."""
    try:
        result = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False,
            env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return []  # pip's defaults: PyPI alone
    items = []
    for line in result.stdout.splitlines():
        match = re.match(r"^([^.=]*)\.([^=]+)='(.*)'$", line)
        if match:
            items.append((match[1], match[2], match[3]))
    return items


def sources_from_config(items: list[tuple[str, str, str]]) -> PipSources:
    """pip's effective install options from its configuration items: ``[global]``, then ``[install]``, then
    the environment; a later setting of one key replaces an earlier one (pip's own order)."""
    settings: dict[str, str] = {}
    origins: dict[str, str] = {}
    for section in ("global", "install", ":env:"):
        for item_section, key, value in items:
            if item_section == section and value:
                settings[key] = value
                origins[key] = (
                    f"PIP_{key.upper().replace('-', '_')}" if section == ":env:" else f"{section}.{key}"
                )
    no_index = settings.get("no-index", "").lower() in ("1", "true", "yes", "on")
    indexes = (
        () if no_index else (settings.get("index-url", PYPI), *settings.get("extra-index-url", "").split())
    )
    return PipSources(
        indexes=tuple(dict.fromkeys(url.rstrip("/") for url in indexes)),
        find_links=tuple(settings.get("find-links", "").split()),
        constraints=tuple(settings.get("constraint", "").split()),
        cert=settings.get("cert"),
        constraint_setting=origins.get("constraint") if settings.get("constraint", "").split() else None,
    )


_SOURCES: dict[tuple[tuple[str, str], ...], PipSources] = {}
_SOURCES_LOCK = threading.Lock()


def pip_sources() -> PipSources:
    """pip's sources under the current ``PIP_*`` variables: asked once per set of values in this process."""
    key = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_")))
    with _SOURCES_LOCK:
        if key not in _SOURCES:
            _SOURCES[key] = sources_from_config(_pip_config_items())
        return _SOURCES[key]


@dataclass(frozen=True)
class WheelFile:
    filename: str
    url: str  # without its hash fragment
    version: Version
    tags: frozenset[Tag]
    requires_python: str | None
    yanked: bool
    metadata_url: str | None  # PEP 658: the wheel's METADATA served beside it
    sha256: str | None


@dataclass(frozen=True)
class Listing:
    source: str
    files: tuple[WheelFile, ...]
    problem: str | None  # why the source gave nothing (unreachable, an error status); None when it answered


def _wheel(url: str, attrs: dict[str, object]) -> WheelFile | None:
    """A listing entry as a :class:`WheelFile`, or ``None`` for an sdist or a name that is not a wheel's."""
    parsed = urllib.parse.urlsplit(url)
    filename = urllib.parse.unquote(parsed.path.rsplit("/", 1)[-1])
    try:
        _, version, _, tags = parse_wheel_filename(filename)
    except InvalidWheelFilename:
        return None
    hashes = attrs.get("hashes")
    sha256 = hashes.get("sha256") if isinstance(hashes, dict) else None
    if sha256 is None and parsed.fragment.startswith("sha256="):
        sha256 = parsed.fragment.removeprefix("sha256=")
    bare = urllib.parse.urlunsplit(parsed._replace(fragment=""))
    metadata = attrs.get("core-metadata", attrs.get("dist-info-metadata"))
    yanked = attrs.get("yanked")
    return WheelFile(
        filename=filename,
        url=bare,
        version=version,
        tags=frozenset(tags),
        requires_python=str(attrs["requires-python"]) if attrs.get("requires-python") else None,
        yanked=yanked not in (None, False, "false"),
        metadata_url=bare + ".metadata" if metadata not in (None, False, "false") else None,
        sha256=str(sha256) if sha256 else None,
    )


class _Anchors(HTMLParser):
    """The ``<a>`` elements of a PEP 503 page or a find-links page, with their ``data-*`` attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def _from_html(page_url: str, text: str) -> list[WheelFile]:
    parser = _Anchors()
    parser.feed(text)
    out = []
    for anchor in parser.anchors:
        href = anchor.get("href")
        if not href:
            continue
        attrs: dict[str, object] = {
            "requires-python": anchor.get("data-requires-python"),
            "yanked": None if "data-yanked" not in anchor else True,
            "core-metadata": anchor.get("data-core-metadata", anchor.get("data-dist-info-metadata")),
        }
        if "data-core-metadata" not in anchor and "data-dist-info-metadata" not in anchor:
            attrs["core-metadata"] = None
        elif attrs["core-metadata"] is None:
            attrs["core-metadata"] = True  # the bare attribute
        wheel = _wheel(urllib.parse.urljoin(page_url, href), attrs)
        if wheel is not None:
            out.append(wheel)
    return out


def _from_json(page_url: str, text: str) -> list[WheelFile]:
    out = []
    for entry in json.loads(text).get("files", []):
        wheel = _wheel(urllib.parse.urljoin(page_url, str(entry.get("url", ""))), entry)
        if wheel is not None:
            out.append(wheel)
    return out


def _ssl_context(cert: str | None) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=cert if cert and Path(cert).is_file() else None)


def _request(url: str, headers: dict[str, str]) -> urllib.request.Request:
    """A request for ``url``, with the credentials a URL may carry (``https://user:token@host/...``) sent as
    HTTP basic authentication, as pip does."""
    parsed = urllib.parse.urlsplit(url)
    if parsed.username is not None:
        netloc = parsed.hostname or ""
        netloc += f":{parsed.port}" if parsed.port else ""
        credentials = f"{urllib.parse.unquote(parsed.username)}:{urllib.parse.unquote(parsed.password or '')}"
        headers = {**headers, "Authorization": "Basic " + base64.b64encode(credentials.encode()).decode()}
        url = urllib.parse.urlunsplit(parsed._replace(netloc=netloc))
    return urllib.request.Request(url, headers=headers)


def read_url(url: str, accept: str) -> bytes:
    """The body at ``url`` fetched as pip fetches: with pip's certificate bundle (its ``cert`` setting) and the
    credentials the URL carries. Raises ``urllib.error.URLError`` or ``OSError``."""
    request = _request(url, {"Accept": accept})
    with urllib.request.urlopen(
        request, timeout=TIMEOUT, context=_ssl_context(pip_sources().cert)
    ) as response:
        body: bytes = response.read()
        return body


def _problem(error: Exception) -> str:
    if isinstance(error, urllib.error.HTTPError):
        return f"it answers HTTP {error.code}"
    reason = getattr(error, "reason", error)
    return f"it is not reachable from here ({reason})"


def _local_path(url: str) -> Path:
    return Path(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))


def _index_listing(index: str, project: str, cert: str | None) -> Listing:
    """The files of ``project`` on the simple-API index ``index`` (a URL, or a ``file:`` URL of a directory)."""
    page = f"{index.rstrip('/')}/{canonicalize_name(project)}/"
    if not index.startswith(("http://", "https://")):
        root = _local_path(index) if index.startswith("file:") else Path(index)
        if not root.exists():
            return Listing(index, (), "it does not exist")
        local = root / canonicalize_name(project)
        html = local / "index.html" if local.is_dir() else local
        if not html.is_file():
            return Listing(index, (), None)
        return Listing(index, tuple(_from_html(local.as_uri() + "/", html.read_text(encoding="utf-8"))), None)
    try:
        request = _request(page, {"Accept": _ACCEPT})
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=_ssl_context(cert)) as response:
            body = response.read().decode("utf-8", "replace")
            content_type = response.headers.get("Content-Type", "")
            final = response.geturl()
    except urllib.error.HTTPError as error:
        return Listing(index, (), None if error.code == 404 else _problem(error))
    except (urllib.error.URLError, OSError) as error:
        return Listing(index, (), _problem(error))
    try:
        files = _from_json(final, body) if "json" in content_type else _from_html(final, body)
    except (ValueError, AttributeError) as error:
        return Listing(index, (), f"its page for {project} cannot be read ({error})")
    return Listing(index, tuple(files), None)


def _find_links_listing(location: str, cert: str | None) -> Listing:
    """The wheels in a find-links location: a local directory or file, or a page of links."""
    if not location.startswith(("http://", "https://")):
        path = _local_path(location) if location.startswith("file:") else Path(location)
        if path.is_dir():
            wheels = (_wheel(child.as_uri(), {}) for child in sorted(path.iterdir()))
            return Listing(location, tuple(w for w in wheels if w is not None), None)
        if path.is_file() and path.suffix == ".whl":
            wheel = _wheel(path.as_uri(), {})
            return Listing(location, (wheel,) if wheel else (), None)
        if path.is_file():
            return Listing(location, tuple(_from_html(path.as_uri(), path.read_text(encoding="utf-8"))), None)
        return Listing(location, (), "it does not exist")
    try:
        request = _request(location, {"Accept": "text/html"})
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=_ssl_context(cert)) as response:
            return Listing(location, tuple(_from_html(response.geturl(), response.read().decode())), None)
    except (urllib.error.URLError, OSError) as error:
        return Listing(location, (), _problem(error))


_LISTINGS: dict[tuple[str, str, bool], Listing] = {}
_LISTING_LOCKS: dict[tuple[str, str, bool], threading.Lock] = {}
_LISTINGS_LOCK = threading.Lock()


def listing(source: str, project: str, *, find_links: bool = False, cert: str | None = None) -> Listing:
    """``source``'s files of ``project``, fetched once per process: callers asking while it is being fetched
    wait for that answer. Listings are not kept between runs (an index gains releases)."""
    key = (source, canonicalize_name(project), find_links)
    with _LISTINGS_LOCK:
        lock = _LISTING_LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key not in _LISTINGS:
            _LISTINGS[key] = (
                _find_links_listing(source, cert) if find_links else _index_listing(source, project, cert)
            )
        return _LISTINGS[key]


def clear_listings() -> None:
    """Forget the listings and pip settings this process read (tests; a long-lived process after changes)."""
    with _LISTINGS_LOCK:
        _LISTINGS.clear()
    with _SOURCES_LOCK:
        _SOURCES.clear()


def listings(project: str, sources: PipSources, extra_indexes: tuple[str, ...] = ()) -> list[Listing]:
    """Every source's listing of ``project``: the configured indexes, ``extra_indexes``, then find-links."""
    indexes = tuple(dict.fromkeys((*sources.indexes, *(i.rstrip("/") for i in extra_indexes))))
    out = [listing(i, project, cert=sources.cert) for i in indexes]
    out += [listing(f, project, find_links=True, cert=sources.cert) for f in sources.find_links]
    return out


@functools.cache
def _tag_priority() -> dict[Tag, int]:
    """This interpreter's wheel tags, best first (what pip installs into an environment made from it)."""
    return {tag: rank for rank, tag in enumerate(sys_tags())}


#: The manylinux tags of each Linux CPU a target environment is made for, best first: manylinux_2_28 (the
#: policy every variant targets) down to manylinux2014 (glibc 2.17), then the bare platform.
_MANYLINUX_GLIBC = [(2, minor) for minor in range(28, 16, -1)]


def target_tags(system: str) -> dict[Tag, int]:
    """The wheel tags pip accepts for ``system`` (``aarch64-linux``) with this Python version, best first: what
    ``pip download --platform manylinux_2_28_<cpu> --python-version X.Y`` accepts."""
    from packaging.tags import compatible_tags, cpython_tags

    cpu = system.split("-")[0]
    platforms = [f"manylinux_{major}_{minor}_{cpu}" for major, minor in _MANYLINUX_GLIBC]
    platforms += [f"manylinux2014_{cpu}", f"linux_{cpu}"]
    version = sys.version_info[:2]
    tags = [*cpython_tags(version, platforms=platforms), *compatible_tags(version, platforms=platforms)]
    return {tag: rank for rank, tag in enumerate(dict.fromkeys(tags))}


def installable(
    project: str, specifier: SpecifierSet, found: list[Listing], *, tags: dict[Tag, int] | None = None
) -> list[WheelFile]:
    """The wheels of ``project`` in ``found`` that pip would consider for ``project<specifier>`` here: the
    version allowed (pre-releases too, as for an exact pin), a tag of this interpreter (or of ``tags``, another
    system's: :func:`target_tags`), ``Requires-Python`` met; one per version — the best-tagged, not yanked where
    another is not — newest version first."""
    priority = tags if tags is not None else _tag_priority()
    python = ".".join(str(part) for part in sys.version_info[:3])
    name = canonicalize_name(project)
    best: dict[Version, tuple[tuple[bool, int], WheelFile]] = {}
    for source in found:
        for wheel in source.files:
            if canonicalize_name(wheel.filename.split("-", 1)[0]) != name:
                continue
            if not specifier.contains(wheel.version, prereleases=True):
                continue
            ranks = [priority[tag] for tag in wheel.tags if tag in priority]
            if not ranks:
                continue
            if wheel.requires_python:
                try:
                    if not SpecifierSet(wheel.requires_python).contains(python, prereleases=True):
                        continue
                except InvalidSpecifier:
                    pass  # pip ignores an unparsable Requires-Python too
            rank = (wheel.yanked, min(ranks))
            if wheel.version not in best or rank < best[wheel.version][0]:
                best[wheel.version] = (rank, wheel)
    chosen = [wheel for _, wheel in best.values()]
    unyanked = [wheel for wheel in chosen if not wheel.yanked]
    return sorted(unyanked or chosen, key=lambda w: w.version, reverse=True)


# --- a wheel's Requires-Dist -----------------------------------------------------------------------------


class _RangeReader(io.RawIOBase):
    """A remote file read through HTTP range requests, for :mod:`zipfile`: what it has fetched it keeps, and
    each miss asks for at least :data:`_CHUNK` bytes, so a wheel's metadata costs three requests."""

    def __init__(self, url: str, cert: str | None) -> None:
        super().__init__()
        self.url, self.context = url, _ssl_context(cert)
        self.blocks: list[tuple[int, bytes]] = []
        self.position = 0
        start, data, self.size = self._get(f"bytes=-{_CHUNK}")
        self.blocks.append((start, data))

    def _get(self, byte_range: str) -> tuple[int, bytes, int]:
        request = _request(self.url, {"Range": byte_range, "Accept-Encoding": "identity"})
        with urllib.request.urlopen(request, timeout=TIMEOUT, context=self.context) as response:
            content_range = response.headers.get("Content-Range", "")
            match = re.match(r"bytes (\d+)-(\d+)/(\d+)", content_range)
            if response.status != 206 or not match:
                raise ListingUnsupported(f"{self.url} is not served in byte ranges")
            return int(match[1]), response.read(), int(match[3])

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.position, io.SEEK_END: self.size}[whence]
        self.position = max(0, base + offset)
        return self.position

    def _cached(self, start: int, length: int) -> bytes | None:
        for block_start, data in self.blocks:
            if block_start <= start and start + length <= block_start + len(data):
                return data[start - block_start : start + length - block_start]
        return None

    def read(self, size: int = -1) -> bytes:
        if size < 0:
            size = self.size - self.position
        size = max(0, min(size, self.size - self.position))
        data = self._cached(self.position, size)
        if data is None:
            end = min(self.size, self.position + max(size, _CHUNK)) - 1
            start, fetched, _ = self._get(f"bytes={self.position}-{end}")
            self.blocks.append((start, fetched))
            data = self._cached(self.position, size)
            if data is None:
                raise ListingUnsupported(f"{self.url} answered another byte range than the one asked")
        self.position += len(data)
        return data

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def _metadata_from_zip(archive: zipfile.ZipFile, wheel: WheelFile) -> str:
    name = canonicalize_name(wheel.filename.split("-", 1)[0])
    for info in archive.infolist():
        parts = info.filename.split("/")
        if len(parts) == 2 and parts[1] == "METADATA" and parts[0].endswith(".dist-info"):
            if canonicalize_name(parts[0].removesuffix(".dist-info").rsplit("-", 1)[0]) == name:
                return archive.read(info).decode("utf-8", "replace")
    raise ListingUnsupported(f"{wheel.filename} has no .dist-info/METADATA")


def _read_metadata(wheel: WheelFile, cert: str | None) -> str:
    if not wheel.url.startswith(("http://", "https://")):
        with zipfile.ZipFile(_local_path(wheel.url)) as archive:
            return _metadata_from_zip(archive, wheel)
    if wheel.metadata_url is not None:
        try:
            request = _request(wheel.metadata_url, {})
            with urllib.request.urlopen(request, timeout=TIMEOUT, context=_ssl_context(cert)) as response:
                text: str = response.read().decode("utf-8", "replace")
                return text
        except (urllib.error.URLError, OSError):
            pass  # advertised but not served: read the wheel itself
    try:
        with zipfile.ZipFile(_RangeReader(wheel.url, cert)) as archive:
            return _metadata_from_zip(archive, wheel)
    except (urllib.error.URLError, OSError, zipfile.BadZipFile) as error:
        raise ListingUnsupported(f"cannot read the metadata of {wheel.url}: {error}") from error


def _cache_file(wheel: WheelFile) -> Path:
    from kernel_builder.pipeline.environment.env_facts import cache_root

    key = wheel.sha256 or hashlib.sha256(wheel.url.encode()).hexdigest()
    return cache_root() / "wheel-metadata" / f"{key}.json"


def _requires(metadata: str) -> list[str]:
    return [str(value) for value in HeaderParser().parsestr(metadata).get_all("Requires-Dist") or []]


def requires_dist(wheel: WheelFile, cert: str | None = None) -> list[str]:
    """The wheel's ``Requires-Dist`` lines. A remote wheel's are kept on disk by its sha256 (a file of a given
    hash never changes; by its URL where the index gives no hash); :class:`ListingUnsupported` when they cannot
    be read without downloading the whole wheel."""
    if not wheel.url.startswith(("http://", "https://")):  # a local file may change in place: read it again
        return _requires(_read_metadata(wheel, cert))
    cache = _cache_file(wheel)
    try:
        return list(json.loads(cache.read_text(encoding="utf-8"))["requires_dist"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    found = _requires(_read_metadata(wheel, cert))
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache.with_name(f".{cache.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(json.dumps({"url": wheel.url, "requires_dist": found}) + "\n", encoding="utf-8")
        os.replace(tmp, cache)
    except OSError:
        pass  # a read-only cache only costs the next run the same requests
    return found
