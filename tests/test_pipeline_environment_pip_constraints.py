"""pip's constraint files as pip reads them, and the reason given when one caps a package
(kernel_builder/pipeline/environment/pip_constraints.py)."""

from __future__ import annotations

from pathlib import Path

from packaging.specifiers import SpecifierSet

from kernel_builder.pipeline.environment.pip_constraints import allowed, cap_reason, constraint_lines
from kernel_builder.pipeline.environment.wheel_index import sources_from_config


def test_the_lines_that_constrain_a_package(tmp_path: Path) -> None:
    first, second = tmp_path / "machine.txt", tmp_path / "project.txt"
    first.write_text(
        "# These releases lie on this machine's disk.\ntorch<=2.14.1  # the cap\nTorchVision<=0.29.1\n"
    )
    second.write_text("not a requirement ===\nTorch!=2.13.0\n")
    sources = sources_from_config([("global", "constraint", f"{first} {second} {tmp_path / 'missing.txt'}")])
    lines = constraint_lines("torch", sources)
    assert [(Path(c.path).name, c.line, c.text) for c in lines] == [
        ("machine.txt", 2, "torch<=2.14.1"),
        ("project.txt", 2, "Torch!=2.13.0"),
    ]
    assert allowed("torch", sources) == SpecifierSet("<=2.14.1,!=2.13.0")
    assert allowed("numpy", sources) == SpecifierSet()


def test_the_reason_names_the_file_the_line_the_setting_and_the_way_out(tmp_path: Path) -> None:
    caps = tmp_path / "constraints.txt"
    caps.write_text("# comment\ntorch<=2.14.1\n")
    sources = sources_from_config([("global", "constraint", str(caps))])
    assert cap_reason("torch", "2.15.0", sources) == (
        f"pip's configuration caps torch<=2.14.1 (line 2 of the constraints file {caps}, named by "
        "global.constraint in `pip config list`); to lift the cap for one command, run it with "
        "PIP_CONSTRAINT=/dev/null"
    )
    for within in ("2.14.1", "2.14.1+cu130", "2.13.0"):
        assert cap_reason("torch", within, sources) is None
    assert cap_reason("numpy", "9.0", sources) is None
    from_env = sources_from_config([(":env:", "constraint", str(caps))])
    assert "named by PIP_CONSTRAINT in `pip config list`" in str(cap_reason("torch", "2.15.0", from_env))
    lifted = sources_from_config([("global", "constraint", str(caps)), (":env:", "constraint", "/dev/null")])
    assert cap_reason("torch", "2.15.0", lifted) is None
