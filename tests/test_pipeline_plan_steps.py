"""The steps of planning one compiled variant (``planner._aot_plan``): the order their diagnostics come in, and
what one kernel section's capability step chooses. The project is :mod:`sectioned_projects`' (sections for 9.0a,
10.0a and 8.0+); the interpreter's Torch is one no matrix entry has, so the matrix step warns too."""

from __future__ import annotations

from pathlib import Path

import pytest
from sectioned_projects import sectioned_project
from stage_fixtures import CU130_213, fake_host, fake_interpreter, load

from kernel_builder.common.diagnostics import DiagnosticList, Severity
from kernel_builder.config.model import Kernel, KernelProject
from kernel_builder.formats.matrix import load_matrix
from kernel_builder.pipeline.plan.planner import (
    VariantPlan,
    _aot_plan,
    _AotContext,
    _section_archs,
    _SectionArchs,
)

#: A Torch no matrix entry has (older than its oldest): the variant builds, with the "not in the variant matrix"
#: warning. (A Torch newer than the whole matrix gets the builder's notice instead: test_pipeline_builder_stale_matrix.py.)
CU130_210 = fake_interpreter("2.10.0+cu130", cuda="13.0")


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return sectioned_project(tmp_path_factory.mktemp("steps") / "kb-sections")


@pytest.fixture
def project(monkeypatch: pytest.MonkeyPatch, root: Path) -> KernelProject:
    fake_host(monkeypatch)
    monkeypatch.chdir(root.parent)
    return load(Path(root.name))


def _section(project: KernelProject, name: str) -> Kernel:
    [kernel] = [k for k in project.config.kernels if k.name == name]
    return kernel


def test_diagnostics_come_in_the_order_of_the_steps(project: KernelProject) -> None:
    """The matrix warning, then each section's dropped capability in section order, then the note for the
    section ``--arch`` leaves nothing of: notes wait until every section is known (one that the selection
    keeps decides between a note and an error), so they follow the last section's warning even though reading
    order (``sorted()``) puts the note before it."""
    diags = DiagnosticList(project.display_path)
    plan = _aot_plan(project, CU130_210, "cuda", "0123456789", None, load_matrix(), diags, ("9.0a", "10.1"))
    assert isinstance(plan, VariantPlan)
    line = {k.name: k.line for k in project.config.kernels}
    order = [(d.severity, d.line, d.message.split(":")[0]) for d in diags.items]
    assert order == [
        (Severity.WARNING, None, f"{plan.name} is not in the variant matrix"),
        (Severity.WARNING, line["add_sm90"], "[kernel.add_sm90]"),
        (Severity.WARNING, line["add_sm100"], "[kernel.add_sm100]"),
        (Severity.WARNING, line["add_generic"], "[kernel.add_generic]"),
        (Severity.NOTE, line["add_sm100"], "[kernel.add_sm100]"),
    ]
    assert all("capability 10.1 dropped: CUDA 13.0 cannot build it" in d.message for d in diags.items[1:4])
    assert [d.message.split(":")[0] for d in diags.sorted()][2:] == [
        "[kernel.add_sm100]",
        "[kernel.add_sm100]",
        "[kernel.add_generic]",
    ]
    assert {c.name: c.archs for c in plan.components} == {
        "_torch_binding": (),
        "add_sm90": ("9.0a",),
        "add_sm100": ("10.0a",),
        "add_generic": ("9.0",),
    }


@pytest.mark.parametrize(
    ("native", "section", "chosen"),
    [
        (("9.0",), "add_sm90", _SectionArchs(("9.0a",), inside=True)),
        (("9.0",), "add_generic", _SectionArchs(("9.0",), inside=True)),
        (
            ("9.0",),
            "add_sm100",
            _SectionArchs(
                ("10.0a",),
                outside_note="[kernel.add_sm100]: none of its capabilities (10.0a) is among --arch native (9.0): "
                "compiled for 10.0a only, its lowest, so the extension links and loads; its ops do not run on the "
                "selected GPUs",
            ),
        ),
        (None, "add_generic", _SectionArchs(("8.0", "8.9", "9.0", "10.0", "12.0"))),
    ],
)
def test_section_archs(
    project: KernelProject, native: tuple[str, ...] | None, section: str, chosen: _SectionArchs
) -> None:
    """Inside the ``--arch`` selection, outside it (its lowest capability, with the note), or no ``--arch``."""
    diags = DiagnosticList(project.display_path)
    ctx = _AotContext.of(project, CU130_213, "cuda", native, None, diags)
    assert _section_archs(ctx, _section(project, section), (13, 0)) == chosen
    assert diags.items == []  # the note is the caller's to give (or to turn into an error)
