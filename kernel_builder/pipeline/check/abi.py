"""ABI checks of built extensions (docs/layout.md): what a ``.so`` needs from the system it loads on.

The rules come from the libraries that own them, not from tables kept here:

- symbol versions (GLIBC, GLIBCXX, CXXABI, GCC, ...) and the system libraries a binary may link: the
  manylinux_2_28 policy that ``auditwheel`` ships (its PEP 600 policy file, for the ELF's architecture);
- Python symbols: the stable-ABI manifest that ``abi3audit`` checks against (the ``abi3info`` package), for
  the limited API of Python 3.9, the version the generated projects target.

What is Torch's own to judge stays here: the ``DT_NEEDED`` libraries Torch's wheels provide (Torch's and the
CUDA libraries its wheels depend on), an empty RUNPATH (Torch loads those libraries), no statically linked
libstdc++ (it clashes with the copy Torch loads), and — for ``torch-stable-abi`` variants — no libtorch C++
symbol, only Torch's stable C shim. A file that is not a readable ELF shared object is itself a finding.
ELF files are read with pyelftools.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import kernel_builder.backends as backends
from kernel_builder.pipeline.abi_policy import MANYLINUX_POLICY, manylinux_policy, version_allowed

#: ``Py_LIMITED_API`` of the generated projects (Python 3.9).
LIMITED_API_VERSION = (3, 9)

# Libraries every Torch wheel brings; each backend adds those of its own wheels (``Backend.torch_libraries``:
# libtorch_cuda, the CUDA libraries, ...). System libraries come from the manylinux policy's whitelist.
_TORCH_NEEDED_COMMON = (
    r"libtorch(_cpu|_python|_global_deps)?\.so|libc10\.so|libshm\.so"
    r"|ld-linux-x86-64\.so\.2|ld-linux-aarch64\.so\.1"
)


def _torch_needed() -> re.Pattern[str]:
    """The ``DT_NEEDED`` names Torch's wheels provide, of every registered backend."""
    extra = [pattern for backend in backends.all_backends() for pattern in backend.torch_libraries]
    return re.compile("^(" + "|".join([_TORCH_NEEDED_COMMON, *extra]) + ")$")


# Symbols only a statically linked libstdc++ defines in an extension.
_STATIC_LIBSTDCXX_MARKERS = ("_ZNKSt11logic_error4whatEv", "_ZNSt6locale7classicEv", "_ZSt4cout")
# The outermost namespace of an Itanium-mangled name (functions, variables, vtables, typeinfo, guards).
_MANGLED_SCOPE = re.compile(r"^_Z(?:T[VISTH]|GV|TW)?N?[rVKRO]*(\d+)")
#: Namespaces of libtorch's C++ API; a stable-ABI extension may not import from them.
TORCH_CXX_NAMESPACES = frozenset({"at", "c10", "torch", "caffe2"})
_ELF_MACHINES = {"EM_X86_64": "x86_64", "EM_AARCH64": "aarch64"}

KINDS = (
    "unreadable", "machine", "symbol-version", "python-abi", "torch-abi", "needed", "runpath", "static-libstdc++"
)  # fmt: skip


@dataclass(frozen=True)
class Violation:
    kind: str  # one of KINDS
    file: Path
    detail: str

    def render(self) -> str:
        return f"{self.file}: {self.kind}: {self.detail}"


@dataclass(frozen=True)
class ElfFacts:
    machine: str  # "x86_64", "aarch64", or pyelftools' e_machine name for others
    needed: tuple[str, ...]
    runpath: tuple[str, ...]
    undefined: tuple[tuple[str, str | None], ...]  # (symbol, version or None)
    defined: frozenset[str]


class UnreadableElf(Exception):
    """``path`` is not an ELF shared object pyelftools can read (empty, truncated, text, random bytes...)."""


def read_elf(path: Path) -> ElfFacts:
    """The dynamic-linking facts of ``path``; :class:`UnreadableElf` when it is not a readable ELF file."""
    try:
        head = path.read_bytes()[:4] if path.stat().st_size else b""
    except OSError as error:
        raise UnreadableElf(f"cannot read it ({error.strerror or error})") from None
    if not head:
        raise UnreadableElf("empty file")
    if head != b"\x7fELF":
        raise UnreadableElf(f"not an ELF file (it starts with {head!r})")
    try:
        return _parse_elf(path)
    except Exception as error:  # noqa: BLE001 — pyelftools raises many types on damaged input
        reason = str(error) or type(error).__name__
        raise UnreadableElf(f"damaged ELF file ({reason[:200]})") from None


def _parse_elf(path: Path) -> ElfFacts:
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile
    from elftools.elf.gnuversions import GNUVerNeedSection, GNUVerSymSection
    from elftools.elf.sections import SymbolTableSection

    with path.open("rb") as f:
        elf = ELFFile(f)
        machine = _ELF_MACHINES.get(str(elf["e_machine"]), str(elf["e_machine"]))
        if elf["e_type"] != "ET_DYN":
            raise ValueError(f"{elf['e_type']} is not a shared object")
        needed: list[str] = []
        runpath: list[str] = []
        version_names: dict[int, str] = {}
        versym = None
        dynsym = None
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                for tag in section.iter_tags():
                    if tag.entry.d_tag == "DT_NEEDED":
                        needed.append(str(getattr(tag, "needed", "")))
                    elif tag.entry.d_tag in ("DT_RUNPATH", "DT_RPATH"):
                        runpath.append(str(getattr(tag, "runpath", None) or getattr(tag, "rpath", "")))
            elif isinstance(section, GNUVerNeedSection):
                for _, auxiliaries in section.iter_versions():
                    for aux in auxiliaries:
                        version_names[aux.entry.vna_other] = aux.name
            elif isinstance(section, GNUVerSymSection):
                versym = section
            elif isinstance(section, SymbolTableSection) and section.name == ".dynsym":
                dynsym = section
        if dynsym is None:
            raise ValueError("no dynamic symbol table")
        undefined: list[tuple[str, str | None]] = []
        defined: set[str] = set()
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
    return ElfFacts(machine, tuple(needed), tuple(runpath), tuple(undefined), frozenset(defined))


@functools.cache
def _stable_abi() -> dict[str, tuple[int, int]]:
    """Every symbol of CPython's stable ABI with the Python version that added it (abi3audit's data)."""
    import abi3info

    members = [*abi3info.FUNCTIONS.values(), *abi3info.DATAS.values()]
    return {m.symbol.name: (m.added.major, m.added.minor) for m in members}


def python_abi_problem(symbol: str) -> str | None:
    """Why an imported ``Py*`` symbol breaks abi3 for Python 3.9, or ``None`` when it does not."""
    if not symbol.startswith(("Py", "_Py")):
        return None
    added = _stable_abi().get(symbol)
    target = f"{LIMITED_API_VERSION[0]}.{LIMITED_API_VERSION[1]}"
    if added is None:
        return f"{symbol} is not in the stable ABI (abi3)"
    if added > LIMITED_API_VERSION:
        return f"{symbol} joined the stable ABI in Python {added[0]}.{added[1]}, after {target} (abi3 target)"
    return None


def torch_cxx_namespace(symbol: str) -> str | None:
    """The libtorch namespace (``at``, ``c10``, ``torch``, ``caffe2``) of a mangled C++ symbol, if any."""
    match = _MANGLED_SCOPE.match(symbol)
    if not match:
        return None
    name = symbol[match.end() : match.end() + int(match[1])]
    return name if name in TORCH_CXX_NAMESPACES else None


def check_library(path: Path, *, stable_abi: bool = False, cpu: str | None = None) -> list[Violation]:
    """Every violation of ``path``; ``stable_abi`` adds the stable-ABI rule (only Torch's C shim); ``cpu``, the
    CPU of the variant's name, which the ELF's machine must be (an x86_64 file in an aarch64 variant, say)."""
    try:
        facts = read_elf(path)
    except UnreadableElf as error:
        return [Violation("unreadable", path, f"not a readable ELF shared object: {error}")]
    violations: list[Violation] = []
    if cpu is not None and facts.machine != cpu:
        violations.append(
            Violation("machine", path, f"the ELF file is for {facts.machine}, the variant for {cpu}")
        )
    policy = manylinux_policy(facts.machine)
    if policy is None:
        violations.append(
            Violation("symbol-version", path, f"no {MANYLINUX_POLICY} policy for {facts.machine}")
        )
    else:
        for symbol, version in sorted(facts.undefined, key=lambda s: (s[1] or "", s[0])):
            if version is not None and not version_allowed(policy, version):
                violations.append(
                    Violation(
                        "symbol-version", path, f"{symbol}@{version} is not allowed by {MANYLINUX_POLICY}"
                    )
                )
    for symbol, _ in sorted(facts.undefined):
        problem = python_abi_problem(symbol)
        if problem is not None:
            violations.append(Violation("python-abi", path, problem))
    if stable_abi:
        for symbol, _ in sorted(facts.undefined):
            namespace = torch_cxx_namespace(symbol)
            if namespace is not None:
                violations.append(
                    Violation(
                        "torch-abi",
                        path,
                        f"{symbol} is libtorch C++ ({namespace}::); a stable-ABI variant may only call Torch's "
                        "stable C shim (torch/csrc/stable, torch/headeronly)",
                    )
                )
    allowed_system = policy.whitelist if policy is not None else frozenset()
    torch_needed = _torch_needed()
    for library in facts.needed:
        if library not in allowed_system and not torch_needed.match(library):
            violations.append(
                Violation(
                    "needed",
                    path,
                    f"DT_NEEDED {library} is not Torch's, CUDA's (Torch's wheels) or the C/C++ runtime's",
                )
            )
    for entry in facts.runpath:
        violations.append(
            Violation("runpath", path, f"RUNPATH/RPATH {entry!r} must be empty (torch loads the libraries)")
        )
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


def judge(variant: str, violations: list[Violation], *, werror: bool, warn: Callable[[str], None]) -> None:
    """The build's verdict on an extension's findings: Python-ABI, stable-ABI and dependency violations fail the
    variant; symbol versions outside manylinux_2_28 warn (fail with ``werror``): the system toolchain decides
    those, not the kernel."""
    from kernel_builder.errors import BuildError

    errors = [v for v in violations if v.kind != "symbol-version" or werror]
    for violation in violations:
        if violation not in errors:
            warn(f"{variant}: {violation.detail} (not {MANYLINUX_POLICY}-compliant)")
    if errors:
        raise BuildError("ABI check failed:\n" + "\n".join(f"  {v.kind}: {v.detail}" for v in errors))


def check_extension(
    variant: str, extension: Path, *, stable_abi: bool, werror: bool, warn: Callable[[str], None]
) -> list[Violation]:
    """Check a freshly built ``extension``, :func:`judge` the findings and return them (for the build record)."""
    violations = check_library(extension, stable_abi=stable_abi, cpu=variant_cpu(variant))
    judge(variant, violations, werror=werror, warn=warn)
    return violations


@dataclass
class AbiReport:
    libraries: list[Path]
    violations: list[Violation]

    def lines(self) -> list[str]:
        out = [v.render() for v in self.violations]
        kinds = sorted({v.kind for v in self.violations})
        summary = f"checked {len(self.libraries)} extension(s): "
        summary += f"{len(self.violations)} violation(s) ({', '.join(kinds)})" if kinds else "no violations"
        if any(v.kind == "symbol-version" for v in self.violations):
            summary += f"; not {MANYLINUX_POLICY}-compliant"
        return [*out, summary]

    def by_variant(self, variants: Iterable[Path]) -> dict[str, list[Violation]]:
        """The violations of each variant directory (by name) that has any."""
        out: dict[str, list[Violation]] = {}
        for variant in variants:
            found = [v for v in self.violations if v.file.is_relative_to(variant)]
            if found:
                out[variant.name] = found
        return out


def variant_dirs(path: Path) -> list[Path]:
    """Variant directories under a kernel root, its ``build/``, or the variant itself."""
    if (path / "metadata.json").is_file():
        return [path]
    for candidate in (path / "build", path):
        found = (
            sorted(d for d in candidate.iterdir() if d.is_dir() and (d / "metadata.json").is_file())
            if candidate.is_dir()
            else []
        )
        if found:
            return found
    return []


def is_stable_abi_variant(name: str) -> bool:
    from kernel_builder.formats.variants import parse_variant

    try:
        return parse_variant(name).kind == "torch-stable-abi"
    except ValueError:
        return False


def variant_cpu(name: str) -> str | None:
    """The CPU a variant's name says its extensions are for (``aarch64``), or None (noarch, an unknown name)."""
    from kernel_builder.formats.variants import parse_variant

    try:
        return parse_variant(name).cpu
    except ValueError:
        return None


def check_directories(variants: Iterable[Path]) -> AbiReport:
    """Check every ``.so`` of the given variant directories."""
    libraries: list[Path] = []
    violations: list[Violation] = []
    for variant in variants:
        stable = is_stable_abi_variant(variant.name)
        cpu = variant_cpu(variant.name)
        for library in sorted(variant.rglob("*.so")):
            if library.is_file():
                libraries.append(library)
                violations += check_library(library, stable_abi=stable, cpu=cpu)
    return AbiReport(libraries, violations)


def check_variants(path: str | Path) -> AbiReport:
    from kernel_builder.errors import UsageError

    root = Path(path)
    if not root.exists():
        raise UsageError(
            f"{root} does not exist; pass a kernel root, its build/ directory or a variant directory"
        )
    variants = variant_dirs(root)
    if not variants:
        raise UsageError(f"no build variants (directories with metadata.json) under {root}")
    return check_directories(variants)
