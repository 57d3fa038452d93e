"""Real-world build.toml files load without errors, and legacy ones warn exactly once (docs/build-toml.md).

The files are in ``tests/fixtures/corpus/<name>/build.toml`` (sources and licenses in ``SOURCES.md``). Each is
copied into ``tmp_path`` with empty stand-ins for every ``src`` file, ``include`` directory and the package's
``__init__.py``, which is all the configuration stage looks at.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import materialise

from kernel_builder.config import load_project

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
NAMES = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def documented_forms() -> dict[str, int]:
    """``name -> form`` from the table in SOURCES.md."""
    rows = re.findall(r"^\| ([a-z0-9-]+) \| v(\d) \|", (CORPUS / "SOURCES.md").read_text(), re.MULTILINE)
    return {name: int(form) for name, form in rows}


def test_every_corpus_file_is_documented() -> None:
    assert len(NAMES) >= 6
    assert sorted(documented_forms()) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_corpus_file_loads(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    materialise(tmp_path / name, (CORPUS / name / "build.toml").read_text(encoding="utf-8"))
    result = load_project(name)  # raises ConfigError on any error
    form = documented_forms()[name]
    assert result.project.form == form
    legacy = [d.message for d in result.diagnostics if d.message.startswith("legacy v")]
    if form < 5:
        assert len(legacy) == 1
        assert legacy[0].startswith(f"legacy v{form} form (")
    else:
        assert legacy == []
    assert load_project(name).diagnostics == [
        d for d in result.diagnostics if not d.message.startswith("legacy")
    ]
