"""Kernel cards filled in as Jinja templates, in a sandbox (kernel_builder/pipeline/card.py).

``tests/fixtures/cards/templated`` is a kernel whose CARD.md is a template in the style of kernels-community's
cards; ``tests/fixtures/cards/hostile`` holds cards that try to reach Python's internals, read files, loop or
allocate without end: each gives one error naming the card, and runs nothing.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import pytest
from build_runs import NO_IMPORT_CHECK
from build_runs import run_cli as run_build_cli
from cpu_projects import noarch_project
from publish_fixtures import run_cli

from kernel_builder.config import load_project
from kernel_builder.errors import BuildError, ConfigError
from kernel_builder.pipeline import card as card_module
from kernel_builder.pipeline.card import CardFacts, card_facts, fill_card, fill_project_card
from kernel_builder.pipeline.package import sync_card

FIXTURES = Path(__file__).parent / "fixtures" / "cards"
TEMPLATED = FIXTURES / "templated"
HOSTILE = FIXTURES / "hostile"

FILLED = """\
---
library_name: kernels
license: apache-2.0
---

# kernels-example/card-demo

Load it with `get_kernel("kernels-example/card-demo")` and call `scale`:

```python
from kernels import get_kernel

kernel = get_kernel("kernels-example/card-demo")
kernel.scale(x)
```

## Functions

- `scale`
- `shift`

## Layers

- `Scale`
- `Identity`

## Benchmarks

Run `kernels benchmark kernels-example/card-demo`.

Adapted from https://github.com/example/card-demo.
Literal braces survive: {{ not a variable }}"""  # trim_blocks takes the newline after the last block tag


@pytest.fixture
def kernel(tmp_path: Path) -> Path:
    root = tmp_path / "card-demo"
    shutil.copytree(TEMPLATED, root)
    return root


def test_facts_are_upstreams_variables(kernel: Path) -> None:
    facts = card_facts(load_project(kernel).project)
    assert facts == CardFacts(
        repo_id="kernels-example/card-demo",
        functions=["scale", "shift"],  # __all__ without "layers"
        layers=["Scale", "Identity"],  # classes of layers/, since __all__ names it
        has_benchmark=True,
        upstream="https://github.com/example/card-demo",
        license="apache-2.0",
    )


def test_facts_of_a_bare_kernel(kernel: Path) -> None:
    (kernel / "torch-ext" / "card_demo" / "__init__.py").write_text("from .ops import scale\n")
    (kernel / "benchmarks" / "benchmark.py").unlink()
    facts = card_facts(load_project(kernel).project, repo_id="someone/else")
    assert (facts.repo_id, facts.functions, facts.layers, facts.has_benchmark) == (
        "someone/else",
        None,
        None,
        False,
    )


def test_a_templated_card_is_filled(kernel: Path) -> None:
    assert fill_project_card(load_project(kernel).project) == FILLED


def test_a_card_without_template_syntax_is_kept_as_a_template_renders(kernel: Path) -> None:
    text = "# card-demo\n\nNo braces here; one trailing newline goes, as from any template.\n\n"
    (kernel / "CARD.md").write_text(text)
    assert fill_project_card(load_project(kernel).project) == text[:-1]


def test_a_template_that_needs_the_repo_id_without_one(kernel: Path) -> None:
    toml = kernel / "build.toml"
    toml.write_text(toml.read_text().replace('[general.hub]\nrepo-id = "kernels-example/card-demo"\n', ""))
    with pytest.raises(ConfigError) as error:
        fill_project_card(load_project(kernel).project)
    message = str(error.value)
    assert message.startswith(f"{kernel / 'CARD.md'}: cannot fill the card template: it uses repo_id")
    assert "[general.hub]" in message
    assert fill_project_card(load_project(kernel).project, repo_id="org/given") is not None


HOSTILE_REASONS = {
    "dunder.md": "access to attribute '__class__' of 'str' object is unsafe",
    "globals.md": "is unsafe",
    "include.md": "a card cannot read other files",
    "huge-range.md": "Range too big",
    "huge-string.md": "MiB",
    "large-output.md": "larger than 1024 KiB",
    "syntax.md": "line 3:",
}


@pytest.mark.parametrize("name", sorted(HOSTILE_REASONS))
def test_a_hostile_card_gives_one_error_naming_it(tmp_path: Path, name: str) -> None:
    card = tmp_path / "CARD.md"
    shutil.copy(HOSTILE / name, card)
    facts = CardFacts("org/k", ["f"], None, False, None, None)
    with pytest.raises(ConfigError) as error:
        fill_card(card, facts)
    message = str(error.value)
    assert message.startswith(f"{card}: cannot fill the card template: ")
    assert HOSTILE_REASONS[name] in message
    assert "\n" not in message and "Traceback" not in message
    assert not (tmp_path / "CANARY").exists() and not Path("CANARY").exists()


def test_a_name_the_card_is_not_given_renders_as_nothing(tmp_path: Path) -> None:
    """As in Hugging Face's builder: an unknown name prints nothing and loops over nothing; it is no error (the
    card's context holds only the variables above, so nothing else can leak into it)."""
    card = tmp_path / "CARD.md"
    shutil.copy(HOSTILE / "unknown-variable.md", card)
    card.write_text(card.read_text() + "{% for x in nothing %}{{ x }}{% endfor %}[{{ upstream }}]\n")
    assert fill_card(card, CardFacts("org/k", ["f"], None, False, None, None)) == "\n[none]"


def test_values_print_as_the_upstream_engine_prints_them(tmp_path: Path) -> None:
    card = tmp_path / "CARD.md"
    card.write_text("{{ functions }} {{ has_benchmark }} {{ layers }} {{ version }} {{ license }}")
    facts = CardFacts("org/k", ["a", "b"], None, True, None, "mit", version=3)
    assert fill_card(card, facts) == '["a", "b"] true none 3 mit'


def test_a_card_that_loops_without_output_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(card_module, "RENDER_SECONDS", 2)
    card = tmp_path / "CARD.md"
    shutil.copy(HOSTILE / "nested-loop.md", card)
    start = time.monotonic()
    with pytest.raises(ConfigError, match=r"cannot fill the card template: it ran for more than 2 s"):
        fill_card(card, CardFacts("org/k", None, None, False, None, None))
    assert time.monotonic() - start < 8


def test_an_oversized_card_is_refused(tmp_path: Path) -> None:
    card = tmp_path / "CARD.md"
    card.write_text("{{ repo_id }}" + "x" * card_module.MAX_CARD_BYTES)
    with pytest.raises(ConfigError, match=r"CARD.md: cannot read the kernel card: .*larger"):
        fill_card(card, CardFacts("org/k", None, None, False, None, None))


def test_build_writes_the_filled_card_and_reuses_it(kernel: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = load_project(kernel).project
    sync_card(project, kernel / "build")
    assert (kernel / "build" / "CARD.md").read_text() == FILLED
    # A second sync with the same card and variables renders nothing (a no-op build stays quick).
    monkeypatch.setattr(card_module, "fill_card", lambda *a: pytest.fail("rendered again"))
    sync_card(project, kernel / "build")
    assert (kernel / "build" / "CARD.md").read_text() == FILLED


def test_build_warns_about_a_card_it_cannot_fill_and_drops_the_stale_copy(kernel: Path) -> None:
    project = load_project(kernel).project
    sync_card(project, kernel / "build")
    assert (kernel / "build" / "CARD.md").is_file()
    shutil.copy(HOSTILE / "dunder.md", kernel / "CARD.md")
    warnings: list[str] = []
    sync_card(load_project(kernel).project, kernel / "build", warn=warnings.append)
    assert len(warnings) == 1
    assert warnings[0].startswith(
        f"{kernel / 'CARD.md'}: cannot fill the card template: it uses what a card may not"
    )
    assert "upload` refuses the card" in warnings[0]
    assert not (kernel / "build" / "CARD.md").exists()  # never a card of an older template
    with pytest.raises(ConfigError, match=r"CARD.md: cannot fill the card template"):
        sync_card(load_project(kernel).project, kernel / "build")  # no one to warn: the error itself


@pytest.mark.slow
def test_a_build_with_a_card_it_cannot_fill_succeeds_with_a_warning(tmp_path: Path) -> None:
    root = noarch_project(tmp_path / "kb-noarch")
    (root / "CARD.md").write_text("# {{ repo_id }}\n{% for x in %}\n")
    result = run_build_cli(["build", root, NO_IMPORT_CHECK])
    assert result.returncode == 0, result.output
    assert f"{root / 'CARD.md'}: cannot fill the card template: line 2:" in result.stderr
    assert "Traceback" not in result.output
    assert not (root / "build" / "CARD.md").exists()
    assert any((root / "build").glob("torch-*/metadata.json"))


# --- kernel-builder fill-card ----------------------------------------------------------------------------------


def test_fill_card_prints_or_writes(kernel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = run_cli(capsys, "fill-card", str(kernel))
    assert (run.code, run.out) == (0, FILLED)
    output = kernel / "README.md"
    run = run_cli(capsys, "fill-card", str(kernel), str(output), "--repo-id", "someone/other")
    assert run.code == 0 and run.out == ""
    assert output.read_text() == FILLED.replace("kernels-example/card-demo", "someone/other")


def test_fill_card_errors(kernel: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(HOSTILE / "include.md", kernel / "CARD.md")
    run = run_cli(capsys, "fill-card", str(kernel))
    assert run.code == 2 and run.out == ""
    assert run.err == (
        f"error: {kernel / 'CARD.md'}: cannot fill the card template: it includes or imports another "
        "template; a card cannot read other files\n"
    )
    (kernel / "CARD.md").unlink()
    run = run_cli(capsys, "fill-card", str(kernel))
    assert run.code == 2 and "no card to fill" in run.err
    run = run_cli(capsys, "fill-card", str(kernel), "--repo-id", "not a repo")
    assert run.code == 2 and "--repo-id 'not a repo'" in run.err


def test_a_broken_renderer_is_not_the_cards_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter that cannot render (here one that exits 1 at once, as one without jinja2 would) is a
    failed operation (exit 1) naming it, not a card error."""
    card = tmp_path / "CARD.md"
    card.write_text("# {{ repo_id }}\n")
    monkeypatch.setattr(sys, "executable", shutil.which("false") or "/bin/false")
    with pytest.raises(BuildError, match=r"cannot fill .*CARD.md: the card renderer \(.*false\) failed"):
        fill_card(card, CardFacts("org/k", None, None, False, None, None))


def test_a_card_is_utf8_whatever_the_locale(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("LANG", "C")
    card = tmp_path / "CARD.md"
    card.write_text("# {{ repo_id }} — Größe ✓\n", encoding="utf-8")
    facts = CardFacts("org/k", None, None, False, None, None)
    assert fill_card(card, facts) == "# org/k — Größe ✓"
