"""Candidates and selection: ``list-variants``, ``matrix`` and ``build --variant/--required/--all-variants``
(docs/layout.md, docs/build-toml.md).

Fast: nothing is compiled and no environment is created. Tests that go through the CLI run it in-process with
the packaged matrix replaced by a test matrix (``use_matrix``), and with the per-variant build replaced by a
recorder, so they check the selection and exit statuses only; tests/test_pipeline_builder_variants.py builds for real.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import matrix_data as md
import pytest
from stage_fixtures import fake_host, load, write_files

from kernel_builder import cli
from kernel_builder.commands._shared import build_table
from kernel_builder.commands.list_variants import variants_table
from kernel_builder.common.progress import PlainProgress, RichProgress, progress_display
from kernel_builder.config.model import KernelProject
from kernel_builder.errors import BuildError, ConfigError, UsageError
from kernel_builder.formats import matrix as matrix_module
from kernel_builder.formats.matrix import Matrix, load_matrix, parse_matrix
from kernel_builder.pipeline import builder as builder_module
from kernel_builder.pipeline.builder import Builder, BuildOptions, VariantResult, VariantStatus
from kernel_builder.pipeline.plan import selected as selected_plans
from kernel_builder.pipeline.plan.candidates import (
    Candidate,
    Selection,
    all_candidates,
    select_candidates,
)
from kernel_builder.pipeline.plan.runners import NO_RUNNER, RUNNERS

REPO = Path(__file__).resolve().parent.parent
RELU = REPO / "examples" / "relu"

CPU_213 = "torch213-cxx11-cpu-x86_64-linux"
CPU_213_ARM = "torch213-cxx11-cpu-aarch64-linux"
CPU_214 = "torch214-cxx11-cpu-x86_64-linux"
CU130_214 = "torch214-cxx11-cu130-x86_64-linux"
CU126_213 = "torch213-cxx11-cu126-x86_64-linux"

#: Case 26's test matrix: the local wheels (2.13.0 CPU, 2.14.1 cu130) required, an aarch64 system, and
#: optional entries.
TEST_MATRIX = {
    "format": 1,
    "entries": [
        {"torch": "2.13", "torch-pin": "2.13.0", "backend": "cpu", "systems": ["x86_64-linux", "aarch64-linux"],
         "required": True, "index-url": "https://download.pytorch.org/whl/cpu"},
        {"torch": "2.14", "torch-pin": "2.14.1", "backend": "cuda", "version": "13.0", "systems": ["x86_64-linux"],
         "required": True},
        {"torch": "2.14", "torch-pin": "2.14.1", "backend": "cpu", "systems": ["x86_64-linux"], "required": False,
         "index-url": "https://download.pytorch.org/whl/cpu"},
        {"torch": "2.13", "torch-pin": "2.13.0", "backend": "cuda", "version": "12.6", "systems": ["x86_64-linux"],
         "required": False, "index-url": "https://download.pytorch.org/whl/cu126"},
    ],
}  # fmt: skip


#: Why an aarch64-linux cpu variant is not built here in these tests: they hide the cross compiler (``_host``).
NO_CROSS_COMPILER = (
    "cross-compiling for aarch64-linux needs the C++ cross compiler aarch64-linux-gnu-g++, which is not on PATH: "
    "install it (Debian/Ubuntu: apt-get install g++-aarch64-linux-gnu) or set KERNEL_BUILDER_CROSS_CXX"
)


def cannot_build_system(backend: str, system: str, host: str = "x86_64-linux") -> str:
    if system.endswith("-darwin"):  # no host of this tool builds macOS variants: the runner table says why
        return f"variant for {system}: {NO_RUNNER['darwin']}"
    if (
        host == "x86_64-linux" and system == "aarch64-linux"
    ):  # cross: cpu and cuda both need the cross compiler
        return NO_CROSS_COMPILER
    return (
        f"variant for {system} cannot be built on this host ({host}): this kernel-builder compiles {backend} "
        "variants on x86_64-linux and aarch64-linux for the same system, and cpu and cuda variants for aarch64-linux "
        "on x86_64-linux (cross)"
    )


def cannot_build_backend(backend: str) -> str:
    """The docs/build-toml.md message, word for word."""
    return (
        f"backend '{backend}' cannot be built on this host (x86_64-linux): this kernel-builder compiles cpu and cuda "
        f"variants on x86_64-linux and aarch64-linux only. The [kernel.*] sections for {backend} were validated but not built."
    )


@pytest.fixture(autouse=True)
def _host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An x86_64 Linux host without the aarch64 cross compiler (test_pipeline_plan_hosts.py has one); the working
    directory is ``tmp_path``."""
    fake_host(monkeypatch)
    monkeypatch.setenv("KERNEL_BUILDER_CROSS_CXX", "no-such-cross-compiler")
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def test_matrix() -> Matrix:
    return parse_matrix(TEST_MATRIX, "test-matrix.json")


@pytest.fixture
def use_matrix(monkeypatch: pytest.MonkeyPatch, test_matrix: Matrix) -> Matrix:
    """Every ``load_matrix()`` (config validation, candidates, planning) reads the test matrix."""
    monkeypatch.setattr(matrix_module, "_packaged_matrix", lambda: test_matrix)
    return test_matrix


# --- projects -------------------------------------------------------------------------------------------

GENERAL = """\
[general]
name = "pick-me"
version = 1
edition = 5
license = "Apache-2.0"
backends = {backends}
"""

TORCH = """
[torch]
src = ["torch-ext/torch_binding.cpp"]
"""

CPU_KERNEL = """
[kernel.pick_cpu]
backend = "cpu"
depends = ["torch"]
src = ["pick_cpu/pick.cpp"]
"""

CUDA_KERNEL = """
[kernel.pick_cuda]
backend = "cuda"
depends = ["torch"]
src = ["pick_cuda/pick.cu"]
"""

ROCM_KERNEL = """
[kernel.pick_rocm]
backend = "rocm"
depends = ["torch"]
src = ["pick_rocm/pick.hip"]
"""

CPU_CUDA = GENERAL.format(backends='["cpu", "cuda"]') + TORCH + CPU_KERNEL + CUDA_KERNEL


def project(tmp_path: Path, text: str = CPU_CUDA, name: str = "kernel") -> Path:
    files: dict[str, str | bytes] = {
        "build.toml": text,
        "torch-ext/pick_me/__init__.py": "",
        "torch-ext/torch_binding.cpp": "// binding\n",
        "pick_cpu/pick.cpp": "// cpu\n",
        "pick_cuda/pick.cu": "// cuda\n",
        "pick_rocm/pick.hip": "// rocm\n",
    }
    return write_files(tmp_path / name, files)


def loaded(tmp_path: Path, text: str = CPU_CUDA) -> KernelProject:
    project(tmp_path, text)
    return load(Path("kernel"))


def by_name(candidates: list[Candidate]) -> dict[str, Candidate]:
    return {c.name: c for c in candidates}


# --- the real matrix: list-variants ----------------------------------------------------------------------


def test_relu_candidates_are_every_applicable_entry() -> None:
    """Every (entry, system) of the packaged matrix for relu's backends, in matrix order per backend."""
    matrix = load_matrix()
    candidates = all_candidates(load(RELU))
    expected = [(entry, system) for backend in ("cpu", "cuda") for entry, system in matrix.pairs(backend)]
    assert [(c.entry, c.system) for c in candidates] == expected
    assert len({c.name for c in candidates}) == len(candidates)
    for candidate in candidates:
        assert candidate.entry is not None
        assert candidate.required is candidate.entry.required
        if candidate.system == "x86_64-linux":
            assert candidate.buildable, candidate
        else:
            assert candidate.reason == cannot_build_system(candidate.backend, str(candidate.system))


def test_list_variants_of_relu(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list-variants", str(RELU), "--no-probe"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["variant", "required", "buildable", "here"]
    rows = {line.split()[0]: line for line in lines[1:]}
    candidates = all_candidates(load(RELU))
    assert list(rows) == [c.name for c in candidates]
    for candidate in candidates:
        cells = rows[candidate.name].split(None, 2)
        assert cells[1] == ("required" if candidate.required else "optional")
        assert cells[2] == ("yes" if candidate.buildable else f"no: {candidate.reason}")

    # Spot checks against the matrix data (tests/matrix_data.py), with the reasons of the systems this host
    # cannot build.
    def status(torch: md.Version, cuda: md.Version | None, system: str = md.HOST_SYSTEM) -> str:
        backend = "cpu" if cuda is None else "cuda"
        return "required" if md.is_required(backend, torch=torch, cuda=cuda, system=system) else "optional"

    newest, oldest = md.NEWEST_TORCH, md.OLDEST_TORCH
    newest_cuda, oldest_cuda = md.cuda_versions(newest)[-1], md.cuda_versions(oldest)[-1]
    assert rows[md.variant(md.NEWEST_REQUIRED_TORCH)].split()[1:] == ["required", "yes"]
    assert rows[md.variant(oldest, oldest_cuda)].split()[1:] == [status(oldest, oldest_cuda), "yes"]
    assert rows[md.variant(newest, newest_cuda)].split()[1:] == [status(newest, newest_cuda), "yes"]
    required, cuda = md.NEWEST_REQUIRED_TORCH, md.cuda_versions(md.NEWEST_REQUIRED_TORCH, "aarch64-linux")[-1]
    assert rows[md.variant(required, cuda, "aarch64-linux")].split(None, 2)[1:] == [
        status(required, cuda, "aarch64-linux"),
        "no: " + cannot_build_system("cuda", "aarch64-linux"),
    ]
    darwin = [md.variant(torch, None, "aarch64-darwin") for torch in md.TORCH_VERSIONS]
    darwin_name = next(name for name in darwin if name in rows)
    assert rows[darwin_name].split(None, 2)[2] == "no: " + cannot_build_system("cpu", "aarch64-darwin")
    assert not any("metal" in name or "rocm" in name or "xpu" in name for name in rows)
    assert err == ""


def test_list_variants_json_of_relu(capsys: pytest.CaptureFixture[str]) -> None:
    """``--json``: one object per candidate, in the table's order, with the same facts (the Nix lib's check)."""
    assert cli.main(["list-variants", str(RELU), "--json", "--no-probe"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    listed = json.loads(out)
    candidates = all_candidates(load(RELU))
    keys = ["variant", "backend", "system", "required", "buildable", "reason", "cross"]
    assert all(list(item) == keys for item in listed)
    assert [tuple(item.values()) for item in listed] == [
        (c.name, c.backend, c.system, c.required, c.buildable, c.reason, c.cross) for c in candidates
    ]
    required = md.is_required("cpu", torch=(2, 13), system="x86_64-linux")
    assert {"variant": CPU_213, "backend": "cpu", "system": "x86_64-linux", "required": required,
            "buildable": True, "reason": None, "cross": False} in listed  # fmt: skip


def test_list_variants_json_of_a_noarch_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project(tmp_path, GENERAL.format(backends='["cpu", "cuda"]') + "\n[torch-noarch]\n")
    assert cli.main(["list-variants", "kernel", "--json"]) == 0
    assert [(v["variant"], v["system"]) for v in json.loads(capsys.readouterr().out)] == [
        ("torch-cpu", None),
        ("torch-cuda", None),
    ]


def test_variants_table_columns_line_up() -> None:
    text = variants_table(all_candidates(load(RELU)))
    lines = text.splitlines()
    column = lines[0].index("required")
    assert all(line[column - 2 : column] == "  " and line[column] != " " for line in lines)


def test_backends_limit_the_candidates(tmp_path: Path) -> None:
    """general.backends decides which entries apply: a cpu-only project has no CUDA candidate."""
    text = GENERAL.format(backends='["cpu"]') + TORCH + CPU_KERNEL
    names = [c.name for c in all_candidates(loaded(tmp_path, text))]
    assert names and all("-cpu-" in n for n in names)


def test_torch_maxver_keeps_only_2_12(tmp_path: Path) -> None:
    # Against the packaged matrix, with the oldest required Torch as the bound: the older (optional) entries
    # are admitted too; the required set is the bound's only.
    bound = md.OLDEST_REQUIRED_TORCH
    candidates = all_candidates(
        loaded(tmp_path, CPU_CUDA.replace("[torch]\n", f'[torch]\nmaxver = "{md.dotted(bound)}"\n'))
    )
    assert {c.name[:8] for c in candidates} == {md.tag(t) for t in md.TORCH_VERSIONS if t <= bound}
    assert {c.name[:8] for c in candidates if c.required} == {md.tag(bound)}
    assert all(c.entry is not None and c.entry.torch <= bound for c in candidates)
    text = CPU_CUDA.replace("[torch]\n", '[torch]\nmaxver = "2.12"\n')
    project(tmp_path, text)
    # Against the test's own matrix (2.13 and 2.14) plus a 2.12 entry, a 2.12 bound leaves 2.12 only.
    matrix = parse_matrix(
        {
            "format": 1,
            "entries": [*TEST_MATRIX["entries"]]  # type: ignore[misc]
            + [
                {
                    "torch": "2.12",
                    "torch-pin": "2.12.0",
                    "backend": "cpu",
                    "systems": ["x86_64-linux"],
                    "required": True,
                },
            ],
        }
    )
    assert [c.name for c in all_candidates(load(Path("kernel")), matrix)] == [
        "torch212-cxx11-cpu-x86_64-linux"
    ]


def test_torch_minver(tmp_path: Path) -> None:
    text = CPU_CUDA.replace("[torch]\n", f'[torch]\nminver = "{md.dotted(md.NEWEST_TORCH)}"\n')
    assert {c.name[:8] for c in all_candidates(loaded(tmp_path, text))} == {md.tag(md.NEWEST_TORCH)}


def test_cuda_maxver_drops_cu132(tmp_path: Path) -> None:
    text = CPU_CUDA + '\n[general.cuda]\nmaxver = "13.0"\n'
    names = [c.name for c in all_candidates(loaded(tmp_path, text))]
    assert not any("cu132" in n for n in names)
    assert any("cu130" in n for n in names) and any("cu126" in n for n in names)
    # CPU candidates are not affected by CUDA bounds.
    assert sum("-cpu-" in n for n in names) == sum(
        len(e.systems) for e in load_matrix().entries if e.backend == "cpu"
    )


def test_cuda_minver_drops_older_cuda(tmp_path: Path) -> None:
    text = CPU_CUDA + '\n[general.cuda]\nminver = "13.0"\n'
    names = [c.name for c in all_candidates(loaded(tmp_path, text)) if c.backend == "cuda"]
    newer = {md.compute(v) for v in md.cuda_versions(system=None) if v >= (13, 0)}
    assert {n.split("-")[2] for n in names} == newer


def test_stable_abi_keeps_the_newest_torch_per_compute(tmp_path: Path) -> None:
    """One stable-ABI build serves every newer Torch: the newest Torch per (backend, compute, system) is kept,
    and the variant is named by the ABI version, each name once."""
    abi = md.OLDEST_REQUIRED_TORCH
    text = CPU_CUDA.replace("[torch]\n", f'[torch]\nstable-abi = "{md.dotted(abi)}"\n')
    candidates = all_candidates(loaded(tmp_path, text))
    names = [c.name for c in candidates]
    assert len(names) == len(set(names)), names
    prefix = f"torch-stable-abi{abi[0]}{abi[1]}-"
    assert all(n.startswith(prefix) for n in names)
    matrix = load_matrix()
    for candidate in candidates:
        assert candidate.entry is not None and candidate.system is not None
        same = [
            e for e, system in matrix.pairs(candidate.backend)
            if system == candidate.system and e.version == candidate.entry.version and e.torch >= abi
        ]  # fmt: skip
        assert candidate.entry.torch == max(e.torch for e in same), candidate.name
    # One name per (compute, system) of the cpu and cuda entries not older than the ABI.
    computes = {
        (md.compute(None if e["backend"] == "cpu" else md.major_minor(e["version"])), system)
        for e in md.ENTRIES
        if e["backend"] in ("cpu", "cuda") and md.major_minor(e["torch"]) >= abi
        for system in e["systems"]
    }
    assert set(names) == {f"{prefix}{c}-{system}" for c, system in computes}
    # Built with the newest Torch of its compute (maybe an optional entry), the variant still stands for the
    # required Torch versions it serves: required if any of them is.
    for candidate in candidates:
        assert candidate.entry is not None
        served = [
            e
            for e, system in matrix.pairs(candidate.backend)
            if system == candidate.system and e.torch >= abi
        ]
        same = [e for e in served if e.version == candidate.entry.version]
        assert candidate.required == any(e.required for e in same), candidate.name
    assert any(c.required for c in candidates)


def test_stable_abi_newest_torch_per_system(tmp_path: Path) -> None:
    """Entries of one compute with different system lists: the newest Torch is chosen per system."""
    matrix = parse_matrix({"format": 1, "entries": [
        {"torch": "2.12", "torch-pin": "2.12.0", "backend": "cpu", "systems": ["x86_64-linux", "aarch64-darwin"],
         "required": True},
        {"torch": "2.13", "torch-pin": "2.13.0", "backend": "cpu", "systems": ["x86_64-linux"], "required": True},
    ]})  # fmt: skip
    text = GENERAL.format(backends='["cpu"]') + TORCH + 'stable-abi = "2.12"\n' + CPU_KERNEL
    project(tmp_path, text)
    candidates = all_candidates(load_with(Path("kernel"), matrix), matrix)
    assert [(c.name, c.entry.torch) for c in candidates if c.entry is not None] == [
        ("torch-stable-abi212-cpu-aarch64-darwin", (2, 12)),
        ("torch-stable-abi212-cpu-x86_64-linux", (2, 13)),
    ]


def load_with(path: Path, matrix: Matrix) -> KernelProject:
    from kernel_builder.config import load_project

    return load_project(path, matrix=matrix).project


def test_unbuildable_backend_candidates_carry_the_section_5_message(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu", "rocm"]') + TORCH + CPU_KERNEL + ROCM_KERNEL
    candidates = [c for c in all_candidates(loaded(tmp_path, text)) if c.backend == "rocm"]
    assert candidates
    assert all(c.reason == cannot_build_backend("rocm") for c in candidates)


def test_noarch_candidates(tmp_path: Path) -> None:
    text = GENERAL.format(backends='["cpu", "cuda", "cann"]') + "\n[torch-noarch]\n"
    candidates = all_candidates(loaded(tmp_path, text))
    assert [(c.name, c.buildable, c.required, c.entry) for c in candidates] == [
        ("torch-cpu", True, True, None),
        ("torch-cuda", True, True, None),
        ("torch-cann", True, True, None),
    ]


def test_other_hosts_build_no_aot_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project(tmp_path)
    fake_host(monkeypatch, "arm64", "Darwin")
    candidates = all_candidates(load(Path("kernel")))
    assert candidates and not any(c.buildable for c in candidates)
    linux = by_name(candidates)[CPU_213]
    assert linux.reason == cannot_build_system("cpu", "x86_64-linux", host="aarch64-darwin")


# --- selection with the test matrix (case 26) ----------------------------------------------------------


def test_test_matrix_candidates(tmp_path: Path, use_matrix: Matrix) -> None:
    candidates = all_candidates(loaded(tmp_path))
    assert [(c.name, c.required, c.buildable) for c in candidates] == [
        (CPU_213, True, True),
        (CPU_213_ARM, True, False),
        (CPU_214, False, True),
        (CU130_214, True, True),
        (CU126_213, False, True),
    ]


def test_required_selects_the_buildable_required_candidates(tmp_path: Path, use_matrix: Matrix) -> None:
    selected = select_candidates(loaded(tmp_path), Selection(required=True))
    assert [c.name for c in selected.chosen] == [CPU_213, CU130_214]
    assert dict(selected.skipped) == {
        CPU_213_ARM: cannot_build_system("cpu", "aarch64-linux"),
        CPU_214: "optional: build it with --all-variants or --variant",
        CU126_213: "optional: build it with --all-variants or --variant",
    }
    assert selected.failed == []


def test_all_variants_selects_every_buildable_candidate(tmp_path: Path, use_matrix: Matrix) -> None:
    selected = select_candidates(loaded(tmp_path), Selection(all_variants=True))
    assert [c.name for c in selected.chosen] == [CPU_213, CPU_214, CU130_214, CU126_213]
    assert selected.skipped == [(CPU_213_ARM, cannot_build_system("cpu", "aarch64-linux"))]
    assert selected.failed == []


def test_backend_restricts_the_selection(tmp_path: Path, use_matrix: Matrix) -> None:
    selected = select_candidates(loaded(tmp_path), Selection(all_variants=True, backend="cuda"))
    assert [c.name for c in selected.chosen] == [CU130_214, CU126_213]
    assert selected.skipped == []


def test_named_variants_are_chosen_in_order_once(tmp_path: Path, use_matrix: Matrix) -> None:
    selected = select_candidates(loaded(tmp_path), Selection((CU130_214, CPU_213, CU130_214)))
    assert [c.name for c in selected.chosen] == [CU130_214, CPU_213]
    assert selected.failed == []
    # Candidates not named are not part of this build: none is listed as skipped.
    assert selected.skipped == []


def test_a_non_candidate_is_a_usage_error_listing_the_candidates(tmp_path: Path, use_matrix: Matrix) -> None:
    with pytest.raises(UsageError) as caught:
        select_candidates(loaded(tmp_path), Selection(("torch212-cxx11-cpu-x86_64-linux", CPU_213)))
    message = str(caught.value)
    assert message.startswith(
        "torch212-cxx11-cpu-x86_64-linux is not a candidate of kernel/build.toml; the candidates are:"
    )
    for name in (CPU_213, CPU_213_ARM, CPU_214, CU130_214, CU126_213):
        assert f"\n  {name}" in message


def test_a_candidate_outside_the_backend_is_not_a_candidate(tmp_path: Path, use_matrix: Matrix) -> None:
    with pytest.raises(UsageError, match="is not a candidate"):
        select_candidates(loaded(tmp_path), Selection((CPU_213,), backend="cuda"))


def test_naming_an_unbuildable_candidate_fails_it(tmp_path: Path, use_matrix: Matrix) -> None:
    selected = select_candidates(loaded(tmp_path), Selection((CPU_213_ARM, CPU_213)))
    assert [c.name for c in selected.chosen] == [CPU_213]
    assert selected.failed == [(CPU_213_ARM, cannot_build_system("cpu", "aarch64-linux"))]


# E20 for a CUDA version that only optional entries have (build-toml case 20): 10.0a cannot be built by 12.6.
E20_PROJECT = CPU_CUDA.replace(
    'src = ["pick_cuda/pick.cu"]', 'src = ["pick_cuda/pick.cu"]\ncuda-capabilities = ["10.0a"]'
)
E20_MESSAGE = (
    "[kernel.pick_cuda]: none of the requested capabilities (10.0a) can be built with CUDA 12.6 (supported: "
)


def test_e20_for_an_optional_version_is_a_warning_and_not_buildable(
    tmp_path: Path, use_matrix: Matrix
) -> None:
    project(tmp_path, E20_PROJECT)
    from kernel_builder.config import load_project

    result = load_project("kernel")
    assert [d.message for d in result.diagnostics if d.message.startswith(E20_MESSAGE)]
    candidates = by_name(all_candidates(result.project))
    reason = candidates[CU126_213].reason
    assert reason is not None and reason.startswith(E20_MESSAGE)
    assert candidates[CU130_214].buildable
    selected = select_candidates(result.project, Selection(all_variants=True))
    assert (CU126_213, candidates[CU126_213].reason) in selected.skipped


def test_naming_an_e20_variant_is_an_e20_error(tmp_path: Path, use_matrix: Matrix) -> None:
    with pytest.raises(ConfigError) as caught:
        select_candidates(loaded(tmp_path, E20_PROJECT), Selection((CU126_213,)))
    (diagnostic,) = caught.value.diagnostics
    assert diagnostic.message.startswith(E20_MESSAGE)
    assert caught.value.exit_code == 2


# --- the CLI: exit statuses, with the per-variant build replaced ------------------------------------------


@dataclass
class Recorder:
    """What the faked per-variant build saw: the variants it was asked for, and the ones told to fail."""

    calls: list[str] = field(default_factory=list)
    fail: set[str] = field(default_factory=set)

    def __eq__(self, other: object) -> bool:
        return self.calls == other if isinstance(other, list) else NotImplemented


@pytest.fixture
def built_variants(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """Replaces planning and building of a selected variant: records its name, then "builds" it (or fails, for
    a name in ``fail``). No environment is created and nothing is compiled, and whether this host could obtain
    each variant's Torch and compiler is not asked (tests/test_pipeline_environment_provision.py covers that)."""
    recorder = Recorder()
    monkeypatch.setattr(builder_module, "with_availability", lambda found, served=(): found)
    lock = threading.Lock()

    def plan_candidate(
        self: Builder, candidate: Candidate, unique_id: str, default: object
    ) -> tuple[SimpleNamespace, None]:
        with lock:
            recorder.calls.append(candidate.name)
        if candidate.name in recorder.fail:
            raise BuildError(f"{candidate.name} broke on purpose")
        return SimpleNamespace(name=candidate.name, aot=False), None

    def build_variant(
        self: Builder, plan: SimpleNamespace, unique_id: str, interpreter: object, *, capture: bool
    ) -> VariantStatus:
        out = self.build_root / plan.name
        out.mkdir(parents=True, exist_ok=True)
        (out / "metadata.json").write_text("{}\n", encoding="utf-8")
        return VariantStatus.BUILT

    monkeypatch.setattr(Builder, "_plan_candidate", plan_candidate)
    monkeypatch.setattr(Builder, "_build_variant", build_variant)
    return recorder


def test_cli_named_variants_build(
    tmp_path: Path, use_matrix: Matrix, built_variants: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path)
    code = cli.main(["build", "kernel", "--variant", CPU_213, "--variant", CU130_214, "--parallel", "1"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert built_variants == [CPU_213, CU130_214]
    table = out.splitlines()
    assert table[0].split() == ["variant", "result", "time", "size"]
    rows = {line.split()[0]: line.split() for line in table[1:] if not line.startswith(("skipped", "done"))}
    assert rows[CPU_213][1] == "built" and rows[CU130_214][1] == "built"
    assert rows[CPU_213][2:4] == [rows[CPU_213][2], "s"]  # a time in seconds, then the size
    assert list(rows) == [CPU_213, CU130_214]
    assert "skipped" not in out
    assert table[-1].startswith("done in ")


def test_cli_non_candidate_exits_2(
    tmp_path: Path, use_matrix: Matrix, built_variants: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path)
    assert cli.main(["build", "kernel", "--variant", "torch299-cxx11-cpu-x86_64-linux"]) == 2
    err = capsys.readouterr().err
    assert (
        "error: torch299-cxx11-cpu-x86_64-linux is not a candidate of kernel/build.toml; the candidates are:"
        in err
    )
    assert f"\n  {CU126_213}" in err
    assert built_variants == []
    assert not (tmp_path / "kernel" / "build").exists()


def test_cli_aarch64_variant_fails_without_building(
    tmp_path: Path, use_matrix: Matrix, built_variants: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    root = project(tmp_path)
    assert cli.main(["build", "kernel", "--variant", CPU_213_ARM]) == 1
    out, err = capsys.readouterr()
    assert built_variants == []
    assert f"error: {CPU_213_ARM}: {cannot_build_system('cpu', 'aarch64-linux')}" in err
    assert [line.split()[:2] for line in out.splitlines() if line.startswith(CPU_213_ARM)] == [
        [CPU_213_ARM, "failed"]
    ]
    assert not (root / "build" / CPU_213_ARM).exists()
    assert not (root / ".kernel-builder" / CPU_213_ARM).exists()


def test_cli_e20_variant_exits_2(
    tmp_path: Path, use_matrix: Matrix, built_variants: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path, E20_PROJECT)
    assert cli.main(["build", "kernel", "--variant", CU126_213]) == 2
    err = capsys.readouterr().err
    assert E20_MESSAGE in err
    assert built_variants == []


@pytest.mark.parametrize(
    ("flag", "chosen"),
    [("--required", [CPU_213, CU130_214]), ("--all-variants", [CPU_213, CPU_214, CU130_214, CU126_213])],
)
def test_cli_required_and_all_variants(
    tmp_path: Path,
    use_matrix: Matrix,
    built_variants: Recorder,
    capsys: pytest.CaptureFixture[str],
    flag: str,
    chosen: list[str],
) -> None:
    project(tmp_path)
    assert cli.main(["build", "kernel", flag, "--parallel", "1"]) == 0
    out = capsys.readouterr().out
    assert built_variants == chosen
    assert f"skipped {CPU_213_ARM}: {cannot_build_system('cpu', 'aarch64-linux')}" in out
    if flag == "--required":
        assert f"skipped {CPU_214}: optional: build it with --all-variants or --variant" in out


@pytest.mark.parametrize("parallel", ["1", "2"])
def test_cli_one_failing_variant_does_not_stop_the_others(
    tmp_path: Path,
    use_matrix: Matrix,
    built_variants: Recorder,
    capsys: pytest.CaptureFixture[str],
    parallel: str,
) -> None:
    root = project(tmp_path)
    built_variants.fail.add(CPU_213)
    assert cli.main(["build", "kernel", "--all-variants", "--parallel", parallel]) == 1
    out, err = capsys.readouterr()
    assert sorted(built_variants.calls) == sorted([CPU_213, CPU_214, CU130_214, CU126_213])
    results = {
        line.split()[0]: line.split()[1]
        for line in out.splitlines()[1:]
        if not line.startswith(("skipped ", "done"))
    }
    assert results == {
        CPU_213_ARM: "skipped",
        CPU_213: "failed",
        CPU_214: "built",
        CU130_214: "built",
        CU126_213: "built",
    }
    assert f"error: {CPU_213}: {CPU_213} broke on purpose" in err
    assert sorted(p.name for p in (root / "build").iterdir() if p.is_dir()) == sorted(
        [CPU_214, CU130_214, CU126_213]
    )


def test_builder_run_reports_every_variant(
    tmp_path: Path, use_matrix: Matrix, built_variants: Recorder
) -> None:
    options = BuildOptions(selection=Selection(required=True), parallel=2)
    report = Builder(loaded(tmp_path), options, log=lambda _: None).run()
    assert [(r.name, r.status) for r in report.results] == [
        (CPU_213_ARM, "skipped"), (CPU_214, "skipped"), (CU126_213, "skipped"),
        (CPU_213, "built"), (CU130_214, "built"),
    ]  # fmt: skip
    assert not report.failed
    assert all(r.size > 0 for r in report.results if r.status == "built")


def test_default_parallel() -> None:
    assert builder_module.default_parallel(1) == 1
    assert builder_module.default_parallel(0) >= 1


# --- the CI matrix ---------------------------------------------------------------------------------------


def test_github_matrix_of_relu(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The DONE WHEN check: the JSON loads, and every buildable variant of list-variants is there exactly once."""
    shutil.copytree(
        RELU, tmp_path / "examples" / "relu", ignore=shutil.ignore_patterns("build", ".kernel-builder")
    )
    assert cli.main(["matrix", "examples/relu", "--format", "github"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert len(out.strip().splitlines()) == 1  # one line: fits `echo "matrix=$(...)" >> $GITHUB_OUTPUT`
    data = json.loads(out)
    assert list(data) == ["include"]
    include = data["include"]

    assert cli.main(["list-variants", "examples/relu", "--no-probe"]) == 0
    listed = capsys.readouterr().out.splitlines()[1:]
    buildable = [line.split()[0] for line in listed if line.split(None, 2)[2] == "yes"]
    assert buildable
    # Every variant list-variants names for a platform of the runner table, whatever this host builds: those
    # buildable here, and (the matrix does not depend on the host) the aarch64-linux ones; no macOS one.
    linux = [line.split()[0] for line in listed if line.split()[0].endswith(tuple(RUNNERS))]
    assert set(buildable) <= set(linux) and any(name.endswith("-aarch64-linux") for name in linux)
    assert sorted(entry["variant"] for entry in include) == sorted(linux)
    assert len({entry["variant"] for entry in include}) == len(include)

    candidates = by_name(all_candidates(load(Path("examples/relu"))))
    for entry in include:
        candidate = candidates[entry["variant"]]
        assert entry["backend"] == candidate.backend
        assert entry["required"] is candidate.required
        assert entry["system"] == candidate.system
        assert entry["runner"] == RUNNERS[entry["system"]].label
        argv = shlex.split(entry["command"])
        assert argv == ["kernel-builder", "build", "examples/relu", "--variant", entry["variant"]]
        # The command is runnable: it parses with the CLI's own parser.
        args = cli.build_parser().parse_args(argv[1:])
        assert args.variant == [entry["variant"]] and args.path == "examples/relu"


def test_matrix_json_format_and_quoting(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    project(tmp_path, name="my kernel")
    assert cli.main(["matrix", "my kernel", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["include"]
    for entry in data["include"]:
        assert shlex.split(entry["command"])[2] == "my kernel"


def test_matrix_of_a_noarch_project(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    project(tmp_path, GENERAL.format(backends='["cpu", "cuda"]') + "\n[torch-noarch]\n")
    assert cli.main(["matrix", "kernel"]) == 0
    include = json.loads(capsys.readouterr().out)["include"]
    assert [e["variant"] for e in include] == ["torch-cpu", "torch-cuda"]


# --- progress and the final table ----------------------------------------------------------------------------


def test_build_table() -> None:
    results = [
        VariantResult(CPU_213, VariantStatus.BUILT, 12.34, 70_000),
        VariantResult(CPU_213_ARM, VariantStatus.SKIPPED, message="cannot be built here"),
        VariantResult(CU130_214, VariantStatus.FAILED, 1.0, 0, "compilation failed"),
        VariantResult(CU126_213, VariantStatus.UP_TO_DATE, 0.06, 3 * 1024 * 1024),
    ]
    lines = build_table(results, 3.14159).splitlines()
    assert [line.split("  ")[0].strip() for line in lines[:5]] == [
        "variant",
        CPU_213,
        CPU_213_ARM,
        CU130_214,
        CU126_213,
    ]
    assert [re.split(r"\s{2,}", line) for line in lines[:5]] == [
        ["variant", "result", "time", "size"],
        [CPU_213, "built", "12.3 s", "68.4 KiB"],
        [CPU_213_ARM, "skipped"],
        [CU130_214, "failed", "1.0 s"],
        [CU126_213, "up to date", "0.1 s", "3.0 MiB"],
    ]
    column = lines[0].index("result")
    assert all(line[column - 2 : column] == "  " and line[column] != " " for line in lines[1:5])
    assert lines[5:] == [f"skipped {CPU_213_ARM}: cannot be built here", "done in 3.14 s"]


def test_plain_progress_lines() -> None:
    lines: list[str] = []
    progress = PlainProgress(lines.append)
    progress.stage(CPU_213, "configuring")
    progress.step(CPU_213, 1, 3)
    progress.step(CPU_213, 3, 3)
    progress.stage(CPU_213, "built")
    assert [re.sub(r"\d+\.\d", "T", line) for line in lines] == [
        f"[   T s] {CPU_213}: configuring",
        f"{CPU_213}: [3/3] compile steps done",
        f"[   T s] {CPU_213}: built",
    ]


def test_progress_display_is_plain_without_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    lines: list[str] = []
    with progress_display(lines.append) as progress:
        assert isinstance(progress, PlainProgress)
        progress.log("hello")
    assert lines == ["hello"]


def test_rich_progress_rows() -> None:
    pytest.importorskip("rich")
    progress = RichProgress()
    with progress.bar:
        progress.stage("a", "compiling")
        progress.step("a", 1, 3)
        progress.stage("a", "built")
        progress.stage("b", "up to date")
        progress.stage("c", "compiling")
        progress.step("c", 1, 4)
        progress.stage("c", "failed")
    tasks = {t.description: t for t in progress.bar.tasks}
    assert [(tasks[n].fields["stage"], tasks[n].completed, tasks[n].total) for n in "abc"] == [
        ("built", 3, 3), ("up to date", 1, 1), ("failed", 1, 4),
    ]  # fmt: skip


# --- --offline: only this environment serves a selected variant ------------------------------------------


@pytest.fixture
def no_environments(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test if an isolated environment is asked for; records what ``_build_variant`` was given."""

    def ensure_env(*args: object, **kwargs: object) -> Path:
        raise AssertionError("--offline must not create a build environment")

    seen: list[str] = []

    def build_variant(
        self: Builder, plan: object, unique_id: str, interpreter: object, *, capture: bool
    ) -> VariantStatus:
        seen.append(f"{plan.name} {getattr(interpreter, 'torch_version', None)}")  # type: ignore[attr-defined]
        return VariantStatus.BUILT

    monkeypatch.setattr(selected_plans, "ensure_env", ensure_env)
    monkeypatch.setattr(Builder, "_build_variant", build_variant)
    return seen


def test_offline_variant_of_this_environment_builds_in_it(
    tmp_path: Path, use_matrix: Matrix, no_environments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The tests' interpreter has torch 2.13.0 (CPU): it serves torch213-cxx11-cpu-x86_64-linux itself."""
    project(tmp_path)
    assert cli.main(["build", "kernel", "--variant", CPU_213, "--offline"]) == 0, capsys.readouterr().err
    assert [seen.split()[0] for seen in no_environments] == [CPU_213]
    assert no_environments[0].split()[1].startswith("2.13.0")


def test_offline_variant_of_another_torch_fails_without_an_environment(
    tmp_path: Path, use_matrix: Matrix, no_environments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    project(tmp_path)
    assert cli.main(["build", "kernel", "--variant", CU130_214, "--variant", CPU_213, "--offline"]) == 1
    err = capsys.readouterr().err
    assert f"error: {CU130_214}: --offline: this environment's torch 2.13.0" in err
    assert f"builds {CPU_213}, not {CU130_214}" in err
    assert "run kernel-builder with --python naming an interpreter whose torch is 2.14 (cuda 13.0)" in err
    assert [seen.split()[0] for seen in no_environments] == [CPU_213]  # the other variant still builds


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--provenance-dirty"], "--provenance-dirty needs --provenance-commit"),
        (["--provenance-commit", "HEAD"], "--provenance-commit 'HEAD' is not a full git commit id"),
        (["--provenance-commit", "abc"], "--provenance-commit 'abc' is not a full git commit id"),
        # abbreviated or upper-case: the kernels loader would refuse the metadata.json it ends up in
        (["--provenance-commit", "abcdef1"], "--provenance-commit 'abcdef1' is not a full git commit id"),
        (
            ["--provenance-commit", "AB" * 20],
            f"--provenance-commit '{'AB' * 20}' is not a full git commit id",
        ),
    ],
)
def test_provenance_flags_are_checked(
    tmp_path: Path, use_matrix: Matrix, no_environments: list[str], capsys: pytest.CaptureFixture[str],
    args: list[str], message: str,
) -> None:  # fmt: skip
    project(tmp_path)
    assert cli.main(["build", "kernel", "--variant", CPU_213, *args]) == 2
    assert f"error: {message}" in capsys.readouterr().err
    assert no_environments == []


def test_provenance_flags_replace_git(tmp_path: Path, use_matrix: Matrix) -> None:
    from kernel_builder.formats.metadata import ProvenanceEntry
    from kernel_builder.pipeline.package import variant_provenance
    from kernel_builder.pipeline.plan.scan import scan_sources

    commit = "0123456789abcdef0123456789abcdef01234567"
    options = BuildOptions(provenance=ProvenanceEntry(commit=commit, dirty=True))
    project = loaded(tmp_path)
    assert variant_provenance(project, options.provenance, scan_sources(project)) == ProvenanceEntry(
        commit=commit, dirty=True
    )
    # Without them, the kernel's git work tree decides (here: none).
    assert variant_provenance(project, BuildOptions().provenance, scan_sources(project)) is None
