"""The command-line forms of Hugging Face's kernel-builder that users' scripts call, accepted with the same
meaning: ``init --name OWNER/NAME``, ``init --backends cuda cpu`` (space-separated), ``init --overwrite``,
``build --max-jobs`` / ``--cores`` and ``list-variants --arch``. A form this builder cannot honour is an
error (exit 2), never another action."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from publish_fixtures import run_cli

from kernel_builder.cli import build_parser
from kernel_builder.commands.build import same_option
from kernel_builder.common.toml import read_toml

REPO = Path(__file__).resolve().parent.parent
CARD_DEMO = REPO / "tests" / "fixtures" / "cards" / "templated"


def general(root: Path) -> dict[str, object]:
    data = read_toml(root / "build.toml")
    section: dict[str, object] = data["general"]
    return section


def test_init_name_owner_slash_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    run = run_cli(capsys, "init", "--name", "acme/my-kernel", "--template", "cpu")
    assert run.code == 0, run.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my-kernel"]  # ./NAME, as with --name NAME
    assert general(tmp_path / "my-kernel")["name"] == "my-kernel"
    assert general(tmp_path / "my-kernel")["hub"] == {"repo-id": "acme/my-kernel"}
    # the same as --name NAME --org OWNER
    run = run_cli(capsys, "init", "same", "--name", "my-kernel", "--org", "acme", "--template", "cpu")
    assert run.code == 0, run.err
    assert general(tmp_path / "same") == general(tmp_path / "my-kernel")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--name", "acme/k", "--org", "other"], "names the owner 'acme', but --org is 'other'"),
        (["--name", "a/b/c"], "expected NAME or OWNER/NAME"),
        (["--name", "/k"], "expected NAME or OWNER/NAME"),
        (["--name", "acme/my_kernel"], "did you mean `my-kernel`?"),
        (["--name", "kb", "--backends", "cuda", "metal"], "(unknown: metal)"),
        (["--name", "kb", "--backends", "all"], "(unknown: all)"),
        (["--name", "kb", "--backends", "cuda", "cuda"], "names a backend twice"),
    ],
)
def test_init_forms_it_cannot_honour_are_errors(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    run = run_cli(capsys, "init", *args)
    assert run.code == 2 and message in run.err, run.err
    assert list(tmp_path.iterdir()) == []  # nothing written: no ./metal, no ./kb


def test_init_backends_space_or_comma_separated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, "init", "spaced", "--name", "kb", "--backends", "cuda", "cpu").code == 0
    assert run_cli(capsys, "init", "commas", "--name", "kb", "--backends", "cuda,cpu").code == 0
    assert general(tmp_path / "spaced")["backends"] == ["cuda", "cpu"]
    spaced = {
        p.relative_to(tmp_path / "spaced"): p.read_bytes()
        for p in (tmp_path / "spaced").rglob("*")
        if p.is_file()
    }
    commas = {
        p.relative_to(tmp_path / "commas"): p.read_bytes()
        for p in (tmp_path / "commas").rglob("*")
        if p.is_file()
    }
    assert spaced == commas
    assert sorted(p.name for p in tmp_path.iterdir()) == ["commas", "spaced"]


def test_init_overwrite_is_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, "init", "--name", "kb", "--template", "cpu").code == 0
    card = tmp_path / "kb" / "CARD.md"
    card.write_text("edited\n")
    run = run_cli(capsys, "init", "--name", "kb", "--template", "cpu")
    assert run.code == 2 and "already exist" in run.err and card.read_text() == "edited\n"
    assert run_cli(capsys, "init", "--name", "kb", "--template", "cpu", "--overwrite").code == 0
    assert card.read_text() != "edited\n"


# --- build --max-jobs / --cores -----------------------------------------------------------------------------


def build_args(*words: str) -> tuple[int | None, int | None]:
    args = build_parser(only="build").parse_args(["build", *words])
    return same_option(args, "parallel", "max_jobs"), same_option(args, "jobs", "cores")


def test_build_max_jobs_is_parallel_and_cores_is_jobs() -> None:
    assert build_args("--max-jobs", "3", "--cores", "5") == (3, 5)
    assert build_args("--parallel", "3", "-j", "5") == (3, 5)
    assert build_args("--parallel", "3", "--max-jobs", "3", "--jobs", "5", "--cores", "5") == (3, 5)
    assert build_args() == (None, None)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--parallel", "2", "--max-jobs", "3"], "--parallel 2 and --max-jobs 3 disagree"),
        (["-j", "4", "--cores", "8"], "--jobs 4 and --cores 8 disagree"),
    ],
)
def test_build_counts_that_disagree_are_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    root = tmp_path / "card-demo"
    shutil.copytree(CARD_DEMO, root)
    run = run_cli(capsys, "build", str(root), *args)
    assert run.code == 2 and message in run.err, run.err
    assert not (root / "build").exists()  # nothing built


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--cores", "0"], "argument --cores: '0': give at least 1"),
        (["--max-jobs", "many"], "argument --max-jobs: 'many' is not a whole number"),
    ],
)
def test_build_counts_that_are_not_counts_are_usage_errors(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exited:
        run_cli(capsys, "build", str(CARD_DEMO), *args)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_build_with_max_jobs_and_cores(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "card-demo"
    shutil.copytree(CARD_DEMO, root)
    run = run_cli(capsys, "build", str(root), "--max-jobs", "1", "--cores", "1", "--no-import-check")
    assert run.code == 0, run.err
    assert (root / "build" / "torch-cpu" / "metadata.json").is_file()
    card = (root / "build" / "CARD.md").read_text()  # the card is filled at build time
    assert "# kernels-example/card-demo\n" in card and "{%" not in card


# --- list-variants --arch -----------------------------------------------------------------------------------


def test_list_variants_arch_keeps_this_machines_variants(capsys: pytest.CaptureFixture[str]) -> None:
    from kernel_builder.pipeline.plan.planner import host_system

    every = run_cli(capsys, "list-variants", str(REPO / "examples" / "relu"), "--no-probe", "--json")
    here = run_cli(capsys, "list-variants", str(REPO / "examples" / "relu"), "--no-probe", "--json", "--arch")
    assert every.code == here.code == 0
    all_variants, arch_variants = json.loads(every.out), json.loads(here.out)
    assert arch_variants == [v for v in all_variants if v["system"] == host_system()]
    assert arch_variants and len(arch_variants) < len(all_variants)
    noarch = run_cli(capsys, "list-variants", str(CARD_DEMO), "--no-probe", "--json", "--arch")
    assert json.loads(noarch.out) == []  # pure-Python variants are for every machine, not this one's
