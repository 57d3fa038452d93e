"""Seconds per test file from pytest's JUnit XML (or the JSON lines of ``KB_TEST_TIMES``), and runs side by side.

    make test PYTEST_ARGS=--junitxml=after.xml          # or: KB_TEST_TIMES=after.jsonl make test
    python benchmarks/test_times.py before.xml after.xml [--top 25] [--json PATH]

``KB_TEST_TIMES`` (tests/conftest.py) appends each test phase as it ends, so a run that was stopped, or is still
running, can be read too.

A test case's time in the XML is its setup, call and teardown together, so a file's sum includes the builds its
fixtures make for it (a session fixture counts in the file of the first test that asks for it). Under
pytest-xdist the files run side by side, so the sums add up to more than the wall time: they say where the
work is, not how long the run took. The XML is read, not pytest's terminal output, so any run can be
compared with any other (the XML needs nothing from this checkout's conftest).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class FileTimes:
    seconds: float = 0.0
    cpu: float | None = None  # KB_TEST_TIMES lines only
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))


def _file_of(case: ET.Element) -> str:
    """``tests/test_x.py`` from ``classname="tests.test_x"`` or ``"tests.test_x.TestClass"``."""
    parts = case.get("classname", "").split(".")
    for end in range(len(parts), 0, -1):
        if parts[end - 1].startswith("test_"):
            return "/".join(parts[:end]) + ".py"
    return "/".join(parts) + ".py"


def _outcome(case: ET.Element) -> str:
    for child in case:
        if child.tag in ("failure", "error"):
            return "failed"
        if child.tag == "skipped":
            return "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
    return "passed"


def read_lines(path: Path) -> dict[str, FileTimes]:
    """Per file, from ``KB_TEST_TIMES`` lines: the summed seconds of every phase, the outcome of each test (failed
    if a phase failed, else skipped if one was skipped, else passed)."""
    files: dict[str, FileTimes] = defaultdict(FileTimes)
    outcomes: dict[str, str] = {}
    for text in path.read_text(encoding="utf-8").splitlines():
        line = json.loads(text)
        entry = files[line["nodeid"].split("::")[0]]
        entry.seconds += line["seconds"]
        if line.get("cpu") is not None:
            entry.cpu = (entry.cpu or 0.0) + line["cpu"]
        rank = ("passed", "skipped", "failed")
        before = outcomes.get(line["nodeid"], "passed")
        outcomes[line["nodeid"]] = max(before, line["outcome"], key=rank.index)
    for nodeid, outcome in outcomes.items():
        files[nodeid.split("::")[0]].outcomes[outcome] += 1
    return dict(files)


def read(path: Path) -> dict[str, FileTimes]:
    """Per file: the summed seconds of its test cases and their outcomes."""
    if path.suffix == ".jsonl":
        return read_lines(path)
    files: dict[str, FileTimes] = defaultdict(FileTimes)
    for case in ET.parse(path).getroot().iter("testcase"):
        entry = files[_file_of(case)]
        entry.seconds += float(case.get("time", "0") or 0)
        entry.outcomes[_outcome(case)] += 1
    return dict(files)


def _counts(files: dict[str, FileTimes]) -> dict[str, int]:
    total: dict[str, int] = defaultdict(int)
    for entry in files.values():
        for outcome, count in entry.outcomes.items():
            total[outcome] += count
    return dict(total)


def _cell(entry: FileTimes | None) -> str:
    """Wall seconds, and CPU seconds where the run recorded them (``12 / 30 CPU``)."""
    if entry is None:
        return "—"
    return f"{entry.seconds:.0f}" + ("" if entry.cpu is None else f" / {entry.cpu:.0f} CPU")


def table(runs: list[dict[str, FileTimes]], names: list[str], top: int) -> str:
    first = runs[0]
    order = sorted(first, key=lambda name: -first[name].seconds)
    order += sorted({n for run in runs[1:] for n in run} - set(order))
    header = "| file | " + " | ".join(f"{name} (s)" for name in names) + " |"
    lines = [header, "|---|" + "---:|" * len(runs)]
    rest = [FileTimes() for _ in runs]
    for index, name in enumerate(order):
        entries = [run.get(name) for run in runs]
        if index < top:
            lines.append(f"| `{Path(name).name}` | " + " | ".join(_cell(e) for e in entries) + " |")
            continue
        for total, entry in zip(rest, entries):
            if entry is not None:
                total.seconds += entry.seconds
                if entry.cpu is not None:
                    total.cpu = (total.cpu or 0.0) + entry.cpu
    if len(order) > top:
        lines.append(f"| the other {len(order) - top} files | " + " | ".join(_cell(r) for r in rest) + " |")
    sums = []
    for run in runs:
        total = FileTimes(seconds=sum(e.seconds for e in run.values()))
        cpus = [e.cpu for e in run.values() if e.cpu is not None]
        total.cpu = sum(cpus) if cpus else None
        sums.append(total)
    lines.append("| **all files** | " + " | ".join(f"**{_cell(t)}**" for t in sums) + " |")
    counts = ["; ".join(f"{n} {o}" for o, n in sorted(_counts(run).items())) for run in runs]
    lines.append("| tests | " + " | ".join(counts) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="JUnit XML (--junitxml) or KB_TEST_TIMES files")
    parser.add_argument("--top", type=int, default=25, help="files listed one by one (the rest summed)")
    parser.add_argument("--json", type=Path, help="also write {run: {file: {seconds, cpu}}} here")
    args = parser.parse_args(argv)
    runs = [read(path) for path in args.runs]
    names = [path.stem for path in args.runs]
    print(table(runs, names, args.top))
    if args.json:
        data = {
            n: {f: {"seconds": round(e.seconds, 2), "cpu": e.cpu} for f, e in run.items()}
            for n, run in zip(names, runs)
        }
        args.json.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
