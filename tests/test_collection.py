"""The real collection: every kernel of Hugging Face's kernels-community, as its authors wrote it, configures,
fills its card and plans its variants (CONTRIBUTING.md: a rule that reads, validates or renders an author's files
lands only when it passes here).

The collection is a snapshot beside the repository, at ``../shared/corpus/kernels-community`` (52 kernels, 49 of
them with a ``CARD.md``). It is read in place and never written: the last test checks that nothing in it changed.
Where it is missing (a clone without it), these tests skip, except under CI, where its absence is a failure.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from kernel_builder.cli import main
from kernel_builder.config import load_project
from kernel_builder.pipeline.card import card_facts

COLLECTION = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "kernels-community"
KERNELS = sorted(p.parent.name for p in COLLECTION.glob("*/build.toml"))
EXPECTED = Path(__file__).parent / "fixtures" / "cards" / "expected"
CARDS = [name for name in KERNELS if (COLLECTION / name / "CARD.md").is_file()]


def _listing() -> list[tuple[str, int, int]]:
    """Every path of the collection with its size and modification time."""
    out = []
    for path in sorted(COLLECTION.rglob("*")):
        st = path.lstat()
        out.append((str(path.relative_to(COLLECTION)), st.st_size, st.st_mtime_ns))
    return out


@pytest.fixture(scope="module", autouse=True)
def untouched() -> object:
    if not COLLECTION.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"{COLLECTION}: the kernels-community collection is missing on CI")
        pytest.skip(f"{COLLECTION}: the kernels-community collection is not beside this checkout")
    before = _listing()
    yield
    assert _listing() == before, "a test wrote into the collection"


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def test_the_whole_collection_is_here() -> None:
    assert (len(KERNELS), len(CARDS)) == (52, 49)


@pytest.mark.parametrize("name", KERNELS)
def test_check_config(name: str) -> None:
    code, out, err = _cli("check-config", str(COLLECTION / name))
    assert code == 0, err
    assert ": ok (edition 5" in out
    assert ": error: " not in err


@pytest.mark.parametrize("name", CARDS)
def test_fill_card(name: str) -> None:
    """Every card fills, with no template syntax left, to exactly what the template engine of Hugging Face's
    builder (minijinja, the release its builder pins) makes of the same template and variables."""
    import minijinja

    kernel = COLLECTION / name
    code, filled, err = _cli("fill-card", str(kernel))
    assert code == 0, err
    assert not any(marker in filled for marker in ("{{", "{%", "{#")), "template syntax left in the card"
    facts = card_facts(load_project(kernel).project)
    upstream = minijinja.Environment(trim_blocks=True).render_str(
        (kernel / "CARD.md").read_text(encoding="utf-8"), **asdict(facts)
    )
    assert filled == upstream
    if "version={{ version }}" in (kernel / "CARD.md").read_text(encoding="utf-8") and facts.functions:
        assert f'get_kernel("{facts.repo_id}", version={facts.version})' in filled


@pytest.mark.parametrize("name", ["relu", "fla", "msa"])
def test_cards_equal_the_text_worked_out_by_hand(name: str) -> None:
    """relu (functions, a layer, a benchmark), fla (a pure-Python kernel with layers and upstream's newer card:
    ``source`` and ``upstream`` blocks) and msa (version 0, an ``upstream``, license ``other``), filled by hand
    from the builder's rules into ``tests/fixtures/cards/expected/<name>.md``."""
    code, filled, err = _cli("fill-card", str(COLLECTION / name))
    assert code == 0, err
    assert filled == (EXPECTED / f"{name}.md").read_text(encoding="utf-8")


def test_relu_card_says_its_version() -> None:
    code, filled, _ = _cli("fill-card", str(COLLECTION / "relu"))
    assert code == 0
    assert 'kernel_module = get_kernel("kernels-community/relu", version=1)' in filled


@pytest.mark.parametrize("name", KERNELS)
def test_list_variants(name: str) -> None:
    code, out, err = _cli("list-variants", str(COLLECTION / name), "--json")
    assert code == 0, err
    rows = json.loads(out)
    assert rows, "no candidate variant"
    assert all(row["buildable"] or row["reason"] for row in rows), (
        "a variant not buildable here without a reason"
    )
