"""pip's constraint files, read as pip reads them, and the message for a package they keep out of reach.

A machine's pip configuration may cap a package (``torch<=2.14.1`` in a constraints file named by ``pip config``,
say, because only those releases lie on its disk). pip then refuses every newer release whatever index offers it,
and a variant of a newer Torch cannot be built here *because of that setting*: the message says so, naming the
file, the line and the setting that points to it, and how to lift the cap for one command — not that the wheel
is missing, which would send the reader looking in the wrong place.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from kernel_builder.pipeline.environment.wheel_index import PipSources

__all__ = ["ConstraintLine", "allowed", "cap_reason", "constraint_lines"]

#: What lifts every constraint file for one command: an empty file in place of the configured ones.
LIFT = "PIP_CONSTRAINT=/dev/null"


@dataclass(frozen=True)
class ConstraintLine:
    """One line of a constraint file that constrains a given package."""

    path: str
    line: int  # 1-based
    text: str  # the requirement as written, without its comment: ``torch<=2.14.1``
    specifier: SpecifierSet


def constraint_lines(project: str, sources: PipSources) -> list[ConstraintLine]:
    """Every line of pip's constraint files that constrains ``project``, in pip's order. Unreadable files and
    lines are pip's business (it reports them itself), not a reason given here."""
    name = canonicalize_name(project)
    found: list[ConstraintLine] = []
    for path in sources.constraints:
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, start=1):
            text = line.split("#", 1)[0].strip()
            try:
                requirement = Requirement(text)
            except (InvalidRequirement, InvalidSpecifier):
                continue
            if canonicalize_name(requirement.name) == name:
                found.append(ConstraintLine(path, number, text, requirement.specifier))
    return found


def allowed(project: str, sources: PipSources) -> SpecifierSet:
    """What pip's constraint files allow of ``project`` (every version where none names it)."""
    result = SpecifierSet()
    for line in constraint_lines(project, sources):
        result &= line.specifier
    return result


def cap_reason(project: str, version: str, sources: PipSources) -> str | None:
    """Why pip's configuration refuses ``project==version`` here — the constraint file, its line and the setting
    that names the file, and how to lift it for one command — or ``None`` when the constraints allow it."""
    refusing = [
        c for c in constraint_lines(project, sources) if not c.specifier.contains(version, prereleases=True)
    ]
    if not refusing:
        return None
    first = refusing[0]
    setting = (
        f", named by {sources.constraint_setting} in `pip config list`" if sources.constraint_setting else ""
    )
    return (
        f"pip's configuration caps {first.text} (line {first.line} of the constraints file {first.path}{setting}); "
        f"to lift the cap for one command, run it with {LIFT}"
    )
