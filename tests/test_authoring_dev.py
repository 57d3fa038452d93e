"""``kernel_builder.load``: the edit → call loop on this machine's CPU (slow), and its argument checks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from build_runs import STATE_DIR, cpu_python, run_python
from matrix_data import CPU_VARIANT

from kernel_builder.authoring.scaffold import InitOptions, init_project
from kernel_builder.errors import UsageError

LOOP = """
import json, sys
from pathlib import Path

import torch
import kernel_builder

root = Path(sys.argv[1])
log = root / ".kernel-builder" / sys.argv[2] / "build.log"
x = torch.tensor([-2.0, 3.0])

ninja = log.parent / "cmake-build" / "build.ninja"
first = kernel_builder.load(root)
first_log = log.read_text()
first_ninja = ninja.stat().st_mtime_ns
source = root / "my_kernel_cpu" / "relu_cpu.cpp"
source.write_text(source.read_text().replace("acc_t(0) : v)", "acc_t(0) : v + acc_t(1))"))
second = kernel_builder.load(root)
second_log = log.read_text()
commands = json.loads((log.parent / "cmake-build" / "compile_commands.json").read_text())
def objects():
    return {str(p): p.stat().st_mtime_ns for p in (log.parent / "cmake-build").rglob("*.o")}
second_objects = objects()
third = kernel_builder.load(root)
print(json.dumps({
    "first": first.relu(x).tolist(),
    "second": second.relu(x).tolist(),
    "first_again": first.relu(x).tolist(),
    "namespaces": [first.ops.name, second.ops.name],
    "modules": [first.__name__, second.__name__],
    "third_is_second": third is second,
    "first_log": first_log,
    "second_log": second_log,
    "third_compiled": objects() != second_objects,
    "cmake_ran_again": ninja.stat().st_mtime_ns != first_ninja,
    "commands": {Path(c["file"]).name: c["command"] for c in commands},
}))
"""

HELPER = """// A source that neither uses the op namespace nor changes: an edit elsewhere must not recompile it.
int my_kernel_helper(int x) { return x + 1; }
"""


def compiled_sources(log: str) -> set[str]:
    """The project's files compiled according to a build log (kernel-builder's own generated ``kb_*`` sources,
    such as the manylinux compatibility source, left out)."""
    names = {Path(m).name for m in re.findall(r"Building CXX object \S+/([^/\s]+)\.o", log)}
    return {n for n in names if not n.startswith("kb_")}


def generated_objects(log: str) -> set[str]:
    """kernel-builder's own sources compiled according to a build log."""
    names = {Path(m).name for m in re.findall(r"Building CXX object \S+/([^/\s]+)\.o", log)}
    return {n for n in names if n.startswith("kb_")}


@pytest.mark.slow
def test_edit_recompiles_only_what_changed_and_both_modules_work(tmp_path: Path) -> None:
    root = tmp_path / "my-kernel"
    init_project(root, InitOptions(name="my-kernel", backends=("cpu",)))
    (root / "my_kernel_cpu" / "helper.cpp").write_text(HELPER)
    toml = root / "build.toml"
    toml.write_text(toml.read_text().replace('src = ["my_kernel_cpu/relu_cpu.cpp"]',
                                             'src = ["my_kernel_cpu/relu_cpu.cpp", "my_kernel_cpu/helper.cpp"]'))  # fmt: skip

    out = json.loads(run_python(cpu_python(), LOOP, root, CPU_VARIANT).strip().splitlines()[-1])

    assert out["first"] == [0.0, 3.0]
    assert out["second"] == [0.0, 4.0]  # the edit's behaviour
    assert out["first_again"] == [0.0, 3.0]  # the first module still works, with its own code
    first_ns, second_ns = out["namespaces"]
    assert (
        first_ns != second_ns
        and first_ns.startswith("_my_kernel_cpu_")
        and second_ns.startswith("_my_kernel_cpu_")
    )
    assert out["modules"] == [first_ns, second_ns]
    assert compiled_sources(out["first_log"]) == {"relu_cpu.cpp", "helper.cpp", "torch_binding.cpp"}
    # The edited file only: neither the untouched helper nor the binding, whose registration macros take the new
    # op namespace from the generated one-line source (its object is the only other one compiled).
    assert compiled_sources(out["second_log"]) == {"relu_cpu.cpp"}
    assert generated_objects(out["second_log"]) == {"kb_namespace.cpp"}
    # The kernel's precompiled Torch header: built by the first load only, used by the kernel file, which begins
    # with Torch's headers, and not by the helper, which does not (it gets the manylinux header itself); GCC took
    # it (-Winvalid-pch would say why not). Nor did CMake run again: the project is the same after an edit.
    precompiled = re.compile(r"Building CXX object \S+/kb_kernel_my_kernel_cpu\.dir/cmake_pch\.hxx\.gch")
    assert precompiled.search(out["first_log"]) and not precompiled.search(out["second_log"])
    assert "not used because" not in out["first_log"] + out["second_log"]
    assert "cmake_pch.hxx" in out["commands"]["relu_cpu.cpp"]
    assert "cmake_pch.hxx" not in out["commands"]["helper.cpp"]
    assert re.search(r"-include\S*kb_manylinux\.h", out["commands"]["helper.cpp"])
    assert out["cmake_ran_again"] is False
    # Nothing changed: the same module, nothing compiled.
    assert out["third_is_second"] is True
    assert out["third_compiled"] is False
    # The build is the publishable layout: the variant directory holds the second build.
    metadata = json.loads((root / "build" / CPU_VARIANT / "metadata.json").read_text())
    assert metadata["id"] == second_ns
    assert sorted(p.name for p in (root / STATE_DIR / "loaded").iterdir()) == sorted(
        [f"{CPU_VARIANT}-{first_ns}", f"{CPU_VARIANT}-{second_ns}"]
    )


def test_arch_must_be_native_or_none(tmp_path: Path) -> None:
    from kernel_builder.authoring.dev import load

    with pytest.raises(UsageError, match="arch='sm90'"):
        load(tmp_path, arch="sm90")
