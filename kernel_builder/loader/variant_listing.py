"""``kernel-builder variants``: a Hub kernel's build variants per version, each with this machine's verdict.

As upstream's ``kernels variants``, a variant is judged by its name alone (framework, backend, Python, CPU, OS
against this environment), so nothing but the tree listing is read: ``kernel-builder info`` also reads each
variant's ``metadata.json`` and checks the GPU architectures it declares. The versions are the repository's
``v<N>`` branches (offline: those an earlier load cached): the newest by default, one (``version``), all of
them, or one revision instead. Nothing is downloaded, imported or trust-checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import kernel_builder.loader.resolve as resolve
from kernel_builder.errors import UsageError
from kernel_builder.loader.describe import FAILURES, as_command_error, checked_operation, version_refs
from kernel_builder.loader.hub_steps import Target, decide, resolve_target

__all__ = ["RevisionVariants", "list_variants", "render_variants"]


@dataclass(frozen=True)
class RevisionVariants:
    """The variants at one version (``version``, at branch ``ref``: ``refs/heads/v<N>``, or ``v<N>`` offline) or
    one revision (``version`` ``None``), best first: the compatible ones in order of preference, then the others
    with the reason."""

    version: int | None
    ref: str
    decisions: tuple[resolve.Verdict, ...]

    @property
    def preferred(self) -> str | None:
        first = self.decisions[0] if self.decisions else None
        return first.variant.variant_str if isinstance(first, resolve.Accepted) else None

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "revision": self.ref,
            "variants": [
                {
                    "variant": decision.variant.variant_str,
                    "compatible": isinstance(decision, resolve.Accepted),
                    "preferred": decision.variant.variant_str == self.preferred,
                    "reason": decision.reason if isinstance(decision, resolve.Rejected) else None,
                }
                for decision in self.decisions
            ],
        }


def _selected(
    refs: dict[int, str], repo_id: str, version: int | Literal["latest"] | None, all_versions: bool
) -> list[int]:
    if isinstance(version, int):
        if version not in refs:
            available = ", ".join(str(v) for v in sorted(refs)) or "none"
            raise UsageError(f"{repo_id} has no version {version} (branch v{version}); versions: {available}")
        return [version]
    if not refs:
        raise UsageError(f"{repo_id} has no version branches (v<N>): give --revision")
    return sorted(refs) if all_versions else [max(refs)]


def list_variants(
    repo_id: str,
    *,
    version: int | Literal["latest"] | None = None,
    revision: str | None = None,
    all_versions: bool = False,
    only_compatible: bool = False,
    backend: str | None = None,
) -> list[RevisionVariants]:
    """The variants of ``repo_id`` at each selected version (or at ``revision``), judged for this machine.

    Raises :class:`~kernel_builder.errors.UsageError` for a version the repository lacks or more than one of
    ``version``, ``revision`` and ``all_versions``; :class:`~kernel_builder.errors.HubError` when the Hub cannot
    be asked.
    """
    if sum((all_versions, version is not None, revision is not None)) > 1:
        raise UsageError("give at most one of --version, --revision and --all-versions")
    operation = checked_operation(repo_id, backend)
    hub = operation.hub
    try:
        targets: list[tuple[int | None, str, Target]]
        if revision is not None:
            targets = [(None, revision, resolve_target(hub, repo_id, None, revision))]
        else:
            repo, refs = version_refs(hub, repo_id)
            # The ref as upstream's JSON names it: the branch's full name online, the cache's ref file offline.
            prefix = "" if hub.offline else "refs/heads/"
            targets = [
                (number, f"{prefix}v{number}", Target(repo, refs[number], f"v{number}", number))
                for number in _selected(refs, repo_id, version, all_versions)
            ]
        listed = []
        for number, ref, target in targets:
            decisions, _ = decide(
                hub, target, operation.env, operation.backend, first_only=False, check_arch=False
            )
            if only_compatible:
                decisions = [d for d in decisions if isinstance(d, resolve.Accepted)]
            listed.append(RevisionVariants(number, ref, tuple(decisions)))
    except FAILURES as error:
        raise as_command_error(error) from None
    return listed


def render_variants(listed: list[RevisionVariants], only_compatible: bool) -> str:
    """One block per version: its label, then one line per variant (compatible ones marked, the preferred one
    first), as upstream prints them."""
    blocks = []
    for revision in listed:
        label = f"Version {revision.version}" if revision.version is not None else f"Revision {revision.ref}"
        lines = []
        for decision in revision.decisions:
            name = decision.variant.variant_str
            if isinstance(decision, resolve.Accepted):
                verdict = "compatible, preferred" if name == revision.preferred else "compatible"
                lines.append(f"{name} {verdict} \u2705")
            else:
                lines.append(f"{name}: {decision.reason}")
        if not lines:
            lines = ["No compatible variants found." if only_compatible else "No build variants found."]
        blocks.append(f"{label}:\n\n" + "\n".join(lines))
    return "\n".join(blocks)
