"""What a variant's build environment is made of, and whether this host can obtain it — found in seconds.

pip decides what can be installed here (its indexes, find-links, constraints), so its sources are read as pip
would read them: each source's listing of ``torch`` once per run (``wheel_index``), filtered to the wheels
this interpreter installs, newest first — the file pip's dry run of ``torch==<pin>`` would choose, from the
matrix entry's index (as an extra index) and the configured ones. The wheel must be of the entry's compute
flavour: a local version tag (``2.13.0+cpu``) names it; an untagged wheel (PyPI's) is judged by the CUDA
runtime it requires. A wheel of another flavour is passed over for the next one, so an unreachable flavour
index cannot silently give a CPU environment a CUDA Torch. The environment then installs exactly the wheel
that was judged. Where a source cannot be read that way (a wheel not served in byte ranges), pip itself is
asked, in dry-run mode with no retries, as before.

CUDA toolkits: the system's nvcc when its version matches, else NVIDIA's PyPI packages of that release — which
exist for CUDA 13 and newer only: the CUDA 12 wheels (``nvidia-cuda-nvcc-cu12``, every 12.x release) carry
``ptxas`` and ``libnvvm`` but no ``nvcc`` driver, ``cicc``, ``cudafe++``, ``fatbinary`` or ``nvlink``.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from kernel_builder.errors import BuildError
from kernel_builder.formats.torch_wheels import cuda_required
from kernel_builder.pipeline.environment import pip_constraints, wheel_index
from kernel_builder.pipeline.environment.wheel_index import Listing, ListingUnsupported

PIP_TIMEOUT = 20  # seconds per request, no retries: an unreachable index fails the probe at once


class Unavailable(BuildError):
    """What a variant needs cannot be obtained on this host; the message says what and why."""


class Capped(Unavailable):
    """What a variant needs is there, but pip's own configuration (a constraint file) refuses it."""


@dataclass(frozen=True)
class TorchWheel:
    requirement: str  # what pip installs: the exact file it resolved
    version: str
    flavour: str  # "cpu", "cu130", ...
    where: str  # the file's URL, for messages


def wheel_flavour(version: str, requires_dist: list[str]) -> str:
    """The compute flavour of a torch wheel: its local version tag, or the CUDA runtime it requires."""
    if "+" in version:
        return version.split("+", 1)[1]
    cuda = cuda_required(requires_dist)
    return "cpu" if cuda is None else f"cu{cuda[0]}{cuda[1]}"


_ANSWERS: dict[tuple[object, ...], tuple[dict[str, object] | None, str]] = {}
_KEY_LOCKS: dict[tuple[object, ...], threading.Lock] = {}
_KEYS_LOCK = threading.Lock()


def _pip_resolve(requirement: str, index_url: str | None) -> tuple[dict[str, object] | None, str]:
    """:func:`_ask_pip`, once per question in this process: probes run side by side, and several variants ask
    the same one (one CUDA toolkit for several Torch versions; one pin for several flavours whose own indexes
    cannot be reached). A question that is being asked is waited for, not asked again. pip's settings from the
    environment are part of the question."""
    key = (
        requirement,
        index_url,
        tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("PIP_"))),
    )
    with _KEYS_LOCK:
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    with lock:
        if key not in _ANSWERS:
            _ANSWERS[key] = _ask_pip(requirement, index_url)
        return _ANSWERS[key]


@functools.cache
def _usable_index(index_url: str) -> str | None:
    """``index_url`` when it can serve here, else ``None``: pip would skip an index it cannot reach, so asking
    without it gives the same answer, and the same question as the other flavours of that pin."""
    return index_url if index_problem(index_url) is None else None


def _ask_pip(requirement: str, index_url: str | None) -> tuple[dict[str, object] | None, str]:
    """pip's dry-run choice for ``requirement`` (its install report entry) or ``None`` and pip's last error.

    Without PEP 658 metadata on the index (PyPI has none for torch's wheels), pip reads a wheel's metadata by
    downloading it — half a gigabyte for torch — unless its ``fast-deps`` feature reads just the metadata
    with HTTP range requests; it is used where this pip has it.
    """
    with tempfile.TemporaryDirectory(prefix="kb-pip-") as tmp:
        report = Path(tmp) / "report.json"
        argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-deps",
                "--quiet", "--disable-pip-version-check", "--retries", "0", "--timeout", str(PIP_TIMEOUT),
                "--report", str(report), requirement]  # fmt: skip
        if index_url:
            argv += ["--extra-index-url", index_url]
        result = subprocess.run(
            [*argv, "--use-feature=fast-deps"], capture_output=True, text=True, check=False
        )
        if result.returncode == 2 and "fast-deps" in result.stderr:  # a pip without the feature
            result = subprocess.run(argv, capture_output=True, text=True, check=False)
        errors = [line for line in result.stderr.splitlines() if line.startswith("ERROR")]
        if result.returncode != 0 or not report.is_file():
            return None, (errors[-1] if errors else result.stderr.strip()[-300:])
        installs = json.loads(report.read_text(encoding="utf-8")).get("install", [])
        return (installs[0] if installs else None), ""


def index_problem(index_url: str) -> str | None:
    """Why ``index_url`` cannot serve here (unreachable, an error status), or ``None``."""
    if not index_url.startswith(("http://", "https://")):
        return None if Path(index_url.removeprefix("file://")).exists() else "it does not exist"
    try:
        with urllib.request.urlopen(index_url.rstrip("/") + "/torch/", timeout=10):
            return None
    except urllib.error.HTTPError as error:
        return f"it answers HTTP {error.code}"
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        return f"it is not reachable from here ({reason})"


def torch_listings(index_urls: tuple[str, ...] = ()) -> list[Listing]:
    """Every source's listing of ``torch`` (pip's configured ones and ``index_urls``), fetched side by side and
    once per run: what every later question about a torch build is answered from."""
    from concurrent.futures import ThreadPoolExecutor

    sources = wheel_index.pip_sources()
    indexes = tuple(dict.fromkeys((*sources.indexes, *(u.rstrip("/") for u in index_urls))))
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = [pool.submit(wheel_index.listing, i, "torch", cert=sources.cert) for i in indexes]
        found += [
            pool.submit(wheel_index.listing, f, "torch", find_links=True, cert=sources.cert)
            for f in sources.find_links
        ]
        return [future.result() for future in found]


@functools.cache
def resolve_torch(pin: str, compute: str, index_url: str | None, system: str | None = None) -> TorchWheel:
    """The torch wheel of flavour ``compute`` that pip installs here for ``torch==pin``; :class:`Unavailable`
    (naming the package and the indexes tried) when there is none. ``system``: for that ``<cpu>-<os>``
    instead of this interpreter (a cross build's target environment, with this Python version).

    A CPU variant needs only Torch's CPU parts, the same in every build of one version (docs/cross.md): when
    no CPU build of the pin can be had, the build pip would install otherwise serves (``flavour`` says which)."""
    try:
        return _resolve_from_listings(pin, compute, index_url, system)
    except ListingUnsupported:
        if system is not None:
            raise Unavailable(
                f"torch {pin} for {system}: the configured indexes cannot be read without pip, which cannot "
                "answer for another system"
            ) from None
        return _resolve_with_pip(pin, compute, index_url)


def _unavailable(
    pin: str, compute: str, index_url: str | None, found: list[str], error: str, problem: str | None
) -> Unavailable:
    """The one message for a torch build that cannot be had: what pip finds, where it looked, why the entry's
    own index gave nothing (``problem``), and pip's cap on the pin where its configuration has one (lifting it
    alone would not do: what pip finds is listed without it)."""
    where = f"{index_url} and the configured indexes" if index_url else "the configured indexes (PyPI)"
    message = f"torch {pin} for {compute} cannot be installed here: pip finds "
    message += f"only {', '.join(found)}" if found else f"none ({error})" if error else "none"
    message += f" (tried {where})"
    if index_url:
        message += f"; the {compute} index {index_url}: {problem}" if problem else ""
    capped = pip_constraints.cap_reason("torch", pin, wheel_index.pip_sources())
    if capped is not None:
        message += f"; besides, {capped}"
    return Unavailable(message)


def _capped(pin: str, compute: str, chosen: TorchWheel) -> TorchWheel:
    """``chosen``, unless pip's constraint files refuse it: then the reason is that cap, and only that (the
    wheel is there; pip's own configuration keeps it out)."""
    _refuse_if_capped(pin, compute, chosen.version)
    return chosen


def _refuse_if_capped(pin: str, compute: str, version: str) -> None:
    """``Capped`` naming the constraint file and its cap when pip's configuration refuses torch ``version``."""
    capped = pip_constraints.cap_reason("torch", version, wheel_index.pip_sources())
    if capped is not None:
        raise Capped(f"torch {pin} for {compute} cannot be installed here: {capped}")


def _resolve_from_listings(
    pin: str, compute: str, index_url: str | None, system: str | None = None
) -> TorchWheel:
    """pip's choice for ``torch==pin`` read off the sources' listings: newest matching version first (a
    local version such as ``2.13.0+cpu`` sorts above ``2.13.0``), the best-tagged file of each."""
    sources = wheel_index.pip_sources()
    listings = torch_listings((index_url,) if index_url else ())
    found: list[str] = []
    other: TorchWheel | None = None  # the first build of another flavour: what a CPU variant falls back to
    tags = wheel_index.target_tags(system) if system is not None else None
    # Every build of the pin, pip's constraints aside: where they refuse the one chosen, that is the reason.
    for wheel in wheel_index.installable("torch", SpecifierSet(f"=={pin}"), listings, tags=tags):
        version = str(wheel.version)
        requires = [] if "+" in version else wheel_index.requires_dist(wheel, sources.cert)
        flavour = wheel_flavour(version, requires)
        if flavour == compute:
            return _capped(pin, compute, TorchWheel(wheel.url, version, flavour, wheel.url))
        other = other or TorchWheel(wheel.url, version, flavour, wheel.url)
        found.append(f"{version} ({flavour} build)")
    if compute == "cpu" and other is not None:
        return _capped(pin, compute, other)
    own = wheel_index.listing(index_url.rstrip("/"), "torch", cert=sources.cert) if index_url else None
    error = _nothing_found(f"torch=={pin}", listings)
    raise _unavailable(pin, compute, index_url, found, error, own.problem if own is not None else None)


def _nothing_found(requirement: str, listings: list[Listing]) -> str:
    """Why no file matched: none for this interpreter, and which sources could not be read."""
    problems = [f"{listing.source}: {listing.problem}" for listing in listings if listing.problem]
    python = f"cp{sys.version_info[0]}{sys.version_info[1]}"
    return "; ".join(
        [f"no {requirement} wheel for this interpreter ({python}) in the sources read", *problems]
    )


def _resolve_with_pip(pin: str, compute: str, index_url: str | None) -> TorchWheel:
    """The same answer from ``pip install --dry-run``, one question at a time (excluding each wrong-flavour
    local version and asking again): for sources whose wheels cannot be read through their listing. pip applies
    its constraint files itself, so a pin they refuse is refused with their reason before pip is asked."""
    _refuse_if_capped(pin, compute, pin)
    excluded: list[str] = []
    found: list[str] = []
    error = ""
    for _ in range(4):
        requirement = f"torch=={pin}" + "".join(f",!={v}" for v in excluded)
        choice, error = _pip_resolve(requirement, _usable_index(index_url) if index_url else None)
        if choice is None:
            break
        metadata = choice.get("metadata", {})
        assert isinstance(metadata, dict)
        version = str(metadata.get("version", pin))
        flavour = wheel_flavour(version, list(metadata.get("requires_dist") or []))
        download = choice.get("download_info")
        url = str(download.get("url", "")) if isinstance(download, dict) else ""
        if flavour == compute:
            return TorchWheel(url or f"torch=={version}", version, flavour, url)
        found.append(f"{version} ({flavour} build)")
        if compute == "cpu" and "+" not in version:  # a CPU variant is built from any build of the pin
            return TorchWheel(url or f"torch=={version}", version, flavour, url)
        if "+" not in version:
            break  # an untagged wheel cannot be excluded without excluding every build of the pin
        excluded.append(version)
    raise _unavailable(pin, compute, index_url, found, error, index_problem(index_url) if index_url else None)


def toolkit_requirements(cuda: tuple[int, int]) -> list[str]:
    """NVIDIA's PyPI packages that make a CUDA toolkit inside an environment (``nvidia/cu<major>/``).

    All of one CUDA release: nvcc, its front end (nvvm) and crt headers, the runtime headers and CCCL. Mixing
    releases breaks (a newer nvvm emits PTX the older ptxas rejects).
    """
    if cuda[0] < 13:
        raise Unavailable(no_cuda_12_message(cuda))
    release = f"=={cuda[0]}.{cuda[1]}.*"
    names = ("nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-cccl", "nvidia-cuda-runtime")
    return [name + release for name in names]


def no_cuda_12_message(cuda: tuple[int, int], system: tuple[int, int] | None = None) -> str:
    version = f"{cuda[0]}.{cuda[1]}"
    found = f" (the system's is CUDA {system[0]}.{system[1]})" if system is not None else ""
    return (
        f"no CUDA {version} compiler here: no nvcc {version} in CUDA_HOME, PATH or /usr/local/cuda{found}, and "
        f"PyPI has none to install (NVIDIA's CUDA {cuda[0]} wheels, nvidia-cuda-nvcc-cu{cuda[0]}, carry ptxas and "
        f"libnvvm but no nvcc); install CUDA {version} and set CUDA_HOME to it"
    )


@functools.cache
def toolkit_problem(cuda: tuple[int, int]) -> str | None:
    """Why no CUDA ``cuda`` compiler can be had here (system toolkit or PyPI), or ``None``."""
    from kernel_builder.pipeline.environment.toolchain import cuda_toolkit

    system: tuple[int, int] | None = None
    try:
        system = cuda_toolkit(None, cuda).version
    except BuildError:
        pass
    if system == cuda:
        return None
    if cuda[0] < 13:
        return no_cuda_12_message(cuda, system)
    package = toolkit_requirements(cuda)[0]
    sources = wheel_index.pip_sources()
    requirement = Requirement(package)
    listings = wheel_index.listings(requirement.name, sources)
    found = wheel_index.installable(requirement.name, requirement.specifier, listings)
    if not found:
        error = _nothing_found(package, listings)
        return (
            f"the CUDA {cuda[0]}.{cuda[1]} toolkit cannot be installed here: pip finds no {package} (tried the "
            f"configured indexes (PyPI): {error})"
        )
    allowed = pip_constraints.allowed(requirement.name, sources)
    if not any(allowed.contains(wheel.version, prereleases=True) for wheel in found):
        capped = pip_constraints.cap_reason(requirement.name, str(found[0].version), sources)
        return f"the CUDA {cuda[0]}.{cuda[1]} toolkit cannot be installed here: {package}: {capped}"
    return None
