"""Adding a Torch release to the variant matrix in one step: what PyPI says about it, and the entries it gives.

``kernel-builder update-matrix 2.16`` reads PyPI's JSON answer for ``torch`` and proposes the new matrix
(docs/variant-matrix.md). PyPI settles most of an entry: the newest patch release of each minor (the pins), the
systems its wheels are built for, and the CUDA release its Linux wheels require (PyPI's CUDA flavour, an entry
without ``index-url``). What PyPI cannot say — which other CUDA flavours PyTorch publishes on its own indexes —
comes from the maintainer (``--cuda``, from PyTorch's release notes) or is carried over from the previous
release, and the proposal's notes say which. The required set becomes the two newest minors.

Everything here is a function of decoded JSON: no network (the command fetches), so the tests use a recorded
answer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from kernel_builder.errors import KernelBuilderError
from kernel_builder.formats.torch_wheels import LINUX, cuda_required

__all__ = [
    "KEY_ORDER",
    "Proposal",
    "ReleaseFacts",
    "format_matrix",
    "newest_patches",
    "propose",
    "release_facts",
]

#: The order of an entry's keys in ``build-matrix.json``.
KEY_ORDER = ("torch", "torch-pin", "backend", "version", "systems", "required", "index-url", "tvm-ffi")
#: The order of backends within one Torch minor, as the file lists them.
_BACKEND_ORDER = ("cpu", "cuda", "metal", "rocm", "xpu")
PYTORCH_INDEX = "https://download.pytorch.org/whl"
#: Wheel platform tags → the matrix's systems (the manylinux and macOS arm64 wheels PyPI carries).
_PLATFORMS = (("manylinux", "x86_64", "x86_64-linux"), ("manylinux", "aarch64", "aarch64-linux"),
              ("macosx", "arm64", "aarch64-darwin"))  # fmt: skip
REQUIRED_MINORS = 2
"""How many of the newest Torch minors are required (upstream's rule)."""

Minor = tuple[int, int]


class ReleaseError(ValueError, KernelBuilderError):
    """PyPI's answer lacks what a proposal needs; the message says what (exit status 1: nothing to propose)."""


@dataclass(frozen=True)
class ReleaseFacts:
    """What PyPI's JSON says about one Torch release."""

    version: str  # "2.15.0"
    systems: tuple[str, ...]  # the matrix systems its wheels are built for, in the matrix's order
    pypi_cuda: Minor | None  # the CUDA release its Linux wheels require; None: CPU-only wheels
    requires_python: str | None
    cuda_requirement: str | None  # the Requires-Dist line that says so, for the notes

    @property
    def minor(self) -> Minor:
        release = Version(self.version).release
        return release[0], release[1]


@dataclass
class Proposal:
    """The matrix with the release added: its raw data, and where each new fact came from."""

    data: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    #: What changed in the other minors' entries (``"2.12: torch-pin 2.12.0 -> 2.12.1"``) → how many entries.
    changes: dict[str, int] = field(default_factory=dict)

    def changed(self, what: str) -> None:
        self.changes[what] = self.changes.get(what, 0) + 1


def _final(version: str) -> Version | None:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return None if parsed.is_prerelease or parsed.is_devrelease or parsed.local else parsed


def _files(project: Mapping[str, Any], version: str) -> list[Mapping[str, Any]]:
    files = project.get("releases", {}).get(version) or []
    return [f for f in files if not f.get("yanked")]


def newest_patches(project: Mapping[str, Any]) -> dict[Minor, str]:
    """The newest final release of each Torch minor that has files on PyPI (yanked ones are left out)."""
    newest: dict[Minor, Version] = {}
    for text in project.get("releases", {}):
        version = _final(text)
        if version is None or not _files(project, text) or len(version.release) < 2:
            continue
        minor = (version.release[0], version.release[1])
        if minor not in newest or version > newest[minor]:
            newest[minor] = version
    return {minor: str(version) for minor, version in newest.items()}


def _systems(files: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    found: set[str] = set()
    for file in files:
        try:
            _, _, _, tags = parse_wheel_filename(str(file.get("filename", "")))
        except InvalidWheelFilename:
            continue
        for tag in tags:
            found.update(
                s for kind, cpu, s in _PLATFORMS if tag.platform.startswith(kind) and cpu in tag.platform
            )
    return tuple(s for _, _, s in _PLATFORMS if s in found)


def release_facts(
    project: Mapping[str, Any], minor: Minor, release: Mapping[str, Any] | None = None
) -> ReleaseFacts:
    """The facts of ``minor``'s newest release from PyPI's project JSON (``/pypi/torch/json``), its ``info``
    taken from ``release`` (``/pypi/torch/<version>/json``) or, where that release is the newest, the project's."""
    version = newest_patches(project).get(minor)
    if version is None:
        raise ReleaseError(f"PyPI has no release of torch {minor[0]}.{minor[1]}")
    info = (release or {}).get("info") or {}
    if info.get("version") != version:
        info = project.get("info") or {}
    if info.get("version") != version:
        raise ReleaseError(
            f"PyPI's answer has no metadata of torch {version} (it describes {info.get('version')}): its "
            f"Requires-Dist says which CUDA its wheels are built for; give its own answer (/pypi/torch/{version}/json)"
        )
    requires = [str(line) for line in info.get("requires_dist") or []]
    cuda = cuda_required(requires, LINUX)
    line = next((r for r in requires if cuda is not None and cuda_required([r], LINUX) == cuda), None)
    return ReleaseFacts(version, _systems(_files(project, version)), cuda, info.get("requires_python"), line)


def _entry(**fields: object) -> dict[str, Any]:
    return {key: fields[key] for key in KEY_ORDER if fields.get(key) is not None}


def _dotted(version: Sequence[int]) -> str:
    return ".".join(str(part) for part in version)


def _major_minor(text: str) -> Minor:
    """``"2.15"`` or ``"13.2"`` → ``(2, 15)`` / ``(13, 2)``."""
    major, minor = text.split(".")[:2]
    return int(major), int(minor)


def _minor(entry: Mapping[str, Any]) -> Minor:
    """An entry's Torch ``(major, minor)``."""
    return _major_minor(str(entry["torch"]))


def _cuda_entries(
    facts: ReleaseFacts, cudas: Sequence[Minor], linux: list[str], notes: list[str]
) -> list[dict[str, Any]]:
    torch, out = _dotted(facts.minor), []
    for cuda in sorted(set(cudas) | ({facts.pypi_cuda} if facts.pypi_cuda else set())):
        compute = f"cu{cuda[0]}{cuda[1]}"
        index = None if cuda == facts.pypi_cuda else f"{PYTORCH_INDEX}/{compute}"
        out.append(_entry(torch=torch, **{"torch-pin": facts.version}, backend="cuda", version=_dotted(cuda),
                          systems=linux, required=False, **{"index-url": index}))  # fmt: skip
        if index is not None:
            notes.append(
                f"{torch} {compute}: from PyTorch's index {index} (not on PyPI: check PyTorch's release notes)"
            )
    return out


def _new_entries(
    facts: ReleaseFacts, previous: list[dict[str, Any]], cudas: Sequence[Minor] | None, notes: list[str]
) -> list[dict[str, Any]]:
    """The entries of the new release: cpu, the CUDA flavours, metal; rocm and xpu carried over."""
    torch = _dotted(facts.minor)
    linux = [s for s in facts.systems if s.endswith("-linux")]
    darwin = [s for s in facts.systems if s.endswith("-darwin")]
    notes.append(f"{torch}: torch {facts.version} on PyPI, wheels for {', '.join(facts.systems) or 'no system'}"
                 + (f", Requires-Python {facts.requires_python}" if facts.requires_python else ""))  # fmt: skip
    out = [_entry(torch=torch, **{"torch-pin": facts.version}, backend="cpu", systems=linux + darwin,
                  required=False, **{"index-url": f"{PYTORCH_INDEX}/cpu"})]  # fmt: skip
    if facts.pypi_cuda is not None:
        notes.append(
            f"{torch} cu{facts.pypi_cuda[0]}{facts.pypi_cuda[1]}: PyPI's flavour ({facts.cuda_requirement})"
        )
    if cudas is None:
        cudas = [_major_minor(str(e["version"])) for e in previous if e["backend"] == "cuda"]
        if previous:
            notes.append(
                f"{torch}: CUDA flavours carried over from {previous[0]['torch']}; name them with --cuda"
            )
    out += _cuda_entries(facts, cudas, linux, notes)
    if darwin:
        out.append(_entry(torch=torch, backend="metal", systems=darwin, required=False))
    for entry in previous:
        if entry["backend"] in ("rocm", "xpu"):
            out.append({**entry, "torch": torch})
            notes.append(f"{torch} {entry['backend']} {entry['version']}: carried over from {entry['torch']}")
    return out


def propose(
    data: Mapping[str, Any],
    facts: ReleaseFacts,
    patches: Mapping[Minor, str],
    cudas: Sequence[Minor] | None = None,
) -> Proposal:
    """``data`` (``build-matrix.json``, decoded) with ``facts``' release added (replacing its entries if it has
    some), every pin at the newest patch of its minor (``patches``), and the two newest minors required.
    ``cudas``: the CUDA flavours PyTorch publishes for the release (PyPI's is added); ``None`` carries over
    those of the previous minor."""
    entries = [dict(e) for e in data.get("entries", []) if _minor(e) != facts.minor]
    older = [e for e in entries if _minor(e) < facts.minor]
    previous = [e for e in older if _minor(e) == max(map(_minor, older))] if older else []
    proposal = Proposal({**data})
    entries += _new_entries(facts, previous, cudas, proposal.notes)
    minors = sorted({_minor(e) for e in entries})
    required = set(minors[-REQUIRED_MINORS:])
    for entry in entries:
        minor, torch = _minor(entry), str(entry["torch"])
        pin = patches.get(minor)
        if "torch-pin" in entry and pin is not None and Version(pin) > Version(str(entry["torch-pin"])):
            proposal.changed(f"{torch}: torch-pin {entry['torch-pin']} -> {pin}")
            entry["torch-pin"] = pin
        if minor != facts.minor and entry["required"] != (minor in required):
            proposal.changed(
                f"{torch}: {'optional -> required' if minor in required else 'required -> optional'}"
            )
        entry["required"] = minor in required
    order = {b: i for i, b in enumerate(_BACKEND_ORDER)}
    # A stable sort: within one minor and backend, the file's order stays.
    entries.sort(key=lambda e: (_minor(e), order.get(str(e["backend"]), len(order))))
    proposal.data["entries"] = [_entry(**e) for e in entries]
    return proposal


def format_matrix(data: Mapping[str, Any]) -> str:
    """``build-matrix.json``'s text: one entry per line, keys in :data:`KEY_ORDER`."""
    lines = [json.dumps(_entry(**entry)) for entry in data["entries"]]
    body = ",\n".join(f"    {line}" for line in lines)
    return f'{{\n  "format": {json.dumps(data["format"])},\n  "entries": [\n{body}\n  ]\n}}\n'
