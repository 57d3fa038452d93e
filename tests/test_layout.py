"""Tests mirror the package: each module of kernel_builder has a test file named after it, or is listed below.

``kernel_builder/formats/matrix.py`` is tested in ``tests/test_formats_matrix.py``; a module may have several
test files, each named after it with a suffix (``tests/test_pipeline_builder_cpu.py`` for
``kernel_builder/pipeline/builder.py``). Test files named after something else (the docs, the examples, the Nix
lib, the GPU runs, the test doubles) are fine: this test only asks that a module's tests be easy to find.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "kernel_builder"
TESTS = REPO / "tests"

# Modules without a test file of their own, each with where it is tested (or why it needs none). Adding a
# module means adding tests/test_<package path>_<module>.py, or a line here that says why not.
TESTED_ELSEWHERE = {
    # authoring
    "authoring.pytest_plugin": "the pytest plugin of `kernel-builder test`: test_authoring_devtest.py runs it",
    # build stages
    "pipeline.generate.ops": "the generation stage's tests: test_pipeline_generate.py",
    "pipeline.options": "which options are inputs: test_pipeline_record.py; each option through test_pipeline_plan_candidates.py",
    "pipeline.generate.cmake": "the generation stage's tests: test_pipeline_generate.py",
    "pipeline.plan.components": "values only: the planner's tests and test_pipeline_plan_shared_sources.py",
    "pipeline.plan.github_matrix": "the `matrix` command's GitHub output: test_docs_ci.py",
    "pipeline.plan.sources": "the unique id and packaging tests: test_pipeline_plan_unique_id.py, test_pipeline_package.py",
    # common
    "common.diagnostics": "every diagnostic the config and plan tests check (test_config_load_errors.py)",
    "common.progress": "the build output of test_pipeline_plan_candidates.py",
    "common.runner": "the build runner: the end-to-end builds (test_pipeline_builder_*.py)",
    # config: one loader, tested as a whole through load_project and the CLI
    "config.archs": "test_config_load_errors.py (E20) and test_pipeline_plan_capabilities.py",
    "config.context": "test_config_load_*.py",
    "config.framework": "test_config_load_*.py",
    "config.general": "test_config_load_*.py",
    "config.kernels": "test_config_load_*.py",
    "config.limits": "test_config_load_hostile.py",
    "config.migrate": "test_config_update.py and test_config_forms.py (legacy forms)",
    "config.model": "test_config_forms.py",
    "config.paths": "test_config_load_hostile.py",
    "config.positions": "the file:line of every message in test_config_load_errors.py",
    "config.readers": "test_config_load_*.py",
    "config.schema": "test_config_jsonschema.py and test_docs_build_toml.py",
    "config.values": "test_config_load_*.py",
    # exceptions
    "layers.errors": "test_layers_kernelizer.py, test_layers_mapping.py",
    "loader.errors": "test_loader_*.py",
    # formats
    "formats.dependencies": "test_config_forms.py and test_pipeline_environment_cutlass.py",
    "formats.lockfile": "test_loader_lock.py",
    # the Hub package: its operations through the loader's and the publisher's tests, each concern where it shows
    "hub.errors": "the causes each failure is reported with: test_hub_network.py",
    "hub.environment": "the user agent and offline mode: test_loader_remote.py, test_common_hub_env.py",
    "hub.repos": "values only; used by every Hub test (test_loader_remote.py, test_publish_upload.py)",
    "hub.operations": "test_loader_remote.py, test_publish_upload.py, test_hub_network.py, test_hub_cache_links.py",
    # layers (the kernelize API)
    "layers.checks": "test_layers_marks.py",
    "layers.device": "test_layers_kernelizer.py, test_layers_mapping.py",
    "layers.mode": "test_layers_mapping.py",
    "layers.repositories": "test_layers_kernelizer.py (local and Hub layer repositories)",
    # loader
    "loader.arguments": "test_loader_remote.py (get_kernel's arguments)",
    "loader.caller": "test_loader_remote.py",
    "loader.download": "test_loader_lock.py (`kernel-builder download`)",
    "loader.sequence": "every load runs it: test_loader_remote.py, test_loader_local.py, test_loader_locked_dependencies.py",
    "loader.hub_steps": "the Hub's load sequence, run by test_loader_remote.py and test_loader_hub_dependencies.py",
    "loader.lockcheck": "test_loader_lock.py",
    "loader.trust": "test_loader_hostile.py, test_loader_remote.py",
    # publishing
    "publish.abi_gate": "test_publish_upload.py",
    # backends: one module each, tested together through the registry
    **{
        f"backends.{name}": "test_backends.py (the registry and every built-in backend through it)"
        for name in (
            "registry",
            "gpu_archs",
            "cpu",
            "cuda",
            "rocm",
            "xpu",
            "metal",
            "neuron",
            "tpu",
            "cann",
            "noarch",
        )
    },
    # commands: thin adapters over library functions, tested together (and end to end by the CLI tests)
    **{
        f"commands.{name}": "test_commands.py (and the end-to-end CLI tests of each command)"
        for name in (
            "_shared",
            "bench",
            "build",
            "cache",
            "check_abi",
            "check_config",
            "describe_api",
            "download",
            "fill_card",
            "generate",
            "info",
            "init",
            "list_variants",
            "lock",
            "matrix",
            "schema",
            "test",
            "update_build",
            "upload",
            "variants",
            "verify_signature",
            "versions",
        )
    },  # fmt: skip
}


# Test files whose names look like a module's tests but are about something else.
NOT_A_MODULE_TEST = {
    "test_hub_server.py": "tests/hub_server.py, the Hub double (not kernel_builder/hub/)",
}


def modules() -> list[str]:
    """Every module of the package, dotted below ``kernel_builder`` (packages' ``__init__`` excluded)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        found.append(".".join(path.relative_to(PACKAGE).with_suffix("").parts))
    return found


def files_named_after(module: str) -> list[str]:
    stem = "test_" + module.replace(".", "_")
    return sorted(
        p.name
        for p in TESTS.glob("test_*.py")
        if (p.stem == stem or p.stem.startswith(stem + "_")) and p.name not in NOT_A_MODULE_TEST
    )


def test_every_module_has_tests_named_after_it() -> None:
    untested = [m for m in modules() if not files_named_after(m) and m not in TESTED_ELSEWHERE]
    assert untested == [], (
        "modules without tests/test_<package>_<module>.py; add one, or list the module in TESTED_ELSEWHERE "
        "with where it is tested: " + ", ".join(untested)
    )


def test_the_allow_list_names_modules_without_their_own_tests() -> None:
    """Entries go away once the module gets a test file, or is removed."""
    known = set(modules())
    assert sorted(m for m in TESTED_ELSEWHERE if m not in known) == []
    assert sorted(m for m in TESTED_ELSEWHERE if files_named_after(m)) == []


def test_the_allow_list_points_at_test_files_that_exist() -> None:
    named = {word.strip("(),") for reason in TESTED_ELSEWHERE.values() for word in reason.split()}
    files = {word for word in named if word.startswith("test_") and word.endswith(".py")}
    assert (
        sorted(f for f in files if not list(TESTS.glob(f))) == []
    )  # a name or a pattern (test_config_load_*.py)
