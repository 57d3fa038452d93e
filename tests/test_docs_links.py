"""The documentation stands on its own: nothing points outside the repository, every reference resolves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
USER_FACING = [
    REPO / "README.md",
    REPO / "CONTRIBUTING.md",
    *sorted((REPO / "docs").glob("*.md")),
    *sorted((REPO / "kernel_builder").rglob("*.py")),
]


@pytest.mark.parametrize("path", USER_FACING, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_reference_outside_the_repository(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "shared/spec" not in text
    assert "\N{SECTION SIGN}" not in text, (
        "cite a docs/ page or state the rule, not a numbered section elsewhere"
    )


def test_docs_pages_cited_in_code_exist() -> None:
    cited = {
        m
        for path in (REPO / "kernel_builder").rglob("*.py")
        for m in re.findall(r"docs/([\w-]+\.md)", path.read_text())
    }
    assert cited  # the code does cite them
    assert sorted(c for c in cited if not (REPO / "docs" / c).is_file()) == []


@pytest.mark.parametrize(
    "page",
    sorted((REPO / "docs").glob("*.md")) + [REPO / "README.md", REPO / "CONTRIBUTING.md"],
    ids=lambda p: p.name,
)
def test_relative_links_resolve(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_docs_index_lists_every_page() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    for page in (REPO / "docs").glob("*.md"):
        if page.name != "README.md":
            assert f"]({page.name})" in index, page.name


def test_the_readme_is_for_users_and_contributing_for_contributors() -> None:
    """The README keeps its two-command Quickstart and the user's material; the package's layout, the tests and
    the GPU checks live in CONTRIBUTING.md, which the README links to."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    contributing = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    quickstart = readme.split("## Quickstart", 1)[1].split("## ", 1)[0]
    block = quickstart.split("```sh\n", 1)[1].split("```", 1)[0]
    assert [line.split("#")[0].strip() for line in block.splitlines()] == ["make demo", "make test"]
    assert "## Layout" not in readme and "## Development" not in readme
    assert "## Layout" in contributing and "## Development" in contributing
    assert "](CONTRIBUTING.md)" in readme and "](README.md)" in contributing
