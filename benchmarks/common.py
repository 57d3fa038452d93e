"""What the benchmark scripts share: the repository on ``sys.path``, timing statistics, the table they
print, the JSON file they write and a description of the machine the numbers came from."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"


def use_repository() -> None:
    """Import ``kernel_builder`` from this checkout, installed or not."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float]) -> str:
    """``min–max`` of a sample, for the table (the median alone hides noisy runs)."""
    return f"{min(values):.2f}–{max(values):.2f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table: numbers right-aligned, everything else left-aligned."""
    cells = [[str(h) for h in headers]] + [[_cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in rows) and bool(rows) for i in range(len(headers))]
    lines = []
    for index, row in enumerate(cells):
        parts = [c.rjust(w) if numeric[i] else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(parts).rstrip())
        if index == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)


def machine() -> dict[str, object]:
    """Where the numbers came from: host, CPU count, Python, load, and the GPU when torch sees one."""
    info: dict[str, object] = {
        "host": platform.node(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load-average": [round(x, 2) for x in os.getloadavg()],
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    nvidia = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True, text=True, check=False,
    ) if _which("nvidia-smi") else None  # fmt: skip
    if nvidia is not None and nvidia.returncode == 0:
        info["gpus"] = [line.strip() for line in nvidia.stdout.splitlines() if line.strip()]
    return info


def _which(name: str) -> bool:
    from shutil import which

    return which(name) is not None


def write_json(path: Path, data: object, *, quiet: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if not quiet:
        print(f"\nwrote {path}")


def verdict(value: float | None, limit: float, *, at_most: bool) -> str:
    if value is None:
        return "not measured"
    met = value <= limit if at_most else value >= limit
    return "met" if met else "NOT met"
