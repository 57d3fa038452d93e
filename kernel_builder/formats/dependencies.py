"""Dependency tables shared by the builder and the loader.

The ``kernels`` loader validates Python dependency names against a fixed table; we accept exactly the
same names (docs/build-toml.md, docs/loading.md). The CUTLASS pins are the `depends` values of docs/build-toml.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


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
class CutlassWheel:
    """A PyPI wheel that carries a CUTLASS release's C++ headers (``include/``, ``tools/util/include/``) under
    ``source``. ``sha256`` pins the wheel file itself where the wheel is not NVIDIA's own ``nvidia-cutlass``."""

    requirement: str  # "nvidia-cutlass==3.6.0"
    source: str  # the directory of the wheel holding include/ and tools/util/include/
    sha256: str | None = None

    @property
    def project(self) -> str:
        return self.requirement.split("==", 1)[0]


#: Where NVIDIA's ``nvidia-cutlass`` wheels keep the C++ headers.
NVIDIA_CUTLASS_SOURCE = "cutlass_library/source"

#: The release archives: ``<base>/v<version>.tar.gz``, GitHub's source archive of the release tag.
CUTLASS_ARCHIVE_BASE = "https://github.com/NVIDIA/cutlass/archive/refs/tags"


@dataclass(frozen=True)
class CutlassPin:
    """One ``cutlass_X_Y`` value of ``depends``: the exact release it stands for and where its headers come from.

    ``archive_sha256`` is the SHA-256 of GitHub's source archive of the release tag (``v<version>.tar.gz``), as
    published by package managers that fetch that very file (Spack, conda-forge); ``None`` where no such hash is
    known: a build then needs ``KERNEL_BUILDER_<PIN>_SHA256`` (or a local directory) before it downloads it.
    """

    value: str
    version: str
    archive_sha256: str | None
    wheel: CutlassWheel | None = None

    @property
    def tag(self) -> str:
        """The upstream git tag of the release (github.com/NVIDIA/cutlass)."""
        return f"v{self.version}"

    @property
    def pypi(self) -> bool:
        """Whether NVIDIA's ``nvidia-cutlass`` on PyPI has exactly this release."""
        return self.wheel is not None and self.wheel.project == "nvidia-cutlass"

    @property
    def env_prefix(self) -> str:
        """The prefix of this pin's environment variables: ``KERNEL_BUILDER_CUTLASS_3_9``."""
        return f"KERNEL_BUILDER_{self.value.upper()}"


def _nvidia(version: str) -> CutlassWheel:
    return CutlassWheel(f"nvidia-cutlass=={version}", NVIDIA_CUTLASS_SOURCE)


#: PyPI's nvidia-cutlass has 3.3.0, 3.4.0, 3.4.1, 3.5.0, 3.5.1, 3.6.0, 3.7.0, 3.8.0 and 4.2.0 (each with the C++
#: headers under cutlass_library/source/): exactly three pinned releases are among them. flashinfer-python 0.6.7
#: carries CUTLASS headers whose version.h says 4.4.2 (flashinfer/data/cutlass/), pinned by the wheel's SHA-256.
#: The archive hashes: Spack's ``cutlass`` package (2.10.0 to 4.0.0; 3.6.0 also conda-forge's recipe) and Spack's
#: ``py-vllm`` resource (4.4.2); none was found for 4.5.2.
CUTLASS_PINS: dict[str, CutlassPin] = {
    pin.value: pin
    for pin in (
        CutlassPin(
            "cutlass_2_10", "2.10.0", "8f56727c0c7ca59f67f6904972958a6e7e925f72e112056e6df7bb3fdeacefd7"
        ),
        CutlassPin(
            "cutlass_3_5",
            "3.5.1",
            "20b7247cda2d257cbf8ba59ba3ca40a9211c4da61a9c9913e32b33a2c5883a36",
            _nvidia("3.5.1"),
        ),
        CutlassPin(
            "cutlass_3_6",
            "3.6.0",
            "7576f3437b90d0de5923560ccecebaa1357e5d72f36c0a59ad77c959c9790010",
            _nvidia("3.6.0"),
        ),
        CutlassPin(
            "cutlass_3_8",
            "3.8.0",
            "14a5e6314f23e41295d8377b6fa6028b35392757a0ee4538a4eacaaa5d7eee37",
            _nvidia("3.8.0"),
        ),
        CutlassPin(
            "cutlass_3_9", "3.9.2", "4b97bd6cece9701664eec3a634a1f2f2061d85bf76d843fa5799e1a692b4db0d"
        ),
        CutlassPin(
            "cutlass_4_0", "4.0.0", "44a121c5878827875856c175ebe82e955062e37cd61fcdf31ebe2e8874f2fc5c"
        ),
        CutlassPin(
            "cutlass_4_4",
            "4.4.2",
            "ef62816841b8cbcd0ed3ec45d3ab56cf67d569a0f39329b43eeeebea86f58473",
            CutlassWheel(
                "flashinfer-python==0.6.7",
                "flashinfer/data/cutlass",
                "51f39b354da48cc93400c83663f1413dbdf32eacdbba6805a35be69b01642eb8",
            ),
        ),
        CutlassPin("cutlass_4_5", "4.5.2", None),
    )
}

#: ``depends`` values and the kernel backends on which they have an effect (None: every backend).
KERNEL_DEPENDS: dict[str, frozenset[str] | None] = {
    "torch": None,
    **{pin: frozenset({"cuda"}) for pin in CUTLASS_PINS},
    "sycl_tla": frozenset({"xpu"}),
    "metal-cpp": frozenset({"metal"}),
}
