"""How long reading a build.toml takes when it is full of errors or comments (the limits of docs/security.md).

Each problem used to be compared with every earlier one, and the position scanner moved one character at a
time: 10,000 bad kernel sections took over a minute. Run it from the repository root:

    .venv/bin/python benchmarks/config_errors.py

It prints one row per input: its size, the diagnostics reported and the seconds `load_project` took. The time
per section should stay flat as the count doubles (linear), and every input stays under a second or two.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from kernel_builder.config import load_project
from kernel_builder.errors import ConfigError

HEADER = """\
[general]
name = "bench"
version = 1
edition = 5
license = "MIT"
backends = ["cpu"]

[torch-noarch]
"""


def bad_sections(count: int) -> str:
    """``count`` kernel sections, each with an unknown backend and a missing source (two errors each)."""
    return HEADER + "".join(f'[kernel.k{i}]\nbackend = "nope"\ndepends = []\n' for i in range(count))


def comments(size: int) -> str:
    line = "# " + "x" * 77 + "\n"
    return HEADER + line * (size // len(line))


def measure(text: str, root: Path) -> tuple[int, float]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "torch-ext" / "bench").mkdir(parents=True, exist_ok=True)
    (root / "torch-ext" / "bench" / "__init__.py").write_text("")
    (root / "build.toml").write_text(text)
    started = time.perf_counter()
    try:
        diagnostics = len(load_project(root).diagnostics)
    except ConfigError as error:
        diagnostics = len(error.diagnostics)
    return diagnostics, time.perf_counter() - started


def main() -> int:
    cases = [(f"{n:,} bad sections", bad_sections(n)) for n in (1_000, 5_000, 10_000, 20_000)]
    cases += [(f"{size >> 10:,} KiB of comments", comments(size)) for size in (256 << 10, 1000 << 10)]
    print(f"{'input':<24} {'bytes':>10} {'diagnostics':>12} {'seconds':>8}")
    with tempfile.TemporaryDirectory() as scratch:
        for index, (label, text) in enumerate(cases):
            count, seconds = measure(text, Path(scratch) / str(index))
            print(f"{label:<24} {len(text.encode()):>10,} {count:>12,} {seconds:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
