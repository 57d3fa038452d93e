"""A Torch newer than every release of the variant matrix: ``build`` and ``list-variants`` say so once, naming
the newest release the matrix knows and where its update is described (``formats.matrix.stale_notice``).

The installed Torch is a stand-in (``quick_probe`` answers with a fake interpreter); the project is pure Python,
so the build compiles nothing and its import check is off: what is tested is what the commands say."""

from __future__ import annotations

from pathlib import Path

import matrix_data as md
import pytest
from stage_fixtures import fake_interpreter, write_files

from kernel_builder import cli
from kernel_builder.formats.matrix import MATRIX_DOC, load_matrix
from kernel_builder.pipeline import builder as builder_module
from kernel_builder.pipeline.environment import interpreter as interpreter_module
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter

NEXT = (md.NEWEST_TORCH[0], md.NEWEST_TORCH[1] + 1)
"""A release after the newest the matrix knows."""
NOTICE = (
    f"{load_matrix().source}: warning: torch {NEXT[0]}.{NEXT[1]}.0+cpu is newer than Torch "
    f"{md.dotted(md.NEWEST_TORCH)}, the newest release in this kernel-builder's variant matrix: its variants "
    f"build, but are not part of the published set (the required Torch releases are "
    f"{' and '.join(md.dotted(t) for t in md.REQUIRED_TORCH_VERSIONS)})\n"
    "  hint: upgrade kernel-builder (pip install --upgrade kernel-builder); its maintainers add each Torch "
    f"release to the matrix as {MATRIX_DOC} describes"
)


@pytest.fixture
def noarch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "kernel"
    build_toml = (
        '[general]\nname = "stale"\nversion = 1\nedition = 5\nlicense = "Apache-2.0"\nbackends = ["cpu"]\n\n'
        "[torch-noarch]\n"
    )
    write_files(root, {"build.toml": build_toml, "torch-ext/stale/__init__.py": ""})
    monkeypatch.chdir(tmp_path)
    return root


def installed(monkeypatch: pytest.MonkeyPatch, torch_version: str) -> None:
    """Make this environment's Torch ``torch_version``, for the builder and for ``list-variants``."""

    def probe(python: object = None) -> BuildInterpreter:
        return fake_interpreter(torch_version)

    monkeypatch.setattr(builder_module, "quick_probe", probe)
    monkeypatch.setattr(interpreter_module, "quick_probe", probe)


def test_build_says_so_once(
    noarch: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    installed(monkeypatch, f"{NEXT[0]}.{NEXT[1]}.0+cpu")
    assert cli.main(["build", "kernel", "--no-import-check"]) == 0
    err = capsys.readouterr().err
    assert err.count(NOTICE) == 1, err
    assert "not in the variant matrix" not in err
    assert (noarch / "build" / "torch-cpu").is_dir()


def test_list_variants_says_so_once(
    noarch: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    installed(monkeypatch, f"{NEXT[0]}.{NEXT[1]}.0+cpu")
    assert cli.main(["list-variants", "kernel"]) == 0
    out, err = capsys.readouterr()
    assert err.count(NOTICE) == 1, err
    assert out.splitlines()[1].split() == ["torch-cpu", "required", "yes"]


@pytest.mark.parametrize("torch", [md.NEWEST_TORCH, md.OLDEST_TORCH, (md.OLDEST_TORCH[0], 0)])
def test_a_known_or_older_torch_says_nothing(
    noarch: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], torch: md.Version
) -> None:
    installed(monkeypatch, f"{torch[0]}.{torch[1]}.0+cpu")
    assert cli.main(["list-variants", "kernel"]) == 0
    assert cli.main(["build", "kernel", "--no-import-check"]) == 0
    assert "newer than Torch" not in capsys.readouterr().err
