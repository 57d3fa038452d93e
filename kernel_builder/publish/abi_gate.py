"""The ABI gate of ``upload``: variants that ``check-abi`` rejects are not published unless the user says so.

A variant whose extension imports symbol versions newer than manylinux_2_28, Python symbols outside abi3, or
libraries Torch does not bring fails to load on some of the systems Torch supports. ``upload`` refuses it,
naming every finding; with ``--allow-abi-violations`` it uploads anyway, and the card (``README.md`` on
``main``) gets a section that lists what was accepted, so users of the repository see it too.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kernel_builder.errors import HubError
from kernel_builder.pipeline.check.abi import Violation, check_directories
from kernel_builder.publish.content import README, Content, LocalFile

__all__ = ["CARD_HEADING", "abi_gate", "card_section"]

CARD_HEADING = "## ABI check"


def _finding(variant: Path, violation: Violation) -> str:
    return f"{violation.file.relative_to(variant).as_posix()}: {violation.kind}: {violation.detail}"


def card_section(findings: dict[str, list[str]]) -> str:
    lines = [
        CARD_HEADING,
        "",
        (
            "These variants were uploaded with `--allow-abi-violations`: `kernel-builder check-abi` rejects them, "
            "and they may fail to load on some systems that Torch supports."
        ),
        "",
    ]
    for variant, items in findings.items():
        lines += [f"- `{variant}`"] + [f"  - {item}" for item in items]
    return "\n".join(lines) + "\n"


def abi_gate(content: Content, allow: bool, scratch: Path) -> Content:
    """``content`` when every variant passes check-abi; otherwise a :class:`HubError` naming each finding,
    or — with ``allow`` — ``content`` with warnings and a card (written under ``scratch``) that records them."""
    directories = {variant.name: variant.directory for variant in content.variants}
    report = check_directories(directories.values())
    findings = {
        name: [_finding(directories[name], v) for v in violations]
        for name, violations in report.by_variant(directories.values()).items()
    }
    if not findings:
        return content
    listed = [f"  {name}: {item}" for name, items in findings.items() for item in items]
    if not allow:
        raise HubError(
            "\n".join(
                [
                    f"refusing to upload: check-abi rejects {len(findings)} variant(s):",
                    *listed,
                    (
                        "rebuild them with a compliant toolchain (docs/manylinux.md), or pass "
                        "--allow-abi-violations to upload them anyway (the card then says so)"
                    ),
                ]
            )
        )
    warnings = ["uploading despite ABI violations (--allow-abi-violations):\n" + "\n".join(listed)]
    section = card_section(findings)
    if content.card is None:
        warnings.append("there is no build/CARD.md to record the ABI violations in")
        return dataclasses.replace(content, warnings=(*content.warnings, *warnings))
    text = content.card.source.read_text(encoding="utf-8")
    card = scratch / README
    card.write_text(text.rstrip("\n") + "\n\n" + section, encoding="utf-8")
    return dataclasses.replace(
        content, card=LocalFile.read(README, card), warnings=(*content.warnings, *warnings)
    )
