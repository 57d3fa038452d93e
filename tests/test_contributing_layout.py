"""CONTRIBUTING.md's layout table names real paths, and every package folder and top-level folder is in it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROW = re.compile(r"^\| (?P<paths>[^|]*`[^|]*) \| [^|]+ \|$")
CODE = re.compile(r"`([^`]+)`")


def layout_paths(text: str) -> list[str]:
    """The backticked paths of the first column of the ``## Layout`` table; a bare name (``state.py``) after a
    path stands for a file beside it."""
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    paths: list[str] = []
    for line in section.splitlines():
        match = ROW.match(line)
        if match is None:
            continue
        base = ""
        for name in CODE.findall(match["paths"]):
            if "/" in name.rstrip("/") or name.endswith("/") or "." in name and not base:
                paths.append(name)
                base = name if name.endswith("/") else name.rpartition("/")[0] + "/"
            else:
                paths.append(base + name)
    return paths


def test_every_path_in_the_layout_table_exists() -> None:
    paths = layout_paths((REPO / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    assert len(paths) > 10
    missing = [p for p in paths if not (REPO / p).exists()]
    assert missing == []


def test_every_folder_is_in_the_layout_table() -> None:
    paths = {p.rstrip("/") for p in layout_paths((REPO / "CONTRIBUTING.md").read_text(encoding="utf-8"))}
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    top = {t.split("/")[0] for t in tracked if "/" in t and not t.startswith(".")}
    packages = {
        str(Path(t).parent) for t in tracked if t.startswith("kernel_builder/") and t.endswith("/__init__.py")
    }
    packages.discard("kernel_builder")
    unnamed = sorted(
        f for f in top | packages if f not in paths and not any(p.startswith(f + "/") for p in paths)
    )
    assert unnamed == []


def test_the_reader_of_the_table_sees_bare_names_beside_their_path() -> None:
    table = "x\n## Layout\n\n| path | what |\n|---|---|\n| `a/b.py`, `c.py` | one |\n| `d/` | two |\n"
    assert layout_paths(table) == ["a/b.py", "a/c.py", "d/"]
