"""Compile stage: configure the generated project with Ninja, build it, install the extension into a stage.

The build directory is kept between runs, so Ninja recompiles only what changed.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from kernel_builder.common import processes
from kernel_builder.common.runner import format_command, run
from kernel_builder.errors import BuildError, CompileError
from kernel_builder.pipeline.environment import toolchain
from kernel_builder.pipeline.state import STATE_DIR


def default_jobs(nvcc_threads: int) -> int:
    if os.environ.get("MAX_JOBS", "").isdigit():
        return max(1, int(os.environ["MAX_JOBS"]))
    return max(1, (os.cpu_count() or 1) // max(1, nvcc_threads))


def configure(
    project_dir: Path,
    build_dir: Path,
    *,
    build_type: str,
    cuda: bool,
    verbose: bool,
    launcher: Sequence[str] = (),
    target: str | None = None,
) -> None:
    """``launcher``: a compiler cache's command (``compiler_cache``), put before every compiler call;
    ``target``: the ``<cpu>-<os>`` of a cross build (CMake is told the target system, and the cross compiler
    compiles)."""
    build_dir.mkdir(parents=True, exist_ok=True)
    from kernel_builder.pipeline.compile import configure_cache  # a real build's only

    cxx = toolchain.compiler_for(target).path
    argv: list[str | os.PathLike[str]] = [
        toolchain.cmake().path,
        "-G", "Ninja",
        "-S", project_dir,
        "-B", build_dir,
        f"-DCMAKE_MAKE_PROGRAM={toolchain.ninja().path}",
        f"-DCMAKE_BUILD_TYPE={build_type}",
        f"-DCMAKE_CXX_COMPILER={cxx}",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        f"-DCMAKE_INSTALL_PREFIX={build_dir.parent / 'stage'}",
    ]  # fmt: skip
    if target is not None:
        cpu, _, os_name = target.partition("-")
        argv += [f"-DCMAKE_SYSTEM_NAME={os_name.capitalize()}", f"-DCMAKE_SYSTEM_PROCESSOR={cpu}"]
    # One host compiler for everything: CMake's CUDA detection also reads CUDAHOSTCXX from the environment,
    # and a different compiler there brings its own (possibly static-only) libstdc++ into the link line.
    env = {"CXX": str(cxx)}
    for language in ("CXX", "CUDA") if cuda else ("CXX",):
        if not os.environ.get(f"CMAKE_{language}_COMPILER_LAUNCHER"):  # CMake reads that one itself
            argv.append(f"-DCMAKE_{language}_COMPILER_LAUNCHER={';'.join(launcher)}")
    if cuda:
        argv.append(f"-DCMAKE_CUDA_HOST_COMPILER={cxx}")
        env["CUDAHOSTCXX"] = str(cxx)
    done = build_dir / CONFIGURED
    request = json.dumps([[str(a) for a in argv], env])
    if (build_dir / "build.ninja").is_file() and _read(done) == request:
        # Configured with these arguments already: what CMake read since (CMakeLists.txt, KernelBuilder.cmake,
        # Torch's CMake files) is what Ninja's build.ninja rule checks, and `cmake --build` runs CMake again when
        # any of them changed. A `kernel_builder.load` edit changes none of them: no configure.
        return
    done.unlink(missing_ok=True)
    cached = configure_cache.key(project_dir, {"CXX": cxx, "CUDA_HOST": cxx}, *_cmake_identity())
    restored = configure_cache.restore(build_dir, cached)
    try:
        run([*argv, configure_cache.INITIALIZED] if restored else argv, env=env, verbose=verbose,
            capture=not verbose, what="CMake configure")  # fmt: skip
    except BuildError:
        if not restored:
            raise
        # The stored compiler information did not fit after all: configure from scratch.
        shutil.rmtree(build_dir)
        build_dir.mkdir(parents=True)
        run(argv, env=env, verbose=verbose, capture=not verbose, what="CMake configure")
        restored = False
    if not restored:
        configure_cache.store(build_dir, cached)
    done.write_text(request, encoding="utf-8")


#: In a CMake build directory: the arguments and environment of the configure that made it (:func:`configure`).
CONFIGURED = "kernel-builder-configure.json"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def link_compile_commands(root: Path, build_dir: Path, stage: Path | None = None) -> None:
    """``.kernel-builder/compile_commands.json`` points at the latest configured variant's, and
    ``compile_commands.json`` at the root points at that, for editors. When the compilers reached the sources
    through a stage (``source_stage``), it is a copy that names the files in the root instead, where editors
    open them."""
    link = root / STATE_DIR / "compile_commands.json"
    target = build_dir / "compile_commands.json"
    if stage is not None and target.is_file():
        text = target.read_text(encoding="utf-8")
        if link.is_symlink() or link.exists():
            link.unlink()
        link.write_text(
            text.replace(json.dumps(str(stage))[1:-1], json.dumps(str(root))[1:-1]), encoding="utf-8"
        )
    else:
        _symlink(link, os.path.relpath(target, link.parent))  # still right after the project is moved
    # Editors (clangd, VS Code) look at the project root; a file of the project's own stays untouched.
    root_link = root / "compile_commands.json"
    if root_link.is_symlink() or not root_link.exists():
        _symlink(root_link, str(Path(STATE_DIR) / "compile_commands.json"))


def _symlink(link: Path, target: str) -> None:
    """``link`` → ``target``, left alone when it is that link already: a new link changes its directory, and
    the project root is often the build interpreter's current directory, part of the search path whose change
    makes the interpreter probe run again (``interpreter.quick_probe``) at the next build."""
    if link.is_symlink() and os.readlink(link) == target:
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target)


def _cmake_identity() -> tuple[Path, str]:
    tool = toolchain.cmake()
    return tool.path, tool.version


_STEP = re.compile(r"^\[(\d+)/(\d+)\]\s*(.*)$")
_RERUN = "Re-running CMake"
_OBJECT = re.compile(r"^Building (?:CXX|CUDA|C|OBJCXX) object (?:.*?/)?CMakeFiles/[^/]+\.dir/(?P<output>.+)$")
_LINK = re.compile(r"^Linking \w+ (?:shared|static|module|executable)")
_PCH = re.compile(r"cmake_pch(?:_\w+)?\.hxx\.(?:gch|pch)$")


def step_name(description: str, build_dir: Path | None = None, root: Path | None = None) -> str:
    """What a Ninja step (its CMake description) does, in the author's words: ``precompiling Torch's headers
    (<ATen/core/Tensor.h>)`` for a precompiled header (its ``<...>`` includes read from ``build_dir``),
    ``compiling relu_cpu/relu_cpu.cpp``, ``linking``. ``root``: the project, whose sources CMake names by their
    absolute path inside the object's directory."""
    match = _OBJECT.match(description)
    if match is not None:
        output = match["output"]
        if _PCH.search(output):
            headers = _pch_headers(build_dir / description.split(" object ", 1)[1]) if build_dir else []
            named = f" ({', '.join(f'<{h}>' for h in headers)})" if headers else ""
            return f"precompiling Torch's headers{named}"
        source = re.sub(r"\.(o|obj)$", "", output)
        if root is not None:
            source = source.removeprefix(Path(os.path.abspath(root)).as_posix().lstrip("/") + "/")
        return f"compiling {source}"
    if _LINK.match(description):
        return "linking"
    return description[:1].lower() + description[1:]


def _pch_headers(output: Path) -> list[str]:
    """The ``<...>`` includes of the precompiled header whose output is ``output`` (``cmake_pch.hxx.gch``)."""
    try:
        text = output.with_suffix("").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return re.findall(r"^#include <([^<>]+)>", text, re.MULTILINE)


def planned_steps(build_dir: Path) -> list[str] | None:
    """The descriptions of the steps Ninja would run now, in the order it starts them (``ninja -n``, which
    runs nothing), or ``None`` when that cannot be told (build.ninja itself is out of date: CMake would run
    first). Ninja prints a step's line when it *ends* unless it writes to a terminal, so this is what says which
    step is running: the first of these not yet ended."""
    try:
        result = processes.run(
            [toolchain.ninja().path, "-C", build_dir, "-n"], capture=True, merge_stderr=True
        )
    except (OSError, BuildError):
        return None
    if result.returncode != 0:
        return None
    steps = []
    for line in result.stdout.splitlines():
        match = _STEP.match(line)
        if match is not None:
            if "Re-running CMake" in match[3] or "build.ninja" in match[3]:
                return None
            steps.append(match[3])
    return steps


def build(
    build_dir: Path,
    *,
    jobs: int,
    verbose: bool,
    log_file: Path | None = None,
    on_step: Callable[[int, int, str], None] | None = None,
    root: Path | None = None,
    aliases: tuple[Path, ...] = (),
) -> None:
    """Run Ninja through CMake. Without ``log_file``, the output streams to stdout as it comes; with it, it goes
    there, and ``on_step(done, total, running)`` hears of each step: at the start (``0``) and as each ends, with
    the step that runs next (:func:`step_name`), so that a long first step (a precompiled header) is named while it runs. Either way, paths in the project ``root`` are shown relative to
    it (also those in ``aliases``, directories that stand for it: the source stage) and Ninja's failed commands
    are dropped unless ``verbose``; a failure names the first compiler error (``compiler_output``)."""
    # A compile's only (a no-op build does not import this module at all).
    from kernel_builder.pipeline.compile import compiler_output

    argv: list[str | os.PathLike[str]] = [
        toolchain.cmake().path,
        "--build",
        build_dir,
        "--parallel",
        str(jobs),
    ]
    if verbose:
        argv.append("--verbose")
        print(f"+ {format_command(argv)}", file=sys.stderr, flush=True)
    cleaner = compiler_output.Cleaner(
        build_dir, root if root is not None else build_dir, verbose=verbose, aliases=aliases
    )
    shown: list[str] = []
    # While Ninja re-runs CMake (the generated project changed: an edit gave the build a new op namespace), its
    # line says so and CMake's output (Torch's "library kineto not found", our status lines) stays in the log.
    rerun: list[str] | None = None
    plan = planned_steps(build_dir) if on_step is not None else None
    pending = list(plan or ())
    if on_step is not None and pending:
        on_step(0, len(pending), step_name(pending[0], build_dir, root))
    sys.stdout.flush()
    with contextlib.ExitStack() as stack:
        log = stack.enter_context(log_file.open("w", encoding="utf-8")) if log_file is not None else None
        try:
            process = processes.popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                errors="replace",
            )  # fmt: skip
        except FileNotFoundError as exc:
            raise BuildError(f"compilation failed: {argv[0]} not found ({exc.strerror})") from None
        interrupted = True
        try:
            assert process.stdout is not None
            for raw in process.stdout:
                started = _STEP.match(raw)  # as Ninja wrote it, as the planned steps are
                if started is not None and started[3].rstrip("\n") in pending:
                    pending.remove(started[3].rstrip("\n"))
                line = cleaner.line(raw.rstrip("\n"))
                if line is None:
                    continue
                shown.append(line)
                match = _STEP.match(line)
                if rerun is not None and match is None and not line.startswith("ninja: "):
                    rerun.append(line)  # CMake's own output: in the log, not on the screen
                    if log is not None:
                        log.write(line + "\n")
                    continue
                rerun = [] if match is not None and match[3].startswith(_RERUN) else None
                if log is None:
                    print(line, flush=True)
                    continue
                log.write(line + "\n")
                if match and on_step is not None and rerun is None:
                    running = step_name(pending[0], build_dir, root) if pending else ""
                    on_step(int(match[1]), int(match[2]), running)
            status = process.wait()
            interrupted = False
        finally:
            processes.finish(process, interrupted=interrupted)
            if process.stdout is not None:
                process.stdout.close()
    if status != 0:
        from kernel_builder.pipeline.compile import schema_types

        if rerun and log_file is None:  # CMake itself failed: what it said is the error
            print("\n".join(rerun), flush=True)

        explanation = schema_types.explain(shown, root if root is not None else build_dir)
        first = compiler_output.first_error([explanation] if explanation else shown)
        raise CompileError(
            compiler_output.failure_message(
                status, shown, shown=log_file is None, log_file=log_file, command=format_command(argv),
                verbose=verbose, explanation=explanation,
            ),
            diagnostics=explanation or "\n".join(compiler_output.compiler_diagnostics(shown)),
            location=first.location if first is not None else None,
            log_file=log_file,
        )  # fmt: skip


def install(build_dir: Path, stage_dir: Path, *, verbose: bool, name: str | None = None) -> Path:
    """Install into ``stage_dir`` and return the extension (a changed id renames it, so start clean).

    ``name``: the file name it must have, given when the project may build it under a fixed name
    (``state.LOAD_EXTENSION_TARGET``, a ``kernel_builder.load`` project the same at every edit)."""
    for stale in stage_dir.glob("*.abi3.so"):
        stale.unlink()
    run(
        [toolchain.cmake().path, "--install", build_dir, "--prefix", stage_dir],
        verbose=verbose,
        capture=True,
        what="install",
    )
    libraries = sorted(stage_dir.glob("*.abi3.so"))
    if len(libraries) != 1:
        raise BuildError(f"expected one .abi3.so in {stage_dir}, found {len(libraries)}")
    from kernel_builder.pipeline.state import LOAD_EXTENSION_TARGET

    if name is not None and libraries[0].name == f"{LOAD_EXTENSION_TARGET}.abi3.so":
        return libraries[0].rename(stage_dir / name)
    return libraries[0]


#: Suffixes of compiled objects: only their dependency records list included files. Link steps have records too
#: (CMake asks linkers that can for a depfile: GNU ld >= 2.41, lld, mold), listing objects and libraries.
_OBJECT_SUFFIXES = (".o", ".obj")


def included_files(build_dir: Path) -> dict[str, list[Path]]:
    """Ninja's dependency records of the compile steps: for each object, the files its compilation read.

    Ninja writes paths as the compiler and linker gave them, relative ones relative to the build directory; they
    are returned absolute, resolved against ``build_dir`` whatever the current directory is.
    """
    out = _ninja_tool(build_dir, ".ninja_deps", "deps")
    base = build_dir.absolute()
    deps: dict[str, list[Path]] = {}
    current: list[Path] | None = None
    for line in out.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" ") and ": #deps" in line:
            target = line.split(": #deps")[0]
            current = deps.setdefault(target, []) if target.endswith(_OBJECT_SUFFIXES) else None
        elif current is not None:
            current.append(Path(os.path.normpath(base / line.strip())))
    return deps


#: The answers of ``ninja -t``, by build directory and tool, with the identity of the file each is read from.
_TOOL_ANSWERS: dict[tuple[str, tuple[str, ...]], tuple[tuple[int, int, int], str]] = {}


def _ninja_tool(build_dir: Path, source: str, *tool: str) -> str:
    """``ninja -C build_dir -t TOOL...``, asked again only when ``build_dir/source``, the file it reads
    (``.ninja_deps`` for ``deps``, ``build.ninja`` for the others), changed: a build reads the deps twice (header
    accounting, the no-op record), and ``kernel_builder.load`` asks for the same targets after every edit."""
    key = (str(build_dir.absolute()), tool)
    try:
        st = (build_dir / source).stat()
        identity = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        identity = None
    known = _TOOL_ANSWERS.get(key)
    if identity is not None and known is not None and known[0] == identity:
        return known[1]
    out = run(
        [toolchain.ninja().path, "-C", build_dir, "-t", *tool],
        capture=True,
        what=f"reading Ninja's {tool[0]}",
    )
    if identity is not None:
        _TOOL_ANSWERS[key] = (identity, out)
    return out


#: Ninja's own state in a build directory: a lost or rewritten one changes what Ninja would do.
_NINJA_STATE = ("build.ninja", "CMakeCache.txt", ".ninja_log", ".ninja_deps")


def watched_files(build_dir: Path, stage_dir: Path) -> list[str]:
    """Every file Ninja reads to decide whether ``build_dir`` is up to date, its outputs, and the installed
    extension in ``stage_dir``: while none of them changed (``record.stamp``), building and installing again would
    do nothing. That is what lets a no-op rebuild start no process (``record``)."""
    base = build_dir.absolute()
    files = {str(base / name) for name in _NINJA_STATE}
    files.update(str(p) for p in stage_dir.absolute().glob("*.abi3.so"))
    for target, headers in included_files(build_dir).items():
        files.add(os.path.normpath(base / target))
        files.update(str(h) for h in headers)
    inputs = _ninja_tool(build_dir, "build.ninja", "inputs")
    files.update(os.path.normpath(base / line.strip()) for line in inputs.splitlines() if line.strip())
    # Every target, phony ones included: the outputs, and the files whose change makes Ninja run CMake again
    # (CMake declares each as a phony target). Names that are no file stay missing, which is no change.
    targets = _ninja_tool(build_dir, "build.ninja", "targets", "all")
    files.update(
        os.path.normpath(base / line.rpartition(": ")[0]) for line in targets.splitlines() if ": " in line
    )
    return sorted(files)
