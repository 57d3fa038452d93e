"""The Nix side (lib/, flake.nix, templates/kernel/) evaluated with ``nix-instantiate``, with no nixpkgs.

Variant names and candidates derived in Nix from build.toml and ``kernel_builder/formats/build-matrix.json`` must equal
``kernel-builder list-variants --json``; ``genKernelFlakeOutputs`` and the flake's outputs are evaluated against a
stand-in nixpkgs (``tests/nix/stub-pkgs.nix``) whose derivations are plain attribute sets, so their phases can be
read and, in the slow test, run with the real tool. ``make test`` installs Nix (Debian's ``nix-bin``) where it
is missing; every evaluation uses the ``dummy://`` store, so no Nix daemon or store is needed.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import matrix_data as md
import pytest
from build_runs import metadata
from conftest import MakeProject

from kernel_builder import __version__, cli
from kernel_builder.formats.matrix import load_matrix

REPO = Path(__file__).resolve().parent.parent
STUB_PKGS = REPO / "tests" / "nix" / "stub-pkgs.nix"
STUB_NIXPKGS = REPO / "tests" / "nix" / "stub-nixpkgs"
KERNELS = [REPO / "examples" / name for name in ("relu", "activation", "relu-triton")] + [
    REPO / "templates" / "kernel"
]
REV = "0123456789abcdef0123456789abcdef01234567"
SYSTEMS = list(dict.fromkeys(system for entry in load_matrix().entries for system in entry.systems))

NIX_INSTANTIATE = shutil.which("nix-instantiate")
pytestmark = pytest.mark.skipif(
    NIX_INSTANTIATE is None,
    reason="nix-instantiate not found: `make test` installs Debian's nix-bin when run as root; else install Nix",
)


def nix(*args: str, expect_failure: bool = False) -> subprocess.CompletedProcess[str]:
    """``nix-instantiate ARGS`` in the repository, with no store, no daemon and no ``<nixpkgs>``."""
    assert NIX_INSTANTIATE is not None
    env = {**os.environ, "NIX_PATH": ""}
    result = subprocess.run(
        [NIX_INSTANTIATE, "--store", "dummy://", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        check=False,
    )
    if expect_failure:
        assert result.returncode != 0, result.stdout
    else:
        assert result.returncode == 0, f"nix-instantiate {' '.join(args)}:\n{result.stderr}"
    return result


def nix_eval(expr: str, **strings: str) -> Any:
    """The JSON value of ``expr``: a function of the string arguments ``strings`` when there are any."""
    args = [arg for name, value in strings.items() for arg in ("--argstr", name, value)]
    return json.loads(nix("--eval", "--strict", "--json", "--expr", expr, *args).stdout)


def listed(path: Path, capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """``kernel-builder list-variants PATH --json --no-probe`` (what the tool builds, not what this host can
    obtain: the Nix lib knows nothing of pip)."""
    assert cli.main(["list-variants", str(path), "--json", "--no-probe"]) == 0
    out: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return out


def listed_for(system: str, candidates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The candidates a system builds: its compiled variants and the pure-Python ones."""
    return [c for c in candidates if c["system"] in (system, None)]


def nix_candidates(path: Path, system: str) -> list[dict[str, Any]]:
    """The Nix lib's candidates of the project at ``path`` for ``system``, with the fields list-variants has."""
    out: list[dict[str, Any]] = nix_eval(
        """{ path, system }:
        let lib = import ./lib { };
        in map (c: { inherit (c) variant backend system required; })
          (builtins.filter (c: c.system == null || c.system == system) (lib.candidates { path = /. + path; }))""",
        path=str(path),
        system=system,
    )
    return out


# --- every .nix file parses --------------------------------------------------------------------------------


def nix_files() -> list[Path]:
    skip = {".git", "build", ".kernel-builder", "node_modules"}
    return sorted(
        path for path in REPO.rglob("*.nix")
        if not any(part in skip or part.startswith(".venv") for part in path.relative_to(REPO).parts)
    )  # fmt: skip


def test_every_nix_file_parses() -> None:
    files = nix_files()
    names = {path.relative_to(REPO).as_posix() for path in files}
    assert {"flake.nix", "lib/default.nix", "lib/flake-outputs.nix", "templates/kernel/flake.nix"} <= names
    for path in files:
        nix("--parse", str(path))


def test_a_syntax_error_is_caught() -> None:
    """The parse check can fail."""
    result = nix("--parse", "--expr", "{ a = 1; ", expect_failure=True)
    assert "syntax error" in result.stderr


# --- variant names: Nix against list-variants --------------------------------------------------------------


@pytest.mark.parametrize("system", SYSTEMS)
@pytest.mark.parametrize("kernel", KERNELS, ids=lambda path: path.name)
def test_variant_names_equal_list_variants(
    kernel: Path, system: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The done-when check, for examples/relu and every other kernel in the repository, on every system."""
    expected = listed_for(system, listed(kernel, capsys))
    names = nix_eval(
        "{ path, system }: (import ./lib { }).variantNames { path = /. + path; inherit system; }",
        path=str(kernel),
        system=system,
    )
    assert names == [c["variant"] for c in expected]
    if kernel.name != "relu-triton":
        assert names, "a compiled kernel has variants on every system of the matrix"
    fields = ("variant", "backend", "system", "required")
    assert nix_candidates(kernel, system) == [{k: c[k] for k in fields} for c in expected]


def test_relu_names_on_x86_64_linux(capsys: pytest.CaptureFixture[str]) -> None:
    """Spot checks, independent of both implementations."""
    names = nix_eval(
        '{ path }: (import ./lib { }).variantNames { path = /. + path; system = "x86_64-linux"; }',
        path=str(REPO / "examples" / "relu"),
    )
    assert "torch213-cxx11-cpu-x86_64-linux" in names
    assert "torch214-cxx11-cu130-x86_64-linux" in names
    assert not any("aarch64" in name or "rocm" in name for name in names)


HEAD = """\
[general]
name = "nix-check"
version = 3
edition = 5
license = "MIT"
backends = {backends}
"""
KERNEL = """
[kernel.k_{backend}]
backend = "{backend}"
depends = ["torch"]
src = ["k_{backend}/k.{suffix}"]
"""
SUFFIX = {"cpu": "cpp", "cuda": "cu", "rocm": "hip", "xpu": "cpp", "metal": "mm"}


def torch_project(
    backends: list[str], torch: str = "", general: str = "", kernels: list[str] | None = None
) -> str:
    text = HEAD.format(backends=json.dumps(backends)) + general
    text += '\n[torch]\nsrc = ["torch-ext/torch_binding.cpp"]\n' + torch
    for backend in backends if kernels is None else kernels:
        text += KERNEL.format(backend=backend, suffix=SUFFIX[backend])
    return text


CONFIGS = {
    "torch-maxver": torch_project(["cpu", "cuda"], torch='maxver = "2.12"\n'),
    "torch-minver": torch_project(["cpu", "cuda"], torch='minver = "2.13"\n'),
    "torch-patch-bound": torch_project(["cpu"], torch='minver = "2.12.0"\nmaxver = "2.13.9"\n'),
    "cuda-bounds": torch_project(
        ["cpu", "cuda"], general='\n[general.cuda]\nminver = "12.8"\nmaxver = "13"\n'
    ),
    "stable-abi": torch_project(["cpu", "cuda"], torch='stable-abi = "2.12"\n'),
    "stable-abi-cuda-only": torch_project(["cpu", "cuda"], torch='stable-abi = { cuda = "2.13" }\n'),
    "every-matrix-backend": torch_project(["cpu", "cuda", "rocm", "xpu", "metal"]),
    "noarch-backends-beside-compiled": torch_project(["cpu", "cuda", "xpu"], kernels=["cuda"]),
    "torch-noarch": HEAD.format(backends='["cpu", "cuda", "cann", "neuron"]') + "\n[torch-noarch]\n",
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_variant_names_of_config_variations(
    name: str, make_project: MakeProject, capsys: pytest.CaptureFixture[str]
) -> None:
    """Bounds, stable ABI, backends without kernels and noarch projects: the Nix candidates stay the tool's."""
    root = make_project(CONFIGS[name]).absolute()
    candidates = listed(root, capsys)
    assert candidates
    fields = ("variant", "backend", "system", "required")
    for system in SYSTEMS:
        assert nix_candidates(root, system) == [
            {k: c[k] for k in fields} for c in listed_for(system, candidates)
        ]


def test_a_legacy_build_toml_is_refused_with_the_fix(tmp_path: Path) -> None:
    shutil.copy(REPO / "tests" / "fixtures" / "forms" / "v4" / "build.toml", tmp_path / "build.toml")
    result = nix(
        "--eval", "--strict", "--expr", f'(import ./lib {{ }}).variantNames {{ path = {tmp_path}; system = "x86_64-linux"; }}',
        expect_failure=True,
    )  # fmt: skip
    assert f"{tmp_path}/build.toml: a legacy build.toml (no `edition = 5` in [general])" in result.stderr
    assert f"run `kernel-builder update-build {tmp_path}`" in result.stderr


def test_the_lib_reads_the_matrix_file() -> None:
    """lib.buildMatrix is build-matrix.json's entries; the systems are the ones it names."""
    data = json.loads((REPO / "kernel_builder" / "formats" / "build-matrix.json").read_text(encoding="utf-8"))
    assert nix_eval("(import ./lib { }).buildMatrix") == data["entries"]
    assert nix_eval("(import ./lib { }).matrixSystems") == SYSTEMS


# --- genKernelFlakeOutputs with a stand-in nixpkgs ---------------------------------------------------------

GEN = """{ path, rev ? "", dirtyRev ? "", uniqueId ? "" }:
let
  lib = import ./lib { };
  self = { outPath = path; }
    // (if rev != "" then { inherit rev; } else { })
    // (if dirtyRev != "" then { inherit dirtyRev; } else { });
in
lib.genKernelFlakeOutputs ({
  inherit self;
  pkgsFor = system: import ./tests/nix/stub-pkgs.nix { };
} // (if uniqueId != "" then { inherit uniqueId; } else { }))
"""


def gen(select: str, path: Path = REPO / "examples" / "relu", **strings: str) -> Any:
    """``select`` applied to (``out``) the outputs of genKernelFlakeOutputs for the project at ``path``."""
    args = ", ".join(strings)
    expr = f"{{ path{', ' + args if args else ''} }}@all: let out = ({GEN}) all; in {select}"
    return nix_eval(expr, path=str(path), **strings)


def build_line(phase: str) -> list[str]:
    (line,) = [line for line in phase.splitlines() if line.startswith("kernel-builder ")]
    return shlex.split(line)


def test_gen_kernel_flake_outputs_packages_are_the_variants(capsys: pytest.CaptureFixture[str]) -> None:
    """The done-when check: package names are relu's variant names (plus the bundle), and each derivation's
    build command is the `kernel-builder build --variant` line."""
    system = "x86_64-linux"
    names = [c["variant"] for c in listed_for(system, listed(REPO / "examples" / "relu", capsys))]
    packages = gen(
        f"""builtins.mapAttrs (name: p: {{
          inherit (p) name; variant = p.variant or null;
          buildPhase = p.buildPhase or null; installPhase = p.installPhase or null;
        }})
        out.packages.{system}""",
        rev=REV,
    )
    assert sorted(packages) == sorted([*names, "bundle", "default"])
    for name in names:
        package = packages[name]
        assert package["variant"] == name
        assert package["name"] == f"relu-{name}-1"
        argv = build_line(package["buildPhase"])
        assert argv == [
            "kernel-builder", "build", ".", "--variant", name, "--offline", "--python", "/stub/python/bin/python",
            "--jobs", "$NIX_BUILD_CORES", "--provenance-commit", REV,
        ]  # fmt: skip
        expanded = [arg.replace("$NIX_BUILD_CORES", "4") for arg in argv[1:]]  # as the builder's shell does
        args = cli.build_parser().parse_args(expanded)  # a line the CLI accepts
        assert (args.variant, args.offline, args.provenance_commit) == ([name], True, REV)
        assert f'cp -r "build/{name}" "$out/"' in package["installPhase"]


def test_gen_kernel_flake_outputs_details() -> None:
    """The stand-in nixpkgs (tests/nix/stub-pkgs.nix, a fixture) has torch 2.13.0 with a CUDA 13.0 build: those
    variants are in the bundle and the cpu one is tested; cuda variants get CUDA_HOME; the dev shell points LOCAL_KERNELS at build/."""
    out = gen(
        """let s = out.packages.x86_64-linux; in {
          bundle = s.bundle.variants;
          default = s.default.name;
          available = builtins.filter (n: s.${n}.available or false) (builtins.attrNames s);
          cudaHome = s.torch213-cxx11-cu130-x86_64-linux.CUDA_HOME.outPath;
          cpuHasCuda = s.torch213-cxx11-cpu-x86_64-linux ? CUDA_HOME;
          fixup = s.torch213-cxx11-cpu-x86_64-linux.dontFixup;
          inputs = map (p: p.outPath) s.torch213-cxx11-cpu-x86_64-linux.nativeBuildInputs;
          torch = s.torch213-cxx11-cpu-x86_64-linux.torch.outPath;
          checks = builtins.attrNames out.checks.x86_64-linux;
          check = out.checks.x86_64-linux.tests-torch213-cxx11-cpu-x86_64-linux.buildPhase;
          shell = out.devShells.x86_64-linux.default.shellHook;
          darwin = builtins.attrNames out.packages.aarch64-darwin;
        }""",
        rev=REV,
    )
    both = ["torch213-cxx11-cpu-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux"]
    assert out["bundle"] == both
    assert sorted(out["available"]) == both
    assert out["default"] == "relu-1-build"
    assert out["cudaHome"] == "/stub/cuda-13.0" and out["cpuHasCuda"] is False
    assert out["fixup"] is True  # no stripping: metadata.json's digest covers the extension's bytes
    assert out["inputs"] == ["/stub/python", "/stub/cmake", "/stub/ninja"]
    assert out["torch"] == "/stub/torch"
    assert out["checks"] == ["tests-torch213-cxx11-cpu-x86_64-linux"]
    assert "python -m pytest tests" in out["check"]
    assert 'export LOCAL_KERNELS="kernel-builder-examples/relu=$PWD/build"' in out["check"]
    assert out["shell"].strip() == 'export LOCAL_KERNELS="kernel-builder-examples/relu=$PWD/build"'
    darwin = sorted(
        md.variant(md.major_minor(e["torch"]), None, "aarch64-darwin")
        for e in md.entries("cpu", system="aarch64-darwin")
    )
    assert out["darwin"] == ["bundle", "default", *darwin]


def test_dirty_flakes_and_unique_ids_reach_the_build_line() -> None:
    phase = gen(
        "out.packages.x86_64-linux.torch213-cxx11-cpu-x86_64-linux.buildPhase",
        dirtyRev=f"{REV}-dirty",
        uniqueId="nix1",
    )
    argv = build_line(phase)
    assert argv[-5:] == ["--unique-id", "nix1", "--provenance-commit", REV, "--provenance-dirty"]
    # Outside git (no rev at all), kernel-builder records no commit.
    assert "--provenance" not in gen("out.packages.x86_64-linux.torch213-cxx11-cpu-x86_64-linux.buildPhase")


def test_a_kernel_below_the_flake_root_gets_its_own_local_kernels_path() -> None:
    shell = nix_eval(
        """{ root }: ((import ./lib { }).genKernelFlakeOutputs {
          self = { outPath = root; };
          path = root + "/examples/relu";
          pkgsFor = system: import ./tests/nix/stub-pkgs.nix { };
        }).devShells.x86_64-linux.default.shellHook""",
        root=str(REPO),
    )
    assert shell.strip() == 'export LOCAL_KERNELS="kernel-builder-examples/relu=$PWD/examples/relu/build"'


def test_another_torch_leaves_an_empty_bundle_and_no_checks() -> None:
    """A nixpkgs whose torch is in no matrix entry: the packages are still there (their build stops with the
    tool's --offline message), but nothing is bundled or tested."""
    out = nix_eval(
        """{ path }: let out = (import ./lib { }).genKernelFlakeOutputs {
          self = { outPath = path; };
          pkgsFor = system: import ./tests/nix/stub-pkgs.nix { torchVersion = "2.9.1"; cudaVersion = "12.8"; };
        }; in { bundle = out.packages.x86_64-linux.bundle.variants; checks = out.checks.x86_64-linux;
                 n = builtins.length (builtins.attrNames out.packages.x86_64-linux); }""",
        path=str(REPO / "examples" / "relu"),
    )
    # Every x86_64-linux cpu and cuda variant of relu in the matrix, then `bundle` and `default`.
    variants = len(md.entries("cpu", system=md.HOST_SYSTEM)) + len(md.entries("cuda", system=md.HOST_SYSTEM))
    assert out == {"bundle": [], "checks": {}, "n": variants + 2}


def test_a_python_per_torch_version_widens_the_bundle() -> None:
    """pythonFor picks the Python (hence torch) per variant: here one with torch 2.12 for the 2.12 entries."""
    bundle = nix_eval(
        """{ path }: ((import ./lib { }).genKernelFlakeOutputs {
          self = { outPath = path; };
          pkgsFor = system: import ./tests/nix/stub-pkgs.nix { };
          pythonFor = { pkgs, variant }:
            if variant != null && variant.entry != null && variant.entry.torch == "2.12"
            then (import ./tests/nix/stub-pkgs.nix { torchVersion = "2.12.0"; }).python3
            else pkgs.python3;
        }).packages.x86_64-linux.bundle.variants""",
        path=str(REPO / "examples" / "relu"),
    )
    assert bundle == [
        "torch212-cxx11-cpu-x86_64-linux", "torch213-cxx11-cpu-x86_64-linux",
        "torch212-cxx11-cu130-x86_64-linux", "torch213-cxx11-cu130-x86_64-linux",
    ]  # fmt: skip


# --- flake.nix and the template ----------------------------------------------------------------------------

FLAKE = """
let
  flake = import ./flake.nix;
  self = flake.outputs { inherit self; nixpkgs = ./tests/nix/stub-nixpkgs; } // { outPath = toString ./.; };
in
"""


def test_flake_outputs() -> None:
    out = nix_eval(
        FLAKE
        + """{
          systems = builtins.attrNames self.packages;
          package = { inherit (self.packages.x86_64-linux.kernel-builder) pname version;
                      dependencies = map (p: p.outPath) self.packages.x86_64-linux.kernel-builder.dependencies; };
          default = self.packages.x86_64-linux.default.pname;
          app = self.apps.x86_64-linux.default;
          shell = map (p: p.outPath) self.devShells.x86_64-linux.default.packages;
          shellPython = map (p: p.outPath) (builtins.head self.devShells.x86_64-linux.default.packages).packages;
          lib = builtins.isFunction self.lib.genKernelFlakeOutputs;
          matrix = builtins.length self.lib.buildMatrix;
          template = toString self.templates.default.path;
        }"""
    )
    assert out["systems"] == sorted(SYSTEMS)
    assert out["package"]["pname"] == "kernel-builder" and out["package"]["version"] == __version__
    # Runtime dependencies come from pyproject.toml; CMake and Ninja are programs, on the wrapper's PATH.
    assert out["package"]["dependencies"] == [
        f"/stub/python-{name}"
        for name in (
            "tomlkit",
            "packaging",
            "huggingface-hub",
            "scikit-build-core",
            "pyelftools",
            "auditwheel",
            "abi3info",
            "rich",
            "jinja2",
        )
    ]
    assert out["default"] == "kernel-builder"
    assert out["app"] == {
        "type": "app",
        "program": f"/stub/out/kernel-builder-{__version__}/bin/kernel-builder",
        "meta": {"description": "kernel-builder's command line"},
    }
    assert out["shell"] == ["/stub/python", "/stub/cmake", "/stub/ninja"]
    assert {"/stub/python-pytest", "/stub/python-mypy", "/stub/python-ruff", "/stub/torch"} <= set(
        out["shellPython"]
    )
    assert out["lib"] is True
    assert out["matrix"] == len(load_matrix().entries)
    assert out["template"] == str(REPO / "templates" / "kernel")


def test_template_flake_builds_its_variants(capsys: pytest.CaptureFixture[str]) -> None:
    """The template's flake, with this flake as its kernel-builder input, offers the template's variants."""
    names = nix_eval(
        FLAKE
        + """builtins.attrNames ((import ./templates/kernel/flake.nix).outputs {
          self = { outPath = toString ./templates/kernel; };
          kernel-builder = self;
        }).packages.x86_64-linux"""
    )
    expected = [
        c["variant"] for c in listed_for("x86_64-linux", listed(REPO / "templates" / "kernel", capsys))
    ]
    assert sorted(names) == sorted([*expected, "bundle", "default"])


# --- the derivations' phases, run with the real tool --------------------------------------------------------


def run_phases(phases: list[str], workdir: Path, out: Path, env: dict[str, str], offline: bool) -> str:
    """Run derivation phases as a Nix builder would: bash, `set -e`, `$out`, no network when ``offline``."""
    script = "set -euo pipefail\nrunHook() { :; }\n" + "\n".join(phases)
    argv = ["bash", "-c", script]
    if offline:
        argv = ["unshare", "--net", *argv]
    full_env = {**os.environ, **env, "out": str(out)}
    result = subprocess.run(argv, cwd=workdir, env=full_env, capture_output=True, text=True, check=False)
    assert result.returncode == 0, f"{script}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    return result.stdout


def network_namespaces() -> bool:
    return (
        shutil.which("unshare") is not None
        and subprocess.run(["unshare", "--net", "true"], capture_output=True, check=False).returncode == 0
    )


@pytest.mark.slow
def test_template_variant_derivation_builds_offline_and_its_check_passes(tmp_path: Path) -> None:
    """The phases of the template's torch213 cpu variant and of its check, with this environment standing in
    for the derivations' Python (torch 2.13.0): no network (a network namespace without interfaces where the
    host allows one), pip pointed nowhere, and no build environment created."""
    variant = "torch213-cxx11-cpu-x86_64-linux"
    template = REPO / "templates" / "kernel"
    outputs = tmp_path / "store"
    expr = """{ path, outDir, prefix, rev, variant }:
    let out = (import ./lib { }).genKernelFlakeOutputs {
      self = { outPath = path; inherit rev; };
      pkgsFor = system: import ./tests/nix/stub-pkgs.nix { inherit outDir; pythonPrefix = prefix; };
    }; p = out.packages.x86_64-linux.${variant}; c = out.checks.x86_64-linux."tests-${variant}";
    in { build = [ p.buildPhase p.installPhase ]; check = [ c.buildPhase c.installPhase ];
         out = p.outPath; checkOut = c.outPath; }"""
    drv = nix_eval(expr, path=str(template), outDir=str(outputs), prefix=sys.prefix, rev=REV, variant=variant)
    cache = tmp_path / "kernel-builder-cache"
    env = {
        "PATH": f"{Path(sys.prefix) / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "NIX_BUILD_CORES": "2",
        "TMPDIR": str(tmp_path),
        "KERNEL_BUILDER_CACHE": str(cache),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",  # nothing listens there
        "PIP_NO_INDEX": "1",
    }
    offline = network_namespaces()

    source = tmp_path / "build-src"
    shutil.copytree(
        template, source, ignore=shutil.ignore_patterns("build", ".kernel-builder", "__pycache__")
    )
    run_phases(drv["build"], source, Path(drv["out"]), env, offline)
    built = Path(drv["out"]) / variant
    data = metadata(built)
    assert data["provenance"] == {
        "kernel-builder": {"version": __version__},
        "kernel": {"commit": REV, "dirty": False},
        "torch": {"version": importlib.metadata.version("torch")},  # the build interpreter's: the tests' own
    }
    assert str(data["id"]).startswith("_my_kernel_cpu_")
    assert not (cache / "envs").exists(), "--offline created a build environment"

    checked = tmp_path / "check-src"
    shutil.copytree(
        template, checked, ignore=shutil.ignore_patterns("build", ".kernel-builder", "__pycache__")
    )
    report = run_phases(drv["check"], checked, Path(drv["checkOut"]), env, offline)
    assert re.search(r"\b14 passed\b", report) and "skipped" not in report, report
    assert Path(drv["checkOut"]).is_file()
    assert (checked / "build" / variant / "metadata.json").is_file()
