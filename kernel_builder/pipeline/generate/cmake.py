"""The CMake project of one AOT variant (docs/layout.md).

The generated CMakeLists.txt states what to build — components, sources, flags, architectures — as calls
into ``KernelBuilder.cmake`` (the top-level ``cmake/`` folder, shipped as package data), which holds how, and
the variant's backend's CMake fragment (its ``cmake_fragment``: ``cmake/cuda.cmake``), which holds what only that
backend's builds do. Everything the project depends on is written into it, so its files alone decide whether
to reconfigure.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

from kernel_builder import __version__, backends
from kernel_builder.backends import gpu_archs
from kernel_builder.errors import BuildError
from kernel_builder.pipeline.environment.interpreter import BuildInterpreter, TorchDetails
from kernel_builder.pipeline.environment.toolchain import CudaToolkit
from kernel_builder.pipeline.generate.namespace import (
    AT_LINK_DEFINE,
    NAMESPACE_MACRO,
    REGISTRATION_SOURCE,
    NamespaceUse,
    namespace_use,
    registration_source,
)
from kernel_builder.pipeline.generate.ops import aot_ops_py
from kernel_builder.pipeline.generate.precompiled import Precompiled, choose_precompiled
from kernel_builder.pipeline.generate.registration import registration_header
from kernel_builder.pipeline.plan.components import Component
from kernel_builder.pipeline.plan.planner import VariantPlan
from kernel_builder.pipeline.state import LOAD_EXTENSION_TARGET

_NO_HALF = {
    "-D__CUDA_NO_HALF_OPERATORS__",
    "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_HALF2_OPERATORS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__",
}
_GENEX_LITERALS = {"$": "$<1:$>", ">": "$<ANGLE-R>", ",": "$<COMMA>"}
#: The kernel root seen from the CMake build directory, .kernel-builder/<variant>/cmake-build.
RELATIVE_ROOT = "../../.."
#: CMake target names. Every kernel section's target starts with ``kb_kernel_``; the generated targets start with
#: ``kb_`` and never ``kb_kernel_``; the extension's is the op namespace (``_<name>_<backend>_<id>``) or
#: :data:`LOAD_EXTENSION_TARGET`; CMake's own
#: (``all``, ``install``, ...) start with neither. So a section may have any name its syntax allows (``_fused``,
#: ``kb_x``, ``all``) and still name no other target.
SECTION_TARGET_PREFIX = "kb_kernel_"
SHARED_TARGET_PREFIX = "kb_shared_"
BINDING_TARGET = "kb_binding"
MANYLINUX_TARGET = "kb_manylinux"
NAMESPACE_TARGET = "kb_namespace"


def component_target(component: Component) -> str:
    """The CMake target (an object library, whose objects go to ``CMakeFiles/<target>.dir``) of a component:
    ``kb_kernel_<section>``, the binding's, or ``kb_shared_<digest of its sections>`` for the files several
    sections share (:mod:`kernel_builder.pipeline.plan.shared_sources`)."""
    if component.binding:
        return BINDING_TARGET
    if component.shared_by:
        digest = hashlib.sha256("\0".join(component.shared_by).encode()).hexdigest()[:12]
        return f"{SHARED_TARGET_PREFIX}{digest}"
    return SECTION_TARGET_PREFIX + component.name


@dataclass(frozen=True)
class ProjectOptions:
    build_type: str = "Release"
    nvcc_threads: int | None = None
    gnu_unique_flag: bool = True  # whether the host compiler accepts -fno-gnu-unique
    dependency_includes: tuple[Path, ...] = ()  # CUTLASS and other header-only dependencies
    # Linux: the host C++ compiler whose glibc the manylinux compatibility header is made for (manylinux.py).
    manylinux_compiler: Path | None = None
    #: ``kernel_builder.load``: the op namespace reaches only the files that name it, and a binding's registration
    #: macros through a generated source, so that a new namespace recompiles little (:mod:`.namespace`).
    namespace_where_used: bool = False
    debug_info: bool = False  # -g (and -lineinfo for nvcc): `build --debug-build`
    #: The compiler cache that wraps the compilers (``compiler_cache``): ``ccache``, ``sccache`` or None.
    #: sccache hashes every compiler option verbatim, so the root's own prefix map goes to the preprocessor
    #: (``-Xpreprocessor``), whose options it leaves to the preprocessed text it hashes (see
    #: :func:`_root_prefix_map`).
    compiler_cache: str | None = None
    #: The build interpreter's Python headers, known already (``build``): the project does not run FindPython.
    python_include: Path | None = None
    #: Where the compilers reach the kernel's sources, when not at the kernel root: the stage that every checkout
    #: shares (``kernel_builder.pipeline.compile.source_stage``, for nvcc through sccache).
    source_stage: Path | None = None
    #: ``kernel_builder.load``'s development build of a C++-only backend (CPU, ...; not CUDA, whose nvcc objects
    #: and link were not measured with them): a precompiled Torch header for each component an edit recompiles
    #: (:mod:`.precompiled`), and GNU gold as the linker where the compiler can use it (it links the extension
    #: against Torch's libraries in under half of GNU ld's time). ``kernel-builder build`` uses neither.
    development: bool = False


def cmake_quote(value: str | os.PathLike[str], *, list_element: bool = False) -> str:
    """``value`` as one quoted CMake argument whose value is exactly ``value``.

    A ``;`` stays as it is: the ``kb_*`` functions read their arguments with ``cmake_parse_arguments(PARSE_ARGV
    ...)``, which keeps it inside one element, and ``set()`` of a single value keeps it too (an escaped ``\\;``
    would reach the compiler with its backslash). ``list_element=True`` escapes it for a value appended to a
    CMake list (``list(PREPEND ...)``), where an unescaped ``;`` would split the element.
    """
    text = str(value)
    for char in ("\\", '"', "$", *((";",) if list_element else ())):
        text = text.replace(char, "\\" + char)
    return f'"{text}"'


def genex_literal(value: str | os.PathLike[str]) -> str:
    """``value`` spelled so that CMake's generator expressions give it back unchanged.

    Everything the ``kb_*`` functions receive is used where generator expressions are evaluated (compile
    options, definitions, sources, include directories), and the options sit inside ``$<$<COMPILE_LANGUAGE:
    ...>:...>``: a ``$<...>`` in a flag would be evaluated, a ``>`` would end the expression early. ``$``,
    ``>`` and ``,`` are written as expressions that evaluate to themselves, so a flag or a file name reaches
    the compiler exactly as written (CMake then quotes it for Ninja and the shell itself).
    """
    return "".join(_GENEX_LITERALS.get(char, char) for char in str(value))


def _args(keyword: str, values: Iterable[str | os.PathLike[str]]) -> str:
    values = list(values)
    if not values:
        return ""
    return f"\n  {keyword} " + " ".join(cmake_quote(genex_literal(v)) for v in values)


def torch_cpu_definitions(torch_dir: Path, target: str = "torch_cpu") -> list[str]:
    """The compile definitions Torch's CMake config gives every user of ``target`` (``torch_cpu``:
    ``USE_DISTRIBUTED``, ...; ``torch_cuda``), read from its exported targets: a :attr:`~BuildInterpreter.cpu_view`
    project, or a cross build's, does not run that config."""
    targets = torch_dir / "share" / "cmake" / "Caffe2" / "Caffe2Targets.cmake"
    try:
        text = targets.read_text(encoding="utf-8")
    except OSError as error:
        raise BuildError(f"cannot read Torch's CMake targets {targets}: {error.strerror}") from None
    match = re.search(
        rf"set_target_properties\({target} PROPERTIES[^)]*?INTERFACE_COMPILE_DEFINITIONS \"([^\"]*)\"", text
    )
    return [d for d in match[1].split(";") if d] if match else []


def _cross_cuda_libraries(interpreter: BuildInterpreter, toolkit: CudaToolkit) -> list[Path]:
    """What a cross-built CUDA extension links besides Torch's CPU libraries: Torch's CUDA libraries and the
    target's CUDA runtime (docs/cross.md)."""
    from kernel_builder.pipeline.environment.target_env import CUDA_TARGET_DIRS

    assert interpreter.target is not None
    runtime = toolkit.root / "targets" / CUDA_TARGET_DIRS[interpreter.target] / "lib" / "libcudart.so"
    return [
        interpreter.torch_dir / "lib" / "libtorch_cuda.so",
        interpreter.torch_dir / "lib" / "libc10_cuda.so",
        runtime,
    ]


def torch_cuda_flags(details: TorchDetails) -> list[str]:
    """Torch's extension nvcc flags without the half/bfloat16 disabling defines, plus FP8."""
    return [f for f in details.nvcc_flags if f not in _NO_HALF] + ["-DENABLE_FP8"]


def nvcc_threads(plan: VariantPlan, options: ProjectOptions) -> int:
    if options.nvcc_threads:
        return options.nvcc_threads
    if os.environ.get("NVCC_THREADS", "").isdigit():
        return max(1, int(os.environ["NVCC_THREADS"]))
    return max(1, min(8, max((len(c.archs) for c in plan.components), default=1)))


def cuda_flags_for(flags: Sequence[str], cuda: tuple[int, int]) -> list[str]:
    """A kernel's ``cuda-flags`` for nvcc ``cuda``: before 12.8, nvcc rejects ``-static-global-template-stub``."""
    if cuda < (12, 8):
        return [f for f in flags if f.lstrip("-").split("=", 1)[0] != "static-global-template-stub"]
    return list(flags)


def cxx_standard(torch: tuple[int, int]) -> int:
    return 17 if torch < (2, 12) else 20


def write_project(
    project_dir: Path,
    root: Path,
    plan: VariantPlan,
    interpreter: BuildInterpreter,
    details: TorchDetails,
    toolkit: CudaToolkit | None,
    options: ProjectOptions,
) -> str:
    """Write the project into ``project_dir`` (replacing what was there); returns its fingerprint."""
    for path in (root, project_dir):
        if ";" in str(path):
            # CMake treats `;` as a list separator in its own source and build paths (even its compiler
            # check fails there); the sources and the build directory live under the kernel root.
            raise BuildError(
                f"CMake cannot build in a directory whose path contains `;`: {path}; rename or move it"
            )
    previous = _file_stamps(project_dir)
    if project_dir.exists():
        shutil.rmtree(project_dir)
    (project_dir / "include").mkdir(parents=True)
    (project_dir / "cmake").mkdir()
    (project_dir / "include" / "registration.h").write_text(registration_header(), encoding="utf-8")
    module = (files("kernel_builder") / "cmake" / "KernelBuilder.cmake").read_text(encoding="utf-8")
    (project_dir / "cmake" / "KernelBuilder.cmake").write_text(module, encoding="utf-8")
    _write_backend_fragment(project_dir / "cmake", backends.get(plan.backend))
    late_includes: list[Path] = []
    compat = None
    if options.manylinux_compiler is not None:
        from kernel_builder.pipeline.generate.manylinux import write_compat

        compat = write_compat(project_dir / "manylinux", options.manylinux_compiler)
    if toolkit is not None:
        shim = _cuda_library_headers(project_dir / "cuda-library-headers", interpreter, toolkit)
        if shim is not None:
            late_includes.append(shim)
    use = _namespace_use(root, plan, options)
    if use.at_link:
        source = project_dir / REGISTRATION_SOURCE
        source.parent.mkdir()
        source.write_text(registration_source(plan.ops_name), encoding="utf-8")
    inputs = _Inputs(root, plan, interpreter, details, toolkit, options, use)
    text = _cmakelists(inputs, project_dir, late_includes, compat)
    (project_dir / "CMakeLists.txt").write_text(text, encoding="utf-8")
    # Installed beside the extension, so the project also builds a complete package (a wheel through
    # scikit-build-core, `kernel-builder generate`); `build` assembles its variants itself and ignores it.
    (project_dir / "_ops.py").write_text(aot_ops_py(plan.ops_name), encoding="utf-8")
    _restore_unchanged_stamps(project_dir, previous)
    return project_fingerprint(project_dir)


def _fragment_name(spec: backends.Backend) -> str:
    """The backend's fragment inside the project's ``cmake/`` folder (beside ``KernelBuilder.cmake``)."""
    return f"{spec.name}.cmake"


def _write_backend_fragment(cmake_dir: Path, spec: backends.Backend) -> None:
    """Copy the backend's CMake fragment into the project, so that the project holds all it is made of."""
    if spec.cmake_fragment is None:
        return
    try:
        text = spec.cmake_fragment.read_text(encoding="utf-8")
    except OSError as error:
        raise BuildError(
            f"cannot read the CMake fragment of backend {spec.name}, {spec.cmake_fragment}: {error.strerror}"
        ) from None
    (cmake_dir / _fragment_name(spec)).write_text(text, encoding="utf-8")


def _file_stamps(directory: Path) -> dict[Path, tuple[bytes, int]]:
    """Content and mtime of every regular file below ``directory`` (none when it does not exist)."""
    stamps: dict[Path, tuple[bytes, int]] = {}
    if directory.is_dir():
        for path in directory.rglob("*"):
            if path.is_file() and not path.is_symlink():
                stamps[path] = (path.read_bytes(), path.stat().st_mtime_ns)
    return stamps


def _restore_unchanged_stamps(directory: Path, previous: dict[Path, tuple[bytes, int]]) -> None:
    """A rewritten file with the same bytes keeps its old mtime. Generated headers that every compilation
    includes (registration.h, the manylinux header) would otherwise look new to Ninja at each configure and
    recompile every source, while an edit of one file should recompile only what depends on it."""
    for path, (content, mtime) in previous.items():
        if path.is_file() and not path.is_symlink() and path.read_bytes() == content:
            os.utime(path, ns=(mtime, mtime))


def project_fingerprint(project_dir: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(project_dir.rglob("*")):
        rel = path.relative_to(project_dir).as_posix()
        digest.update(rel.encode() + b"\0")
        if path.is_symlink():
            digest.update(os.readlink(path).encode())
        elif path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _cuda_library_headers(shim: Path, interpreter: BuildInterpreter, toolkit: CudaToolkit) -> Path | None:
    """Torch's CUDA wheels ship cuBLAS/cuSPARSE/... headers that a bare toolkit may lack. Expose only the
    headers the toolkit does not have, so headers of two CUDA releases never mix (the wheel's ``crt/`` can be
    newer than nvcc's)."""
    wheel_include = interpreter.purelib / "nvidia" / f"cu{toolkit.version[0]}" / "include"
    if not wheel_include.is_dir():
        return None
    shim.mkdir(parents=True, exist_ok=True)
    for entry in sorted(wheel_include.iterdir()):
        if not (toolkit.include / entry.name).exists():
            (shim / entry.name).symlink_to(entry)
    return shim


@dataclass(frozen=True)
class _Inputs:
    """What :func:`write_project` was given, passed on whole to the steps of :func:`_cmakelists`, with the facts
    several steps derive from it."""

    root: Path
    plan: VariantPlan
    interpreter: BuildInterpreter
    details: TorchDetails
    toolkit: CudaToolkit | None
    options: ProjectOptions
    namespace: NamespaceUse

    @property
    def spec(self) -> backends.Backend:
        return backends.get(self.plan.backend)

    @property
    def cuda(self) -> bool:
        """Whether the project compiles CUDA (its backend's CMake languages name it)."""
        return "CUDA" in self.spec.cmake_languages

    @property
    def view(self) -> bool:
        """Whether Torch is seen through its files rather than its CMake config: a CPU view of another build, or a
        cross build, whose config would look for the target's whole CUDA toolkit."""
        return self.interpreter.cpu_view or self.interpreter.target is not None

    @property
    def cross_cuda(self) -> bool:
        return self.cuda and self.interpreter.target is not None and not self.interpreter.cpu_view

    @property
    def namespace_definition(self) -> str:
        return f"{NAMESPACE_MACRO}={self.plan.ops_name}"

    @property
    def extension_target(self) -> str:
        """A load build names the namespace only where a file is given it: without such a file, the project is the
        same at every edit (the namespace is in the generated source alone)."""
        defined = self.namespace.defined
        return self.plan.ops_name if defined is None or defined else LOAD_EXTENSION_TARGET

    @property
    def sources(self) -> Path:
        """Where the compilers reach the sources: the source stage, or the kernel root."""
        return self.options.source_stage or self.root


def _namespace_use(root: Path, plan: VariantPlan, options: ProjectOptions) -> NamespaceUse:
    """Every file gets the namespace defined (``kernel-builder build``), or, for ``load``, see :mod:`.namespace`."""
    if not options.namespace_where_used:
        return NamespaceUse(defined=None)
    return namespace_use(root, [s for c in plan.components for s in c.sources])


def _root_prefix_map(root: Path, cache: str | None) -> tuple[str, str]:
    """The g++ and the nvcc option that turn the kernel root into ``.`` in what the compiler writes
    (``__FILE__``, debug information).

    The option names the root, so a cache that hashes it verbatim misses in every other checkout. ccache
    leaves it out of the hash itself (``compiler_cache``'s ``ignore_options``). sccache cannot be told to, but
    it does not hash options given to the preprocessor (``-Wp,`` / ``-Xpreprocessor``): their effect is in the
    preprocessed text it hashes, where ``SCCACHE_BASEDIRS`` strips the root. g++ preprocesses and compiles in
    one process, so the map given that way still reaches the debug information."""
    option = f"-ffile-prefix-map={root}=."
    if cache == "sccache" and "," not in str(root):  # both forms split at commas
        return f"-Wp,{option}", f"-Xcompiler=-Xpreprocessor,{option}"
    return option, f"-Xcompiler={option}"


def _precompiled(inputs: _Inputs, component: Component) -> Precompiled | None:
    """The precompiled header of a component in a ``load`` build: one whose files an edit recompiles, i.e. a
    kernel section, or the binding when its files are given the (per-build) namespace. A binding whose namespace
    comes at link time compiles once, and its header would only make the first load slower. None when every file
    is given the namespace (a header names it): the header's own compile would change, and run, at every edit."""
    defined = inputs.namespace.defined
    if not _development(inputs) or defined is None:
        return None
    if component.binding and not set(component.sources) & set(defined):
        return None
    return choose_precompiled(inputs.root, component.sources)


def _development(inputs: _Inputs) -> bool:
    """Whether the project is a development build (:attr:`ProjectOptions.development`): C++ compilers only."""
    return inputs.options.development and backends.get(inputs.plan.backend).cmake_languages == ("CXX",)


def _precompile_args(precompiled: Precompiled | None, sources: Path) -> str:
    if precompiled is None:
        return ""
    return _args("PRECOMPILE_HEADERS", [f"<{h}>" for h in precompiled.headers]) + _args(
        "PRECOMPILE_SKIP", [sources / s for s in precompiled.skipped]
    )


def _cmakelists(
    inputs: _Inputs, project_dir: Path, late_includes: list[Path], compat: tuple[Path, Path] | None = None
) -> str:
    """The project's CMakeLists.txt, in its order: the toolchain and languages, the settings every compile
    shares, one component per planned one (and the generated sources'), then the extension that links them."""
    if inputs.spec.cmake_define is None:
        raise BuildError(f"backend {inputs.plan.backend} has no CMake build in this kernel-builder")
    flags = _compile_flags(inputs, project_dir, compat)
    lines = [
        *_toolchain(inputs),
        *_common(inputs, project_dir, late_includes, flags),
        *_components(inputs, project_dir, compat),
        *_namespace_sources(inputs),
        f"kb_extension({inputs.extension_target}{' FAST_LINK' if _development(inputs) else ''})",
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class _Flags:
    """What every compile of the project is given (``kb_common``)."""

    definitions: list[str]
    cxx_options: list[str]
    cuda_options: list[str]
    force_include: list[Path]


def _compile_flags(inputs: _Inputs, project_dir: Path, compat: tuple[Path, Path] | None) -> _Flags:
    cxx_options, cuda_options = _path_options(inputs)
    force_include: list[Path] = []
    if inputs.cuda:
        cuda_options += torch_cuda_flags(inputs.details)
    if inputs.cross_cuda:  # what Torch's CMake config would add to every nvcc compile
        cuda_options += ["--expt-extended-lambda", "--expt-relaxed-constexpr"]
    if compat is not None:
        _manylinux_options(inputs, project_dir, compat, cxx_options, cuda_options, force_include)
    if inputs.options.debug_info:
        cxx_options.append("-g")
        cuda_options += ["-g", "-lineinfo"]
    return _Flags(_definitions(inputs), cxx_options, cuda_options, force_include)


def _definitions(inputs: _Inputs) -> list[str]:
    """The namespace (unless a load build gives it file by file), the backend's own, Torch's where its config is
    not run, the limited API and, for a stable-ABI variant, the Torch it targets."""
    spec, interpreter, variant = inputs.spec, inputs.interpreter, inputs.plan.variant
    assert spec.cmake_define is not None
    definitions = [spec.cmake_define]
    if inputs.cross_cuda:
        definitions += torch_cpu_definitions(interpreter.torch_dir, "torch_cuda")
    if inputs.view:
        definitions += torch_cpu_definitions(interpreter.torch_dir)
    if inputs.namespace.defined is None:
        definitions.insert(0, inputs.namespace_definition)
    if spec.use_define is not None:
        definitions.append(spec.use_define)
    definitions.append("Py_LIMITED_API=0x03090000")
    if variant.kind == "torch-stable-abi" and variant.framework_version is not None:
        major, minor = variant.framework_version
        definitions.append(f"TORCH_TARGET_VERSION=0x{(major << 56) | (minor << 48):016X}")
    return definitions


def _path_options(inputs: _Inputs) -> tuple[list[str], list[str]]:
    """The C++ and the CUDA options that make the root ``.`` in what the compiler writes.

    ccache (compiler_cache) hands the compiler paths under the root relative to the build directory,
    .kernel-builder/<variant>/cmake-build: those map to `.` too, so objects are the same bytes with or without
    it. Sources reached through the stage: its path, the same in every checkout, also becomes `.`."""
    options = inputs.options
    root_cxx, root_cuda = _root_prefix_map(inputs.root, options.compiler_cache)
    cxx_options = (["-fno-gnu-unique"] if options.gnu_unique_flag else []) + [
        f"-ffile-prefix-map={RELATIVE_ROOT}=."
    ]
    if options.source_stage is not None:
        cxx_options.append(f"-ffile-prefix-map={options.source_stage}=.")
    cuda_options = [f"-Xcompiler={o}" for o in cxx_options] + [root_cuda]
    cxx_options.append(root_cxx)
    return cxx_options, cuda_options


def _manylinux_options(
    inputs: _Inputs,
    project_dir: Path,
    compat: tuple[Path, Path],
    cxx_options: list[str],
    cuda_options: list[str],
    force_include: list[Path],
) -> None:
    """The manylinux_2_28 compatibility header, in every C++ and CUDA compilation (added to the lists given)."""
    if _development(inputs):  # first in each precompiled header, or force-included (KernelBuilder.cmake)
        force_include.append(compat[0])
    else:
        cxx_options.append(f"-include{compat[0]}")
    # Relative to the build directory (nvcc runs there): ccache rewrites g++'s -include under the root to a
    # relative path, but not nvcc's --pre-include, and an absolute path here would tie the cache to one checkout.
    cuda_options.append(f"--pre-include=../{compat[0].relative_to(project_dir.parent).as_posix()}")
    # The C23 switch must precede every libc header, and nvcc's implicit cuda_runtime.h comes before its
    # --pre-include: the host compiler's own -include comes before both (manylinux.py).
    from kernel_builder.pipeline.generate.manylinux import C23_HEADER_NAME

    c23 = (compat[0].parent / C23_HEADER_NAME).relative_to(project_dir.parent).as_posix()
    cuda_options.append(f"-Xcompiler=-include,../{c23}")


def _toolchain(inputs: _Inputs) -> list[str]:
    """The header, the CUDA toolkit (before ``project()``, which looks for the compiler), the project and its
    languages, their standards, and where Python and Torch are."""
    plan, interpreter, toolkit, options = inputs.plan, inputs.interpreter, inputs.toolkit, inputs.options
    standard = cxx_standard(interpreter.torch_major_minor)
    lines = [
        f"# Generated by kernel-builder {__version__} for variant {plan.name}. Do not edit: every build rewrites it.",
        "cmake_minimum_required(VERSION 3.26)",
    ]
    if inputs.cuda and toolkit is not None:
        lines += [
            f"set(CMAKE_CUDA_COMPILER {cmake_quote(toolkit.nvcc)})",
            f"set(CUDAToolkit_ROOT {cmake_quote(toolkit.root)})",
            f"set(CUDA_TOOLKIT_ROOT_DIR {cmake_quote(toolkit.root)})",
            "set(CMAKE_CUDA_ARCHITECTURES OFF)",
            # Any single valid arch keeps Torch's config from probing GPUs; its flags are removed afterwards.
            'set(TORCH_CUDA_ARCH_LIST "9.0")',
        ]
    lines += [
        f"project({inputs.extension_target} LANGUAGES {' '.join(inputs.spec.cmake_languages)})",
        f"set(Python_EXECUTABLE {cmake_quote(interpreter.python)})",
        f"list(PREPEND CMAKE_PREFIX_PATH {cmake_quote(inputs.details.cmake_prefix_path, list_element=True)})",
        f"set(CMAKE_CXX_STANDARD {standard})",
        "set(CMAKE_CXX_STANDARD_REQUIRED ON)",
        "set(CMAKE_CXX_EXTENSIONS OFF)",
    ]
    if inputs.cuda:
        lines += [
            f"set(CMAKE_CUDA_STANDARD {standard})",
            "set(CMAKE_CUDA_STANDARD_REQUIRED ON)",
            "set(CMAKE_CUDA_EXTENSIONS OFF)",
            f'set(KB_NVCC_THREADS_FLAG "--threads={nvcc_threads(plan, options)}")',
        ]
    if options.python_include is not None:
        lines.append(f"set(KB_PYTHON_INCLUDE_DIR {cmake_quote(options.python_include)})")
    if inputs.view:
        lines.append(f"set(KB_TORCH_CPU_ROOT {cmake_quote(interpreter.torch_dir)})")
    if inputs.cross_cuda and toolkit is not None:
        libraries = ";".join(str(p) for p in _cross_cuda_libraries(interpreter, toolkit))
        lines.append(f"set(KB_TORCH_CUDA_LIBRARIES {cmake_quote(libraries)})")
    return lines


def _common(inputs: _Inputs, project_dir: Path, late_includes: list[Path], flags: _Flags) -> list[str]:
    """KernelBuilder.cmake and the backend's fragment, Torch, and the settings every compile shares."""
    fragment = inputs.spec.cmake_fragment is not None
    return [
        'include("${CMAKE_CURRENT_LIST_DIR}/cmake/KernelBuilder.cmake")',
        *(
            [f'include("${{CMAKE_CURRENT_LIST_DIR}}/cmake/{_fragment_name(inputs.spec)}")']
            if fragment
            else []
        ),
        "kb_find_torch()",
        "kb_common("
        + _args("DEFINITIONS", flags.definitions)
        + _args("INCLUDE_DIRS", [project_dir / "include", *inputs.options.dependency_includes])
        + _args("LATE_INCLUDE_DIRS", late_includes)
        + _args("CXX_OPTIONS", flags.cxx_options)
        + _args("CUDA_OPTIONS", flags.cuda_options)
        + _args("CXX_FORCE_INCLUDE", flags.force_include)
        + ")",
    ]


def _components(inputs: _Inputs, project_dir: Path, compat: tuple[Path, Path] | None) -> list[str]:
    """One ``kb_component`` per planned component with sources, then the generated ones: the manylinux
    header's source and the namespace's registration source."""
    plan, toolkit, sources, cuda = inputs.plan, inputs.toolkit, inputs.sources, inputs.cuda
    # The variant's CUDA version is torch.version.cuda, which the toolkit matches (checked before configuring).
    cuda_version = plan.variant.backend_version or (toolkit.version if toolkit is not None else (0, 0))
    lines = [
        f"kb_component({component_target(component)}"
        + _args("SOURCES", [sources / s for s in component.sources])
        + _args("INCLUDE_DIRS", [sources / i for i in component.include])
        + _args("CXX_FLAGS", component.cxx_flags)
        + _args("GENCODE", gpu_archs.gencode_flags(component.archs) if cuda else [])
        + _args("CUDA_FLAGS", cuda_flags_for(component.cuda_flags, cuda_version) if cuda else [])
        + _precompile_args(_precompiled(inputs, component), sources)
        + ")"
        for component in plan.components
        if component.sources
    ]
    if compat is not None:
        lines.append(f"kb_component({MANYLINUX_TARGET}{_args('SOURCES', [compat[1]])})")
    if inputs.namespace.at_link:
        lines.append(
            f"kb_component({NAMESPACE_TARGET}{_args('SOURCES', [project_dir / REGISTRATION_SOURCE])})"
        )
    return lines


def _namespace_sources(inputs: _Inputs) -> list[str]:
    """A load build's namespace definition, on the files that name it and on the generated registration source."""
    use, sources = inputs.namespace, inputs.sources
    return [
        "set_source_files_properties("
        + _args("", [sources / s for s in where]).lstrip("\n ")
        + f"\n  PROPERTIES COMPILE_DEFINITIONS {cmake_quote(definition)})"
        for where, definition in ((use.defined, inputs.namespace_definition), (use.at_link, AT_LINK_DEFINE))
        if where
    ]
