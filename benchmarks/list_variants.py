"""How long ``kernel-builder list-variants`` takes with nothing cached, for a project with CUDA candidates.

    python benchmarks/list_variants.py [--kernel examples/relu] [--rounds 3] [--baseline CHECKOUT] [--json PATH]

Each round runs ``python -m kernel_builder list-variants KERNEL`` in a fresh interpreter with an empty
kernel-builder cache (``KERNEL_BUILDER_CACHE``: no build environment, no wheel metadata) and an empty pip
cache, against the indexes pip is configured with (the network round trips are part of what a user waits
for). ``--baseline`` times another checkout (e.g. a worktree of the previous commit) in the same rounds,
interleaved, so both see the same network and machine load; the table shows both and the verdicts agree.

Goal: seconds (at most ``TARGET_S`` on a 2-core machine); the answers (standard output) must be the same.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, RESULTS, machine, median, spread, table, verdict, write_json

TARGET_S = 10.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernel", type=Path, default=REPO / "examples" / "relu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout to time the same way (before/after)")
    parser.add_argument("--json", type=Path, default=RESULTS / "list_variants.json")
    return parser.parse_args(argv)


def _run(checkout: Path, kernel: Path) -> tuple[float, str]:
    """One cold ``list-variants`` from ``checkout``: seconds and its table."""
    with tempfile.TemporaryDirectory(prefix="kb-listvar-bench-") as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": str(checkout),
            "KERNEL_BUILDER_CACHE": str(Path(tmp) / "kb"),
            "PIP_CACHE_DIR": str(Path(tmp) / "pip"),
        }
        start = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "kernel_builder", "list-variants", str(kernel)],
            capture_output=True, text=True, env=env, cwd=checkout, check=False,
        )  # fmt: skip
        seconds = time.monotonic() - start
    if result.returncode != 0:
        raise SystemExit(f"list-variants from {checkout} failed:\n{result.stderr}")
    return seconds, result.stdout


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    checkouts = {"this checkout": REPO}
    if args.baseline is not None:
        checkouts["baseline"] = args.baseline.resolve()
    samples: dict[str, list[float]] = {name: [] for name in checkouts}
    tables: dict[str, str] = {}
    for _ in range(args.rounds):
        for name, checkout in checkouts.items():
            seconds, stdout = _run(checkout, args.kernel.resolve())
            samples[name].append(seconds)
            tables[name] = stdout
    rows = [
        [name, median(values), spread(values), verdict(median(values), TARGET_S, at_most=True)]
        for name, values in samples.items()
    ]
    print(table(["list-variants, nothing cached", "median s", "min–max s", f"≤ {TARGET_S:.0f} s"], rows))
    same = len(set(tables.values())) == 1
    if args.baseline is not None:
        print(f"\nsame answers as the baseline: {'yes' if same else 'NO'}")
    write_json(
        args.json,
        {"machine": machine(), "target_s": TARGET_S, "samples": samples, "same_answers": same},
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
