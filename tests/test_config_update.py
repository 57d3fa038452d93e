"""update-build: legacy files rewritten as edition 5 with minimal, comment-preserving edits (docs/build-toml.md)."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

from kernel_builder.cli import main
from kernel_builder.config import load_project

FORMS = Path(__file__).parent / "fixtures" / "forms"


def copy_form(tmp_path: Path, form: str) -> Path:
    target = tmp_path / form
    shutil.copytree(FORMS / form, target)
    (target / "expected-v5.toml").unlink(missing_ok=True)
    return target


def unchanged_lines_kept(old: str, new: str) -> list[str]:
    """Lines of ``old`` that the rewrite dropped, ignoring the ones says it edits."""
    edited = (
        "language",
        "rocm-archs",
        "cuda-minver",
        "cuda-maxver",
        "python-depends",
        "universal",
        "[torch]",
    )
    new_lines = set(new.splitlines())
    return [line for line in old.splitlines() if line not in new_lines and not line.startswith(edited)]


@pytest.mark.parametrize("form", ["v1", "v2", "v3", "v4"])
def test_legacy_golden_files(tmp_path: Path, form: str, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = copy_form(tmp_path, form)
    before = (kernel / "build.toml").read_text()
    migrated = load_project(kernel).project.config

    assert main(["update-build", str(kernel), "--license", "Apache-2.0"]) == 0
    after = (kernel / "build.toml").read_text()
    assert after == (FORMS / form / "expected-v5.toml").read_text()
    assert unchanged_lines_kept(before, after) == []
    assert [line for line in before.splitlines() if line.startswith("#")] == [
        line for line in after.splitlines() if line.startswith("#")
    ]
    reread = load_project(kernel)
    assert reread.project.form == 5
    assert reread.warnings == []
    if form != "v4":  # v4 has a license already; v1-v3 get the --license value instead of NOASSERTION
        assert reread.project.config.general.license == "Apache-2.0"
        assert migrated.general.license == "NOASSERTION"
    else:
        assert reread.project.config == migrated

    assert main(["update-build", str(kernel)]) == 0  # a second run changes nothing
    assert (kernel / "build.toml").read_text() == after
    assert "already edition 5" in capsys.readouterr().out


def test_missing_license_exits_2_and_leaves_file_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = copy_form(tmp_path, "v2")
    before = (kernel / "build.toml").read_bytes()
    assert main(["update-build", str(kernel)]) == 2
    assert (kernel / "build.toml").read_bytes() == before
    err = capsys.readouterr().err
    assert f"{kernel}/build.toml:3: error: `license` is missing and edition 5 requires it" in err
    assert "hint: pass --license <SPDX id>, e.g. --license Apache-2.0" in err
    assert "Traceback" not in err


def test_invalid_file_exits_2_and_is_untouched(tmp_path: Path) -> None:
    kernel = copy_form(tmp_path, "v4")
    text = (kernel / "build.toml").read_text().replace('["torch"]', '["torch", "cutlass_3_7"]', 1)
    (kernel / "build.toml").write_text(text)
    assert main(["update-build", str(kernel)]) == 2
    assert (kernel / "build.toml").read_text() == text


def test_dry_run_prints_diff_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = copy_form(tmp_path, "v4")
    before = (kernel / "build.toml").read_bytes()
    assert main(["update-build", str(kernel / "build.toml"), "--dry-run"]) == 0
    assert (kernel / "build.toml").read_bytes() == before
    out = capsys.readouterr().out
    assert "+edition = 5\n" in out
    assert out.startswith("--- a/")


def test_check_reports_need_and_success(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = copy_form(tmp_path, "v4")
    before = (kernel / "build.toml").read_bytes()
    assert main(["update-build", str(kernel), "--check"]) == 1
    assert (kernel / "build.toml").read_bytes() == before
    assert main(["update-build", str(kernel)]) == 0
    assert main(["update-build", str(kernel), "--check"]) == 0


def test_default_path_is_cwd_and_mode_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = copy_form(tmp_path, "v4")
    (kernel / "build.toml").chmod(0o640)
    monkeypatch.chdir(kernel)
    assert main(["update-build"]) == 0
    assert stat.S_IMODE((kernel / "build.toml").stat().st_mode) == 0o640
    assert "edition = 5" in (kernel / "build.toml").read_text()
    assert sorted(p.name for p in kernel.iterdir() if p.name.startswith(".")) == []


def write_project(root: Path, text: str, py_name: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "build.toml").write_text(text)
    (root / "torch-ext" / py_name).mkdir(parents=True)
    (root / "torch-ext" / py_name / "__init__.py").write_text("")
    (root / "k.cu").write_text("")
    return root


UNIVERSAL_V1 = """\
[general]
name = "noarch-kernel"

# pure Python
[torch] # was universal
universal = true
src = []
pyext = ["py", "json"]
"""


def test_v1_universal_becomes_torch_noarch(tmp_path: Path) -> None:
    kernel = write_project(tmp_path / "k", UNIVERSAL_V1, "noarch_kernel")
    assert main(["update-build", str(kernel), "--license", "MIT"]) == 0
    assert (kernel / "build.toml").read_text() == (
        "[general]\n"
        'name = "noarch-kernel"\n'
        "version = 1\n"
        "edition = 5\n"
        'license = "MIT"\n'
        'backends = ["cpu", "cuda", "metal", "rocm", "xpu"]\n'
        "\n"
        "# pure Python\n"
        "[torch-noarch] # was universal\n"
        'pyext = ["py", "json"]\n'
    )


V2_UNIVERSAL_NO_TORCH = """\
[general]
name = "uni"
universal = true
"""


def test_v2_general_universal_without_torch(tmp_path: Path) -> None:
    kernel = write_project(tmp_path / "k", V2_UNIVERSAL_NO_TORCH, "uni")
    assert main(["update-build", str(kernel), "--license", "MIT"]) == 0
    project = load_project(kernel).project
    assert project.form == 5
    assert project.config.framework.kind == "torch-noarch"
    assert project.config.general.backends == ("cpu", "cuda", "metal", "rocm", "xpu")
    assert "universal" not in (kernel / "build.toml").read_text()


V3_NO_FRAMEWORK = """\
[general]
name = "tri"
backends = ["cuda"]
license = "MIT"
"""


def test_v3_without_framework_gets_empty_torch_noarch(tmp_path: Path) -> None:
    kernel = write_project(tmp_path / "k", V3_NO_FRAMEWORK, "tri")
    assert main(["update-build", str(kernel)]) == 0
    assert (kernel / "build.toml").read_text() == (
        '[general]\nname = "tri"\nversion = 1\nedition = 5\nbackends = ["cuda"]\nlicense = "MIT"\n\n[torch-noarch]\n'
    )


V4_NAMED = """\
[general]
name = "{name}"
version = 1
license = "MIT"
backends = ["cuda"]

[torch]
src = []

[kernel.k]
backend = "cuda"
src = ["k.cu"]
depends = ["cutlass_sycl"]
"""


def test_lowercasing_that_changes_the_package_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kernel = write_project(tmp_path / "k", V4_NAMED.format(name="My_Kernel"), "My_Kernel")
    before = (kernel / "build.toml").read_bytes()
    assert main(["update-build", str(kernel)]) == 2
    assert (kernel / "build.toml").read_bytes() == before
    err = capsys.readouterr().err
    assert "rename the package directory torch-ext/My_Kernel/ to torch-ext/my_kernel/ first" in err


def test_underscore_name_and_cutlass_sycl_are_rewritten_in_place(tmp_path: Path) -> None:
    kernel = write_project(tmp_path / "k", V4_NAMED.format(name="my_kernel"), "my_kernel")
    assert main(["update-build", str(kernel)]) == 0
    text = (kernel / "build.toml").read_text()
    assert 'name = "my-kernel"\n' in text
    assert 'depends = ["sycl_tla"]\n' in text
    assert load_project(kernel).project.py_name == "my_kernel"
