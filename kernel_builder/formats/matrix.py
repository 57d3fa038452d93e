"""The variant matrix: which (Torch, compute, system) combinations are supported (docs/layout.md).

The data lives in one file, ``kernel_builder/formats/build-matrix.json``, which the Nix flake reads too; nothing else
may hard-code it. This module loads and validates it into frozen dataclasses.

Choices behind the shipped data (JSON has no comments, so they are recorded here, with where each fact comes
from; docs/variant-matrix.md says who changes the data, when, and with which command):

- ``required``: the two newest Torch minors, every flavour of each (upstream's rule: its required list follows
  PyTorch's releases and names the two newest). The minors before them stay, optional, so that builds for
  them can still be made and checked.
- ``torch-pin``: the newest release of its minor on PyPI (its JSON API, ``https://pypi.org/pypi/torch/json``:
  2.12.1 is newer than 2.12.0). Every cpu and cuda entry has one; metal, rocm and xpu entries are not built
  with pip and have none.
- ``index-url``: CPU entries use ``https://download.pytorch.org/whl/cpu`` (PyPI's Linux wheels are CUDA
  builds). PyPI publishes one CUDA flavour per Torch release; a CUDA entry without ``index-url`` is that one
  (from 2.14 on); every other names PyTorch's index of its flavour (``…/whl/cu<NNN>``), as the entries before
  2.14 do even for PyPI's flavour. Naming it is harmless: the index is passed to pip as an *extra* index, and
  a local version such as ``<pin>+cu130`` satisfies ``torch==<pin>`` and is preferred over PyPI's untagged
  wheel, so the flavour installed is always the one named.
- Entries whose fields are all equal share one ``systems`` list.

Per release (PyPI facts are read from its JSON API, as ``kernel-builder update-matrix`` reads them):

- 2.11: cu126, cu128 and cu130 from PyTorch's indexes; optional since 2.13 was required.
- 2.12, 2.13: cu126, cu130 and cu132; ROCm 7.1 and 7.2; XPU 2025.3 (2.12) and 2026.0 (2.13); metal on
  aarch64-darwin. Required until 2.15: upstream's required list (docs/source/builder/build-variants.md of
  huggingface/kernels) named exactly these.
- 2.14: PyPI's wheels are CUDA 13.0 builds (2.14.1 requires ``cuda-toolkit==13.0.3``), so cu130 has no index.
  cu126 and cu132 come from PyTorch's indexes: RFC pytorch/pytorch#190355 lists 12.6, 13.0 and 13.2 for
  2.14, and PyTorch's notice "CUDA 12.6 wheels will no longer be published from PyTorch 2.15"
  (dev-discuss.pytorch.org, 2026-09-04) names 2.14 as the last release with CUDA 12 wheels.
- 2.15: PyPI's wheels are CUDA 13.2 builds (2.15.0 requires ``cuda-toolkit==13.2.2`` and Python >= 3.11),
  for x86_64 and aarch64 Linux, and macOS arm64 wheels (cpu and metal on aarch64-darwin). cu130 comes from
  PyTorch's index and there is no cu126: RFC pytorch/pytorch#190385 (13.2 stable and on PyPI, 13.0 stable
  on download.pytorch.org, 12.6 removed) and the notice above.
- 2.14 and 2.15 have no rocm or xpu entries: no source read for this data names their ROCm or XPU versions
  (upstream's data stops at 2.13). They are added once one does.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from packaging.version import InvalidVersion, Version

import kernel_builder.backends as backends
from kernel_builder.errors import KernelBuilderError
from kernel_builder.formats.variants import (
    CPUS,
    OPERATING_SYSTEMS,
    compute_name,
    framework_version_name,
    parse_variant,
    to_major_minor,
    variant_for_entry,
)

if TYPE_CHECKING:
    from kernel_builder.common.diagnostics import Diagnostic

__all__ = [
    "MATRIX_DOC",
    "PACKAGED_MATRIX",
    "STALE_HINT",
    "Matrix",
    "MatrixEntry",
    "MatrixError",
    "load_matrix",
    "newer_than_known",
    "parse_matrix",
    "stale_notice",
]

MATRIX_FORMAT = 1
_FIELDS = ("torch", "torch-pin", "backend", "version", "systems", "required", "index-url", "tvm-ffi")
_REQUIRED_FIELDS = ("torch", "backend", "systems", "required")
_URL_SCHEMES = ("https", "http", "file")
_DEFAULT_SOURCE = "kernel_builder/formats/build-matrix.json"

_Fail = Callable[[str, str], None]
"""The per-entry ``fail(field, message)`` callback."""

_NUMBER = r"(?:0|[1-9][0-9]*)"
_MAJOR_MINOR_RE = re.compile(rf"^{_NUMBER}\.{_NUMBER}$")
_COMPUTE_VERSION_RE = re.compile(rf"^{_NUMBER}(?:\.{_NUMBER})+$")


class MatrixError(ValueError, KernelBuilderError):
    """An invalid variant matrix; ``problems`` lists every problem found, each naming its entry and field."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"invalid variant matrix {source}:\n" + "\n".join(f"  {p}" for p in problems))


@dataclass(frozen=True)
class MatrixEntry:
    """One entry of the matrix: a Torch minor and a compute flavour on one or more systems."""

    torch: tuple[int, int]
    """Torch ``(major, minor)``."""
    torch_pin: str | None
    """The exact Torch version a provisioned build environment installs (``"2.13.0"``)."""
    backend: str
    """``cpu``, ``cuda``, ``rocm``, ``xpu`` or ``metal``."""
    version: tuple[int, ...] | None
    """The compute version (cuda, rocm and xpu only), e.g. ``(13, 0)`` or ``(2025, 3)``."""
    systems: tuple[str, ...]
    """``<cpu>-<os>`` strings, e.g. ``x86_64-linux``."""
    required: bool
    """Whether the entry is in the required (release) set."""
    index_url: str | None
    """The package index publishing this Torch flavour; ``None`` means PyPI."""
    tvm_ffi: tuple[int, int] | None = None
    """tvm-ffi ``(major, minor)`` (parse only)."""

    @property
    def torch_str(self) -> str:
        """``"2.13"``."""
        return f"{self.torch[0]}.{self.torch[1]}"

    @property
    def version_str(self) -> str | None:
        """``"13.0"``, or ``None`` for backends without a version."""
        return None if self.version is None else ".".join(str(part) for part in self.version)

    @property
    def compute(self) -> str:
        """The compute part of the entry's variant names: ``cpu``, ``cu130``, ``xpu20253``, …"""
        return compute_name(self.backend, None if self.version is None else to_major_minor(self.version))


@dataclass(frozen=True)
class Matrix:
    """The validated matrix. ``source`` names the file it came from (for messages)."""

    entries: tuple[MatrixEntry, ...]
    source: str = _DEFAULT_SOURCE

    def pairs(self, backend: str | None = None) -> Iterator[tuple[MatrixEntry, str]]:
        """Every (entry, system) pair in file order, optionally only those of one backend."""
        for entry in self.entries:
            if backend is None or entry.backend == backend:
                for system in entry.systems:
                    yield entry, system

    @property
    def torch_versions(self) -> tuple[tuple[int, int], ...]:
        """The distinct Torch ``(major, minor)`` versions, oldest first."""
        return tuple(sorted({entry.torch for entry in self.entries}))

    @property
    def required_torch_versions(self) -> tuple[tuple[int, int], ...]:
        """The Torch versions with a required entry (the release set), oldest first."""
        return tuple(sorted({entry.torch for entry in self.entries if entry.required}))

    def is_newer_than_known(self, torch: tuple[int, int]) -> bool:
        """Whether Torch ``(major, minor)`` is newer than every release the matrix knows (an empty matrix knows
        none, and says nothing)."""
        return bool(self.entries) and torch > self.torch_versions[-1]


#: The packaged data file (``kernel-builder update-matrix --write`` rewrites it in a checkout).
PACKAGED_MATRIX = Path(__file__).with_name("build-matrix.json")
#: Where the user documentation says who updates the matrix, when, and how (named by the staleness notice).
MATRIX_DOC = "docs/variant-matrix.md"
STALE_HINT = (
    f"upgrade kernel-builder (pip install --upgrade kernel-builder); its maintainers add each Torch release to "
    f"the matrix as {MATRIX_DOC} describes"
)


def newer_than_known(matrix: Matrix, torch_version: str) -> str | None:
    """The notice for an installed Torch newer than every release ``matrix`` knows, or ``None``.

    Such a Torch builds its variant, but the data that decides what a release must contain (and what upload
    checks, and what CI builds) stops before it: the author should hear that the tool, not the kernel, is
    behind, once per command (:data:`STALE_HINT` says what to do)."""
    try:
        release = Version(torch_version).release
    except InvalidVersion:
        return None
    torch = (release + (0,))[:2]
    if not matrix.is_newer_than_known((torch[0], torch[1])):
        return None
    newest = matrix.torch_versions[-1]
    names = [f"{major}.{minor}" for major, minor in matrix.required_torch_versions]
    required = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    return (
        f"torch {torch_version} is newer than Torch {newest[0]}.{newest[1]}, the newest release in this "
        f"kernel-builder's variant matrix: its variants build, but are not part of the published set (the "
        f"required Torch releases are {required or 'none'})"
    )


def stale_notice(torch_version: str, matrix: Matrix | None = None) -> Diagnostic | None:
    """:func:`newer_than_known` as the warning commands print, on the matrix file, with what to do."""
    from kernel_builder.common.diagnostics import Diagnostic, Severity

    matrix = matrix or load_matrix()
    notice = newer_than_known(matrix, torch_version)
    return None if notice is None else Diagnostic(Severity.WARNING, notice, matrix.source, hint=STALE_HINT)


def load_matrix(path: Path | None = None) -> Matrix:
    """Load and validate the matrix: the packaged ``build-matrix.json``, or the file at ``path`` (tests).

    The packaged matrix is read once per process. Raises :class:`MatrixError`.
    """
    if path is None:
        return _packaged_matrix()
    return parse_matrix_text(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def _packaged_matrix() -> Matrix:
    # The package data file beside this module (what importlib.resources finds for a package on disk), read
    # without importing importlib.resources' readers and zipfile at each start of the CLI.
    text = PACKAGED_MATRIX.read_text(encoding="utf-8")
    return parse_matrix_text(text, _DEFAULT_SOURCE)


def parse_matrix_text(text: str, source: str) -> Matrix:
    """Validate a matrix file's text; text that is not JSON is a :class:`MatrixError` too."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise MatrixError(
            source, [f"not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"]
        ) from None
    return parse_matrix(data, source)


def parse_matrix(data: object, source: str = "<matrix>") -> Matrix:
    """Validate decoded JSON. Collects every problem, then raises one :class:`MatrixError` listing them all."""
    problems: list[str] = []
    if not isinstance(data, dict):
        raise MatrixError(
            source, [f"expected a JSON object with 'format' and 'entries', got {_json_type(data)}"]
        )
    for key in data:
        if key not in ("format", "entries"):
            problems.append(f"{key}: unknown field{_suggest(key, ('format', 'entries'))}")
    file_format = data.get("format")
    if "format" not in data:
        problems.append("format: missing (expected 1)")
    elif file_format != MATRIX_FORMAT or isinstance(file_format, bool):
        problems.append(f"format: unsupported format {json.dumps(file_format)} (expected {MATRIX_FORMAT})")
    raw_entries = data.get("entries")
    if not isinstance(raw_entries, list):
        found = "missing" if "entries" not in data else f"expected a list, got {_json_type(raw_entries)}"
        problems.append(f"entries: {found}")
        raise MatrixError(source, problems)

    entries: list[MatrixEntry] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(raw_entries):
        entry = _parse_entry(raw, f"entries[{index}]", problems)
        if entry is None:
            continue
        entries.append(entry)
        for system in entry.systems:
            try:
                variant = variant_for_entry(entry, system)
                name = variant.name
                round_trip = parse_variant(name) == variant
            except ValueError as error:
                problems.append(f"entries[{index}] on {system}: {error}")
                continue
            if not round_trip:
                problems.append(f"entries[{index}] on {system}: the name {name} does not parse back")
            if name in seen:
                problems.append(
                    f"entries[{index}]: Torch {entry.torch_str} {_compute_label(entry)} on {system} "
                    f"already appears in entries[{seen[name]}]"
                )
            else:
                seen[name] = index
    if problems:
        raise MatrixError(source, problems)
    return Matrix(entries=tuple(entries), source=source)


def _parse_entry(raw: object, where: str, problems: list[str]) -> MatrixEntry | None:
    """Validate one entry, appending to ``problems``; ``None`` if it had any."""
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected an object, got {_json_type(raw)}")
        return None
    before = len(problems)

    def fail(field: str, message: str) -> None:
        problems.append(f"{where}.{field}: {message}")

    for key in raw:
        if key not in _FIELDS:
            fail(key, f"unknown field{_suggest(key, _FIELDS)}")
    for key in _REQUIRED_FIELDS:
        if key not in raw:
            fail(key, "missing")

    torch = _major_minor_field(raw, "torch", "'2.13'", fail, "Torch")
    tvm_ffi = _major_minor_field(raw, "tvm-ffi", "'0.1'", fail, "tvm-ffi")

    matrix_backends = backends.names(where="in_matrix")
    versioned = tuple(b for b in matrix_backends if backends.get(b).versioned)
    pip_backends = backends.names(where="pip_provisioned")  # provisioned with pip: these need a torch-pin
    backend = raw.get("backend")
    if "backend" in raw and backend not in matrix_backends:
        fail(
            "backend", f"unknown backend {json.dumps(backend)} (expected one of {', '.join(matrix_backends)})"
        )
        backend = None

    version: tuple[int, ...] | None = None
    raw_version = raw.get("version")
    if isinstance(backend, str) and backend in versioned:
        if "version" not in raw:
            fail("version", f"missing (required for {backend} entries)")
        elif not isinstance(raw_version, str) or not _COMPUTE_VERSION_RE.match(raw_version):
            fail("version", f"expected a version such as '13.0', got {json.dumps(raw_version)}")
        else:
            version = tuple(int(part) for part in raw_version.split("."))
            try:
                compute_name(backend, to_major_minor(version))
            except ValueError as error:
                fail("version", str(error))
    elif "version" in raw and backend is not None:
        fail("version", f"not allowed for {backend} entries (only {', '.join(versioned)} have one)")

    torch_pin = raw.get("torch-pin")
    if "torch-pin" in raw:
        if not isinstance(torch_pin, str):
            fail("torch-pin", f"expected a string such as '2.13.0', got {json.dumps(torch_pin)}")
        else:
            _check_pin(torch_pin, torch, fail)
    elif backend in pip_backends:
        fail("torch-pin", f"missing (required for {' and '.join(pip_backends)} entries)")

    index_url = raw.get("index-url")
    if "index-url" in raw and (not isinstance(index_url, str) or not _valid_url(index_url)):
        fail("index-url", f"expected an http(s) or file URL, got {json.dumps(index_url)}")

    systems = _systems_field(raw.get("systems"), "systems" in raw, fail)

    required = raw.get("required")
    if "required" in raw and not isinstance(required, bool):
        fail("required", f"expected true or false, got {json.dumps(required)}")

    if len(problems) > before:
        return None
    assert torch is not None and isinstance(backend, str) and isinstance(required, bool)
    return MatrixEntry(
        torch=torch,
        torch_pin=torch_pin if isinstance(torch_pin, str) else None,
        backend=backend,
        version=version,
        systems=systems,
        required=required,
        index_url=index_url if isinstance(index_url, str) else None,
        tvm_ffi=tvm_ffi,
    )


def _major_minor_field(
    raw: dict[str, object], field: str, example: str, fail: _Fail, what: str
) -> tuple[int, int] | None:
    if field not in raw:
        return None
    value = raw[field]
    if not isinstance(value, str) or not _MAJOR_MINOR_RE.match(value):
        fail(field, f"expected major.minor such as {example}, got {json.dumps(value)}")
        return None
    major, minor = (int(part) for part in value.split("."))
    try:
        framework_version_name((major, minor), what)
    except ValueError as error:
        fail(field, str(error))
        return None
    return major, minor


def _check_pin(pin: str, torch: tuple[int, int] | None, fail: _Fail) -> None:
    try:
        release = Version(pin).release
    except InvalidVersion:
        fail("torch-pin", f"{json.dumps(pin)} is not a valid version")
        return
    if torch is not None and (release + (0,))[:2] != torch:
        fail("torch-pin", f"{json.dumps(pin)} is not a Torch {torch[0]}.{torch[1]} release")


def _systems_field(value: object, present: bool, fail: _Fail) -> tuple[str, ...]:
    if not present:
        return ()
    if not isinstance(value, list) or not value:
        fail("systems", f"expected a non-empty list of '<cpu>-<os>' strings, got {json.dumps(value)}")
        return ()
    systems: list[str] = []
    for position, system in enumerate(value):
        cpu, _, os_name = system.partition("-") if isinstance(system, str) else ("", "", "")
        if cpu not in CPUS or os_name not in OPERATING_SYSTEMS:
            fail(
                f"systems[{position}]",
                f"expected '<cpu>-<os>' with cpu {' or '.join(CPUS)} and os {', '.join(OPERATING_SYSTEMS)}, "
                f"got {json.dumps(system)}",
            )
        elif system in systems:
            fail(f"systems[{position}]", f"{json.dumps(system)} is listed twice")
        else:
            systems.append(system)
    return tuple(systems)


def _valid_url(url: str) -> bool:
    parts = urlsplit(url)
    return parts.scheme in _URL_SCHEMES and bool(parts.netloc if parts.scheme != "file" else parts.path)


def _compute_label(entry: MatrixEntry) -> str:
    return entry.backend if entry.version_str is None else f"{entry.backend} {entry.version_str}"


def _suggest(key: str, choices: tuple[str, ...]) -> str:
    import difflib  # only for an error message

    close = difflib.get_close_matches(key, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _json_type(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return "an object"
