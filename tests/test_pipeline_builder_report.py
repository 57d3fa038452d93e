"""``build --json`` (the report), ``--debug-build`` (-g) and the root ``compile_commands.json`` (slow: one CPU build)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from build_runs import NO_IMPORT_CHECK, run_cli
from matrix_data import CPU_VARIANT

from kernel_builder.authoring.scaffold import InitOptions, init_project

pytestmark = pytest.mark.slow


def test_report_debug_info_and_editor_database(tmp_path: Path) -> None:
    root = tmp_path / "k"
    init_project(root, InitOptions(name="my-kernel", backends=("cpu",)))
    report_path = tmp_path / "report.json"
    # The report is the subject, not the import check (tests/test_pipeline_check_import_*.py): none of the builds
    # starts Torch for it.
    run_cli(["build", root, "--debug-build", "--json", report_path, NO_IMPORT_CHECK]).check()

    report = json.loads(report_path.read_text())
    assert report["failed"] is False and report["unique_id"]
    (variant,) = report["variants"]
    assert variant["name"] == CPU_VARIANT and variant["status"] == "built" and variant["seconds"] > 0
    assert variant["size"] == sum(
        p.stat().st_size for p in (root / "build" / CPU_VARIANT).rglob("*") if p.is_file()
    )
    assert all({"severity", "message", "path", "line", "hint"} == set(f) for f in report["findings"])

    link = root / "compile_commands.json"
    assert link.is_symlink() and not Path(link.readlink()).is_absolute()
    entries = json.loads(link.read_text())
    commands = {Path(e["file"]).name: e["command"] for e in entries}
    assert {name for name in commands if not name.startswith("kb_")} == {"relu_cpu.cpp", "torch_binding.cpp"}
    assert all(" -g " in c for c in commands.values())

    # Up to date: the report says so; without --debug-build the flags (an input) change and it rebuilds.
    run_cli(["build", root, "--debug-build", "--json", report_path, NO_IMPORT_CHECK]).check()
    assert json.loads(report_path.read_text())["variants"][0]["status"] == "up to date"
    run_cli(["build", root, "--json", report_path, NO_IMPORT_CHECK]).check()
    assert json.loads(report_path.read_text())["variants"][0]["status"] == "built"
    assert not any(" -g " in e["command"] for e in json.loads(link.read_text()))
