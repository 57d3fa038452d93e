"""The command line: parse arguments, run one command, turn errors into messages and exit codes.

This is the only place that prints diagnostics and decides exit statuses (0 ok, 1 failed, 2 usage or
configuration error). Command modules are imported lazily so ``kernel-builder --help`` starts fast and
works without torch.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kernel_builder import __version__
from kernel_builder.errors import ConfigError, KernelBuilderError, UsageError

if TYPE_CHECKING:
    from kernel_builder.build.builder import BuildOptions
    from kernel_builder.build.package import Provenance
    from kernel_builder.config.model import KernelProject

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse exits with 2 on usage errors already; keep its message but drop the full usage dump."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        sys.exit(2)


def _add_common(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    # Subcommands must not reset a top-level `kernel-builder --debug CMD` to False: SUPPRESS keeps it.
    parser.add_argument(
        "--debug",
        action="store_true",
        default=False if top else argparse.SUPPRESS,
        help="show a Python traceback for errors",
    )


def _add_path(
    parser: argparse.ArgumentParser, metavar: str = "PATH", help: str = "kernel directory or its build.toml"
) -> None:
    """The optional positional every command takes; ``.`` by default."""
    parser.add_argument("path", nargs="?", default=".", metavar=metavar, help=f"{help} (default: .)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kernel-builder",
        description="Build, publish and load PyTorch compute kernels from a declarative build.toml.",
    )
    parser.add_argument("--version", action="version", version=f"kernel-builder {__version__}")
    _add_common(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    init = commands.add_parser("init", help="create a new kernel project that builds and tests as it is")
    init.add_argument(
        "path", nargs="?", default=None, metavar="PATH", help="directory to create (default: ./NAME)"
    )
    init.add_argument("--name", required=True, help="kernel name: lowercase letters, digits and `-`")
    init.add_argument("--org", help="Hub organisation or user; the repo id becomes ORG/NAME")
    init.add_argument(
        "--backends", metavar="LIST", help="comma-separated: cuda,cpu (default: from the template)"
    )
    init.add_argument(
        "--template", choices=["cuda", "cpu", "triton"], help="cuda (also builds cpu), cpu, or triton"
    )
    init.add_argument(
        "--license", metavar="ID", default="Apache-2.0", help="SPDX license identifier (default: Apache-2.0)"
    )
    init.add_argument("--force", action="store_true", help="overwrite files that already exist")
    _add_common(init)
    init.set_defaults(handler=_run_init)

    check = commands.add_parser("check-config", help="validate build.toml and print a summary")
    _add_path(check)
    check.add_argument("--werror", action="store_true", help="treat warnings as errors")
    _add_common(check)
    check.set_defaults(handler=_run_check_config)

    update = commands.add_parser("update-build", help="rewrite a legacy build.toml in the current edition")
    _add_path(update)
    update.add_argument(
        "--license", metavar="ID", help="SPDX license identifier to add when the file has none"
    )
    mode = update.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="print the diff, write nothing")
    mode.add_argument("--check", action="store_true", help="exit 1 if the file needs an update")
    _add_common(update)
    update.set_defaults(handler=_run_update_build)

    schema = commands.add_parser("schema", help="print the JSON Schema of build.toml (for editors)")
    schema.add_argument("-o", "--output", metavar="FILE", help="write it to FILE instead of standard output")
    _add_common(schema)
    schema.set_defaults(handler=_run_schema)

    variants = commands.add_parser("list-variants", help="list the project's candidate variants")
    _add_path(variants)
    variants.add_argument("--json", action="store_true", help="print the candidates as a JSON list")
    variants.add_argument(
        "--no-probe", action="store_true",
        help="only what this kernel-builder can build on this platform: do not ask pip whether each variant's "
        "Torch build can be installed here, nor look for its CUDA compiler",
    )  # fmt: skip
    _add_common(variants)
    variants.set_defaults(handler=_run_list_variants)

    matrix = commands.add_parser("matrix", help="print a CI build matrix of the buildable variants")
    _add_path(matrix, "DIR", "kernel directory or its build.toml")
    matrix.add_argument("--format", choices=["github", "json"], default="github", help="output format")
    matrix.add_argument("--required", action="store_true", help="only the required (release) set")
    _add_common(matrix)
    matrix.set_defaults(handler=_run_matrix)

    abi = commands.add_parser("check-abi", help="check the built extensions against manylinux_2_28 and abi3")
    _add_path(abi, "PATH", "kernel root, its build/ or one variant")
    _add_common(abi)
    abi.set_defaults(handler=_run_check_abi)

    generate = commands.add_parser(
        "generate", help="write pyproject.toml so pip builds the kernel as a wheel (scikit-build-core)"
    )
    _add_path(generate)
    generate.add_argument("--force", action="store_true", help="replace an existing pyproject.toml")
    generate.add_argument("--python", metavar="PATH", help="interpreter whose torch the wheel is for")
    _add_common(generate)
    generate.set_defaults(handler=_run_generate)

    build = commands.add_parser("build", help="build the kernel's variants into build/<variant>/")
    _add_path(build)
    which = build.add_mutually_exclusive_group()
    which.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME",
        help="build this candidate variant in its own environment (repeatable)",
    )
    which.add_argument("--required", action="store_true", help="build every required variant buildable here")
    which.add_argument("--all-variants", action="store_true", help="build every variant buildable here")
    build.add_argument(
        "--refresh-envs", action="store_true", help="re-create the isolated build environments"
    )
    build.add_argument(
        "--parallel", type=int, metavar="N", help="variants built at once (default: cores / 4)"
    )
    build.add_argument("--werror", action="store_true", help="treat ABI symbol-version warnings as errors")
    build.add_argument("--backend", help="build only this backend's variants")
    build.add_argument(
        "--arch", choices=["native"], help="native: only the visible GPU's capability (not publishable)"
    )
    build.add_argument("--unique-id", metavar="ID", help="override the content-derived op namespace id")
    build.add_argument(
        "--offline",
        action="store_true",
        help="no network, no pip: build only what this environment's torch serves (Nix, air-gapped)",
    )
    build.add_argument(
        "--provenance-commit",
        metavar="REV",
        help="record this commit in metadata.json instead of asking git (e.g. a flake's revision)",
    )
    build.add_argument(
        "--provenance-dirty",
        action="store_true",
        help="with --provenance-commit: record that the sources differ from that commit",
    )
    build.add_argument(
        "--build-type",
        default="Release",
        choices=["Release", "Debug", "RelWithDebInfo"],
        help="CMake build type (default: Release)",
    )
    build.add_argument(
        "--debug-build",
        action="store_true",
        help="compile with debug information: -g, and -lineinfo for nvcc (keeps the optimisation level)",
    )
    build.add_argument(
        "--json",
        metavar="FILE",
        help="write the build report (variants, status, times, sizes, findings) to FILE",
    )
    build.add_argument(
        "-j", "--jobs", type=int, metavar="N", help="parallel compile jobs (default: from MAX_JOBS or cores)"
    )
    build.add_argument(
        "--nvcc-threads", type=int, metavar="N", help="nvcc --threads (default: from the arch count)"
    )
    build.add_argument(
        "--python", metavar="PATH", help="build interpreter with the variant's torch (default: this one)"
    )
    build.add_argument(
        "--no-import-check", action="store_true", help="skip loading each variant after assembly"
    )
    build.add_argument(
        "--strict-import",
        action="store_true",
        help="fail the import check also when a third-party module is missing from the build interpreter",
    )
    build.add_argument("-v", "--verbose", action="store_true", help="echo every command")
    _add_common(build)
    build.set_defaults(handler=_run_build)

    test = commands.add_parser(
        "test",
        usage="%(prog)s [-h] [--backend BACKEND] [-j N] [--arch {native}] [--debug] [PATH] [-- PYTEST_ARGS ...]",
        help="build this environment's variant, then run the project's tests against it",
        description="Build the variant for this environment, then run pytest on tests/ with the kernel importable "
        "under its package name and get_kernel(<repo-id>) resolving to this project (LOCAL_KERNELS). Arguments "
        "after `--` go to pytest. The exit status is pytest's.",
    )
    _add_path(test)
    test.add_argument("--backend", help="build only this backend's variants")
    test.add_argument("-j", "--jobs", type=int, metavar="N", help="parallel compile jobs")
    test.add_argument(
        "--arch", choices=["native"], help="native: compile CUDA code only for the visible GPU (faster)"
    )
    _add_common(test)
    test.set_defaults(handler=_run_test)

    bench = commands.add_parser(
        "bench",
        help="build, then time the kernel's ops against a reference (benchmarks/ or torch)",
        description="Build the variant for this environment, then run benchmarks/*.py (functions bench_*(kernel, "
        "device) returning kernel_builder.authoring.bench.Case) or, without them, each public function against its torch "
        "namesake. CUDA events on a GPU, wall clock on the CPU; median, spread and GB/s.",
    )
    _add_path(bench)
    bench.add_argument(
        "--runs", type=int, default=100, metavar="N", help="timed runs per case (default: 100)"
    )
    bench.add_argument("--warmup", type=int, default=10, metavar="N", help="untimed runs first (default: 10)")
    bench.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    _add_common(bench)
    bench.set_defaults(handler=_run_bench)

    upload = commands.add_parser("upload", help="upload the built variants to a kernel repo on the Hub")
    _add_path(upload, "KERNEL_DIR", "kernel directory")
    upload.add_argument(
        "--repo-id", metavar="ID", help="<org>/<name> (default: [general.hub] repo-id of build.toml)"
    )
    upload.add_argument(
        "--branch", metavar="B", help="target branch (default: [general.hub] branch, else v<version>)"
    )
    upload.add_argument("--private", action="store_true", help="create the repository as private")
    upload.add_argument("--repo-type", choices=["kernel", "model"], default="kernel", help="repository type")
    upload.add_argument("--create-pr", action="store_true", help="open pull requests instead of committing")
    upload.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    upload.add_argument(
        "--allow-abi-violations", action="store_true",
        help="upload variants that check-abi rejects (the card lists the violations)",
    )  # fmt: skip
    upload.add_argument("--output-json", metavar="PATH", help="write the outcome as JSON to PATH")
    upload.add_argument("-q", "--quiet", action="store_true", help="print only warnings and errors")
    _add_common(upload)
    upload.set_defaults(handler=_run_upload)

    lock = commands.add_parser(
        "lock", help="pin [tool.kernels.dependencies] of pyproject.toml in kernels.lock"
    )
    _add_path(lock, "PROJECT_DIR", "project directory")
    lock.add_argument("--trust-remote-code", action="store_true", help="skip the trusted-publisher check")
    _add_common(lock)
    lock.set_defaults(handler=_run_lock)

    download = commands.add_parser("download", help="download and verify the kernels pinned in kernels.lock")
    _add_path(download, "PROJECT_DIR", "project directory")
    download.add_argument(
        "--all-variants", action="store_true", help="every locked variant, not only this machine's"
    )
    _add_common(download)
    download.set_defaults(handler=_run_download)
    return parser


def _print_diagnostics(diagnostics: Sequence[object]) -> None:
    for diagnostic in diagnostics:
        print(diagnostic.render(), file=sys.stderr)  # type: ignore[attr-defined]


def _run_init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from kernel_builder.authoring.scaffold import (
        InitOptions,
        check_name,
        init_project,
        next_steps,
        parse_backends,
    )

    check_name(args.name)
    options = InitOptions(
        name=args.name,
        org=args.org,
        backends=parse_backends(args.backends) if args.backends else None,
        template=args.template,
        license=args.license,
        force=args.force,
    )
    root = Path(args.path if args.path is not None else args.name)
    print(next_steps(root, init_project(root, options)))
    return 0


def _run_check_config(args: argparse.Namespace) -> int:
    from kernel_builder.config import load_project
    from kernel_builder.config.summary import describe_project

    result = load_project(args.path)
    _print_diagnostics(result.diagnostics)
    if args.werror and result.warnings:
        print("error: warnings treated as errors (--werror)", file=sys.stderr)
        return 2
    print(describe_project(result.project))
    return 0


def _run_update_build(args: argparse.Namespace) -> int:
    from kernel_builder.config.update import update_build

    outcome = update_build(args.path, license_id=args.license, dry_run=args.dry_run, check=args.check)
    _print_diagnostics(outcome.diagnostics)
    if outcome.output:
        print(outcome.output, end="" if outcome.output.endswith("\n") else "\n")
    return outcome.exit_code


def _run_schema(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from kernel_builder.config.jsonschema import build_toml_schema

    text = json.dumps(build_toml_schema(), indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _run_list_variants(args: argparse.Namespace) -> int:
    from kernel_builder.build.plan.candidates import all_candidates
    from kernel_builder.config import load_project
    from kernel_builder.config.summary import variants_json, variants_table

    result = load_project(args.path)
    _print_diagnostics(result.diagnostics)
    candidates = all_candidates(result.project)
    if not args.no_probe:
        from kernel_builder.build.compile.interpreter import quick_probe
        from kernel_builder.build.plan.candidates import with_availability
        from kernel_builder.errors import BuildError

        try:
            served = {quick_probe().variant().name}
        except (BuildError, ValueError):
            served = set()
        candidates = with_availability(candidates, served)
    if args.json:
        import json

        print(json.dumps(variants_json(candidates), indent=2))
    else:
        print(variants_table(candidates))
    return 0


def _run_matrix(args: argparse.Namespace) -> int:
    import json

    from kernel_builder.build.plan.github_matrix import github_matrix
    from kernel_builder.config import load_project

    result = load_project(args.path)
    _print_diagnostics(result.diagnostics)
    matrix = github_matrix(result.project, args.path, required_only=args.required)
    print(json.dumps(matrix, indent=None if args.format == "github" else 2))
    return 0


def _run_check_abi(args: argparse.Namespace) -> int:
    from kernel_builder.build.check.abi import check_variants

    report = check_variants(args.path)
    for line in report.lines():
        print(line)
    return 1 if report.violations else 0


def _run_generate(args: argparse.Namespace) -> int:
    from kernel_builder.build.builder import Builder, BuildOptions
    from kernel_builder.config import load_project

    result = load_project(args.path)
    _print_diagnostics(result.diagnostics)
    builder = Builder(
        result.project, BuildOptions(python=args.python), log=lambda line: print(line, file=sys.stderr)
    )
    target = builder.generate(force=args.force)
    print(f"wrote {target}; build a wheel with: pip wheel --no-build-isolation {target.parent}")
    return 0


def _run_build(args: argparse.Namespace) -> int:
    import time

    from kernel_builder.build.builder import Builder, BuildOptions
    from kernel_builder.build.plan.candidates import Selection
    from kernel_builder.build.plan.unique_id import check_unique_id
    from kernel_builder.common.progress import progress_display
    from kernel_builder.config import load_project

    started = time.monotonic()
    if args.unique_id is not None:
        check_unique_id(args.unique_id)
    provenance = _provenance_option(args.provenance_commit, args.provenance_dirty)
    result = load_project(args.path)
    _print_diagnostics(result.diagnostics)
    options = BuildOptions(
        build_type=args.build_type,
        arch=args.arch,
        unique_id=args.unique_id,
        backend=args.backend,
        verbose=args.verbose,
        jobs=args.jobs,
        nvcc_threads=args.nvcc_threads,
        import_check=not args.no_import_check,
        strict_import=args.strict_import,
        python=args.python,
        selection=Selection(tuple(args.variant), args.required, args.all_variants, args.backend),
        refresh_envs=args.refresh_envs,
        parallel=args.parallel,
        werror=args.werror,
        offline=args.offline,
        provenance=provenance,
        debug_build=args.debug_build,
    )

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    # A live table only when variants build side by side: a serial build streams the compiler's output.
    parallel = (args.parallel or (os.cpu_count() or 1) // 4) > 1
    with progress_display(log, live=parallel) as progress:
        report = Builder(result.project, options, log=progress.log, progress=progress).run()
    _print_diagnostics(report.diagnostics)
    from kernel_builder.config.summary import build_table

    print(build_table(report.results, time.monotonic() - started))
    for failure in (r for r in report.results if r.status == "failed"):
        print(f"error: {failure.name}: {failure.message}", file=sys.stderr)
    if args.json:
        import json
        from pathlib import Path

        from kernel_builder.config.summary import build_report_json

        data = build_report_json(
            report.results, report.diagnostics, time.monotonic() - started, report.plan.unique_id
        )
        Path(args.json).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return 1 if report.failed else 0


def _provenance_option(commit: str | None, dirty: bool) -> Provenance | None:
    """``--provenance-commit`` / ``--provenance-dirty``: what metadata.json records instead of git's answer."""
    import re

    from kernel_builder.build.package import Provenance

    if commit is None:
        if dirty:
            raise UsageError(
                "--provenance-dirty needs --provenance-commit (the commit the sources differ from)"
            )
        return None
    if not re.fullmatch(r"[0-9a-f]{7,64}", commit):
        raise UsageError(
            f"--provenance-commit {commit!r} is not a git commit id: expected 7 to 64 lower-case hex digits "
            "(a full or abbreviated commit hash)"
        )
    return Provenance(commit, dirty)


def _build_here(path: str, options: BuildOptions) -> tuple[KernelProject, int]:
    """Build a project's default selection, print its table; returns the project and 0, or 1 on failure."""
    import time

    from kernel_builder.build.builder import Builder
    from kernel_builder.config import load_project
    from kernel_builder.config.summary import build_table

    started = time.monotonic()
    result = load_project(path)
    _print_diagnostics(result.diagnostics)
    report = Builder(result.project, options, log=lambda line: print(line, file=sys.stderr, flush=True)).run()
    _print_diagnostics(report.diagnostics)
    print(build_table(report.results, time.monotonic() - started), file=sys.stderr)
    for failure in (r for r in report.results if r.status == "failed"):
        print(f"error: {failure.name}: {failure.message}", file=sys.stderr)
    return result.project, 1 if report.failed else 0


def _run_test(args: argparse.Namespace) -> int:
    from kernel_builder.authoring.devtest import run_tests
    from kernel_builder.build.builder import BuildOptions

    project, status = _build_here(
        args.path, BuildOptions(backend=args.backend, jobs=args.jobs, arch=args.arch)
    )
    if status:
        return status
    return run_tests(project, args.pytest_args, log=lambda line: print(line, file=sys.stderr, flush=True))


def _run_bench(args: argparse.Namespace) -> int:
    import subprocess
    from pathlib import Path

    from kernel_builder.authoring.devtest import pytest_environment
    from kernel_builder.build.builder import BuildOptions

    if args.runs < 1 or args.warmup < 0:
        print("error: --runs must be at least 1 and --warmup at least 0", file=sys.stderr)
        return 2
    project, status = _build_here(args.path, BuildOptions())
    if status:
        return status
    argv = [sys.executable, "-m", "kernel_builder.authoring.bench", str(project.root / "build"), str(project.root),
            "--package", project.py_name, "--runs", str(args.runs), "--warmup", str(args.warmup)]  # fmt: skip
    if args.json:
        argv += ["--json", str(Path(args.json).resolve())]
    return subprocess.run(argv, cwd=project.root, env=pytest_environment(project), check=False).returncode


def _run_upload(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from kernel_builder.publish.upload import UploadOptions, check_output_json, describe_plan, upload

    if args.output_json:
        check_output_json(Path(args.output_json))

    def log(line: str) -> None:
        if not args.quiet:
            print(line, file=sys.stderr, flush=True)

    options = UploadOptions(
        kernel_dir=Path(args.path),
        repo_id=args.repo_id,
        branch=args.branch,
        private=args.private,
        repo_type=args.repo_type,
        create_pr=args.create_pr,
        dry_run=args.dry_run,
        allow_abi_violations=args.allow_abi_violations,
    )
    result = upload(
        options, log=log, warn=lambda line: print(f"warning: {line}", file=sys.stderr, flush=True)
    )
    if args.dry_run:
        print("\n".join(["dry run: nothing was changed", *describe_plan(result.plan)]))
    elif not args.quiet:
        summary = {
            "no_changes": "no changes: the Hub already has these files",
            "uploaded": "uploaded",
            "pull_request_created": "opened pull request(s)",
        }[result.status]
        print(f"{summary}: {result.plan.url}")
        for pr in result.pull_requests:
            print(f"  {pr.branch}: {pr.url}")
    if args.output_json:
        Path(args.output_json).write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
    return 0


def _print_warnings(caught: Sequence[object]) -> None:
    for warning in caught:
        print(f"warning: {warning.message}", file=sys.stderr)  # type: ignore[attr-defined]


def _run_lock(args: argparse.Namespace) -> int:
    import warnings

    from kernel_builder.loader.lock import lock_project

    with warnings.catch_warnings(record=True) as caught:  # the library warns; the CLI shows them plainly
        warnings.simplefilter("always")
        report = lock_project(
            args.path, trust_remote_code=args.trust_remote_code, log=lambda line: print(line, file=sys.stderr)
        )
    _print_warnings(caught)
    for repo_id, message in report.failures:
        print(f"error: {repo_id}: {message}", file=sys.stderr)
    if report.failures:
        print(
            f"error: {report.path} was not written ({len(report.failures)} repo(s) failed)", file=sys.stderr
        )
        return 1
    print(f"wrote {report.path} ({len(report.entries)} kernel(s))")
    return 0


def _run_download(args: argparse.Namespace) -> int:
    import warnings

    from kernel_builder.loader.download import download_locked

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outcomes = download_locked(
            args.path, all_variants=args.all_variants, log=lambda line: print(line, file=sys.stderr)
        )
    _print_warnings(caught)
    for outcome in outcomes:
        if outcome.error is None:
            for variant, path in zip(outcome.variants, outcome.paths):
                print(f"{outcome.repo_id} {variant}: {path}")
        else:
            print(f"error: {outcome.repo_id} at {outcome.sha}: {outcome.error}", file=sys.stderr)
    failed = sum(outcome.error is not None for outcome in outcomes)
    if failed:
        print(f"error: {failed} of {len(outcomes)} kernel(s) failed", file=sys.stderr)
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    words = list(sys.argv[1:] if argv is None else argv)
    # `kernel-builder test [PATH] -- PYTEST_ARGS`: everything after the first `--` belongs to pytest. argparse
    # would take the first of those words for PATH.
    passed_on: list[str] | None = None
    if "--" in words:
        cut = words.index("--")
        words, passed_on = words[:cut], words[cut + 1 :]
    args = parser.parse_args(words)
    if passed_on is not None and getattr(args, "command", None) != "test":
        parser.error(f"unrecognized arguments: -- {' '.join(passed_on)} (only `test` passes arguments on)")
    args.pytest_args = passed_on or []
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        handler: Handler = args.handler
        return handler(args)
    except ConfigError as exc:
        if args.debug:
            traceback.print_exc()
        _print_diagnostics(exc.diagnostics)
        return exc.exit_code
    except KernelBuilderError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        # The commands it started are stopped by then (their process groups); build/ keeps complete variants only.
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) went away: stop quietly, as other command-line tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except OSError as exc:  # a file the operation needed could not be read or written
        if args.debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return 1


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    entry()
