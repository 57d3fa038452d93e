"""``kernel-builder init``: a new kernel project that builds, tests and publishes as it is.

The project is in the current edition of build.toml (see ``docs/build-toml.md``) and follows the layout of
``docs/tutorial.md``. Its name is checked by the same rule as ``[general] name``. Files come from the
templates in ``kernel_builder/templates/`` (``string.Template`` placeholders such as ``${py_name}``).
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from kernel_builder.config.values import NAME_RE, normalise_legacy_name, py_name_of
from kernel_builder.errors import UsageError
from kernel_builder.formats.identifiers import repo_id_problem

TEMPLATES = ("cpu", "cuda", "triton")
BACKENDS = ("cpu", "cuda")
EDITION = 5

#: (template file, path in the project, which templates get it). ``{py}`` in the path is the package name.
_FILES: tuple[tuple[str, str, frozenset[str]], ...] = (
    ("compiled/torch_binding.cpp.tmpl", "torch-ext/torch_binding.cpp", frozenset({"cpu", "cuda"})),
    ("compiled/torch_binding.h.tmpl", "torch-ext/torch_binding.h", frozenset({"cpu", "cuda"})),
    ("compiled/kernel_cpu.cpp.tmpl", "{py}_cpu/relu_cpu.cpp", frozenset({"cpu", "cuda"})),
    ("cuda/kernel_cuda.cu.tmpl", "{py}_cuda/relu.cu", frozenset({"cuda"})),
    ("compiled/__init__.py.tmpl", "torch-ext/{py}/__init__.py", frozenset({"cpu", "cuda"})),
    ("triton/__init__.py.tmpl", "torch-ext/{py}/__init__.py", frozenset({"triton"})),
    ("common/layers.py.tmpl", "torch-ext/{py}/layers.py", frozenset(TEMPLATES)),
    ("common/test_kernel.py.tmpl", "tests/test_{py}.py", frozenset(TEMPLATES)),
    ("common/benchmark.py.tmpl", "benchmarks/benchmark.py", frozenset(TEMPLATES)),
    ("common/CARD.md.tmpl", "CARD.md", frozenset(TEMPLATES)),
    ("common/gitignore.tmpl", ".gitignore", frozenset(TEMPLATES)),
    ("common/workflow.yml.tmpl", ".github/workflows/build.yml", frozenset(TEMPLATES)),
)


@dataclass(frozen=True)
class InitOptions:
    name: str
    org: str | None = None
    backends: tuple[str, ...] | None = None  # default: cpu for the cpu template, else cuda and cpu
    template: str | None = None  # default: cuda when the backends include it, else cpu
    license: str = "Apache-2.0"
    force: bool = False


def check_name(name: str) -> str:
    """The rule of ``[general] name``: lowercase letters, digits and ``-``, starting with a letter."""
    if NAME_RE.match(name):
        return name
    fixed = normalise_legacy_name(name)
    hint = f"; did you mean `{fixed}`?" if fixed is not None and fixed != name else ""
    raise UsageError(
        f"invalid kernel name `{name}`: use lowercase letters, digits and `-`, starting with a letter and "
        f"ending with a letter or digit{hint}"
    )


def split_name(name: str, org: str | None) -> tuple[str, str | None]:
    """``--name OWNER/NAME`` (Hugging Face's builder's form) is ``--name NAME --org OWNER``; with a different
    ``--org`` it is an error, as is any other ``/``."""
    if "/" not in name:
        return name, org
    owner, _, bare = name.partition("/")
    if not owner or not bare or "/" in bare:
        raise UsageError(f"--name {name!r}: expected NAME or OWNER/NAME")
    if org is not None and org != owner:
        raise UsageError(f"--name {name!r} names the owner {owner!r}, but --org is {org!r}: give one of them")
    return bare, owner


def parse_backends(text: str) -> tuple[str, ...]:
    """``--backends cuda,cpu`` (the command line joins ``--backends cuda cpu`` with commas); the order given is
    kept, duplicates are an error."""
    backends = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [b for b in backends if b not in BACKENDS]
    if not backends or unknown:
        raise UsageError(
            f"--backends {text!r}: expected {' and/or '.join(BACKENDS)}, comma- or space-separated "
            f"(unknown: {', '.join(unknown) or 'none given'}); init writes {' and '.join(BACKENDS)} projects "
            "only, and a PATH goes before --backends"
        )
    if len(set(backends)) != len(backends):
        raise UsageError(f"--backends {text!r} names a backend twice")
    return backends


def resolve(options: InitOptions) -> tuple[str, tuple[str, ...]]:
    """The template and backends, each defaulting from the other."""
    backends = options.backends or (("cpu",) if options.template == "cpu" else ("cuda", "cpu"))
    template = options.template or ("cuda" if "cuda" in backends else "cpu")
    if template not in TEMPLATES:
        raise UsageError(f"--template {template!r}: choose one of {', '.join(TEMPLATES)}")
    if template == "cuda" and "cuda" not in backends:
        raise UsageError("--template cuda needs the cuda backend: add it with --backends cuda,cpu")
    if template == "cpu" and backends != ("cpu",):
        raise UsageError(
            "--template cpu builds only the cpu backend: pass --backends cpu (or --template cuda)"
        )
    return template, backends


def repo_id_of(name: str, org: str | None) -> str:
    """``<org>/<name>``; without an org, ``local/<name>``, which only ``LOCAL_KERNELS`` resolves."""
    repo_id = f"{org or 'local'}/{name}"
    problem = repo_id_problem(repo_id)
    if problem is not None:
        raise UsageError(f"--org {org!r}: `{repo_id}` is not a valid Hub repository id ({problem})")
    return repo_id


def build_toml(options: InitOptions, template: str, backends: tuple[str, ...]) -> str:
    name, py = options.name, py_name_of(options.name)
    listed = ", ".join(f'"{b}"' for b in backends)
    lines = [
        f"# Build configuration of the `{name}` kernel (build.toml edition {EDITION}).",
        "# Every key: docs/build-toml.md of kernel-builder; `kernel-builder schema` prints a JSON Schema.",
        "",
        "[general]",
        f'name = "{name}"',
        "# Major version of the public API: uploads go to the Hub branch `v1`.",
        "version = 1",
        f"edition = {EDITION}",
        f'license = "{options.license}"',
        f"backends = [{listed}]",
        "",
    ]
    if options.org:
        lines += ["[general.hub]", f'repo-id = "{repo_id_of(name, options.org)}"', ""]
    else:
        lines += ["# Where `kernel-builder upload` publishes the kernel:", "# [general.hub]",
                  f'# repo-id = "<your-org>/{name}"', ""]  # fmt: skip
    if template == "triton":
        lines += [
            "# Pure Python (Triton): nothing is compiled; one variant per backend.",
            "[torch-noarch]",
            "",
        ]
        return "\n".join(lines)
    lines += [
        "# The op bindings, compiled into every variant (registration.h is generated).",
        "[torch]",
        'src = ["torch-ext/torch_binding.cpp", "torch-ext/torch_binding.h"]',
        "",
    ]
    if "cuda" in backends:
        lines += [
            "# No `cuda-capabilities`: the CUDA version's default list is used.",
            f"[kernel.{py}_cuda]",
            'backend = "cuda"',
            'depends = ["torch"]',
            f'src = ["{py}_cuda/relu.cu"]',
            "",
        ]
    if "cpu" in backends:
        lines += [
            f"[kernel.{py}_cpu]",
            'backend = "cpu"',
            'depends = ["torch"]',
            f'src = ["{py}_cpu/relu_cpu.cpp"]',
            "",
        ]
    return "\n".join(lines)


def _render(template_file: str, values: dict[str, str]) -> str:
    text = (
        resources.files("kernel_builder").joinpath(f"templates/{template_file}").read_text(encoding="utf-8")
    )
    return string.Template(text).substitute(values)


def project_files(options: InitOptions) -> dict[str, str]:
    """Every file of the new project: relative POSIX path → text."""
    check_name(options.name)
    template, backends = resolve(options)
    py = py_name_of(options.name)
    values = {
        "name": options.name,
        "py_name": py,
        "repo_id": repo_id_of(options.name, options.org),
        "version": "1",
        "license": options.license,
        "license_lower": options.license.lower(),
    }
    files = {"build.toml": build_toml(options, template, backends)}
    for source, target, templates in _FILES:
        if template in templates:
            files[target.format(py=py)] = _render(source, values)
    return files


def init_project(path: str | Path, options: InitOptions) -> list[Path]:
    """Write the project under ``path`` (created if needed); returns the files written.

    Refuses, before writing anything, when any of the files exists, unless ``force``.
    """
    root = Path(path)
    files = project_files(options)
    if root.exists() and not root.is_dir():
        raise UsageError(f"{root} exists and is not a directory")
    existing = sorted(rel for rel in files if (root / rel).exists())
    if existing and not options.force:
        shown = ", ".join(existing[:5]) + (f" and {len(existing) - 5} more" if len(existing) > 5 else "")
        verb = "exists" if len(existing) == 1 else "exist"
        raise UsageError(
            f"{root}: {shown} already {verb}; pass --force to overwrite (or choose another PATH)"
        )
    written = []
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        written.append(target)
    return written


def next_steps(root: Path, files: Sequence[Path]) -> str:
    shown = "." if root == Path(".") else str(root)
    return "\n".join(
        [
            f"created {len(files)} files in {shown}",
            "next:",
            f"  kernel-builder build {shown}     # build the variant for this machine",
            f"  kernel-builder test {shown}      # build, then run tests/ against it",
            f"  kernel-builder bench {shown}     # time the ops against PyTorch",
        ]
    )
