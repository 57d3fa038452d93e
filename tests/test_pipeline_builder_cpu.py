"""End-to-end cpu and noarch builds with the real toolchain (docs/layout.md
22, 23, 29, 33, and the issue's acceptance test for examples/relu).

Every project is built once per session (session-scoped fixtures) into a temporary directory; the tests
inspect the result. Built kernels are loaded in subprocesses (see ``build_runs``); the loads that only read
what one loader gives for each project share one interpreter per loader (``_loaded``). The tests of cases 23
and 29 change one project (``mutable``) in the order they are written.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from build_outputs import (
    assert_clean_extension,
    assert_one_ops_name,
    cmake_cache_value,
    compile_commands,
    contents,
    extension,
    python_includes,
    snapshot,
    symbol_table,
    torch_includes,
    undefined_symbols,
    variant_files,
)
from build_runs import (
    NO_COMPILER_CACHE,
    NO_IMPORT_CHECK,
    STATE_DIR,
    Built,
    build,
    cpu_python,
    git,
    git_init,
    metadata,
    printed,
    run_cli,
    run_json,
    run_parallel,
)
from compile_probes import (
    PROBE_BINDING_CU,
    PROBE_ID,
    PROBE_UNLISTED_HEADER,
    REGISTRATION_PROBE,
    probe_project,
    probe_value,
)
from cpu_projects import built_example, counter_project, noarch_project, write_tree
from matrix_data import CPU_VARIANT

from kernel_builder.config import load_project
from kernel_builder.pipeline.generate.registration import registration_header
from kernel_builder.pipeline.plan.unique_id import compute_unique_id

pytestmark = pytest.mark.slow


# ---------------------------------------------------------------------------------------------------------
# Fixtures: each project is built once


@pytest.fixture(scope="session")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """Built from inside the kernel directory, as authors do (`kernel-builder build` there)."""
    root = probe_project(tmp_path_factory.mktemp("probe") / "kb-probe")
    return Built(root, run_cli(["build", ".", "--unique-id", PROBE_ID, NO_IMPORT_CHECK], cwd=root).check())


@pytest.fixture(scope="session")
def relu(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return built_example("relu", tmp_path_factory)


@pytest.fixture(scope="session")
def noarch(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = noarch_project(tmp_path_factory.mktemp("noarch") / "kb-noarch")
    return Built(root, build(root, NO_IMPORT_CHECK), variant="torch-cpu")


def _counter(tmp_path_factory: pytest.TempPathFactory, name: str, *args: str, marker: str = "") -> Built:
    root = counter_project(tmp_path_factory.mktemp(name) / "kb-counter", marker=marker)
    return Built(root, build(root, *args))


@pytest.fixture(scope="session")
def counter_a(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return _counter(tmp_path_factory, "counter-a", NO_IMPORT_CHECK)


@pytest.fixture(scope="session")
def counter_a2(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The same sources as ``counter_a``, built clean (and compiled, not taken from a cache) elsewhere."""
    root = counter_project(tmp_path_factory.mktemp("counter-a2") / "kb-counter")
    return Built(root, build(root, NO_IMPORT_CHECK, env=NO_COMPILER_CACHE))


@pytest.fixture(scope="session")
def counter_b(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """``counter_a`` with one source byte changed ("original" -> "originaL" in a comment)."""
    return _counter(tmp_path_factory, "counter-b", NO_IMPORT_CHECK, marker="originaL")


@pytest.fixture(scope="session")
def counter_u(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """``counter_a``'s sources built with ``--unique-id``."""
    return _counter(tmp_path_factory, "counter-u", "--unique-id", "kb_second", NO_IMPORT_CHECK)


@pytest.fixture(scope="session")
def mutable(tmp_path_factory: pytest.TempPathFactory) -> Built:
    """A git repository with a cpu kernel and a Python-only torch-cuda variant; the tests below change it."""
    root = counter_project(tmp_path_factory.mktemp("mutable") / "kb-counter", backends=("cpu", "cuda"))
    git_init(root)
    return Built(root, build(root))


# ---------------------------------------------------------------------------------------------------------
# Loading each project with one loader: one interpreter per loader for the tests that only read the result


#: Per project: the op whose schema case 8 reads (None: not checked), and the call whose result is compared.
LOADED_CALLS = {
    "relu": ("relu", "module.relu(torch.tensor([-2.0, 3.0])).tolist()"),
    "noarch": (
        None,
        "[module.twice(torch.tensor([1.5, -2.0])).tolist(), "
        "getattr(torch.ops, module._ops.NAMESPACE).twice(torch.tensor([1.0])).tolist(), module.layers.LAYER]",
    ),
    "probe": ("extension_name", "module.value(5)"),
}
_LOADED: dict[str, dict[str, object]] = {}


def expected_ops_name(fixture: str, built: Built) -> str:
    """The ops name the project must get, computed from its sources (the probe is built with ``--unique-id``)."""
    project = load_project(built.root).project
    unique_id = PROBE_ID if fixture == "probe" else compute_unique_id(project)
    return f"_{project.py_name}_cpu_{unique_id}"


def _loaded(loader: str, request: pytest.FixtureRequest) -> dict[str, object]:
    """What ``<loader>.get_local_kernel`` gives for each project of :data:`LOADED_CALLS`, all loaded in one fresh
    interpreter (the projects have distinct ops names; which one a test reads is keyed): the module's name and
    file and the call's result; with ``kernel_builder`` also, through the name computed from the sources, the
    op's schema, the namespace prefix, the probe's ``extension_name()`` and ``value(7)``, and whether anything
    registered under the literal ``TORCH_EXTENSION_NAME``. A failure is reported for its project alone."""
    if loader not in _LOADED:
        builds = {fixture: request.getfixturevalue(fixture) for fixture in LOADED_CALLS}
        body = ""
        for index, (fixture, (op, call)) in enumerate(LOADED_CALLS.items(), start=1):
            name = expected_ops_name(fixture, builds[fixture])
            extra = ""
            if loader == "kernel_builder" and op is not None:
                extra = f"""
                    ops = torch.ops.{name}
                    entry["schema"] = str(getattr(ops, "{op}").default._schema)
                    entry["add"] = module._ops.add_op_namespace_prefix("x")
                    entry["literal"] = hasattr(torch.ops.TORCH_EXTENSION_NAME, "{op}")"""
                if fixture == "probe":
                    extra += """
                    entry["registered"] = [ops.extension_name(), ops.value(7),
                                           hasattr(torch.ops.TORCH_EXTENSION_NAME, "value")]"""
            body += f"""
                try:
                    module = {loader}.get_local_kernel(Path(sys.argv[{index}]))
                    entry = {{"module": module.__name__, "file": module.__file__, "result": {call}}}{extra}
                    seen["{fixture}"] = entry
                except Exception:
                    seen["{fixture}"] = traceback.format_exc()
                """
        code = f"import json, sys, traceback\nfrom pathlib import Path\nimport torch\nimport {loader}\nseen = {{}}\n"
        code += textwrap.dedent(body) + "print(json.dumps(seen))\n"
        seen = run_json(cpu_python(), code, *(builds[fixture].build for fixture in LOADED_CALLS))
        assert isinstance(seen, dict)
        _LOADED[loader] = seen
    return _LOADED[loader]


def loaded(loader: str, fixture: str, request: pytest.FixtureRequest) -> dict[str, object]:
    entry = _loaded(loader, request)[fixture]
    assert isinstance(entry, dict), f"loading {fixture} with {loader} failed:\n{entry}"
    return entry


# ---------------------------------------------------------------------------------------------------------
# Case 8: one ops name everywhere


@pytest.mark.parametrize("fixture", ["probe", "relu"])
def test_one_ops_name_everywhere(fixture: str, request: pytest.FixtureRequest) -> None:
    built: Built = request.getfixturevalue(fixture)
    name = expected_ops_name(fixture, built)
    assert_one_ops_name(built, name)
    op = "extension_name" if fixture == "probe" else "relu"
    seen = loaded("kernel_builder", fixture, request)
    assert {key: seen[key] for key in ("module", "add", "literal")} == {
        "module": name,
        "add": f"{name}::x",
        "literal": False,
    }
    schema = seen["schema"]
    assert isinstance(schema, str)
    assert schema.startswith(f"{name}::{op}(")


# ---------------------------------------------------------------------------------------------------------
# Case 9: registration.h, compiled directly and through the build


def test_registration_header_compiles_with_gxx_and_module_imports(tmp_path: Path) -> None:
    """C++17 and C++20 with g++; the C++20 object, linked, imports and registers the expanded namespace."""
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "registration.h").write_text(registration_header(), encoding="utf-8")
    (tmp_path / "probe.cpp").write_text(REGISTRATION_PROBE, encoding="utf-8")
    python = cpu_python()
    includes = [f"-I{tmp_path / 'include'}", f"-I{python_includes(python)}"] + [
        f"-isystem{p}" for p in torch_includes(python)
    ]
    name = "_kb_direct_cpu_0123456789"
    common = [
        "-fPIC",
        "-O0",
        f"-DTORCH_EXTENSION_NAME={name}",
        "-DPy_LIMITED_API=0x03090000",
        "-DCPU_KERNEL",
        *includes,
    ]
    commands = [
        ["g++", f"-std=c++{std}", *common, "-c", "probe.cpp", "-o", f"probe{std}.o"] for std in (17, 20)
    ]
    for result in run_parallel(commands, cwd=tmp_path):
        assert result.returncode == 0, f"{' '.join(result.args)}\n{result.stdout}"
    torch_lib = torch_includes(python)[0].parent / "lib"
    so = tmp_path / "pkg" / f"{name}.abi3.so"
    so.parent.mkdir()
    link = ["g++", "-shared", "-o", str(so), "probe20.o", f"-L{torch_lib}", "-ltorch", "-ltorch_cpu", "-lc10"]
    assert run_parallel([link], cwd=tmp_path)[0].returncode == 0
    seen = run_json(
        python,
        f"""
        import importlib.util, json, sys
        import torch
        spec = importlib.util.spec_from_file_location("{name}", sys.argv[1])
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        print(json.dumps({{
            "name": module.__name__,
            "attrs": sorted(a for a in dir(module) if not a.startswith("__")),
            "one": torch.ops.{name}.one(41),
            "literal": hasattr(torch.ops.TORCH_EXTENSION_NAME, "one"),
        }}))
        """,
        so,
    )
    assert seen == {"name": name, "attrs": [], "one": 42, "literal": False}


def test_built_module_registers_the_expanded_namespace(probe: Built, request: pytest.FixtureRequest) -> None:
    assert expected_ops_name("probe", probe) == probe.ops_name  # the name the shared load reached the ops by
    seen = loaded("kernel_builder", "probe", request)
    assert seen["registered"] == [probe.ops_name, probe_value(7, "cpu"), False]


# ---------------------------------------------------------------------------------------------------------
# Cases 10 and 11: the probe sources compiled, so every file saw exactly its definitions, flags and includes


def test_probe_definitions_and_canaries_cpu(probe: Built) -> None:
    assert (
        f"warning: [torch] src `{PROBE_BINDING_CU}` is a CUDA file and is not compiled into the cpu variant"
    ) in probe.run.stderr
    commands = compile_commands(probe)
    assert sorted(commands) == ["probe_cpu/probe_cpu.cpp", "torch-ext/torch_binding.cpp"]
    binding, kernel = commands["torch-ext/torch_binding.cpp"], commands["probe_cpu/probe_cpu.cpp"]
    assert "-DCANARY_TORCH_CXX=1" in binding and "-DCANARY_PROBE_CPU_CXX=1" not in binding
    assert "-DCANARY_PROBE_CPU_CXX=1" in kernel and "-DCANARY_TORCH_CXX=1" not in kernel
    assert "-std=c++20" in binding and "-std=c++20" in kernel


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("-DCUDA_KERNEL", "not exactly one *_KERNEL definition"),
        ("-UCANARY_PROBE_CPU_CXX", "CANARY_PROBE_CPU_CXX should reach this file"),
        ("-DCANARY_TORCH_CXX", "CANARY_TORCH_CXX must not reach this file"),
        ("-std=c++17", "not compiled as C++20"),
        ("-DPy_LIMITED_API=0x030A0000", "Py_LIMITED_API is not 0x03090000"),
        ("-UTORCH_EXTENSION_NAME", "TORCH_EXTENSION_NAME is not defined"),
        ("-DTORCH_EXTENSION_NAME=_kb_probe_cpu_other", "wrong TORCH_EXTENSION_NAME"),
    ],
)
def test_probe_rejects_wrong_definitions(probe: Built, extra: str, message: str) -> None:
    """The probe is not vacuous: its kernel file, recompiled with one definition wrong, fails."""
    command = compile_commands(probe)["probe_cpu/probe_cpu.cpp"].split()
    output = command.index("-o")
    del command[output : output + 2]
    compile_flag = command.index("-c")
    argv = [*command[:compile_flag], "-fsyntax-only", extra, *command[compile_flag:]]
    result = run_parallel([argv], cwd=probe.cmake_build)[0]
    assert result.returncode != 0
    assert message in result.stdout


# ---------------------------------------------------------------------------------------------------------
# Case 13: separate static locals; case 14: binary checks; case 16: layout


def test_inline_static_locals_stay_separate(counter_a: Built, counter_u: Built) -> None:
    assert counter_a.ops_name != counter_u.ops_name
    assert counter_u.ops_name == "_kb_counter_cpu_kb_second"
    for built in (counter_a, counter_u):
        assert " UNIQUE " not in symbol_table(extension(built.variant_dir))
    seen = run_json(
        cpu_python(),
        """
        import json, sys
        from pathlib import Path
        import kernel_builder
        a = kernel_builder.get_local_kernel(Path(sys.argv[1]))
        u = kernel_builder.get_local_kernel(Path(sys.argv[2]))
        print(json.dumps([a.bump(), a.bump(), a.bump(), u.bump(), a.bump(), u.bump()]))
        """,
        counter_a.build,
        counter_u.build,
    )
    assert seen == [1, 2, 3, 1, 4, 2]


@pytest.mark.parametrize("fixture", ["probe", "relu", "counter_a"])
def test_binary_checks(fixture: str, request: pytest.FixtureRequest) -> None:
    built: Built = request.getfixturevalue(fixture)
    assert_clean_extension(extension(built.variant_dir))


def test_layout_aot(probe: Built, relu: Built) -> None:
    assert variant_files(probe.build) == [
        f"{CPU_VARIANT}/",
        f"{CPU_VARIANT}/__init__.py",
        f"{CPU_VARIANT}/_kb_probe_cpu_probe.abi3.so",
        f"{CPU_VARIANT}/_ops.py",
        f"{CPU_VARIANT}/metadata.json",
    ]
    assert variant_files(relu.build) == [
        "CARD.md",
        f"{CPU_VARIANT}/",
        f"{CPU_VARIANT}/__init__.py",
        f"{CPU_VARIANT}/_ops.py",
        f"{CPU_VARIANT}/{relu.ops_name}.abi3.so",
        f"{CPU_VARIANT}/layers.py",
        f"{CPU_VARIANT}/metadata.json",
        f"{CPU_VARIANT}/symbols.json",  # its import check ran (the probe's did not)
    ]
    assert (relu.build / "CARD.md").read_bytes() + b"\n" == (
        relu.root / "CARD.md"
    ).read_bytes()  # as rendered: one newline less


def test_layout_noarch(noarch: Built) -> None:
    expected = ["__init__.py", "_ops.py", "data.json", "layers/", "layers/__init__.py", "metadata.json"]
    for variant in ("torch-cpu", "torch-cuda"):
        assert variant_files(noarch.build / variant) == expected
    assert sorted(p.name for p in noarch.build.iterdir()) == ["torch-cpu", "torch-cuda"]
    ops_py = (noarch.variant_dir / "_ops.py").read_text(encoding="utf-8")
    assert ops_py.startswith("# Generated by kernel-builder")
    assert "torch-ext/kb_noarch/_ops.py is replaced by the generated _ops.py" in noarch.run.stderr
    cpu, cuda = metadata(noarch.build / "torch-cpu"), metadata(noarch.build / "torch-cuda")
    unique_id = compute_unique_id(load_project(noarch.root).project)
    assert (cpu["id"], cuda["id"]) == (f"_kb_noarch_cpu_{unique_id}", f"_kb_noarch_cuda_{unique_id}")


# ---------------------------------------------------------------------------------------------------------
# Case 18 and the acceptance test: loading with PyPI `kernels` and with our loader


def test_relu_cpu_variant_runs_with_kernels_from_pypi(relu: Built) -> None:
    """The issue's acceptance: kernels.get_local_kernel(Path("build")) of examples/relu runs relu on the CPU."""
    seen = run_json(
        cpu_python(),
        """
        import json
        from pathlib import Path
        import torch
        import kernels
        relu = kernels.get_local_kernel(Path("build"))
        results = {}
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
            x = torch.linspace(-3, 3, 1001, dtype=dtype)
            x[5] = float("nan")
            results[str(dtype)] = torch.equal(relu.relu(x).nan_to_num(7.0), torch.relu(x).nan_to_num(7.0))
        out = torch.empty(4)
        relu.relu(torch.tensor([-1.0, 0.0, 2.0, -0.5]), out=out)
        results["out"] = out.tolist()
        results["module"] = relu.__name__
        print(json.dumps(results))
        """,
        cwd=relu.root,
    )
    assert seen == {
        "torch.float32": True,
        "torch.bfloat16": True,
        "torch.float16": True,
        "torch.float64": True,
        "out": [0.0, 0.0, 2.0, 0.0],
        "module": relu.ops_name,
    }


@pytest.mark.parametrize("loader", ["kernels", "kernel_builder"])
@pytest.mark.parametrize("fixture", ["relu", "noarch", "probe"])
def test_loads_with_both_loaders(loader: str, fixture: str, request: pytest.FixtureRequest) -> None:
    built: Built = request.getfixturevalue(fixture)
    expected = {
        "relu": [0.0, 3.0],
        "noarch": [[3.0, -4.0], [2.0], "twice"],
        "probe": probe_value(5, "cpu"),
    }[fixture]
    entry = loaded(loader, fixture, request)
    seen = {key: entry[key] for key in ("module", "file", "result")}
    assert seen == {
        "module": built.ops_name,
        "file": str(built.variant_dir / "__init__.py"),
        "result": expected,
    }


@pytest.mark.parametrize(
    "load",
    [
        'kernels.get_kernel("kb-tests/kernel", version=1)',
        'kernel_builder.loader.local.load_local_override("kb-tests/kernel")',
    ],
)
@pytest.mark.parametrize("fixture", ["relu", "noarch"])
def test_loads_through_local_kernels(fixture: str, load: str, request: pytest.FixtureRequest) -> None:
    """``LOCAL_KERNELS=<repo-id>=<kernel root>/build`` serves ``get_kernel`` (PyPI) and our override lookup."""
    built: Built = request.getfixturevalue(fixture)
    seen = run_json(
        cpu_python(),
        f"""
        import json
        import kernels
        import kernel_builder.loader.local
        module = {load}
        print(json.dumps(module.__name__))
        """,
        env={"LOCAL_KERNELS": f"kb-tests/kernel={built.build}"},
    )
    assert seen == built.ops_name


# ---------------------------------------------------------------------------------------------------------
# Case 19: side by side; case 33: reproducible clean builds


def test_one_byte_gives_another_kernel_loaded_side_by_side(
    counter_a: Built, counter_a2: Built, counter_b: Built
) -> None:
    assert counter_a.ops_name == counter_a2.ops_name
    assert counter_a.ops_name != counter_b.ops_name
    for loader in ("kernel_builder", "kernels"):
        seen = run_json(
            cpu_python(),
            f"""
            import json, sys
            from pathlib import Path
            import {loader}
            a = {loader}.get_local_kernel(Path(sys.argv[1]))
            b = {loader}.get_local_kernel(Path(sys.argv[2]))
            print(json.dumps([a.__name__, b.__name__, a.bump(), a.bump(), b.bump()]))
            """,
            counter_a.build,
            counter_b.build,
        )
        assert seen == [counter_a.ops_name, counter_b.ops_name, 1, 2, 1], loader


def test_clean_cpu_builds_are_byte_identical(counter_a: Built, counter_a2: Built) -> None:
    assert counter_a.root != counter_a2.root
    assert metadata(counter_a.variant_dir)["digest"] == metadata(counter_a2.variant_dir)["digest"]
    files = variant_files(counter_a.variant_dir)
    assert files == variant_files(counter_a2.variant_dir)
    for rel in files:
        if not rel.endswith("/"):
            assert (counter_a.variant_dir / rel).read_bytes() == (
                counter_a2.variant_dir / rel
            ).read_bytes(), rel


# ---------------------------------------------------------------------------------------------------------
# Case 22: header accounting


def test_unlisted_header_warning(probe: Built) -> None:
    """Exactly the one unlisted header, though the build ran in the kernel directory: objects, libraries and
    sources in Ninja's records are never reported as headers."""
    assert (
        f"warning: header `{PROBE_UNLISTED_HEADER}` is included by a compiled file but listed in no `src`: it is not "
        "part of the unique id, and a sandboxed build would not see it; add it to the `src` of the kernel that uses it"
    ) in probe.run.stderr
    assert probe.run.stderr.count("is included by a compiled file") == 1


# ---------------------------------------------------------------------------------------------------------
# Cases 23 and 29: incremental behaviour on one git repository (these tests change it, in this order)


def _state(built: Built) -> dict[str, object]:
    """What a no-op build must not touch: build/ (bytes and mtimes), the CMake cache and the linked module."""
    so = next(built.cmake_build.glob("*.abi3.so"))
    return {
        "build": snapshot(built.build),
        "cache": (built.cmake_build / "CMakeCache.txt").stat().st_mtime_ns,
        "so": (so.name, so.stat().st_mtime_ns),
        "objects": sorted((p.name, p.stat().st_mtime_ns) for p in built.cmake_build.rglob("*.o")),
    }


def test_noop_rebuild_is_fast_and_touches_nothing(mutable: Built) -> None:
    """What makes a no-op fast: it runs no command and changes no file. How fast is benchmarks/build.py's to
    say (``noop``): a wall-clock bound here would only measure how busy the machine is."""
    before = _state(mutable)
    run = run_cli(["build", mutable.root, "--verbose"]).check()
    printed("no-op rebuild (cpu + noarch, whole CLI call)", run.seconds)
    assert _state(mutable) == before
    # Nothing Ninja would read changed since the last build (the record keeps their identity): no CMake, no Ninja.
    assert "ninja: no work to do." not in run.output and "+ " not in run.stderr, run.output
    assert " -G Ninja " not in run.output  # no configure
    assert "configuring" not in run.stderr and "assembling" not in run.stderr
    lines = run.stdout.splitlines()
    assert any(line.split()[:3] == [CPU_VARIANT, "up", "to"] for line in lines), run.stdout
    assert any(line.split()[:3] == ["torch-cuda", "up", "to"] for line in lines), run.stdout


def test_noop_rebuild_skips_torch_check_configure_and_import_check(
    mutable: Built, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from kernel_builder import cli
    from kernel_builder.pipeline import builder
    from kernel_builder.pipeline.check import import_check
    from kernel_builder.pipeline.compile import ninja_build
    from kernel_builder.pipeline.generate import project as project_stage

    def forbidden(what: str):  # type: ignore[no-untyped-def]
        def fail(*args: object, **kwargs: object) -> None:
            raise AssertionError(f"a no-op rebuild ran the {what}")

        return fail

    monkeypatch.setattr(project_stage, "torch_details", forbidden("Torch check"))
    monkeypatch.setattr(ninja_build, "configure", forbidden("configure"))
    monkeypatch.setattr(import_check, "run_import_check", forbidden("import check"))
    monkeypatch.setattr(builder, "assemble", forbidden("assembly"))
    before = _state(mutable)
    assert cli.main(["build", str(mutable.root)]) == 0, capfd.readouterr()
    assert _state(mutable) == before


def test_selection_options_do_not_rebuild(mutable: Built) -> None:
    """``--python`` relative to the working directory names the interpreter a plain build uses, and ``--backend``
    only selects: both leave the variants up to date."""
    before = _state(mutable)
    relative = os.path.relpath(sys.executable, mutable.root)
    run = run_cli(["build", ".", "--python", relative], cwd=mutable.root).check()
    assert _state(mutable) == before, run.output
    run = run_cli(["build", mutable.root, "--backend", "cpu"]).check()
    assert _state(mutable) == before, run.output
    assert "configuring" not in run.stderr


def test_git_status_shows_only_build_outputs(mutable: Built) -> None:
    status = git(mutable.root, "status", "--porcelain", "--untracked-files=all", "--ignored").splitlines()
    outside = [
        line
        for line in status
        if not line[3:].startswith(("build/", f"{STATE_DIR}/"))
        and line[3:] not in ("torch-ext/registration.h", "compile_commands.json")
    ]
    assert outside == []
    assert "?? torch-ext/registration.h" in status
    # The editors' compile database, a link into the state directory.
    assert "?? compile_commands.json" in status
    assert os.readlink(mutable.root / "compile_commands.json") == f"{STATE_DIR}/compile_commands.json"


def test_failed_compile_keeps_previous_variants(mutable: Built) -> None:
    build(mutable.root, NO_IMPORT_CHECK)
    before = snapshot(mutable.variant_dir)
    noarch_before = variant_files(mutable.build / "torch-cuda")
    source = mutable.root / "counter" / "bump.cpp"
    original = source.read_text(encoding="utf-8")
    try:
        source.write_text(original + "\nthis is not C++;\n", encoding="utf-8")
        line = len((original + "\n").splitlines()) + 1
        run = run_cli(["build", mutable.root, NO_IMPORT_CHECK])
        assert run.returncode == 1, run.output
        # The first error, with the file as written in the project, and no compiler command without -v.
        assert f"error: {CPU_VARIANT}: compilation failed: counter/bump.cpp:{line}:" in run.stderr
        assert "../" not in run.output and "--build" not in run.stderr
        assert snapshot(mutable.variant_dir) == before
        # The pure-Python variant was built again (the sources' id changed), without the import check, so
        # without the symbols.json the fixture's first build wrote.
        assert variant_files(mutable.build / "torch-cuda") == [
            f for f in noarch_before if f != "symbols.json"
        ]
        assert metadata(mutable.build / "torch-cuda")["name"] == "kb-counter"
        assert [p.name for p in mutable.build.iterdir() if p.name.startswith(".")] == []
    finally:
        source.write_text(original, encoding="utf-8")
    # The failed build reconfigured the build directory, so the sources of the last good build are built again,
    # and give the same bytes; but for symbols.json, which only a build that runs the import check writes (the
    # fixture's first build did), and metadata.json, whose digest lists it.
    run = build(mutable.root, NO_IMPORT_CHECK)
    rebuilt = contents(mutable.variant_dir)
    assert "symbols.json" not in rebuilt
    unchanged = {
        k: v[0] for k, v in before.items() if v[0] != "dir" and k not in ("symbols.json", "metadata.json")
    }
    assert {k: v for k, v in rebuilt.items() if k != "metadata.json"} == unchanged, run.output


def test_source_change_rebuilds(mutable: Built) -> None:
    build(mutable.root, NO_IMPORT_CHECK)
    old_id = mutable.ops_name
    source = mutable.root / "counter" / "bump.cpp"
    source.write_text(source.read_text(encoding="utf-8").replace("original", "changed!"), encoding="utf-8")
    run = build(mutable.root, NO_IMPORT_CHECK)
    assert "compiling" in run.stderr
    new_id = mutable.ops_name
    assert new_id != old_id
    assert new_id == f"_kb_counter_cpu_{compute_unique_id(load_project(mutable.root).project)}"
    assert [p.name for p in mutable.variant_dir.glob("*.so")] == [f"{new_id}.abi3.so"]
    assert metadata(mutable.variant_dir)["provenance"]["kernel"]["dirty"] is True  # type: ignore[index]


def test_unlisted_header_change_relinks_under_the_same_id(mutable: Built) -> None:
    """A header outside the id inputs: the up-to-date path's Ninja run recompiles, relinks and reassembles."""
    build(mutable.root, NO_IMPORT_CHECK)
    old_id, old_digest = mutable.ops_name, metadata(mutable.variant_dir)["digest"]
    header = mutable.root / "counter" / "offset.h"
    header.write_text("#pragma once\n#define KB_COUNTER_OFFSET 100\n", encoding="utf-8")
    run = build(mutable.root, NO_IMPORT_CHECK)
    assert "relinked; assembling again" in run.stderr and "configuring" not in run.stderr
    assert mutable.ops_name == old_id
    assert metadata(mutable.variant_dir)["digest"] != old_digest
    seen = run_json(
        cpu_python(),
        """
        import json, sys
        from pathlib import Path
        import kernel_builder
        print(json.dumps(kernel_builder.get_local_kernel(Path(sys.argv[1])).bump()))
        """,
        mutable.build,
    )
    assert seen == 101


def test_removed_variant_is_assembled_again(mutable: Built) -> None:
    build(mutable.root, NO_IMPORT_CHECK)
    before = contents(mutable.variant_dir)
    shutil.rmtree(mutable.variant_dir)
    run = build(mutable.root, NO_IMPORT_CHECK)
    assert "assembling" in run.stderr
    assert contents(mutable.variant_dir) == before


def test_tool_version_change_rebuilds(mutable: Built) -> None:
    build(mutable.root, NO_IMPORT_CHECK)
    cache_before = (mutable.cmake_build / "CMakeCache.txt").stat().st_mtime_ns
    run = run_cli(
        ["build", mutable.root, NO_IMPORT_CHECK],
        prelude="import kernel_builder\nkernel_builder.__version__ = '99.0.0'",
    ).check()
    assert "configuring" in run.stderr
    data = metadata(mutable.variant_dir)
    assert data["provenance"]["kernel-builder"] == {"version": "99.0.0"}  # type: ignore[index]
    project = load_project(mutable.root).project
    assert data["id"] == f"_kb_counter_cpu_{compute_unique_id(project, '99.0.0')}"
    assert data["id"] != f"_kb_counter_cpu_{compute_unique_id(project)}"
    assert (mutable.cmake_build / "CMakeCache.txt").stat().st_mtime_ns != cache_before


def test_build_type_reaches_cmake_and_rebuilds(mutable: Built, probe: Built) -> None:
    assert cmake_cache_value(probe.cmake_build, "CMAKE_BUILD_TYPE") == "Release"  # the default
    for build_type in ("Debug", "RelWithDebInfo", "Release"):
        before = snapshot(mutable.variant_dir)
        run = build(mutable.root, "--build-type", build_type, NO_IMPORT_CHECK)
        assert "configuring" in run.stderr and "compiling" in run.stderr
        assert cmake_cache_value(mutable.cmake_build, "CMAKE_BUILD_TYPE") == build_type
        assert snapshot(mutable.variant_dir) != before


def test_check_abi_on_relu_reports_nothing(relu: Built) -> None:
    """Built on Debian 12 (gcc 12, glibc 2.36), relu is still manylinux_2_28-clean: the generated compatibility
    header keeps libstdc++ off __libc_single_threaded@GLIBC_2.32 (docs/manylinux.md)."""
    run = run_cli(["check-abi", str(relu.root)])
    assert (run.returncode, run.stdout) == (0, "checked 1 extension(s): no violations\n"), run.output
    assert "not manylinux_2_28-compliant" not in relu.run.output  # and the build warned about nothing
    assert "__libc_single_threaded" not in undefined_symbols(extension(relu.variant_dir))


ABI_PROJECT = {
    "build.toml": """
        [general]
        name = "abi-probe"
        version = 1
        edition = 5
        license = "Apache-2.0"
        backends = ["cpu"]

        [torch]
        src = ["torch-ext/binding.cpp"]

        [kernel.probe]
        backend = "cpu"
        depends = []
        src = ["probe/probe.cpp"]
    """,
    "torch-ext/binding.cpp": """
        #include "registration.h"
        REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
    """,
    "torch-ext/abi_probe/__init__.py": "from ._ops import ops\n",
    "probe/probe.cpp": """
        #include <charconv>
        // Formatting a double with std::to_chars needs libstdc++'s GLIBCXX_3.4.29 (GCC 11): nothing but an
        // older compiler avoids it, so check-abi reports it.
        int format(char *out, int size, double value) { return std::to_chars(out, out + size, value).ptr - out; }
    """,
}
TO_CHARS = "_ZSt8to_charsPcS_d"
NON_ABI3 = """
    #include <Python.h>
    // Not part of the limited API: declared by hand, as careless code would.
    extern "C" const char *PyUnicode_AsUTF8(PyObject *);
    extern "C" const char *utf8(PyObject *o) { return PyUnicode_AsUTF8(o); }
"""


def test_build_abi_checks_fail_python_abi_and_warn_symbol_versions(tmp_path: Path) -> None:
    """Python-ABI violations fail the variant; newer symbol versions only warn, unless --werror."""
    root = write_tree(tmp_path / "abi-probe", ABI_PROJECT)
    warned = build(root, "--no-import-check")
    assert warned.returncode == 0, warned.output
    assert f"{TO_CHARS}@GLIBCXX_3.4.29 is not allowed by manylinux_2_28" in warned.output

    # A no-op rebuild judges the findings recorded for this very extension instead of reading it again.
    unreadable = "import kernel_builder.pipeline.check.abi as abi\ndef refuse(*a, **k): raise AssertionError('ELF read again')\nabi.check_library = refuse\n"
    again = run_cli(["build", str(root), "--no-import-check"], prelude=unreadable)
    assert again.returncode == 0, again.output
    assert "up to date" in again.output
    assert f"{TO_CHARS}@GLIBCXX_3.4.29 is not allowed by manylinux_2_28" in again.output

    strict = run_cli(["build", str(root), "--no-import-check", "--werror"], prelude=unreadable)
    assert strict.returncode == 1
    assert f"ABI check failed:\n  symbol-version: {TO_CHARS}@GLIBCXX_3.4.29" in strict.output
    assert (root / "build" / CPU_VARIANT).is_dir()  # the earlier good variant is untouched

    (root / "probe" / "non_abi3.cpp").write_text(NON_ABI3)
    text = (
        (root / "build.toml")
        .read_text()
        .replace('src = ["probe/probe.cpp"]', 'src = ["probe/probe.cpp", "probe/non_abi3.cpp"]')
    )
    (root / "build.toml").write_text(text)
    failed = run_cli(["build", str(root), "--no-import-check"])
    assert failed.returncode == 1
    assert "python-abi: PyUnicode_AsUTF8 is not in the stable ABI (abi3)" in failed.output
