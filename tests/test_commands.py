"""kernel_builder.commands: one module per command, each a thin adapter over a library function that these tests
call directly (the commands whose library functions no other test calls without the CLI)."""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from cpu_projects import noarch_project, quick_project, write_tree
from foreground_jobs import restore_ctrl_c
from hub_server import HubServer
from matrix_data import CPU_VARIANT
from publish_fixtures import CPU, CUDA, REPO, write_kernel
from publish_fixtures import cpu_machine as cpu_machine  # noqa: F401 (fixture)

from kernel_builder import commands
from kernel_builder.cli import build_parser, main
from kernel_builder.config import load_project
from kernel_builder.errors import ConfigError, UsageError


def parser_commands() -> dict[str, argparse.ArgumentParser]:
    subparsers = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subparsers.choices)


def test_every_command_is_implemented_by_its_own_module() -> None:
    parsers = parser_commands()
    assert list(parsers) == list(commands.COMMANDS)
    modules = {m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")}
    assert modules == {name.replace("-", "_") for name in parsers}, "one module per command, no other"
    for name, parser in parsers.items():
        handler = parser.get_default("handler")
        module = importlib.import_module(commands.module_name(name))
        assert handler is module.run, f"{name} runs {handler.__module__}.{handler.__qualname__}"
        assert callable(module.register)


def test_assembling_the_parser_imports_no_library_module() -> None:
    """`kernel-builder --help` stays fast: command modules import the library only when their command runs."""
    code = textwrap.dedent(
        """
        import sys
        from kernel_builder.cli import build_parser
        build_parser()
        library = ("kernel_builder.pipeline", "kernel_builder.config", "kernel_builder.loader", "kernel_builder.publish",
                   "kernel_builder.authoring", "kernel_builder.formats", "kernel_builder.layers", "kernel_builder.hub",
                   "torch", "huggingface_hub", "packaging")
        loaded = sorted(m for m in sys.modules if m.startswith(library))
        assert not loaded, loaded
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_list_variants_without_probe_is_every_candidate(tmp_path: Path) -> None:
    from kernel_builder.pipeline.plan.candidates import all_candidates
    from kernel_builder.pipeline.plan.listing import list_variants

    project = load_project(quick_project(tmp_path / "k")).project
    listed = list_variants(project, probe=False)
    assert listed == all_candidates(project)
    assert CPU_VARIANT in {c.name for c in listed}
    assert "torch-cuda" in {c.name for c in listed}


def test_list_variants_probe_counts_the_running_torch_as_served(tmp_path: Path) -> None:
    """The running interpreter's variant needs no pip check: it is buildable without one."""
    from kernel_builder.pipeline.plan.listing import list_variants

    project = load_project(noarch_project(tmp_path / "k")).project
    probed = list_variants(project, probe=True)
    assert [c.name for c in probed] == [c.name for c in list_variants(project, probe=False)]
    assert all(c.buildable for c in probed), [(c.name, c.reason) for c in probed]


def test_check_variants_refuses_a_tree_without_variants(tmp_path: Path) -> None:
    from kernel_builder.pipeline.check.abi import check_variants

    with pytest.raises(UsageError, match="does not exist"):
        check_variants(tmp_path / "missing")
    with pytest.raises(UsageError, match="no build variants"):
        check_variants(tmp_path)
    variant = write_tree(tmp_path / "build" / CPU_VARIANT, {"metadata.json": "{}\n", "k/__init__.py": ""})
    assert variant == tmp_path / "build" / CPU_VARIANT
    report = check_variants(tmp_path)
    assert report.libraries == [] and report.violations == []
    assert report.lines() == ["checked 0 extension(s): no violations"]
    assert check_variants(variant).lines() == report.lines()


def test_lock_and_download_name_the_missing_file_as_configuration_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kernel_builder.loader.download import download_locked
    from kernel_builder.loader.lock import lock_project

    with pytest.raises(ConfigError, match="pyproject.toml") as locked:
        lock_project(tmp_path, log=print)
    assert locked.value.exit_code == 2 and locked.value.diagnostics == []
    with pytest.raises(ConfigError, match="kernels.lock"):
        download_locked(tmp_path, log=print)
    # The command line prints the message once, plainly, and exits 2.
    assert main(["download", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "kernels.lock" in err and "Traceback" not in err


def test_generate_writes_the_wheel_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = quick_project(tmp_path / "k")
    target = root / "pyproject.toml"
    assert main(["generate", str(root)]) == 0
    assert f"wrote {target}" in capsys.readouterr().out
    assert "scikit-build-core" in target.read_text(encoding="utf-8")
    assert main(["generate", str(root)]) == 2
    assert "pass --force" in capsys.readouterr().err
    # The project's own registration.h shadows the generated one: said as `build` says it.
    own = root / "torch-ext" / "registration.h"
    own.write_text("// the project's own\n", encoding="utf-8")
    assert main(["generate", str(root), "--force"]) == 0
    err = capsys.readouterr().err
    assert (
        "warning: torch-ext/registration.h is the project's own: it shadows the generated registration.h"
        in err
    )
    assert own.read_text(encoding="utf-8") == "// the project's own\n"


@pytest.mark.slow
def test_run_benchmarks_times_the_built_variant(tmp_path: Path) -> None:
    from kernel_builder.authoring.bench import run_benchmarks
    from kernel_builder.pipeline.builder import Builder, BuildOptions

    root = noarch_project(tmp_path / "k")
    write_tree(
        root,
        {
            "benchmarks/bench_twice.py": """
                import torch

                from kernel_builder.authoring.bench import Case


                def bench_twice(kernel, device):
                    x = torch.ones(1024, device=device)
                    return Case(run=lambda: kernel.twice(x), reference=lambda: x * 2, bytes=2 * x.nbytes)
            """
        },
    )
    project = load_project(root).project
    # No import check: run_benchmarks loads the variant itself.
    assert not Builder(project, BuildOptions(import_check=False), log=print).run().failed
    report = tmp_path / "bench.json"
    assert run_benchmarks(project, runs=3, warmup=1, json_file=report) == 0
    results = json.loads(report.read_text(encoding="utf-8"))["results"]
    assert [(r["name"], r["matches"], r["kernel"]["runs"]) for r in results] == [("twice", True, 3)]


def test_upload_lock_and_download_as_library_calls(hub: HubServer, tmp_path: Path, cpu_machine: None) -> None:
    """The three Hub commands' functions, called without the CLI, against the Hub double."""
    from kernel_builder.loader.download import download_locked
    from kernel_builder.loader.lock import lock_project
    from kernel_builder.publish.upload import UploadOptions, upload

    hub.add_organization("org")
    uploaded = upload(UploadOptions(kernel_dir=write_kernel(tmp_path / "relu"), repo_id=REPO))
    assert uploaded.status == "uploaded"
    sha = hub.resolve(REPO, "v1")
    app = write_tree(tmp_path / "app", {"pyproject.toml": f'[tool.kernels.dependencies]\n"{REPO}" = 1\n'})

    report = lock_project(app)
    assert report.failures == () and report.path == app / "kernels.lock"
    assert [(e.repo_id, e.sha, e.version) for e in report.entries] == [(REPO, sha, 1)]

    outcomes = download_locked(app)
    assert [(o.repo_id, o.sha, o.variants, o.error) for o in outcomes] == [(REPO, sha, (CPU,), None)]
    assert (outcomes[0].paths[0] / "metadata.json").is_file()
    assert [o.variants for o in download_locked(app, all_variants=True)] == [(CPU, CUDA)]


def test_options_come_from_the_arguments_of_the_same_names() -> None:
    from kernel_builder.commands._shared import options_from
    from kernel_builder.pipeline.builder import BuildOptions
    from kernel_builder.publish.upload import UploadOptions

    args = build_parser().parse_args(
        ["build", "k", "--no-import-check", "--werror", "--python", "/py", "-j", "3", "--build-type", "Debug"]
    )
    options = options_from(BuildOptions, args, import_check=not args.no_import_check)
    assert (options.import_check, options.werror, options.python, options.jobs, options.build_type) == (
        False,
        True,
        "/py",
        3,
        "Debug",
    )
    assert options.compile_log is False  # no argument of that name: the dataclass default
    upload = build_parser().parse_args(["upload", "d", "--repo-id", "org/k", "--dry-run"])
    assert options_from(UploadOptions, upload, kernel_dir=Path("d")) == UploadOptions(
        kernel_dir=Path("d"), repo_id="org/k", dry_run=True
    )


def test_top_level_help_imports_no_command_module_and_lists_them_all() -> None:
    """``kernel-builder --help`` needs only the commands' names and summaries (``COMMANDS``)."""
    code = (
        "import io, sys, contextlib\n"
        "from kernel_builder import cli\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    try: cli.main(['--help'])\n"
        "    except SystemExit: pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('kernel_builder.commands.') and '._' not in m)\n"
        "print(loaded); print(out.getvalue() == cli.build_parser().format_help())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "True"]


def test_a_command_imports_only_its_own_module(capsys: pytest.CaptureFixture[str]) -> None:
    code = (
        "import sys\n"
        "from kernel_builder import cli\n"
        "try: cli.main(['schema', '--help'])\n"
        "except SystemExit: pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('kernel_builder.commands.') and '._' not in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "['kernel_builder.commands.schema']"
    with pytest.raises(SystemExit) as caught:
        main(["no-such-command"])
    assert caught.value.code == 2
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err


def test_ctrl_c_as_the_command_returns_is_an_interruption_not_a_death_by_signal() -> None:
    """A SIGINT that lands after the command's own handler (as ``main`` returns) still exits 130 with the short
    message, not by the signal (-2) with a traceback."""
    code = (
        "import os, signal, sys, time\n"
        "from kernel_builder import cli\n"
        "command = cli.main\n"
        "def main(argv=None):\n"
        "    status = command(argv)\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # the Ctrl-C lands here, outside the command's handler\n"
        "    time.sleep(5)\n"
        "    return status\n"
        "cli.main = main\n"
        "sys.argv = ['kernel-builder', 'schema']\n"
        "cli.entry()\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
        preexec_fn=restore_ctrl_c,
    )  # fmt: skip
    assert (result.returncode, result.stderr) == (130, "interrupted\n")


@pytest.mark.parametrize("command", ["build", "test"])
@pytest.mark.parametrize(
    ("arch", "message"),
    [
        (
            "8.1",
            "--arch: 8.1 is not a supported CUDA capability (supported: 7.0, 7.2, 7.5, 8.0, 8.6, 8.7, 8.9, 9.0, ",
        ),
        (
            "sm_90",
            "--arch: invalid CUDA capability 'sm_90': expected e.g. '8.0', '9.0a', '12.0+PTX'; did you mean '9.0'?",
        ),
        ("9.0,", "--arch '9.0,': expected 'native' or capabilities separated by commas, e.g. 8.0,9.0a"),
    ],
)
def test_arch_lists_are_checked_before_anything_is_built(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, arch: str, message: str
) -> None:
    """``--arch 9.0``/``8.0,9.0a`` take supported capabilities only: anything else is a usage error (exit 2)."""
    assert main([command, str(tmp_path / "none"), "--arch", arch]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {message}") and err.count("\n") == 1


def test_arch_option_gives_the_canonical_list() -> None:
    from kernel_builder.commands._shared import arch_option

    assert arch_option(None) is None and arch_option("native") == "native"
    assert arch_option("9.0a, 8.0") == "8.0,9.0a"
    with pytest.raises(UsageError):
        arch_option("7.9")
