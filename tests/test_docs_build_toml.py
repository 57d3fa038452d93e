"""docs/build-toml.md documents exactly the keys the configuration model accepts, table by table."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernel_builder.config import schema

DOC = Path(__file__).resolve().parent.parent / "docs" / "build-toml.md"

#: Section heading of the page → the keys the validator accepts there.
EXPECTED: dict[str, frozenset[str]] = {
    "Top level": schema.TOP_LEVEL,
    "`[general]`": schema.GENERAL,
    "`[general.hub]`": schema.HUB,
    **{f"`[general.{backend}]`": keys for backend, keys in schema.GENERAL_BACKEND.items()},
    "`[torch]`": schema.TORCH,
    "`[torch-noarch]`": schema.TORCH_NOARCH,
    "`[tvm-ffi]`": schema.TVM_FFI,
    "`[kernel.<name>]`": schema.KERNEL,
}


def documented_keys(text: str) -> dict[str, set[str]]:
    """Heading → the keys in the first column of that section's tables."""
    sections: dict[str, set[str]] = {}
    current: set[str] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), set())
            continue
        match = re.match(r"^\| `([^`]+)` \|", line)
        if match and current is not None:
            current.add(match[1])
    return sections


def test_every_table_of_the_model_has_a_section() -> None:
    sections = documented_keys(DOC.read_text(encoding="utf-8"))
    assert set(EXPECTED) <= set(sections)


@pytest.mark.parametrize("heading", sorted(EXPECTED))
def test_section_documents_exactly_the_accepted_keys(heading: str) -> None:
    documented = documented_keys(DOC.read_text(encoding="utf-8"))[heading]
    accepted = set(EXPECTED[heading])
    assert documented - accepted == set(), f"documented but unknown to the validator in {heading}"
    assert accepted - documented == set(), f"accepted but undocumented in {heading}"


def test_backend_specific_kernel_keys_are_marked_with_their_backend() -> None:
    rows = {
        m[1]: m[2]
        for m in re.finditer(r"^\| `([^`]+)` \| (\w+) \|", DOC.read_text(encoding="utf-8"), re.MULTILINE)
    }
    for key, backend in schema.KERNEL_BACKEND_KEYS.items():
        assert rows[key] == backend, key


def test_documented_dependency_and_backend_values_are_the_accepted_ones() -> None:
    from kernel_builder.formats.dependencies import KERNEL_DEPENDS, PYTHON_DEPENDENCIES

    text = DOC.read_text(encoding="utf-8")
    for value in [*KERNEL_DEPENDS, *PYTHON_DEPENDENCIES]:
        assert f"`{value}`" in text, value
    for backend in schema.BACKENDS:
        assert f"`{backend}`" in text
