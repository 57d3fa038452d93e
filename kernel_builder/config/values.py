"""Value formats of build.toml: versions, kernel names, git URLs (docs/build-toml.md)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from kernel_builder.formats.identifiers import KERNEL_NAME_RE

NAME_RE = KERNEL_NAME_RE  # one rule for build.toml, metadata.json and the loader
VERSION_RE = re.compile(r"^[0-9]+(\.[0-9]+)*\Z")
KERNEL_SECTION_RE = re.compile(r"^[A-Za-z0-9_-]+\Z")
_GIT_URL_RE = re.compile(r"^(https|http|git|ssh|git\+ssh|git\+https|git\+http)://[^/\s]+/\S+$")
_SCP_URL_RE = re.compile(r"^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:\S+$")


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    """A dot-separated version; trailing zero components do not matter (``2.0 == 2``)."""

    parts: tuple[int, ...]

    @classmethod
    def parse(cls, text: str) -> Version:
        if not VERSION_RE.match(text):
            raise ValueError(f"invalid version {text!r}")
        return cls(tuple(int(p) for p in text.split(".")))

    @property
    def _key(self) -> tuple[int, ...]:
        parts = list(self.parts)
        while len(parts) > 1 and parts[-1] == 0:
            parts.pop()
        return tuple(parts)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Version) and self._key == other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __lt__(self, other: Version) -> bool:
        width = max(len(self.parts), len(other.parts))
        return self.padded(width) < other.padded(width)

    def padded(self, width: int) -> tuple[int, ...]:
        return (self.parts + (0,) * width)[:width]

    @property
    def major_minor(self) -> tuple[int, int]:
        major, minor = self.padded(2)
        return major, minor

    def __str__(self) -> str:
        return ".".join(str(p) for p in self.parts)

    def __repr__(self) -> str:
        return f"Version({str(self)!r})"


def within_bounds(candidate: tuple[int, ...], minver: Version | None, maxver: Version | None) -> bool:
    """Bounds compare the candidate truncated to the bound's length: maxver 2.12 admits 2.12.3."""
    if minver is not None and _truncate(candidate, minver) < minver.parts:
        return False
    return maxver is None or _truncate(candidate, maxver) <= maxver.parts


def _truncate(candidate: tuple[int, ...], bound: Version) -> tuple[int, ...]:
    width = len(bound.parts)
    return (tuple(candidate) + (0,) * width)[:width]


def is_git_url(text: str) -> bool:
    return bool(_GIT_URL_RE.match(text) or _SCP_URL_RE.match(text))


def normalise_legacy_name(name: str) -> str | None:
    """The edition-5 spelling of a legacy name (``My_Kernel`` -> ``my-kernel``), or None if none exists."""
    candidate = name.replace("_", "-").lower()
    return candidate if NAME_RE.match(candidate) else None


def py_name_of(name: str) -> str:
    return name.replace("-", "_")
