"""The completeness gate of ``upload``: a release carries every required variant, or says which it lacks.

The required variants are the project's required candidates (the variant matrix, as ``build --required`` and
``matrix --required`` read it). A release lacks one when neither the variants directory nor the target branch
on the Hub (variants the upload leaves in place there) has it. A missing variant that a runner of this tool
builds (:mod:`kernel_builder.pipeline.plan.runners`) refuses the upload unless ``--allow-incomplete``; then the
card gets a section listing what is missing, so the repository's users see it. A missing variant that no runner
of this tool builds (macOS, backends it does not compile) is reported, and listed on such a card, but does not
refuse the upload: no command of this tool could make the release complete.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel_builder.errors import HubError
from kernel_builder.publish.content import README, Content, LocalFile

__all__ = ["CARD_HEADING", "Missing", "card_section", "missing_variants", "refusal", "with_card_section"]

CARD_HEADING = "## Missing variants"


@dataclass(frozen=True)
class Missing:
    """A required variant the release lacks, and what builds it."""

    variant: str
    runner: str | None  # the CI runner that builds it; None when no runner of this tool does
    how: str  # the command that builds it there, or why nothing of this tool builds it

    @property
    def blocking(self) -> bool:
        """Whether it refuses the upload: a runner of this tool builds it."""
        return self.runner is not None

    def describe(self) -> str:
        if self.runner is None:
            return f"{self.variant}: not built by kernel-builder ({self.how})"
        return f"{self.variant}: `{self.how}` (CI runner {self.runner})"


def missing_variants(kernel_dir: Path, present: Collection[str]) -> tuple[list[Missing], int] | None:
    """The required variants of the project in ``kernel_dir`` that ``present`` lacks, in matrix order, and how
    many variants are required; ``None`` when ``kernel_dir`` has no build.toml to say which are required."""
    if not (kernel_dir / "build.toml").is_file():
        return None
    from kernel_builder.config import load_project
    from kernel_builder.pipeline.plan.candidates import all_candidates
    from kernel_builder.pipeline.plan.runners import no_runner_reason, runner_for

    project = load_project(kernel_dir).project
    missing = []
    where = shlex.quote(str(kernel_dir))
    required = [c for c in all_candidates(project) if c.required]
    for candidate in required:
        if candidate.name in present:
            continue
        runner = runner_for(candidate.backend, candidate.system)
        if runner is None:
            missing.append(
                Missing(candidate.name, None, no_runner_reason(candidate.backend, candidate.system))
            )
        else:
            command = f"kernel-builder build {where} --variant {candidate.name}"
            missing.append(Missing(candidate.name, runner.label, command))
    return missing, len(required)


def refusal(missing: Sequence[Missing], required: int) -> HubError:
    """The error of an upload that lacks required variants a runner builds."""
    blocking = [m for m in missing if m.blocking]
    return HubError(
        "\n".join(
            [
                f"refusing to upload an incomplete release: it lacks {len(missing)} of the {required} required "
                f"variants (neither in the variants directory nor on the target branch), {len(blocking)} of them "
                "built by kernel-builder:",
                *(f"  {m.describe()}" for m in missing),
                "build them (docs/ci.md gives each variant a CI job: `kernel-builder matrix --format github "
                "--required`), or pass --allow-incomplete to upload without them (the card then lists them)",
            ]
        )
    )


def card_section(missing: Sequence[Missing]) -> str:
    lines = [
        CARD_HEADING,
        "",
        "This release was uploaded with `--allow-incomplete`: it lacks these required variants, so it does not load "
        "on the systems they are for.",
        "",
    ]
    lines += [f"- `{m.variant}`" for m in missing if m.blocking]
    others = [m for m in missing if not m.blocking]
    if others:
        lines += ["", "Not built by kernel-builder:", ""]
        lines += [f"- `{m.variant}`: {m.how}" for m in others]
    return "\n".join(lines) + "\n"


def with_card_section(content: Content, missing: Sequence[Missing], scratch: Path) -> Content:
    """``content`` whose card (written under ``scratch``) ends with :func:`card_section`; with a warning instead
    when there is no card."""
    if content.card is None:
        warning = "there is no build/CARD.md to list the missing variants in"
        return dataclasses.replace(content, warnings=(*content.warnings, warning))
    text = content.card.source.read_text(encoding="utf-8")
    card = scratch / "completeness" / README
    card.parent.mkdir(exist_ok=True)
    card.write_text(text.rstrip("\n") + "\n\n" + card_section(missing), encoding="utf-8")
    return dataclasses.replace(content, card=LocalFile.read(README, card))
