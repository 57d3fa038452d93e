"""GPU architecture lists: parsing, default lists, selection, nvcc flags and run checks.

Everything here is pure: no Torch import, no subprocess. The build side uses
:func:`select_capabilities` (docs/build-toml.md) and :func:`gencode_flags` (docs/build-toml.md); the
loader uses :func:`device_runs` and :func:`rocm_device_runs` (docs/loading.md).

Capabilities travel between modules as canonical strings ("8.0", "9.0a", "12.0+PTX");
:class:`Capability` is the parsed form used for comparisons.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

__all__ = [
    "CAPABILITY_RE",
    "KNOWN_CAPABILITIES",
    "KNOWN_ROCM_ARCHS",
    "ROCM_ARCH_RE",
    "ROCM_SUPPORTED_ARCHS",
    "Capability",
    "Selection",
    "default_capabilities",
    "default_targets",
    "device_runs",
    "explicit_archs",
    "gencode_flags",
    "parse_capability",
    "rocm_device_runs",
    "select_capabilities",
    "select_explicit",
    "select_rocm_archs",
    "supported_capabilities",
    "suggest_capability",
    "union_archs",
    "unknown_capability",
    "unknown_rocm_arch",
]

CAPABILITY_RE = re.compile(r"^([0-9]+)\.([0-9]+)([af]?)(\+PTX)?$")
"""The CUDA capability format of build.toml (docs/build-toml.md, "Value formats"); case-sensitive. Use ``fullmatch`` (``$`` allows a final newline)."""

ROCM_ARCH_RE = re.compile(r"^gfx[0-9a-z][0-9a-z-]*$")
"""The ROCm arch format of build.toml (docs/build-toml.md, "Value formats") (no ``:xnack+`` style feature suffixes). Use ``fullmatch``."""

ROCM_SUPPORTED_ARCHS: tuple[str, ...] = (
    "gfx906",
    "gfx908",
    "gfx90a",
    "gfx942",
    "gfx950",
    "gfx1030",
    "gfx1100",
    "gfx1101",
    "gfx1200",
    "gfx1201",
)
"""The ROCm archs this tool accepts, in the order effective lists use (docs/build-toml.md)."""

KNOWN_CAPABILITIES: tuple[str, ...] = (
    "3.0", "3.2", "3.5", "3.7", "5.0", "5.2", "5.3", "6.0", "6.1", "6.2", "7.0", "7.2", "7.5",
    "8.0", "8.6", "8.7", "8.8", "8.9", "9.0", "10.0", "10.1", "10.3", "11.0", "12.0", "12.1",
)  # fmt: skip
"""Every compute capability of an NVIDIA GPU that a CUDA release has compiled for (``sm_XY``), in order. An
entry of ``cuda-capabilities`` must be one of them, with an ``a`` suffix from 9.0 and an ``f`` suffix from 10.0;
whether the CUDA version of a variant builds it is a question for each variant (a capability below its lowest
target is dropped with a warning)."""

_ARCH_SPECIFIC_FROM = 9  # "a" (arch-specific) targets exist from 9.0 on
_FAMILY_FROM = 10  # "f" (family) targets from 10.0 on

KNOWN_ROCM_ARCHS: tuple[str, ...] = (
    "gfx600", "gfx601", "gfx602", "gfx700", "gfx701", "gfx702", "gfx703", "gfx704", "gfx705",
    "gfx801", "gfx802", "gfx803", "gfx805", "gfx810",
    "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909", "gfx90a", "gfx90c",
    "gfx940", "gfx941", "gfx942", "gfx950",
    "gfx1010", "gfx1011", "gfx1012", "gfx1013",
    "gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034", "gfx1035", "gfx1036",
    "gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150", "gfx1151", "gfx1152", "gfx1153",
    "gfx1200", "gfx1201", "gfx1250", "gfx1251",
    "gfx9-generic", "gfx9-4-generic", "gfx10-1-generic", "gfx10-3-generic", "gfx11-generic", "gfx12-generic",
)  # fmt: skip
"""Every AMD GPU target LLVM's AMDGPU backend knows (processors and generic targets). An entry of ``rocm-archs``
must be one of them; the ones this tool builds are :data:`ROCM_SUPPORTED_ARCHS`."""

_SUFFIX_RANK = {"": 0, "a": 1, "f": 2}

# The default capability lists per CUDA version. Keys are the first CUDA version each list applies to, newest first.
_DEFAULT_LISTS: tuple[tuple[tuple[int, int], tuple[str, ...]], ...] = (
    ((13, 0), ("7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "11.0", "12.0", "12.1+PTX")),
    ((12, 8), ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0", "10.0", "10.1", "12.0+PTX")),
    ((0, 0), ("7.0", "7.2", "7.5", "8.0", "8.6", "8.7", "8.9", "9.0+PTX")),
)

_FAMILY_MIN_CUDA = (12, 9)
"""Family-specific ("f") targets first appeared in CUDA 12.9."""


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


def unknown_capability(cap: Capability) -> tuple[str, str] | None:
    """``None`` when ``cap`` names a real GPU target (:data:`KNOWN_CAPABILITIES`); else why not and a hint
    with the nearest known one (same major first, then the closest version) and the known list."""
    known = [parse_capability(k) for k in KNOWN_CAPABILITIES]
    suffix_from = {"a": _ARCH_SPECIFIC_FROM, "f": _FAMILY_FROM}.get(cap.suffix)
    ptx = "+PTX" if cap.ptx else ""
    listing = (
        f"known capabilities: {', '.join(KNOWN_CAPABILITIES)} (`a` from 9.0, `f` from 10.0, `+PTX` on any)"
    )
    if cap.plain in known:
        if suffix_from is None or cap.major >= suffix_from:
            return None
        kind = "arch-specific (`a`)" if cap.suffix == "a" else "family (`f`)"
        return (
            f"{kind} capabilities start at {suffix_from}.0",
            f"write `{cap.plain}{ptx}`; {listing}",
        )

    def distance(k: Capability) -> tuple[bool, int]:
        return (k.major != cap.major, abs((k.major * 100 + k.minor) - (cap.major * 100 + cap.minor)))

    usable = [k for k in known if suffix_from is None or k.major >= suffix_from]
    near = min(usable, key=distance)
    return (
        "no NVIDIA GPU has this compute capability",
        f"did you mean `{near}{cap.suffix}{ptx}`? {listing}",
    )


def unknown_rocm_arch(arch: str) -> str | None:
    """``None`` when ``arch`` is a known AMD GPU target (:data:`KNOWN_ROCM_ARCHS`); else the hint: the closest
    known names, and the ones this tool builds."""
    if arch in KNOWN_ROCM_ARCHS:
        return None
    import difflib

    near = difflib.get_close_matches(arch, KNOWN_ROCM_ARCHS, n=2, cutoff=0.6)
    guess = "did you mean " + " or ".join(f"`{n}`" for n in near) + "? " if near else ""
    return f"{guess}the archs this tool builds: {', '.join(ROCM_SUPPORTED_ARCHS)}"


def default_capabilities(cuda: tuple[int, int]) -> tuple[str, ...]:
    """The default capability list for a CUDA version, including its ``+PTX`` element."""
    for first, caps in _DEFAULT_LISTS:
        if cuda >= first:
            return caps
    raise AssertionError("unreachable: the last default list starts at 0.0")


def default_targets(cuda: tuple[int, int]) -> tuple[str, ...]:
    """The targets T of a CUDA version: its default list without ``+PTX``."""
    return tuple(str(parse_capability(c).base) for c in default_capabilities(cuda))


@dataclass(frozen=True)
class Selection:
    """Result of :func:`select_capabilities`.

    ``archs`` is the effective list in canonical spelling, sorted by (major, minor, suffix); empty
    means error E20 for the caller. ``dropped`` lists the elements removed by the drop rule
    (below the CUDA version's lowest default target, or ``f`` before CUDA 12.9), for a warning.
    """

    archs: tuple[str, ...]
    dropped: tuple[str, ...] = ()


def _drop_reason(cap: Capability, cuda: tuple[int, int], lowest: Capability) -> bool:
    return cap.version < lowest.version or (cap.suffix == "f" and cuda < _FAMILY_MIN_CUDA)


def _sorted_unique(caps: Iterable[Capability]) -> list[Capability]:
    return sorted(set(caps), key=lambda c: (c.sort_key, c.ptx))


def select_capabilities(
    requested: Sequence[str] | None,
    cuda: tuple[int, int],
    targets: Sequence[str] | None = None,
) -> Selection:
    """The effective capability list of one kernel for one CUDA version (docs/build-toml.md).

    ``requested`` is the kernel's ``cuda-capabilities`` (``None``: not set). ``targets`` replaces
    the targets T (``--arch native``: the visible GPUs' capabilities, plain entries only); the
    drop rule always uses the CUDA version's default targets. Without ``cuda-capabilities`` the
    result is the whole default list, or T itself when ``targets`` is given (then also subject to
    the drop rule). Duplicates are merged. Raises ``ValueError`` on an unparseable entry or a
    non-plain target.
    """
    lowest = min(parse_capability(t) for t in default_targets(cuda))
    if targets is None:
        if requested is None:
            return Selection(default_capabilities(cuda))
        target_caps = [parse_capability(t) for t in default_targets(cuda)]
    else:
        target_caps = [parse_capability(t) for t in targets]
        for text, cap in zip(targets, target_caps):
            if cap != cap.plain:
                raise ValueError(f"invalid target {text!r}: targets are plain capabilities such as '9.0'")

    out: list[Capability]
    if requested is None:
        out = _sorted_unique(target_caps)
    else:
        parsed = [parse_capability(r) for r in requested]
        ptx = {c.base for c in parsed if c.ptx}
        bases = _sorted_unique(c.base for c in parsed)
        remaining = _sorted_unique(target_caps)
        out = []
        # A suffixed entry survives only if its exact base is a target, and consumes that target.
        # Sorted order makes "a" win over "f" on one base (E8 rejects that pair in build.toml).
        for cap in (c for c in bases if c.suffix):
            if cap.plain in remaining:
                remaining.remove(cap.plain)
                out.append(cap)
        plain = [c for c in bases if not c.suffix]
        for target in remaining:
            best: Capability | None = None
            for cap in plain:
                if cap.version > target.version:
                    break
                if cap.major == target.major or cap in ptx:
                    best = cap
            if best is not None and best not in out:
                out.append(best)
        out = [replace(c, ptx=c in ptx) for c in out]

    kept = [c for c in out if not _drop_reason(c, cuda, lowest)]
    dropped = [c for c in out if _drop_reason(c, cuda, lowest)]
    return Selection(
        archs=tuple(str(c) for c in _sorted_unique(kept)),
        dropped=tuple(str(c) for c in _sorted_unique(dropped)),
    )


def supported_capabilities() -> tuple[str, ...]:
    """Every plain capability of a default list (of any CUDA version): what ``--arch`` accepts, with an ``a``
    suffix from 9.0, an ``f`` suffix from 10.0, and ``+PTX``."""
    plain = {parse_capability(c).plain for _, caps in _DEFAULT_LISTS for c in caps}
    return tuple(str(c) for c in sorted(plain))


def explicit_archs(text: str) -> tuple[str, ...]:
    """The capabilities of ``--arch 8.0,9.0a`` in canonical order; ``ValueError`` naming the first bad entry.

    Each entry must be a supported capability (:func:`supported_capabilities`); whether this CUDA version can
    build it is decided when the variant is planned (:func:`select_explicit`).
    """
    entries = [e.strip() for e in text.split(",")]
    if not text.strip() or any(not e for e in entries):
        raise ValueError(
            f"--arch {text!r}: expected 'native' or capabilities separated by commas, e.g. 8.0,9.0a"
        )
    supported = supported_capabilities()
    caps: list[Capability] = []
    for entry in entries:
        try:
            cap = parse_capability(entry)
        except ValueError as exc:
            raise ValueError(f"--arch: {exc}") from None
        if str(cap.plain) not in supported:
            raise ValueError(
                f"--arch: {entry} is not a supported CUDA capability (supported: {', '.join(supported)}; "
                "an 'a' suffix from 9.0, an 'f' suffix from 10.0, '+PTX' on any)"
            )
        if (cap.suffix == "a" and cap.major < 9) or (cap.suffix == "f" and cap.major < 10):
            raise ValueError(
                f"--arch: {entry} does not exist: arch-specific ('a') capabilities start at 9.0, "
                "family ('f') ones at 10.0"
            )
        caps.append(cap)
    return union_archs([[str(c) for c in caps]])


def select_explicit(
    requested: Sequence[str] | None, cuda: tuple[int, int], explicit: Sequence[str]
) -> Selection:
    """The effective list of one kernel under ``--arch LIST`` (``explicit``, from :func:`explicit_archs`).

    The entries this CUDA version cannot build (not among its default targets, or ``f`` before 12.9) are
    dropped. A kernel without ``cuda-capabilities`` gets the remaining list exactly (suffixes and ``+PTX``
    included); one with ``cuda-capabilities`` is selected as if the listed capabilities were the only GPUs (the
    targets of :func:`select_capabilities`).
    """
    targets = {parse_capability(t) for t in default_targets(cuda)}
    caps = [parse_capability(e) for e in explicit]
    buildable = [c for c in caps if c.plain in targets and not (c.suffix == "f" and cuda < _FAMILY_MIN_CUDA)]
    dropped = tuple(str(c) for c in caps if c not in buildable)
    if requested is None:
        return Selection(tuple(str(c) for c in _sorted_unique(buildable)), dropped)
    plain = [str(c) for c in _sorted_unique(c.plain for c in buildable)]
    if not plain:
        return Selection((), dropped)
    selection = select_capabilities(requested, cuda, plain)
    return Selection(selection.archs, tuple(dict.fromkeys([*dropped, *selection.dropped])))


def gencode_flags(archs: Sequence[str]) -> list[str]:
    """nvcc ``-gencode`` flags for an effective list (docs/build-toml.md), in list order.

    ``X.Y`` gives ``arch=compute_XY,code=sm_XY``; ``a``/``f`` carry their suffix on both parts;
    ``+PTX`` adds ``arch=compute_XY<s>,code=compute_XY<s>``. When a list holds both ``X.Y`` and
    ``X.Yf`` (possible for unions, or a requested list with CUDA 12.9 and ``10.0 10.0f``), the plain
    ``code=sm_XY`` is left out: nvcc refuses the pair ("The same GPU code (`sm_XYf`) generated
    for non family-specific and family-specific GPU arch"), and the ``sm_XYf`` cubin is itself an
    ``sm_XY`` cubin for the same devices. Its ``+PTX`` element is kept.
    """
    caps = [parse_capability(a) for a in archs]
    families = {c.plain for c in caps if c.suffix == "f"}
    flags: list[str] = []
    for cap in caps:
        if cap.suffix or cap.plain not in families:
            flags.append(f"-gencode=arch=compute_{cap.code},code=sm_{cap.code}")
        if cap.ptx:
            flags.append(f"-gencode=arch=compute_{cap.code},code=compute_{cap.code}")
    return flags


def union_archs(lists: Iterable[Sequence[str]]) -> tuple[str, ...]:
    """The union of effective lists, sorted by (major, minor, suffix).

    Entries with the same base merge into one, which carries ``+PTX`` if any list had it:
    ``9.0`` and ``9.0+PTX`` give ``9.0+PTX``; ``9.0a`` and ``9.0`` stay separate.
    """
    ptx: dict[Capability, bool] = {}
    for archs in lists:
        for text in archs:
            cap = parse_capability(text)
            ptx[cap.base] = ptx.get(cap.base, False) or cap.ptx
    return tuple(str(replace(b, ptx=p)) for b, p in sorted(ptx.items(), key=lambda item: item[0].sort_key))


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


def select_rocm_archs(requested: Sequence[str] | None) -> tuple[str, ...]:
    """The effective ROCm list: ``requested`` ∩ supported, in supported-list order; ``None`` -> all.

    Empty means error E20 for the caller.
    """
    if requested is None:
        return ROCM_SUPPORTED_ARCHS
    wanted = set(requested)
    return tuple(a for a in ROCM_SUPPORTED_ARCHS if a in wanted)
