"""ABI checks of built extensions (build-output spec §7.4): what a ``.so`` needs from the system it loads on.

Three kinds of violation: (a) a GLIBC/GLIBCXX/CXXABI/GCC symbol version newer than manylinux_2_28 allows;
(b) an undefined ``Py*`` symbol outside the limited API of Python 3.9; (c) a ``DT_NEEDED`` library other than
Torch's, the CUDA libraries shipped as Torch's wheel dependencies, glibc, libstdc++ and libgcc_s — and, in the
same family, a RUNPATH/RPATH or a statically linked libstdc++ (which clashes with the copy Torch loads).
ELF files are read with pyelftools.
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: manylinux_2_28 policy: the newest symbol version of each library family a compliant binary may use.
MANYLINUX_2_28 = {"GLIBC": (2, 28), "GLIBCXX": (3, 4, 24), "CXXABI": (1, 3, 11), "GCC": (7, 0, 0)}
LIMITED_API_VERSION = 0x03090000

_ALLOWED_NEEDED = re.compile(
    r"^("
    r"libtorch(_cpu|_cuda|_python|_global_deps)?\.so|libc10(_cuda)?\.so|libshm\.so"
    r"|lib(cudart|cublas|cublasLt|cusparse|cusparseLt|cusolver|cufft|curand|nvrtc|nvrtc-builtins|nvToolsExt"
    r"|nvJitLink|cudnn\w*|nccl|cupti|cufile|nvshmem_host|nvperf_host)\.so(\.\d+)*"
    r"|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libutil\.so\.1"
    r"|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1"
    r")$"
)
_VERSION_RE = re.compile(r"^(GLIBCXX|GLIBC|CXXABI|GCC)_(\d+(?:\.\d+)*)$")
# Symbols only a statically linked libstdc++ defines in an extension.
_STATIC_LIBSTDCXX_MARKERS = ("_ZNKSt11logic_error4whatEv", "_ZNSt6locale7classicEv", "_ZSt4cout")


@dataclass(frozen=True)
class Violation:
    kind: str  # "symbol-version", "python-abi", "needed", "runpath", "static-libstdc++"
    file: Path
    detail: str

    def render(self) -> str:
        return f"{self.file}: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class ElfFacts:
    needed: tuple[str, ...]
    runpath: tuple[str, ...]
    undefined: tuple[tuple[str, str | None], ...]  # (symbol, version or None)
    defined: frozenset[str]


def read_elf(path: Path) -> ElfFacts:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection, GNUVerSymSection
    from elftools.elf.sections import SymbolTableSection

    with path.open("rb") as f:
        elf = ELFFile(f)
        needed: list[str] = []
        runpath: list[str] = []
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(str(getattr(tag, "needed", "")))
                    elif tag.entry.d_tag in ("DT_RUNPATH", "DT_RPATH"):
                        runpath.append(str(getattr(tag, "runpath", None) or getattr(tag, "rpath", "")))
        version_names: dict[int, str] = {}
        versym = None
        for section in elf.iter_sections():
            if isinstance(section, GNUVerNeedSection):
                for _, auxiliaries in section.iter_versions():
                    for aux in auxiliaries:
                        version_names[aux.entry.vna_other] = aux.name
            elif isinstance(section, GNUVerSymSection):
                versym = section
        undefined: list[tuple[str, str | None]] = []
        defined: set[str] = set()
        dynsym = elf.get_section_by_name(".dynsym")
        if isinstance(dynsym, SymbolTableSection):
            for index, symbol in enumerate(dynsym.iter_symbols()):
                if not symbol.name:
                    continue
                if symbol["st_shndx"] == "SHN_UNDEF":
                    version = None
                    if versym is not None:
                        version = version_names.get(versym.get_symbol(index).entry["ndx"])
                    undefined.append((symbol.name, version))
                else:
                    defined.add(symbol.name)
    return ElfFacts(tuple(needed), tuple(runpath), tuple(undefined), frozenset(defined))


def _version_too_new(version: str) -> bool:
    match = _VERSION_RE.match(version)
    if not match:
        return False
    family, number = match[1], tuple(int(p) for p in match[2].split("."))
    limit = MANYLINUX_2_28[family]
    width = max(len(number), len(limit))
    return (number + (0,) * width)[:width] > (limit + (0,) * width)[:width]


@functools.cache
def limited_api_symbols(python_include: str) -> frozenset[str]:
    """Every function and data symbol that ``Python.h`` declares under ``Py_LIMITED_API`` 3.9.

    Read from the interpreter's own headers with the preprocessor, so the list follows the headers (which
    guard newer additions by version) instead of being copied from elsewhere.
    """
    source = "#include <Python.h>\n"
    result = subprocess.run(
        ["g++", "-E", "-P", f"-DPy_LIMITED_API=0x{LIMITED_API_VERSION:08X}", f"-I{python_include}", "-x", "c++", "-"],
        input=source, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise RuntimeError(f"cannot preprocess Python.h from {python_include}: {result.stderr.strip()[:300]}")
    names: set[str] = set()
    for statement in result.stdout.replace("\n", " ").split(";"):
        _, marker, declaration = statement.partition('__attribute__ ((visibility ("default")))')
        if not marker:
            continue
        function = re.search(r"(\w+)\s*\(", declaration)
        identifiers = [function[1]] if function else re.findall(r"\w+", declaration)[-1:]
        names.update(n for n in identifiers if n.startswith(("Py", "_Py")))
    return frozenset(names)


def check_library(path: Path, python_include: Path | None) -> list[Violation]:
    facts = read_elf(path)
    violations: list[Violation] = []
    for symbol, version in sorted(facts.undefined, key=lambda s: (s[1] or "", s[0])):
        if version is not None and _version_too_new(version):
            violations.append(Violation("symbol-version", path, f"{symbol}@{version} is newer than manylinux_2_28 allows"))
    if python_include is not None:
        allowed = limited_api_symbols(str(python_include))
        for symbol, _ in facts.undefined:
            if symbol.startswith(("Py", "_Py")) and symbol not in allowed:
                violations.append(
                    Violation("python-abi", path, f"{symbol} is not in the limited API of Python 3.9 (abi3)")
                )
    for library in facts.needed:
        if not _ALLOWED_NEEDED.match(library):
            violations.append(
                Violation("needed", path, f"DT_NEEDED {library} is not Torch's, CUDA's (Torch's wheels) or the C/C++ runtime's")
            )
    for entry in facts.runpath:
        violations.append(Violation("runpath", path, f"RUNPATH/RPATH {entry!r} must be empty (torch loads the libraries)"))
    if "libstdc++.so.6" not in facts.needed and any(m in facts.defined for m in _STATIC_LIBSTDCXX_MARKERS):
        violations.append(
            Violation(
                "static-libstdc++",
                path,
                "libstdc++ is linked statically (it clashes with the copy Torch loads); the host compiler's "
                "libstdc++.so is probably missing: use a compiler with a working shared libstdc++ (set CXX)",
            )
        )
    return violations


@dataclass
class AbiReport:
    libraries: list[Path]
    violations: list[Violation]
    notes: list[str]

    def lines(self) -> list[str]:
        out = [v.render() for v in self.violations] + self.notes
        kinds = sorted({v.kind for v in self.violations})
        summary = f"checked {len(self.libraries)} extension(s): "
        summary += f"{len(self.violations)} violation(s) ({', '.join(kinds)})" if kinds else "no violations"
        if any(v.kind == "symbol-version" for v in self.violations):
            summary += "; not manylinux_2_28-compliant (built with a newer toolchain)"
        return [*out, summary]


def variant_dirs(path: Path) -> list[Path]:
    """Variant directories under a kernel root, its ``build/``, or the variant itself."""
    if (path / "metadata.json").is_file():
        return [path]
    for candidate in (path / "build", path):
        found = sorted(d for d in candidate.iterdir() if d.is_dir() and (d / "metadata.json").is_file()) if candidate.is_dir() else []
        if found:
            return found
    return []


def check_variants(path: str | Path) -> AbiReport:
    import sysconfig

    from .errors import UsageError

    root = Path(path)
    if not root.exists():
        raise UsageError(f"{root} does not exist; pass a kernel root, its build/ directory or a variant directory")
    variants = variant_dirs(root)
    if not variants:
        raise UsageError(f"no build variants (directories with metadata.json) under {root}")
    include = Path(sysconfig.get_paths()["include"])
    notes = []
    if not (include / "Python.h").is_file():
        notes.append(f"note: Python.h not found in {include}: Python-ABI (abi3) checks skipped")
        include_arg = None
    else:
        include_arg = include
    libraries = sorted(lib for v in variants for lib in v.rglob("*.so"))
    violations = [violation for lib in libraries for violation in check_library(lib, include_arg)]
    return AbiReport(libraries, violations, notes)
