"""GPU architecture names as build.toml and metadata.json spell them, and which device runs which.

Shared by the builder (which parses and selects the lists, :mod:`kernel_builder.build.plan.capabilities`) and
the loader (which checks a variant's ``backend.archs`` against the visible GPUs, docs/loading.md), so it lives
with the other shared formats. Pure: no Torch import, no subprocess.

Capabilities travel between modules as canonical strings ("8.0", "9.0a", "12.0+PTX");
:class:`Capability` is the parsed form used for comparisons.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

__all__ = [
    "CAPABILITY_RE",
    "ROCM_ARCH_RE",
    "Capability",
    "device_runs",
    "parse_capability",
    "rocm_device_runs",
    "suggest_capability",
]

CAPABILITY_RE = re.compile(r"^([0-9]+)\.([0-9]+)([af]?)(\+PTX)?$")
"""The CUDA capability format of build.toml (docs/build-toml.md, "Value formats"); case-sensitive. Use ``fullmatch`` (``$`` allows a final newline)."""

ROCM_ARCH_RE = re.compile(r"^gfx[0-9a-z][0-9a-z-]*$")
"""The ROCm arch format of build.toml (docs/build-toml.md, "Value formats") (no ``:xnack+`` style feature suffixes). Use ``fullmatch``."""

_SUFFIX_RANK = {"": 0, "a": 1, "f": 2}


@dataclass(frozen=True, order=True)
class Capability:
    """A parsed CUDA capability such as ``9.0a`` or ``12.0+PTX``.

    Field order makes the natural ordering (major, minor, suffix "" < "a" < "f", then +PTX).
    """

    major: int
    minor: int
    suffix: str = ""  # "" (plain SASS), "a" (arch-specific) or "f" (family)
    ptx: bool = False  # also embed PTX

    def __post_init__(self) -> None:
        if self.suffix not in _SUFFIX_RANK:
            raise ValueError(f"invalid capability suffix {self.suffix!r}: expected '', 'a' or 'f'")
        if self.major < 0 or self.minor < 0:
            raise ValueError(f"invalid capability {self.major}.{self.minor}: negative component")

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}{self.suffix}{'+PTX' if self.ptx else ''}"

    @property
    def base(self) -> Capability:
        """This capability without ``+PTX`` (``9.0a+PTX`` -> ``9.0a``)."""
        return replace(self, ptx=False)

    @property
    def plain(self) -> Capability:
        """Major and minor only (``9.0a+PTX`` -> ``9.0``)."""
        return Capability(self.major, self.minor)

    @property
    def version(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def sort_key(self) -> tuple[int, int, int]:
        """(major, minor, suffix rank): the order of effective lists; ignores ``+PTX``."""
        return (self.major, self.minor, _SUFFIX_RANK[self.suffix])

    @property
    def code(self) -> str:
        """The nvcc spelling without prefix: ``90a`` for ``9.0a``, ``120`` for ``12.0``."""
        return f"{self.major}{self.minor}{self.suffix}"


def parse_capability(text: str) -> Capability:
    """Parse a capability in the build.toml spelling; raises ``ValueError`` on anything else."""
    match = CAPABILITY_RE.fullmatch(text)
    if match is None:
        hint = suggest_capability(text)
        extra = f"; did you mean {hint!r}?" if hint is not None else ""
        raise ValueError(f"invalid CUDA capability {text!r}: expected e.g. '8.0', '9.0a', '12.0+PTX'{extra}")
    major, minor, suffix, ptx = match.groups()
    return Capability(int(major), int(minor), suffix, ptx is not None)


_SUGGEST_RE = re.compile(
    r"(?:sm|compute)?_?(?:(?P<major>[0-9]+)\.(?P<minor>[0-9]+)|(?P<digits>[0-9]{1,3}))(?P<suffix>[af]?)(?P<ptx>\+ptx)?"
)


def suggest_capability(text: str) -> str | None:
    """The corrected spelling of a mistyped capability, for the E8 hint.

    Handles ``sm_80``/``compute_90``/``sm90a`` prefixes, missing dots (``80``, ``100``, ``8``),
    upper-case suffixes (``9.0A``) and lower-case ``+ptx``. Returns ``None`` when ``text`` is
    already valid or no confident correction exists (four or more digits, two suffixes, ...).
    """
    if CAPABILITY_RE.fullmatch(text):
        return None
    match = _SUGGEST_RE.fullmatch("".join(text.split()).lower())
    if match is None:
        return None
    digits = match["digits"]
    if digits is None:
        major, minor = match["major"], match["minor"]
    elif len(digits) == 1:
        major, minor = digits, "0"
    else:
        major, minor = digits[:-1], digits[-1]
    return f"{int(major)}.{int(minor)}{match['suffix']}{'+PTX' if match['ptx'] else ''}"


def device_runs(device: tuple[int, int], entry: str) -> bool:
    """Whether a GPU of compute capability ``device`` runs a build entry (docs/loading.md).

    Plain ``X.Y`` and family ``X.Yf``: same major, device minor >= Y. Arch-specific ``X.Ya``:
    exactly ``X.Y``. ``+PTX`` on a plain entry also admits any device >= ``X.Y`` (JIT); on ``a``/``f``
    entries it adds nothing. Raises ``ValueError`` on an unparseable entry.
    """
    cap = parse_capability(entry)
    if cap.suffix == "a":
        return device == cap.version
    if device[0] == cap.major and device[1] >= cap.minor:
        return True
    return cap.ptx and not cap.suffix and device >= cap.version


def rocm_device_runs(arch: str, entry: str) -> bool:
    """Whether a ROCm device ``arch`` runs a build entry: exact match after dropping ``:features``."""
    return arch.split(":", 1)[0] == entry.split(":", 1)[0]
