"""Dependency tables shared by the builder and the loader.

The ``kernels`` loader validates Python dependency names against a fixed table; we accept exactly the
same names (docs/build-toml.md, docs/loading.md). The CUTLASS pins are the `depends` values of docs/build-toml.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import kernel_builder.backends as backends


@dataclass(frozen=True)
class KernelDependency:
    """One ``kernel-depends`` entry (build.toml and metadata.json): a kernel repo at a major ``version`` or at a
    ``revision``."""

    repo_id: str
    version: int | None = None
    revision: str | None = None


@dataclass(frozen=True)
class PythonDependency:
    name: str
    level: str  # "general" or a backend name whose [general.<backend>] table may list it
    pip_name: str
    import_name: str | None  # None: no import check (the package ships no Python module)


PYTHON_DEPENDENCIES: dict[str, PythonDependency] = {
    dep.name: dep
    for dep in (
        PythonDependency("einops", "general", "einops", "einops"),
        PythonDependency("helion", "general", "helion", "helion"),
        PythonDependency("tvm-ffi", "general", "apache-tvm-ffi", "tvm_ffi"),
        PythonDependency("nvidia-cutlass-dsl", "cuda", "nvidia-cutlass-dsl", "cutlass"),
        PythonDependency("onednn", "xpu", "onednn-devel", None),
        PythonDependency("nki", "neuron", "nki", "nki"),
    )
}

#: Levels that can hold ``python-depends`` and the names allowed there (``tpu`` has none).
PYTHON_DEPENDENCY_LEVELS = (
    "general",
    *(b.name for b in backends.all_backends() if b.general_table and "python-depends" in b.general_table),
)


def allowed_python_dependencies(level: str) -> list[str]:
    return [d.name for d in PYTHON_DEPENDENCIES.values() if d.level == level]


def describe_packages(dependencies: Sequence[PythonDependency]) -> str:
    """``the Python package P (python-depends: N)``, or ``the Python packages P (...) and Q (...)``: the pip
    package users install, with the ``python-depends`` entry it comes from (the two names differ:
    ``tvm-ffi`` is ``apache-tvm-ffi``)."""
    parts = [f"{d.pip_name} (python-depends: {d.name})" for d in dependencies]
    if len(parts) == 1:
        return f"the Python package {parts[0]}"
    return f"the Python packages {', '.join(parts[:-1])} and {parts[-1]}"


def pip_install(dependencies: Sequence[PythonDependency]) -> str:
    """The one command that installs them all."""
    return "pip install " + " ".join(d.pip_name for d in dependencies)


@dataclass(frozen=True)
class CutlassPin:
    value: str
    version: str
    pypi: bool  # whether PyPI has nvidia-cutlass of exactly this release (its wheel carries the C++ headers)

    @property
    def tag(self) -> str:
        """The upstream git tag of the release (github.com/NVIDIA/cutlass)."""
        return f"v{self.version}"


#: PyPI's nvidia-cutlass has 3.3.0, 3.4.0, 3.4.1, 3.5.0, 3.5.1, 3.6.0, 3.7.0, 3.8.0 and 4.2.0 (each with the C++
#: headers under cutlass_library/source/): exactly three pinned releases are among them.
CUTLASS_PINS: dict[str, CutlassPin] = {
    pin.value: pin
    for pin in (
        CutlassPin("cutlass_2_10", "2.10.0", False),
        CutlassPin("cutlass_3_5", "3.5.1", True),
        CutlassPin("cutlass_3_6", "3.6.0", True),
        CutlassPin("cutlass_3_8", "3.8.0", True),
        CutlassPin("cutlass_3_9", "3.9.2", False),
        CutlassPin("cutlass_4_0", "4.0.0", False),
        CutlassPin("cutlass_4_4", "4.4.2", False),
        CutlassPin("cutlass_4_5", "4.5.2", False),
    )
}

#: ``depends`` values and the kernel backends on which they have an effect (None: every backend).
KERNEL_DEPENDS: dict[str, frozenset[str] | None] = {
    "torch": None,
    **{pin: frozenset({"cuda"}) for pin in CUTLASS_PINS},
    "sycl_tla": frozenset({"xpu"}),
    "metal-cpp": frozenset({"metal"}),
}
