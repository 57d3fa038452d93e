"""The interpreter a variant is built with, and the facts about its Torch that a build needs.

Two depths: ``quick_probe`` reads ``torch/version.py`` without importing Torch (milliseconds; enough to
name the variant and to tell whether an earlier build is still up to date), and ``torch_details`` imports
Torch in a subprocess (seconds; only the first time a project is configured with that environment).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel_builder import backends
from kernel_builder.common import processes
from kernel_builder.errors import BuildError
from kernel_builder.formats.runtime import Environment, host_cpu_os
from kernel_builder.formats.variants import Variant, to_major_minor, variant_for_environment
from kernel_builder.pipeline.environment.env_facts import remembered

_QUICK = r"""
import importlib.util, json, os, site, sys, sysconfig
spec = importlib.util.find_spec("torch")
print(json.dumps({
    "torch_dir": None if spec is None or not spec.submodule_search_locations else list(spec.submodule_search_locations)[0],
    "python_version": list(sys.version_info[:2]),
    "python_include": sysconfig.get_paths()["include"],
    "purelib": sysconfig.get_paths()["purelib"],
    "search_path": [os.path.abspath(p) for p in sys.path],
    "user_site": site.getusersitepackages() if site.ENABLE_USER_SITE else None,
}))
"""
#: What changes where an interpreter finds its packages (the probe's answer is kept per value of these).
_SEARCH_ENV = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONNOUSERSITE",
    "PYTHONUSERBASE",
    "PYTHONSAFEPATH",
    "PYTHONPLATLIBDIR",
)

_DETAILS = r"""
import json, os, warnings
warnings.filterwarnings("ignore")
import torch, torch.utils
from torch.utils import cpp_extension
print(json.dumps({
    "cmake_prefix_path": torch.utils.cmake_prefix_path,
    "cxx11_abi": bool(torch.compiled_with_cxx11_abi()),
    "nvcc_flags": list(getattr(cpp_extension, "COMMON_NVCC_FLAGS", [])),
    "version": torch.__version__,
}))
"""


@dataclass(frozen=True)
class BuildInterpreter:
    """A Python interpreter with Torch installed, as seen without importing Torch."""

    python: Path
    torch_dir: Path
    torch_version: str  # e.g. "2.14.1+cu130"
    #: What Torch's ``version.py`` says it was built for: each registered backend's ``torch.version`` attribute
    #: that is set, with its value (``(("cuda", "13.0"),)``); empty for a CPU build (``backends.torch_build_of``).
    torch_builds: tuple[tuple[str, str], ...]
    python_version: tuple[int, int]
    python_include: Path
    purelib: Path
    #: The ``<cpu>-<os>`` this interpreter's Torch is for when it is not this host's: a target environment's
    #: unpacked Torch (:mod:`.target_env`), read but never imported here. ``None``: this host's own.
    target: str | None = None
    #: Builds CPU variants only, from a Torch built for another backend (its CPU parts are those of every
    #: build of its version: docs/cross.md).
    cpu_view: bool = False

    @property
    def torch_build(self) -> str:
        """The Torch build this interpreter has: ``cpu``, ``cu130``, ``rocm71``... (the variant's compute name)."""
        backend, version = backends.torch_build_of(dict(self.torch_builds))
        spec = backends.get(backend)
        return (
            backend
            if version is None or not spec.versioned
            else f"{spec.compute_part_stem}{version[0]}{version[1]}"
        )

    @property
    def backend_version_text(self) -> str | None:
        """Its backend's version as ``version.py`` spells it (``13.0``), for messages; None for a CPU build."""
        spec = backends.get(backends.torch_build_of(dict(self.torch_builds))[0])
        return (
            dict(self.torch_builds).get(spec.torch_build.attribute) if spec.torch_build is not None else None
        )

    @property
    def system(self) -> str:
        """The ``<cpu>-<os>`` the variants built with this Torch run on."""
        if self.target is not None:
            return self.target
        cpu, os_name = host_cpu_os()
        return f"{cpu}-{os_name}"

    @property
    def torch_major_minor(self) -> tuple[int, int]:
        return to_major_minor(self.torch_version.split("+")[0])

    def backend(self) -> tuple[str, tuple[int, int] | None]:
        """The compute backend of this Torch and its version, as the backend registry reads ``version.py``
        (``cpu`` for a :attr:`cpu_view`)."""
        if self.cpu_view:
            return "cpu", None
        return backends.torch_build_of(dict(self.torch_builds))

    def variant(self, stable_abi: tuple[int, int] | None = None) -> Variant:
        backend, version = self.backend()
        cpu, _, os_name = self.system.partition("-")
        env = Environment(
            cpu=cpu,
            os=os_name,
            torch_version=self.torch_major_minor,
            cxx11_abi=True,  # checked against the real Torch before configuring (torch_details)
            backend=backend,
            backend_version=version,
            python_version=self.python_version,
        )
        return variant_for_environment(stable_abi=stable_abi, environment=env)

    def fingerprint(self) -> str:
        """Changes when the interpreter or its Torch changes (for the up-to-date check)."""
        version_py = (self.torch_dir / "version.py").read_bytes()
        where = str(self.python) if self.target is None else f"{self.torch_dir}\0{self.target}"
        return hashlib.sha256(where.encode() + b"\0" + version_py).hexdigest()[:16]


def read_version_py(torch_dir: Path) -> dict[str, str | None]:
    """``__version__`` and every ``torch.version`` attribute a registered backend's builds set, as written."""
    values: dict[str, str | None] = {}
    for line in (torch_dir / "version.py").read_text(encoding="utf-8").splitlines():
        for key in ("__version__", *backends.torch_build_attributes()):
            if line.startswith((f"{key} =", f"{key}:")):
                value = line.split("=", 1)[1].strip()
                values[key] = None if value == "None" else value.strip("'\"")
    return values


def torch_builds(values: dict[str, str | None]) -> tuple[tuple[str, str], ...]:
    """:attr:`BuildInterpreter.torch_builds` from what :func:`read_version_py` read."""
    return tuple((key, value) for key in backends.torch_build_attributes() if (value := values.get(key)))


def quick_probe(python: str | os.PathLike[str] | None = None) -> BuildInterpreter:
    """Facts about ``python`` (default: this interpreter) and its Torch, without importing Torch."""
    # Absolute (the generated CMake project and the up-to-date record use it from elsewhere), but not resolved:
    # a virtual environment's python is a symlink whose target would lose the environment.
    exe = Path(os.path.abspath(python if python is not None else sys.executable))
    # Kept per environment (env_facts): asked again when the interpreter, a directory of its search path (a
    # package installed or removed), or Torch's version file changes.
    key = [str(exe), os.getcwd(), *(os.environ.get(name) for name in _SEARCH_ENV)]
    data = remembered("interpreter", key, lambda: _probe(exe))
    torch_dir = Path(data["torch_dir"])
    values = read_version_py(torch_dir)
    return BuildInterpreter(
        python=exe,
        torch_dir=torch_dir,
        torch_version=values.get("__version__") or "0.0",
        torch_builds=torch_builds(values),
        python_version=(data["python_version"][0], data["python_version"][1]),
        python_include=Path(data["python_include"]),
        purelib=Path(data["purelib"]),
    )


def _probe(exe: Path) -> tuple[dict[str, Any], list[str | os.PathLike[str]]]:
    """Ask ``exe`` where its Torch is; the answer and the paths it depends on (:func:`remembered`)."""
    try:
        result = processes.run([exe, "-c", _QUICK], capture=True)
    except OSError as exc:
        raise BuildError(f"cannot run the build interpreter {exe}: {exc.strerror}") from None
    if result.returncode != 0:
        detail = result.stderr.strip().splitlines()[-1:] or [f"exit status {result.returncode}"]
        raise BuildError(f"cannot run the build interpreter {exe}: {detail[0]}")
    data: dict[str, Any] = json.loads(result.stdout)
    if data["torch_dir"] is None:
        raise BuildError(
            f"torch is not installed for {exe}; install the Torch the variant needs "
            "(e.g. `pip install torch==2.13.0` for a CPU build)"
        )
    watched: list[str | os.PathLike[str]] = [exe, exe.parent.parent / "pyvenv.cfg", *data["search_path"]]
    if data["user_site"]:
        watched.append(data["user_site"])
    torch_dir = Path(data["torch_dir"])
    watched += [torch_dir, torch_dir / "version.py"]
    return data, watched


@dataclass(frozen=True)
class TorchDetails:
    cmake_prefix_path: str
    cxx11_abi: bool
    nvcc_flags: tuple[str, ...]
    version: str


def torch_details(interpreter: BuildInterpreter) -> TorchDetails:
    """Imports Torch in the build interpreter (the Torch check before configuring), once per environment: the
    answer is kept under the cache directory, keyed by the interpreter and its Torch's files. A target
    environment's Torch (another system's) is never imported: its files answer (:mod:`.target_env`)."""
    if interpreter.target is not None:
        return details_from_files(interpreter.torch_dir)
    cache = _details_cache(interpreter)
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
        return TorchDetails(
            data["cmake_prefix_path"], data["cxx11_abi"], tuple(data["nvcc_flags"]), data["version"]
        )
    except (OSError, ValueError, KeyError, TypeError):
        pass
    result = processes.run(
        [interpreter.python, "-c", _DETAILS], capture=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    )
    if result.returncode != 0:
        raise BuildError(f"cannot import torch with {interpreter.python}:\n{result.stderr.strip()}")
    data = json.loads(result.stdout.strip().splitlines()[-1])
    details = TorchDetails(
        data["cmake_prefix_path"], data["cxx11_abi"], tuple(data["nvcc_flags"]), data["version"]
    )
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        staging = cache.with_name(f".{cache.name}.{os.getpid()}")
        staging.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
        os.replace(staging, cache)
    except OSError:
        pass  # a read-only cache only costs the next build this import again
    return details


def details_from_files(torch_dir: Path) -> TorchDetails:
    """What :func:`torch_details` learns by importing Torch, read from its files instead: for a Torch of another
    system, which this host cannot import. The version from ``version.py``; the C++11 ABI from libc10's
    dynamic symbols (``std::__cxx11`` names appear only in a C++11-ABI build); nvcc's flags from the
    ``COMMON_NVCC_FLAGS`` list of ``torch/utils/cpp_extension.py``."""
    import ast

    values = read_version_py(torch_dir)
    flags: list[str] = []
    try:
        tree = ast.parse((torch_dir / "utils" / "cpp_extension.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        tree = None
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.Assign) and any(
            getattr(t, "id", None) == "COMMON_NVCC_FLAGS" for t in node.targets
        ):
            try:
                flags = [str(f) for f in ast.literal_eval(node.value)]
            except ValueError:
                flags = []
    return TorchDetails(
        cmake_prefix_path=str(torch_dir / "share" / "cmake"),
        cxx11_abi=_uses_cxx11_abi(torch_dir / "lib" / "libc10.so"),
        nvcc_flags=tuple(flags),
        version=values.get("__version__") or "0.0",
    )


def _uses_cxx11_abi(library: Path) -> bool:
    from elftools.elf.elffile import ELFFile
    from elftools.elf.sections import SymbolTableSection

    try:
        with library.open("rb") as f:
            section = ELFFile(f).get_section_by_name(".dynsym")
            if not isinstance(section, SymbolTableSection):
                return False
            return any("__cxx11" in symbol.name for symbol in section.iter_symbols())
    except Exception as error:  # noqa: BLE001 — pyelftools raises many types on damaged input
        raise BuildError(f"cannot read {library}: {error}") from None


def _details_cache(interpreter: BuildInterpreter) -> Path:
    """Where ``torch_details`` keeps its answer: changes with the interpreter, its Torch's version file and the
    times of Torch's files that an install or upgrade rewrites."""
    from kernel_builder.pipeline.environment.env_facts import cache_root

    digest = hashlib.sha256(interpreter.fingerprint().encode())
    for name in ("version.py", "__init__.py", "share/cmake/Torch/TorchConfig.cmake"):
        try:
            stat = (interpreter.torch_dir / name).stat()
            digest.update(f"\0{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
        except OSError:
            digest.update(f"\0{name}:missing".encode())
    return cache_root() / "torch-details" / f"{digest.hexdigest()[:32]}.json"
