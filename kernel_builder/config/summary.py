"""The short human summary printed by ``check-config``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import kernel_builder.backends as backends
from kernel_builder.backends.noarch import noarch_name
from kernel_builder.config.model import KernelProject, Torch, TorchNoarch

if TYPE_CHECKING:
    from kernel_builder.build.builder import VariantResult
    from kernel_builder.build.plan.candidates import Candidate
    from kernel_builder.common.diagnostics import Diagnostic


def describe_project(project: KernelProject) -> str:
    config = project.config
    general = config.general
    lines = [
        f"{project.display_path}: ok (edition 5{f', read from legacy v{project.form} form' if project.form < 5 else ''})",
        f"  name:      {general.name} (Python package {general.py_name})",
        f"  version:   {general.version}",
        f"  license:   {general.license}",
        f"  framework: {config.framework.kind}",
        f"  backends:  {', '.join(general.backends)}",
    ]
    if isinstance(config.framework, TorchNoarch) and config.framework.cuda_capabilities:
        lines.append(f"  cuda-capabilities: {', '.join(config.framework.cuda_capabilities)}")
    if isinstance(config.framework, Torch):
        noarch = config.noarch_backends()
        if noarch:
            lines.append(f"  pure-Python variants: {', '.join(noarch_name(b) for b in noarch)}")
    if config.kernels:
        lines.append("  kernels:")
        width = max(len(k.name) for k in config.kernels)
        for kernel in config.kernels:
            detail = ""
            gpu_arch = backends.get(kernel.backend).gpu_arch
            if gpu_arch == "capability":
                caps = kernel.cuda_capabilities
                detail = (
                    f"capabilities: {', '.join(caps)}"
                    if caps
                    else "capabilities: default list of each CUDA version"
                )
                if kernel.cuda_minver:
                    detail += f"; CUDA >= {kernel.cuda_minver}"
            elif gpu_arch == "gfx":
                archs = kernel.rocm_archs
                detail = f"archs: {', '.join(archs)}" if archs else "archs: all supported"
            built = "" if kernel.backend in general.backends else "  (not built: backend not in backends)"
            lines.append(f"    {kernel.name:<{width}}  {kernel.backend:<5}  {detail}{built}".rstrip())
    else:
        lines.append("  kernels:   none")
    return "\n".join(lines)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def build_table(results: Sequence[VariantResult], total: float) -> str:
    """The final table of ``build``: variant, result, time, size (and why a variant was skipped)."""
    rows = [("variant", "result", "time", "size")]
    for r in results:
        seconds = f"{r.seconds:.1f} s" if r.status in ("built", "up to date", "failed") else ""
        rows.append((r.name, r.status, seconds, _size(r.size) if r.size else ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for r in results:
        if r.status == "skipped":
            lines.append(f"skipped {r.name}: {r.message}")
    lines.append(f"done in {total:.2f} s")
    return "\n".join(lines)


def build_report_json(
    results: Sequence[VariantResult], diagnostics: Sequence[Diagnostic], total: float, unique_id: str
) -> dict[str, object]:
    """``build --json``: what ``build_table`` shows, plus the warnings (findings), for CI and tests."""
    return {
        "unique_id": unique_id,
        "seconds": round(total, 3),
        "failed": any(r.status == "failed" for r in results),
        "variants": [
            {
                "name": r.name,
                "status": r.status,
                "seconds": round(r.seconds, 3),
                "size": r.size,
                "message": r.message or None,
            }
            for r in results
        ],
        "findings": [
            {
                "severity": d.severity.value,
                "message": d.message,
                "path": d.path,
                "line": d.line,
                "hint": d.hint,
            }
            for d in diagnostics
        ],
    }


def variants_table(candidates: Sequence[Candidate]) -> str:
    """``list-variants``: every candidate, required or optional, and buildable here or why not."""
    rows = [("variant", "required", "buildable here")]
    for c in candidates:
        rows.append(
            (c.name, "required" if c.required else "optional", "yes" if c.buildable else f"no: {c.reason}")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(2)]
    return "\n".join(f"{a.ljust(widths[0])}  {b.ljust(widths[1])}  {c}" for a, b, c in rows)


def variants_json(candidates: Sequence[Candidate]) -> list[dict[str, Any]]:
    """``list-variants --json``: the table's facts, one object per candidate; ``system`` is null for noarch
    variants and ``reason`` null for buildable ones. The Nix lib's tests compare their names with these."""
    return [
        {
            "variant": c.name,
            "backend": c.backend,
            "system": c.system,
            "required": c.required,
            "buildable": c.buildable,
            "reason": c.reason,
        }
        for c in candidates
    ]
